#ifndef KAMP_KERNELS_NN_CAUSAL_SOFTMAX_HPP
#define KAMP_KERNELS_NN_CAUSAL_SOFTMAX_HPP

#include <kamp/kernels/nn/detail/nn_common.hpp>
#include <kamp/kernels/nn/rows.hpp>
#include <kamp/tools/traffic.hpp>

namespace kamp {

namespace detail {

template <class ExecutionSpace, class S, class P>
void causal_softmax_forward_kernel(const ExecutionSpace& space, S* ss, P* ps, std::int64_t rows, std::int64_t t) {
  // Per visible element (half the row, on average): max, subtract, exp, sum; per element: scale,
  // select, store; per row: one division.
  const double visible = double(rows) * double(t + 1) / 2;
  report_traffic("kamp::causal_softmax_forward", elements_bytes<S, P>(rows * t),
                 visible * kernel_arithmetic{3, 1} + double(rows * t) * kernel_arithmetic{2 + round_ops<P>()} +
                     double(rows) * kernel_arithmetic{0, 0, 1});
  using member = typename Kokkos::TeamPolicy<ExecutionSpace>::member_type;
  for_each_row(
      "kamp::causal_softmax_forward", space, rows, KOKKOS_LAMBDA(const member& m, std::int64_t r) {
        S* KAMP_RESTRICT s = ss + r * t;
        P* KAMP_RESTRICT p = ps + r * t;
        const std::int64_t visible = r % t + 1;
        const S top = row_max<S>(m, visible, [&](std::int64_t j) { return s[j]; });
        const S sum = row_sum<S>(m, visible, [&](std::int64_t j) {
          s[j] = exp_of(s[j] - top);
          return s[j];
        });
        const S inv = S(1) / sum;
        row_for(m, t, [&](std::int64_t j) {
          const S v = j < visible ? s[j] * inv : S(0);
          s[j] = v;
          store_nearest(p + j, v);
        });
      });
}

template <class ExecutionSpace, class S, class D>
void causal_softmax_backward_kernel(const ExecutionSpace& space, const S* ps, const S* dps, D* ds, std::int64_t rows,
                                    std::int64_t t) {
  // Per visible element: the dot product's multiply-add; per element: subtract, multiply, select, store.
  report_traffic("kamp::causal_softmax_backward", elements_bytes<S, S, D>(rows * t),
                 double(rows) * double(t + 1) / 2 * kernel_arithmetic{2} +
                     double(rows * t) * kernel_arithmetic{3 + round_ops<D>()});
  using member = typename Kokkos::TeamPolicy<ExecutionSpace>::member_type;
  for_each_row(
      "kamp::causal_softmax_backward", space, rows, KOKKOS_LAMBDA(const member& m, std::int64_t r) {
        const S* KAMP_RESTRICT p = ps + r * t;
        const S* KAMP_RESTRICT dp = dps + r * t;
        D* KAMP_RESTRICT d = ds + r * t;
        const std::int64_t visible = r % t + 1;
        const S dot = row_sum<S>(m, visible, [&](std::int64_t j) { return p[j] * dp[j]; });
        row_for(m, t, [&](std::int64_t j) { store_nearest(d + j, j < visible ? p[j] * (dp[j] - dot) : S(0)); });
      });
}

}  // namespace detail

/// \brief Causal softmax of attention scores, statistics in fp32 (fp64 for fp64 data).
///
/// \param scores (R, T) rows of (batch, head, query) scores, already scaled; row r is query
///               position r % T, which sees keys 0..r%T. Overwritten by the probabilities
///               (zero above the diagonal), which the backward pass reads.
/// \param probs  (R, T) the same probabilities in the compute type of the P·V GEMM
/// Label `kamp::causal_softmax_forward`.
template <class ExecutionSpace, class S, class P, class... SP, class... PP>
void causal_softmax_forward(const ExecutionSpace& space, const Kokkos::View<S**, SP...>& scores,
                            const Kokkos::View<P**, PP...>& probs) {
  const std::int64_t rows = scores.extent(0), t = scores.extent(1);
  detail::check_extent("kamp::causal_softmax_forward", "probs", probs.extent(0) * probs.extent(1), rows * t);
  detail::require_row_major("kamp::causal_softmax_forward", "scores", scores);
  detail::require_row_major("kamp::causal_softmax_forward", "probs", probs);
  detail::causal_softmax_forward_kernel(space, scores.data(), probs.data(), rows, t);
}

/// \brief dS = P ⊙ (dP − rowsum(dP ⊙ P)): the softmax backward pass on (R, T) rows; masked
/// entries get zero. Label `kamp::causal_softmax_backward`.
template <class ExecutionSpace, class S, class D, class... SP, class... DSP, class... DP>
void causal_softmax_backward(const ExecutionSpace& space, const Kokkos::View<S**, SP...>& probs,
                             const Kokkos::View<S**, DP...>& dprobs, const Kokkos::View<D**, DSP...>& dscores) {
  const std::int64_t rows = probs.extent(0), t = probs.extent(1);
  detail::check_extent("kamp::causal_softmax_backward", "dprobs", dprobs.extent(0) * dprobs.extent(1), rows * t);
  detail::check_extent("kamp::causal_softmax_backward", "dscores", dscores.extent(0) * dscores.extent(1), rows * t);
  detail::require_row_major("kamp::causal_softmax_backward", "probs", probs);
  detail::require_row_major("kamp::causal_softmax_backward", "dprobs", dprobs);
  detail::require_row_major("kamp::causal_softmax_backward", "dscores", dscores);
  detail::causal_softmax_backward_kernel(space, probs.data(), dprobs.data(), dscores.data(), rows, t);
}

}  // namespace kamp

#endif
