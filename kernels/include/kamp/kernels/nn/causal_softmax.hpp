#ifndef KAMP_KERNELS_NN_CAUSAL_SOFTMAX_HPP
#define KAMP_KERNELS_NN_CAUSAL_SOFTMAX_HPP

#include <kamp/kernels/nn/detail.hpp>

namespace kamp {

namespace detail {

template <class ExecutionSpace, class S, class P>
void causal_softmax_forward_kernel(const ExecutionSpace& space, S* ss, P* ps, std::int64_t rows, std::int64_t t) {
  Kokkos::parallel_for(
      "kamp::causal_softmax_forward", row_policy(space, rows), KOKKOS_LAMBDA(std::int64_t r) {
        S* KAMP_RESTRICT s = ss + r * t;
        P* KAMP_RESTRICT p = ps + r * t;
        const std::int64_t visible = r % t + 1;
        S m = s[0];
        for (std::int64_t j = 1; j < visible; ++j) m = s[j] > m ? s[j] : m;
        S sum = 0;
        for (std::int64_t j = 0; j < visible; ++j) {
          s[j] = exp_of(s[j] - m);
          sum += s[j];
        }
        const S inv = S(1) / sum;
        KAMP_SIMD()
        for (std::int64_t j = 0; j < t; ++j) {
          const S v = j < visible ? s[j] * inv : S(0);
          s[j] = v;
          store_nearest(p + j, v);
        }
      });
}

template <class ExecutionSpace, class S, class D>
void causal_softmax_backward_kernel(const ExecutionSpace& space, const S* ps, const S* dps, D* ds, std::int64_t rows,
                                    std::int64_t t) {
  Kokkos::parallel_for(
      "kamp::causal_softmax_backward", row_policy(space, rows), KOKKOS_LAMBDA(std::int64_t r) {
        const S* KAMP_RESTRICT p = ps + r * t;
        const S* KAMP_RESTRICT dp = dps + r * t;
        D* KAMP_RESTRICT d = ds + r * t;
        const std::int64_t visible = r % t + 1;
        S dot = 0;
        KAMP_SIMD(reduction(+ : dot))
        for (std::int64_t j = 0; j < visible; ++j) dot += p[j] * dp[j];
        KAMP_SIMD()
        for (std::int64_t j = 0; j < t; ++j) store_nearest(d + j, j < visible ? p[j] * (dp[j] - dot) : S(0));
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
  detail::causal_softmax_backward_kernel(space, probs.data(), dprobs.data(), dscores.data(), rows, t);
}

}  // namespace kamp

#endif
