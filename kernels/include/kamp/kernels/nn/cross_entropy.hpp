#ifndef KAMP_KERNELS_NN_CROSS_ENTROPY_HPP
#define KAMP_KERNELS_NN_CROSS_ENTROPY_HPP

#include <kamp/kernels/loss_scaler.hpp>
#include <kamp/kernels/nn/detail.hpp>

namespace kamp {

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
                   const Kokkos::View<const int*, TP...>& targets, const Kokkos::View<std::remove_const_t<L>*, LSP...>& losses,
                   const Kokkos::View<D**, DP...>& dlogits, double grad_scale,
                   const Kokkos::View<const loss_scale_state, typename ExecutionSpace::memory_space>& scaler = {}) {
  using acc = std::remove_const_t<L>;
  const std::int64_t n = logits.extent(0), v = logits.extent(1);
  detail::check_extent("kamp::cross_entropy", "targets", targets.extent(0), n);
  detail::check_extent("kamp::cross_entropy", "losses", losses.extent(0), n);
  const bool backward = dlogits.data() != nullptr;
  if (backward) detail::check_extent("kamp::cross_entropy", "dlogits", dlogits.extent(0) * dlogits.extent(1), n * v);
  const auto* ls = logits.data();
  const int* ts = targets.data();
  acc* out = losses.data();
  D* ds = dlogits.data();
  const std::int64_t ld = logits.stride(0);
  const acc factor = static_cast<acc>(grad_scale);
  Kokkos::parallel_for(
      "kamp::cross_entropy", detail::row_policy(space, n), KOKKOS_LAMBDA(std::int64_t r) {
        const auto* KAMP_RESTRICT z = ls + r * ld;
        const int target = ts[r];
        acc m = z[0];
        for (std::int64_t j = 1; j < v; ++j) m = z[j] > m ? z[j] : m;
        acc sum = 0;
        KAMP_SIMD(reduction(+ : sum))
        for (std::int64_t j = 0; j < v; ++j) sum += detail::exp_of(z[j] - m);
        const acc log_sum = detail::log_of(sum);
        out[r] = log_sum + m - z[target];
        if (!backward) return;
        const acc scale = scaler.data() != nullptr ? acc(scaler().scale) * factor : factor;
        const acc inv = acc(1) / sum;
        D* KAMP_RESTRICT d = ds + r * v;
        KAMP_SIMD()
        for (std::int64_t j = 0; j < v; ++j)
          store_nearest(d + j, (detail::exp_of(z[j] - m) * inv - (j == target ? acc(1) : acc(0))) * scale);
      });
}

}  // namespace kamp

#endif
