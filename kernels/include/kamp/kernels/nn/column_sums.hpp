#ifndef KAMP_KERNELS_NN_COLUMN_SUMS_HPP
#define KAMP_KERNELS_NN_COLUMN_SUMS_HPP

#include <kamp/kernels/nn/detail.hpp>
#include <kamp/tools/traffic.hpp>

namespace kamp {

namespace detail {
// Kernels live in functions with plain pointer arguments: nvcc cannot name an extended lambda's
// enclosing function when that function has several template parameter packs (the View
// properties of the public API).
template <class ExecutionSpace, class X, class S>
void column_sums_kernel(const ExecutionSpace& space, const X* src, std::int64_t rows, std::int64_t cols,
                        std::int64_t stride, S* dst) {
  report_traffic("kamp::column_sums", elements_bytes<X>(rows * cols) + elements_bytes<S, S>(cols));
  using acc = common_accum_t<X, S>;
  constexpr int block = column_block<ExecutionSpace>::value;
  Kokkos::parallel_for(
      "kamp::column_sums", row_policy(space, (cols + block - 1) / block), KOKKOS_LAMBDA(std::int64_t b) {
        const std::int64_t c0 = b * block, width = cols - c0 < block ? cols - c0 : block;
        acc s[block] = {};
        for (std::int64_t n = 0; n < rows; ++n) {
          KAMP_SIMD()
          for (std::int64_t c = 0; c < width; ++c) s[c] += load_as<acc>(src + n * stride + c0 + c);
        }
        for (std::int64_t c = 0; c < width; ++c) store_nearest(dst + c0 + c, load_as<acc>(dst + c0 + c) + s[c]);
      });
}
}  // namespace detail

/// \brief sums(c) += Σ_n x(n, c): the gradient of a bias broadcast over rows. Rows are added in
/// ascending order in the accumulation type, so the result does not depend on the thread count.
/// Label `kamp::column_sums`.
template <class ExecutionSpace, class X, class S, class... XP, class... SP>
void column_sums(const ExecutionSpace& space, const Kokkos::View<X**, XP...>& x, const Kokkos::View<S*, SP...>& sums) {
  detail::check_extent("kamp::column_sums", "sums", sums.extent(0), x.extent(1));
  detail::column_sums_kernel(space, x.data(), x.extent(0), x.extent(1), x.stride(0), sums.data());
}

}  // namespace kamp

#endif
