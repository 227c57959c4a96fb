#ifndef KAMP_KERNELS_NN_CROSS_ENTROPY_HPP
#define KAMP_KERNELS_NN_CROSS_ENTROPY_HPP

#include <kamp/kernels/loss_scaler.hpp>
#include <kamp/kernels/nn/detail.hpp>
#include <kamp/kernels/nn/rows.hpp>
#include <kamp/tools/traffic.hpp>

namespace kamp {

namespace detail {

template <class ExecutionSpace, class L, class D>
void cross_entropy_kernel(const ExecutionSpace& space, const L* ls, std::int64_t ld, const int* ts, L* out, D* ds,
                          std::int64_t n, std::int64_t v, L factor,
                          const Kokkos::View<const loss_scale_state, typename ExecutionSpace::memory_space>& scaler) {
  const bool backward = ds != nullptr;
  report_traffic("kamp::cross_entropy",
                 elements_bytes<L>(n * v) + elements_bytes<int, L>(n) + (backward ? elements_bytes<D>(n * v) : 0.0));
  using member = typename Kokkos::TeamPolicy<ExecutionSpace>::member_type;
  for_each_row(
      "kamp::cross_entropy", space, n, KOKKOS_LAMBDA(const member& m, std::int64_t r) {
        const L* KAMP_RESTRICT z = ls + r * ld;
        const int target = ts[r];
        const L top = row_max<L>(m, v, [&](std::int64_t j) { return z[j]; });
        const L sum = row_sum<L>(m, v, [&](std::int64_t j) { return exp_of(z[j] - top); });
        row_once(m, [&] { out[r] = log_of(sum) + top - z[target]; });
        if (!backward) return;
        const L scale = scaler.data() != nullptr ? L(scaler().scale) * factor : factor;
        const L inv = L(1) / sum;
        D* KAMP_RESTRICT d = ds + r * v;
        row_for(m, v, [&](std::int64_t j) {
          store_nearest(d + j, (exp_of(z[j] - top) * inv - (j == target ? L(1) : L(0))) * scale);
        });
      });
}

}  // namespace detail

/// \brief Softmax cross-entropy per row, fused with its gradient, all statistics in fp32 (fp64
/// for fp64 data).
///
/// \param logits  (N, V) fp32 (or fp64)
/// \param targets (N) class indices in [0, V)
/// \param losses  (N) -log softmax(logits)[target]
/// \param dlogits (N, V) (softmax − onehot) · grad_scale, and times the loss scale when `scaler`
///                is given (read on the device: the backward pass starts from loss × scale);
///                an empty view computes the losses only (validation)
/// grad_scale is dLoss/dloss_row, 1/N for a mean over N rows. Label `kamp::cross_entropy`.
template <class ExecutionSpace, class L, class D, class... LP, class... TP, class... LSP, class... DP>
void cross_entropy(const ExecutionSpace& space, const Kokkos::View<L**, LP...>& logits,
                   const Kokkos::View<const int*, TP...>& targets,
                   const Kokkos::View<std::remove_const_t<L>*, LSP...>& losses, const Kokkos::View<D**, DP...>& dlogits,
                   double grad_scale,
                   const Kokkos::View<const loss_scale_state, typename ExecutionSpace::memory_space>& scaler = {}) {
  using acc = std::remove_const_t<L>;
  const std::int64_t n = logits.extent(0), v = logits.extent(1);
  detail::check_extent("kamp::cross_entropy", "targets", targets.extent(0), n);
  detail::check_extent("kamp::cross_entropy", "losses", losses.extent(0), n);
  if (dlogits.data() != nullptr)
    detail::check_extent("kamp::cross_entropy", "dlogits", dlogits.extent(0) * dlogits.extent(1), n * v);
  detail::cross_entropy_kernel<ExecutionSpace, acc>(space, logits.data(), logits.stride(0), targets.data(),
                                                    losses.data(), dlogits.data(), n, v, static_cast<acc>(grad_scale),
                                                    scaler);
}

}  // namespace kamp

#endif
