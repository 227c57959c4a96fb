#ifndef KAMP_KERNELS_GEMM_EPILOGUE_HPP
#define KAMP_KERNELS_GEMM_EPILOGUE_HPP

// GEMM epilogues: what a layer applies to its GEMM's result before anything else reads it. The
// portable kernel applies them as it writes C (one launch, as cuBLASLt's epilogues do); a vendor
// GEMM that cannot write both outputs (oneDNN's post-ops have no auxiliary output, cublasGemmEx
// and KokkosBlas no epilogue) is followed by one element-wise pass.
#include <kamp/kernels/gemm.hpp>
#include <kamp/kernels/nn/gelu.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace kamp {
namespace detail {

/// Stores the pre-activation, then its GELU from the stored (rounded) value: the bits
/// gelu_forward computes from the pre-activation a plain GEMM stores.
template <class Y>
struct gelu_epilogue {
  Y* act;
  std::int64_t ld_act;
  std::size_t elements;  ///< of pre and act, contiguous rows (the pass after a vendor GEMM)

  template <class TC, class Acc>
  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t row, std::int64_t col, TC* pre, Acc v) const {
    store_nearest(pre, v);
    store_nearest(act + row * ld_act + col, gelu_of(load_as<common_accum_t<TC, Y>>(pre)));
  }

  template <class ExecutionSpace, class Problem>
  void after(const ExecutionSpace& space, const Problem& p) const {
    gelu_forward_kernel(space, static_cast<const std::remove_pointer_t<decltype(p.c)>*>(p.c), act, elements);
  }
};

}  // namespace detail

/// \brief Linear + GELU with the pre-activation kept for the backward pass (cuBLASLt's
/// CUBLASLT_EPILOGUE_GELU_AUX_BIAS): pre = alpha·op(A)·op(B) + bias rounded once to pre's type,
/// act = GELU(pre) (tanh form, fp32 math, from the stored pre) rounded once to act's type.
///
/// The portable kernel writes both as it stores each tile (no second pass over pre); a vendor
/// GEMM (oneDNN, cuBLAS, KokkosBlas) writes pre and one fused element-wise pass, the
/// `kamp::gelu_forward` kernel, writes act. Either way act is what gelu_forward gives
/// from pre (its bits after a vendor GEMM; within GELU's error bound in the portable write-back,
/// which a compiler may contract into multiply-adds differently). pre and act are rank-2 with contiguous rows
/// (stride(0) = columns).
template <class ExecutionSpace, class AView, class BView, class PreView, class ActView>
void gemm_bias_gelu(
    const ExecutionSpace& space, op op_a, op op_b, float alpha, const AView& A, const BView& B,
    const Kokkos::View<const detail::gemm_accum_t<AView, BView, PreView>*, typename ExecutionSpace::memory_space>& bias,
    const PreView& pre, const ActView& act, gemm_algorithm algorithm = gemm_algorithm::automatic) {
  static_assert(AView::rank == 2 && BView::rank == 2 && PreView::rank == 2 && ActView::rank == 2,
                "kamp::gemm_bias_gelu: A, B, pre and act are rank-2 views");
  static_assert(!std::is_const_v<typename PreView::value_type> && !std::is_const_v<typename ActView::value_type>,
                "kamp::gemm_bias_gelu: pre and act must be writable");
  const auto p = detail::make_gemm_problem("kamp::gemm_bias_gelu", op_a, op_b, alpha, A, B, 0.0f, pre, bias.data(),
                                           bias.extent(0), false);
  if (act.extent(0) != pre.extent(0) || act.extent(1) != pre.extent(1))
    throw std::invalid_argument("kamp::gemm_bias_gelu: act is " + std::to_string(act.extent(0)) + "x" +
                                std::to_string(act.extent(1)) + ", pre is " + std::to_string(pre.extent(0)) + "x" +
                                std::to_string(pre.extent(1)) + "; they must match");
  if ((pre.extent(0) > 1 && std::size_t(pre.stride(0)) != pre.extent(1)) ||
      (act.extent(0) > 1 && std::size_t(act.stride(0)) != act.extent(1)))
    throw std::invalid_argument("kamp::gemm_bias_gelu: pre and act need contiguous rows (no leading dimension)");
  if (p.m == 0 || p.n == 0) return;
  using Y = typename ActView::non_const_value_type;
  detail::gemm_dispatch(space, p, algorithm,
                        detail::gelu_epilogue<Y>{act.data(), std::int64_t(act.extent(1)), pre.size()});
}

}  // namespace kamp

#endif
