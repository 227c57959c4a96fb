#ifndef KAMP_KERNELS_TPLS_GEMM_TPL_AVAIL_HPP
#define KAMP_KERNELS_TPLS_GEMM_TPL_AVAIL_HPP

namespace kamp::detail {

/// Whether a vendor library computes C = alpha op(A) op(B) + beta C for these element types on
/// this execution space. False in general; each tpls/gemm_<vendor>.hpp specializes it (with a
/// `name` and a static `run(space, problem)`) when that vendor was enabled at configure time.
template <class ExecutionSpace, class TA, class TB, class TC>
struct gemm_tpl {
  static constexpr bool available = false;
};

}  // namespace kamp::detail

#endif
