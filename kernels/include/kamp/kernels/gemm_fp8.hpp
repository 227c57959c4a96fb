#ifndef KAMP_KERNELS_GEMM_FP8_HPP
#define KAMP_KERNELS_GEMM_FP8_HPP

// FP8 GEMMs with per-tensor scaling: C = alpha · (sa · sb) · op(A)·op(B) + beta·C + bias, where
// A and B are FP8 and sa, sb their scale_inv, scalars on the device written by the quantizing
// casts (kamp::quantize_fp8). Products of FP8 values are exact in fp32 and accumulate in fp32.
//
// Paths, the first that serves the problem:
//  - cublaslt: cuBLASLt's FP8 kernels (CUDA, compute capability >= 8.9, the TN layout; with a
//    bias its fp32 product goes through kamp's epilogue);
//  - bf16_widened: on a host, both operands widened to bf16 (exact: every E4M3 and E5M2 value
//    is a bf16 value) and handed to kamp::gemm, which runs oneDNN's bf16 kernels (AVX512-BF16,
//    AMX) or its own widened fp32 path; taken only when that GEMM has a vendor path;
//  - portable: kamp's tiled kernel on the FP8 operands (widened as the tiles are loaded).
// Except for cuBLASLt, which applies the scales itself, the product lands in fp32 (C itself when
// C is fp32, beta is 0 and there is no bias, else a workspace) and one element-wise pass applies
// the scales, beta·C and the bias, rounding C once.
#include <kamp/config.hpp>
#include <kamp/kernels/detail/chunked_range.hpp>
#include <kamp/kernels/detail/gemm_fp8_paths.hpp>
#include <kamp/kernels/gemm.hpp>
#include <kamp/kernels/tpls/gemm_cublaslt_fp8.hpp>
#include <kamp/numeric/convert.hpp>
#include <kamp/numeric/element_access.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <string>
#include <type_traits>

namespace kamp {

/// \brief The path `gemm_fp8` takes for this call, and why.
template <class ExecutionSpace, class AView, class BView, class CView>
gemm_path_info gemm_fp8_path_for(op op_a, op op_b, const AView& A, const BView& B, const CView& C,
                                 const Kokkos::View<const float*, typename ExecutionSpace::memory_space>& bias = {}) {
  const auto p = detail::make_gemm_problem("kamp::gemm_fp8_path_for", op_a, op_b, 1.0f, A, B, 0.0f, C, bias.data(),
                                           bias.extent(0), false);
  auto r = detail::gemm_fp8_route<ExecutionSpace>(p, gemm_algorithm::automatic);
  return {r.path, r.reason};
}

/// \brief C = alpha · a_scale_inv · b_scale_inv · op(A)·op(B) + beta·C (+ bias on every row).
///
/// \param A, B FP8 rank-2 views (E4M3 or E5M2, OCP or fnuz; cuBLASLt takes no E5M2 x E5M2)
/// \param a_scale_inv, b_scale_inv scalars in the execution space's memory: what the casts that
///        made A and B wrote (kamp::scale_inv_of), so nothing waits for the host
/// \param C fp32 or bf16, rounded once; beta == 0 never reads it
/// Products accumulate in fp32 on every path. Operands may be sub-views with a leading dimension.
template <class ExecutionSpace, class AView, class BView, class CView>
void gemm_fp8(const ExecutionSpace& space, op op_a, op op_b, float alpha, const AView& A,
              const Kokkos::View<const float, typename ExecutionSpace::memory_space>& a_scale_inv, const BView& B,
              const Kokkos::View<const float, typename ExecutionSpace::memory_space>& b_scale_inv, float beta,
              const CView& C, const Kokkos::View<const float*, typename ExecutionSpace::memory_space>& bias = {},
              gemm_algorithm algorithm = gemm_algorithm::automatic) {
  using TA = typename AView::non_const_value_type;
  using TB = typename BView::non_const_value_type;
  using TC = typename CView::non_const_value_type;
  using memory = typename ExecutionSpace::memory_space;
  static_assert(AView::rank == 2 && BView::rank == 2 && CView::rank == 2, "kamp::gemm_fp8: rank-2 views");
  static_assert(is_float8_v<TA> && is_float8_v<TB>, "kamp::gemm_fp8: A and B are FP8");
  static_assert(std::is_same_v<TC, float> || std::is_same_v<TC, bf16>, "kamp::gemm_fp8: C is fp32 or bf16");
  static_assert(!std::is_const_v<typename CView::value_type>, "kamp::gemm_fp8: C must be writable");
  const auto p =
      detail::make_gemm_problem("kamp::gemm_fp8", op_a, op_b, alpha, A, B, beta, C, bias.data(), bias.extent(0), false);
  if (p.m == 0 || p.n == 0) return;
  const detail::fp8_route route = detail::gemm_fp8_route<ExecutionSpace>(p, algorithm);
  if (traffic_listener* listener = detail::traffic_slot())
    listener->gemm(detail::gemm_record_of(p, route.path, route.path));
  Kokkos::Profiling::pushRegion(detail::gemm_fp8_region<TA, TB, TC>(route.path));
  const std::string_view path(route.path);
  auto& workspace = detail::fp8_gemm_workspace<memory>::instance();
#if defined(KAMP_ENABLE_CUBLAS) && defined(KOKKOS_ENABLE_CUDA) && KAMP_HAVE_CUBLASLT_FP8
  if constexpr (std::is_same_v<ExecutionSpace, Kokkos::Cuda> && detail::cublaslt_fp8::types_served<TA, TB, TC>()) {
    if (path == "cublaslt") {
      if (!detail::cublaslt_fp8::staged(p)) {
        detail::cublaslt_fp8::run<TA, TB, TC>(space, p, a_scale_inv.data(), b_scale_inv.data());
      } else {
        // cuBLASLt adds no fp32 bias to a bf16 C: the scaled product in fp32, then one rounding.
        float* product = workspace.product(std::size_t(p.m) * p.n);
        const auto q = detail::fp8_product_problem(p, product);
        detail::cublaslt_fp8::run<TA, TB, float>(space, q, a_scale_inv.data(), b_scale_inv.data());
        detail::fp8_gemm_epilogue(space, product, p.c, p.ldc, p.m, p.n, alpha, a_scale_inv, b_scale_inv, true, beta,
                                  bias.data());
      }
      Kokkos::Profiling::popRegion();
      return;
    }
  }
#endif
  const bool in_place = std::is_same_v<TC, float> && beta == 0.0f && bias.data() == nullptr && p.ldc == p.n;
  float* product = in_place ? reinterpret_cast<float*>(p.c) : workspace.product(std::size_t(p.m) * p.n);
  if constexpr (detail::is_host_space<ExecutionSpace>()) {
    if (path == "bf16_widened") {
      const int a_rows = p.trans_a ? p.k : p.m, a_cols = p.trans_a ? p.m : p.k;
      const int b_rows = p.trans_b ? p.n : p.k, b_cols = p.trans_b ? p.k : p.n;
      bf16* a = workspace.operand(0, std::size_t(a_rows) * a_cols);
      bf16* b = workspace.operand(1, std::size_t(b_rows) * b_cols);
      detail::widen_fp8_to_bf16(space, a, p.a, a_rows, a_cols, p.lda);
      detail::widen_fp8_to_bf16(space, b, p.b, b_rows, b_cols, p.ldb);
      detail::gemm_dispatch(space, detail::widened_problem(p, a, b, product), gemm_algorithm::automatic);
    }
  }
  if (path == "portable") {
    const auto q = detail::fp8_product_problem(p, product);
    detail::gemm_portable_storing(space, q, detail::no_epilogue{});
  }
  detail::fp8_gemm_epilogue(space, product, p.c, p.ldc, p.m, p.n, alpha, a_scale_inv, b_scale_inv, false, beta,
                            bias.data());
  Kokkos::Profiling::popRegion();
}

}  // namespace kamp

#endif
