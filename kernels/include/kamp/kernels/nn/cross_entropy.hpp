#ifndef KAMP_KERNELS_NN_CROSS_ENTROPY_HPP
#define KAMP_KERNELS_NN_CROSS_ENTROPY_HPP

#include <kamp/kernels/loss_scaler.hpp>
#include <kamp/kernels/nn/detail/nn_common.hpp>
#include <kamp/kernels/nn/rows.hpp>
#include <kamp/tools/traffic.hpp>

#include <stdexcept>
#include <type_traits>

namespace kamp {

namespace detail {

template <class ExecutionSpace, class LM, class TA, class OA, class DM>
void cross_entropy_kernel(const ExecutionSpace& space, LM ls, TA ts, OA out, DM ds, bool backward, std::int64_t dld,
                          std::int64_t n, std::int64_t v, value_of<OA> factor,
                          const Kokkos::View<const loss_scale_state, typename ExecutionSpace::memory_space>& scaler) {
  using X = typename LM::value_type;
  using D = typename DM::value_type;
  using Acc = value_of<OA>;
  // Per logit: max and the sum's subtract, exp and add; the gradient again subtract and exp,
  // then multiply, the target's select and the scale. Per row: a log, and a division backward.
  const double logits = double(n) * double(v);
  report_traffic(
      "kamp::cross_entropy",
      elements_bytes<X>(n * v) + elements_bytes<int, Acc>(n) + (backward ? elements_bytes<D>(n * dld) : 0.0),
      logits * kernel_arithmetic{3 + widen_ops<X>(), 1} +
          (backward ? logits * kernel_arithmetic{4 + widen_ops<X>() + round_ops<D>(), 1} : kernel_arithmetic{}) +
          double(n) * kernel_arithmetic{0, 0, backward ? 1.0 : 0.0, 0, 1});
  using member = typename Kokkos::TeamPolicy<ExecutionSpace>::member_type;
  for_each_row(
      "kamp::cross_entropy", space, n, KOKKOS_LAMBDA(const member& m, std::int64_t r) {
        // Not restrict: the gradient may overwrite the logits. Every read of another lane's
        // element (the target's logit, the max and the sum) comes before the reductions complete,
        // and each lane then reads only the elements it writes.
        const auto z = ls.row(r);
        const auto logit = [&](std::int64_t j) { return load_as<Acc>(z + j); };
        const int target = *(ts + r);
        const Acc target_logit = logit(target);
        const Acc top = row_max<Acc>(m, v, logit);
        const Acc sum = row_sum<Acc>(m, v, [&](std::int64_t j) { return exp_of(logit(j) - top); });
        // Relative to the max: (log(sum) + top) - target would round log(sum) away against a
        // huge top (logits of 1e30 gave a loss of exactly 0 where the true one is log(V)).
        row_once(m, [&] { *(out + r) = log_of(sum) - (target_logit - top); });
        if (!backward) return;
        const Acc scale = scaler.data() != nullptr ? Acc(scaler().scale) * factor : factor;
        const Acc inv = Acc(1) / sum;
        const auto d = ds.row(r);
        row_for(m, dld, [&](std::int64_t j) {
          store_nearest(d + j,
                        j < v ? (exp_of(logit(j) - top) * inv - (j == target ? Acc(1) : Acc(0))) * scale : Acc(0));
        });
      });
}

}  // namespace detail

/// \brief Softmax cross-entropy per row, fused with its gradient in one pass per row (llm.c's
/// fused_classifier): statistics in fp32 (fp64 for fp64 data) whatever the logits' type, no
/// probabilities stored.
///
/// \param logits  (N, V) fp32, or the 16-bit output of a 16-bit lm_head (as autocast gives it),
///                or fp64
/// \param targets (N) class indices in [0, V)
/// \param losses  (N) -log softmax(logits)[target], fp32 (fp64)
/// \param dlogits (N, V) (softmax − onehot) · grad_scale, and times the loss scale when `scaler`
///                is given (read on the device: the backward pass starts from loss × scale);
///                an empty view computes the losses only (validation). It may be `logits`
///                itself (same type and strides): the gradient then overwrites the logits, and a
///                step keeps one (N, V) buffer instead of two. It may be wider than the logits,
///                (N, Vp) with Vp >= V: columns V... are padding, no class,
///                and get a zero gradient (llm.c's padded vocabulary: the logits are then the
///                first V columns of the (N, Vp) buffer, and the gradient overwrites it whole).
/// grad_scale is dLoss/dloss_row, 1/N for a mean over N rows. Label `kamp::cross_entropy`.
template <class ExecutionSpace, class L, class S, class D, class... LP, class... TP, class... LSP, class... DP>
void cross_entropy(const ExecutionSpace& space, const Kokkos::View<L**, LP...>& logits,
                   const Kokkos::View<const int*, TP...>& targets, const Kokkos::View<S*, LSP...>& losses,
                   const Kokkos::View<D**, DP...>& dlogits, double grad_scale,
                   const Kokkos::View<const loss_scale_state, typename ExecutionSpace::memory_space>& scaler = {}) {
  static_assert(std::is_same_v<S, common_accum_t<std::remove_const_t<L>>>,
                "kamp::cross_entropy: losses are fp32 (fp64 for fp64 logits)");
  const std::int64_t n = logits.extent(0), v = logits.extent(1);
  detail::check_extent("kamp::cross_entropy", "targets", targets.extent(0), n);
  detail::check_extent("kamp::cross_entropy", "losses", losses.extent(0), n);
  const std::int64_t dld = dlogits.extent(1);
  if (dlogits.data() != nullptr) {
    detail::check_extent("kamp::cross_entropy", "dlogits rows", dlogits.extent(0), n);
    if (dld < v)
      throw std::invalid_argument("kamp::cross_entropy: dlogits is (N, Vp) with Vp >= V = " + std::to_string(v) +
                                  " columns; got " + std::to_string(dld) + " columns");
  }
  if (dlogits.data() != nullptr &&
      static_cast<const void*>(dlogits.data()) == static_cast<const void*>(logits.data()) &&
      (!std::is_same_v<std::remove_const_t<L>, D> || logits.stride(0) != dlogits.stride(0) ||
       logits.stride(1) != dlogits.stride(1)))
    throw std::invalid_argument(
        "kamp::cross_entropy: dlogits overwrites logits only in their type and with the same strides");
  detail::with_access(
      [&](auto ls, auto ts, auto out, auto ds) {
        detail::cross_entropy_kernel(space, ls, ts, out, ds, dlogits.data() != nullptr, dld, n, v,
                                     static_cast<S>(grad_scale), scaler);
      },
      logits, targets, losses, dlogits);
}

}  // namespace kamp

#endif
