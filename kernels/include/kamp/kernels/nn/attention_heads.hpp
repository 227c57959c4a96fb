#ifndef KAMP_KERNELS_NN_ATTENTION_HEADS_HPP
#define KAMP_KERNELS_NN_ATTENTION_HEADS_HPP

// Attention's GEMMs run once per layer over all (batch, head) pairs when each head's rows are
// contiguous: these kernels move activations between the Linear layers' row layout (B·T, k·C)
// and the heads layout (k, B, H, T, C/H), as llm.c's permute/unpermute kernels do.
#include <kamp/kernels/nn/detail/nn_common.hpp>
#include <kamp/kernels/nn/rows.hpp>
#include <kamp/tools/traffic.hpp>

namespace kamp {

namespace detail {

/// Copies `from` (rows layout when ToHeads, else heads layout) to `to` (the other layout).
template <bool ToHeads, class ExecutionSpace, class T>
void move_heads_kernel(const ExecutionSpace& space, const T* from, T* to, std::int64_t parts, std::int64_t batch,
                       std::int64_t t, std::int64_t h, std::int64_t d) {
  const std::int64_t c = h * d, n = batch * t;
  report_traffic(ToHeads ? "kamp::split_heads" : "kamp::merge_heads", elements_bytes<T, T>(parts * n * c));
  using member = typename Kokkos::TeamPolicy<ExecutionSpace>::member_type;
  // One row of work per (part, row, head): a contiguous run of d elements on both sides.
  for_each_row(
      ToHeads ? "kamp::split_heads" : "kamp::merge_heads", space, parts * n * h,
      KOKKOS_LAMBDA(const member& m, std::int64_t w) {
        const std::int64_t head = w % h, row = (w / h) % n, part = w / (h * n);
        const std::int64_t b = row / t, pos = row % t;
        const std::int64_t r = row * parts * c + part * c + head * d;
        const std::int64_t x = (((part * batch + b) * h + head) * t + pos) * d;
        const T* KAMP_RESTRICT src = from + (ToHeads ? r : x);
        T* KAMP_RESTRICT dst = to + (ToHeads ? x : r);
        row_for(m, d, [&](std::int64_t i) { copy_element(dst + i, src + i); });
      });
}

template <class Rows, class Heads>
void check_heads(const char* api, const Rows& rows, const Heads& heads, int batch, int head_count) {
  if (head_count < 1 || batch < 1 || rows.extent(0) % batch != 0)
    throw std::invalid_argument(std::string(api) + ": " + std::to_string(rows.extent(0)) + " rows do not split into " +
                                std::to_string(batch) + " sequences, or heads " + std::to_string(head_count) + " < 1");
  check_extent(api, "heads layout", heads.extent(0), rows.extent(0) * rows.extent(1));
}

}  // namespace detail

/// \brief heads(p, b, h, t, :) = rows(b·T + t, p·C + h·D : p·C + (h+1)·D) for parts p < k (k·C
/// columns, C = heads · D): the (B·T, k·C) output of a Linear as k blocks of B·H contiguous
/// (T, D) matrices, the operands of strided-batched GEMMs. `heads` is flat (k·B·H·T·D), same
/// type. Label `kamp::split_heads`.
template <class ExecutionSpace, class R, class T, class... RP, class... HP>
void split_heads(const ExecutionSpace& space, const Kokkos::View<R**, RP...>& rows, int batch, int heads, int parts,
                 const Kokkos::View<T*, HP...>& out) {
  static_assert(std::is_same_v<std::remove_const_t<R>, T>, "kamp::split_heads: both layouts hold one type");
  detail::check_heads("kamp::split_heads", rows, out, batch, heads);
  const std::int64_t c = rows.extent(1) / parts;
  detail::require_row_major("kamp::split_heads", "rows", rows);
  detail::require_row_major("kamp::split_heads", "out", out);
  detail::move_heads_kernel<true>(space, rows.data(), out.data(), parts, batch, rows.extent(0) / batch, heads,
                                  c / heads);
}

/// \brief The inverse of split_heads: rows(b·T + t, p·C + h·D + i) = heads(p, b, h, t, i).
/// Label `kamp::merge_heads`.
template <class ExecutionSpace, class H, class T, class... HP, class... RP>
void merge_heads(const ExecutionSpace& space, const Kokkos::View<H*, HP...>& in, int batch, int heads, int parts,
                 const Kokkos::View<T**, RP...>& rows) {
  static_assert(std::is_same_v<std::remove_const_t<H>, T>, "kamp::merge_heads: both layouts hold one type");
  detail::check_heads("kamp::merge_heads", rows, in, batch, heads);
  const std::int64_t c = rows.extent(1) / parts;
  detail::require_row_major("kamp::merge_heads", "in", in);
  detail::require_row_major("kamp::merge_heads", "rows", rows);
  detail::move_heads_kernel<false>(space, in.data(), rows.data(), parts, batch, rows.extent(0) / batch, heads,
                                   c / heads);
}

}  // namespace kamp

#endif
