#ifndef KAMP_KERNELS_NN_CROSS_ENTROPY_HPP
#define KAMP_KERNELS_NN_CROSS_ENTROPY_HPP

#include <kamp/kernels/loss_scaler.hpp>
#include <kamp/kernels/nn/detail.hpp>

namespace kamp {

namespace detail {

template <class ExecutionSpace, class L, class D>
void cross_entropy_kernel(const ExecutionSpace& space, const L* ls, std::int64_t ld, const int* ts, L* out, D* ds,
                          std::int64_t n, std::int64_t v, L factor,
                          const Kokkos::View<const loss_scale_state, typename ExecutionSpace::memory_space>& scaler) {
  const bool backward = ds != nullptr;
  Kokkos::parallel_for(
      "kamp::cross_entropy", row_policy(space, n), KOKKOS_LAMBDA(std::int64_t r) {
        const L* KAMP_RESTRICT z = ls + r * ld;
        const int target = ts[r];
        L m = z[0];
        for (std::int64_t j = 1; j < v; ++j) m = z[j] > m ? z[j] : m;
        L sum = 0;
        KAMP_SIMD(reduction(+ : sum))
        for (std::int64_t j = 0; j < v; ++j) sum += exp_of(z[j] - m);
        out[r] = log_of(sum) + m - z[target];
        if (!backward) return;
        const L scale = scaler.data() != nullptr ? L(scaler().scale) * factor : factor;
        const L inv = L(1) / sum;
        D* KAMP_RESTRICT d = ds + r * v;
        KAMP_SIMD()
        for (std::int64_t j = 0; j < v; ++j) store_nearest(d + j, (exp_of(z[j] - m) * inv - (j == target ? L(1) : L(0))) * scale);
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
