#ifndef KAMP_KERNELS_NN_COLUMN_SUMS_HPP
#define KAMP_KERNELS_NN_COLUMN_SUMS_HPP

#include <kamp/kernels/nn/detail/nn_common.hpp>
#include <kamp/tools/traffic.hpp>

#include <cstdint>
#include <type_traits>

namespace kamp {

namespace detail {

/// sums(c) += Σ_n per_element(n, c), rows in ascending order in Acc, for the bias gradients and
/// the passes fused with them: per_element stores whatever its pass writes for element (n, c)
/// and returns the value column c sums, so a fused pass reads its matrix once instead of twice.
/// A work item takes a block of column_block columns through all rows: on CPUs the inner loop
/// is contiguous and vectorizes, on GPUs each thread has one column and a warp reads a row
/// segment at once. The order of the additions is fixed, so every pass that sums the same
/// values gets the same bits, whatever the thread count.
// Kernels live in functions with plain address arguments: nvcc cannot name an extended lambda's
// enclosing function when that function has several template parameter packs (the View
// properties of the public API).
template <int Block, class Acc, class ExecutionSpace, class SA, class PerElement>
void column_walk_in_blocks(const char* label, const ExecutionSpace& space, std::int64_t rows, std::int64_t cols,
                           SA sums, const PerElement& per_element) {
  Kokkos::parallel_for(
      label, row_policy(space, (cols + Block - 1) / Block), KOKKOS_LAMBDA(std::int64_t b) {
        const std::int64_t c0 = b * Block, width = cols - c0 < Block ? cols - c0 : Block;
        Acc s[Block] = {};
        // Full blocks get a loop of constant length: a CPU compiler then emits it as whole
        // vectors without a remainder loop per row (measured 10-15% on the fused passes).
        if (Block == 1 || width == Block) {
          for (std::int64_t n = 0; n < rows; ++n) {
            KAMP_SIMD()
            for (std::int64_t c = 0; c < Block; ++c) s[c] += per_element(n, c0 + c);
          }
        } else {
          for (std::int64_t n = 0; n < rows; ++n) {
            KAMP_SIMD()
            for (std::int64_t c = 0; c < width; ++c) s[c] += per_element(n, c0 + c);
          }
        }
        for (std::int64_t c = 0; c < width; ++c) store_nearest(sums + (c0 + c), load_as<Acc>(sums + (c0 + c)) + s[c]);
      });
}

/// The wide block where the columns give every thread of the space a work item, else the
/// narrow one; each column's sum is the same either way.
template <class Acc, class ExecutionSpace, class SA, class PerElement>
void column_walk(const char* label, const ExecutionSpace& space, std::int64_t rows, std::int64_t cols, SA sums,
                 const PerElement& per_element) {
  using block = column_block<ExecutionSpace>;
  if (cols >= std::int64_t(block::wide) * space.concurrency())
    column_walk_in_blocks<block::wide, Acc>(label, space, rows, cols, sums, per_element);
  else
    column_walk_in_blocks<block::value, Acc>(label, space, rows, cols, sums, per_element);
}

/// A pass that writes every element and sums a value per column: one walk where a work item
/// takes a block of columns (CPUs: `write` stores and returns the summand), or, where a thread
/// takes one column (GPUs: too few threads for element-wise work), `write` over every element in
/// parallel first and then the column walk over `summand`, which must return what `write`
/// returned. The sums are the same bits either way.
template <class Acc, class ExecutionSpace, class SA, class Write, class Summand>
void write_and_sum_columns(const char* label, const ExecutionSpace& space, std::int64_t rows, std::int64_t cols,
                           SA sums, const Write& write, const Summand& summand) {
  if constexpr (column_block<ExecutionSpace>::value == 1) {
    Kokkos::parallel_for(
        label, row_policy(space, std::size_t(rows * cols)),
        KOKKOS_LAMBDA(std::int64_t i) { write(i / cols, i % cols); });
    column_walk<Acc>(label, space, rows, cols, sums, summand);
  } else {
    column_walk<Acc>(label, space, rows, cols, sums, write);
  }
}

template <class ExecutionSpace, class XM, class SA>
void column_sums_kernel(const ExecutionSpace& space, XM src, std::int64_t rows, std::int64_t cols, SA dst) {
  using X = typename XM::value_type;
  using S = value_of<SA>;
  report_traffic("kamp::column_sums", elements_bytes<X>(rows * cols) + elements_bytes<S, S>(cols));
  using acc = common_accum_t<X, S>;
  column_walk<acc>(
      "kamp::column_sums", space, rows, cols, dst,
      KOKKOS_LAMBDA(std::int64_t n, std::int64_t c) { return load_as<acc>(src.at(n, c)); });
}

template <class ExecutionSpace, class XM, class YM, class SA>
void cast_and_column_sums_kernel(const ExecutionSpace& space, XM src, YM dst, std::int64_t rows, std::int64_t cols,
                                 SA sums) {
  using X = typename XM::value_type;
  using Y = typename YM::value_type;
  using S = value_of<SA>;
  report_traffic("kamp::cast_and_column_sums", elements_bytes<X, Y>(rows * cols) + elements_bytes<S, S>(cols));
  using acc = common_accum_t<X, S>;
  // The store's compute type: x's value is exact in it (fp32 for fp32 and 16-bit x), so y gets
  // exactly one rounding, as kamp::cast gives it.
  using rounded = common_accum_t<X, Y>;
  write_and_sum_columns<acc>(
      "kamp::cast_and_column_sums", space, rows, cols, sums,
      KOKKOS_LAMBDA(std::int64_t n, std::int64_t c) {
        const acc v = load_as<acc>(src.at(n, c));
        store_nearest(dst.at(n, c), static_cast<rounded>(v));
        return v;
      },
      KOKKOS_LAMBDA(std::int64_t n, std::int64_t c) { return load_as<acc>(src.at(n, c)); });
}

}  // namespace detail

/// \brief sums(c) += Σ_n x(n, c): the gradient of a bias broadcast over rows. Rows are added in
/// ascending order in the accumulation type, so the result does not depend on the thread count.
/// Label `kamp::column_sums`.
template <class ExecutionSpace, class X, class S, class... XP, class... SP>
void column_sums(const ExecutionSpace& space, const Kokkos::View<X**, XP...>& x, const Kokkos::View<S*, SP...>& sums) {
  detail::check_extent("kamp::column_sums", "sums", sums.extent(0), x.extent(1));
  detail::with_access([&](auto xs, auto ss) { detail::column_sums_kernel(space, xs, x.extent(0), x.extent(1), ss); }, x,
                      sums);
}

/// \brief y(n, c) = x(n, c) rounded to nearest even in y's type, and sums(c) += Σ_n x(n, c) of
/// the unrounded x, in one pass over x: a Linear's fp32 output gradient is narrowed for the
/// GEMMs while its bias gradient keeps full precision, and the separate kamp::cast and
/// column_sums read x twice. The sums are bitwise those of column_sums(x, sums) (same order, same
/// accumulation type) and y those of kamp::cast. Label `kamp::cast_and_column_sums`.
///
/// \param x     (N, C) input, usually fp32
/// \param y     (N, C) output: bf16, fp16 or the type of x
/// \param sums  (C) accumulated (+=)
template <class ExecutionSpace, class X, class Y, class S, class... XP, class... YP, class... SP>
void cast_and_column_sums(const ExecutionSpace& space, const Kokkos::View<X**, XP...>& x,
                          const Kokkos::View<Y**, YP...>& y, const Kokkos::View<S*, SP...>& sums) {
  static_assert(
      !std::is_same_v<std::remove_const_t<X>, double> || std::is_same_v<Y, double> || std::is_same_v<Y, float>,
      "kamp::cast_and_column_sums: fp64 x rounds to fp64 or fp32 only (a 16-bit y would be rounded twice, "
      "through fp32)");
  detail::check_extent("kamp::cast_and_column_sums", "y rows", y.extent(0), x.extent(0));
  detail::check_extent("kamp::cast_and_column_sums", "y columns", y.extent(1), x.extent(1));
  detail::check_extent("kamp::cast_and_column_sums", "sums", sums.extent(0), x.extent(1));
  detail::with_access(
      [&](auto xs, auto ys, auto ss) {
        detail::cast_and_column_sums_kernel(space, xs, ys, x.extent(0), x.extent(1), ss);
      },
      x, y, sums);
}

}  // namespace kamp

#endif
