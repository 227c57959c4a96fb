#ifndef KAMP_KERNELS_TPLS_GEMM_CUBLASLT_FP8_HPP
#define KAMP_KERNELS_TPLS_GEMM_CUBLASLT_FP8_HPP

// FP8 GEMMs on CUDA through cublasLtMatmul: OCP E4M3/E5M2 operands with their scale_inv as the
// A/B scale pointers (read on the device), fp32 compute with full accumulation (no fast
// accumulation), C in fp32 or bf16. cuBLASLt's FP8 kernels need compute capability 8.9 (Ada) or
// 9.0 (Hopper) and newer, the "TN" layout (in kamp's row-major terms C = A·B^T: op_a none, op_b
// transpose), leading dimensions and K in multiples of 16, and not E5M2 x E5M2.
#include <kamp/config.hpp>
#include <kamp/numeric/format.hpp>

#if defined(KAMP_ENABLE_CUBLAS) && defined(KOKKOS_ENABLE_CUDA)
#include <kamp/kernels/tpls/gemm_cublas.hpp>

#include <cublasLt.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#define KAMP_HAVE_CUBLASLT_FP8 (CUDART_VERSION >= 11080)

#if KAMP_HAVE_CUBLASLT_FP8
namespace kamp::detail {

inline cublasLtHandle_t cublaslt_handle() {
  static cublasLtHandle_t handle = [] {
    cublasLtHandle_t h;
    if (cublasLtCreate(&h) != CUBLAS_STATUS_SUCCESS) throw std::runtime_error("kamp::gemm_fp8: cublasLtCreate failed");
    return h;
  }();
  return handle;
}

template <class T>
constexpr cudaDataType_t cublaslt_type() {
  if constexpr (std::is_same_v<T, fp8_e4m3>)
    return CUDA_R_8F_E4M3;
  else if constexpr (std::is_same_v<T, fp8_e5m2>)
    return CUDA_R_8F_E5M2;
  else if constexpr (std::is_same_v<T, bf16>)
    return CUDA_R_16BF;
  else
    return CUDA_R_32F;
}

/// The cuBLASLt FP8 path for one problem (problem fields as in gemm_problem, scale_inv pointers
/// on the device). A problem with a bias runs into an fp32 workspace (`staged`), and kamp's
/// epilogue adds the bias and rounds C once.
struct cublaslt_fp8 {
  template <class TA, class TB, class TC>
  static constexpr bool types_served() {
    constexpr bool ocp = (std::is_same_v<TA, fp8_e4m3> ||
                          std::is_same_v<TA, fp8_e5m2>)&&(std::is_same_v<TB, fp8_e4m3> || std::is_same_v<TB, fp8_e5m2>);
    return ocp && !(std::is_same_v<TA, fp8_e5m2> && std::is_same_v<TB, fp8_e5m2>)&&(std::is_same_v<TC, float> ||
                                                                                    std::is_same_v<TC, bf16>);
  }

  /// FP8 matmuls came to cuBLASLt for Hopper (9.0) in CUDA 11.8 and for Ada (8.9) in CUDA 12.1.
  static constexpr int oldest_capability() { return CUDART_VERSION >= 12010 ? 89 : 90; }

  template <class Problem>
  static bool staged(const Problem& p) {
    return p.bias != nullptr;
  }

  /// Why cuBLASLt does not serve the problem; empty when it does.
  template <class TA, class TB, class TC, class Problem>
  static std::string declines(const Problem& p) {
    if constexpr (!types_served<TA, TB, TC>()) {
      return "cuBLASLt's FP8 GEMMs take OCP E4M3/E5M2 operands (not E5M2 x E5M2) into fp32 or bf16";
    } else {
      const int cc = cuda_compute_capability();
      if (cc < oldest_capability())
        return "FP8 GEMMs need compute capability " + std::to_string(oldest_capability() / 10) + "." +
               std::to_string(oldest_capability() % 10) + " with this CUDA; this device has " +
               std::to_string(cc / 10) + "." + std::to_string(cc % 10);
      if (p.trans_a || !p.trans_b) return "cuBLASLt's FP8 GEMMs take only C = A·B^T (the TN layout)";
      const std::int64_t c_row_bytes = staged(p) ? std::int64_t(p.n) * 4 : p.ldc * std::int64_t(sizeof(TC));
      const auto aligned = [](const void* q) { return reinterpret_cast<std::uintptr_t>(q) % 16 == 0; };
      if (p.k == 0 || p.k % 16 != 0 || p.lda % 16 != 0 || p.ldb % 16 != 0 || c_row_bytes % 16 != 0)
        return "K and the operands' leading dimensions must be multiples of 16 bytes (K > 0)";
      if (!aligned(p.a) || !aligned(p.b) || (!staged(p) && !aligned(p.c)))
        return "the operands must start on 16-byte boundaries";
      return {};
    }
  }

  /// C = alpha · a_scale_inv · b_scale_inv · A·B^T + beta · C, in C's type (p.c, p.ldc); the
  /// problem's bias is not read.
  template <class TA, class TB, class TC, class Problem>
  static void run(const Kokkos::Cuda& space, const Problem& p, const float* a_scale_inv, const float* b_scale_inv) {
    const auto check = [](cublasStatus_t s, const char* what) {
      if (s != CUBLAS_STATUS_SUCCESS)
        throw std::runtime_error(std::string("kamp::gemm_fp8: ") + what + " failed with status " +
                                 std::to_string(int(s)));
    };
    // Descriptors destroyed on every way out.
    struct descriptors {
      cublasLtMatmulDesc_t desc = nullptr;
      cublasLtMatrixLayout_t first = nullptr, second = nullptr, c = nullptr;
      ~descriptors() {
        if (c) cublasLtMatrixLayoutDestroy(c);
        if (second) cublasLtMatrixLayoutDestroy(second);
        if (first) cublasLtMatrixLayoutDestroy(first);
        if (desc) cublasLtMatmulDescDestroy(desc);
      }
    } d;
    // Row-major C = A·B^T is column-major C^T = B·A^T with B's rows as columns: cuBLASLt's TN.
    check(cublasLtMatmulDescCreate(&d.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
    const cublasOperation_t t = CUBLAS_OP_T, n = CUBLAS_OP_N;
    check(cublasLtMatmulDescSetAttribute(d.desc, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof(t)), "setting TRANSA");
    check(cublasLtMatmulDescSetAttribute(d.desc, CUBLASLT_MATMUL_DESC_TRANSB, &n, sizeof(n)), "setting TRANSB");
    check(
        cublasLtMatmulDescSetAttribute(d.desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &b_scale_inv, sizeof(b_scale_inv)),
        "setting the A scale pointer");
    check(
        cublasLtMatmulDescSetAttribute(d.desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &a_scale_inv, sizeof(a_scale_inv)),
        "setting the B scale pointer");
    check(cublasLtMatrixLayoutCreate(&d.first, cublaslt_type<TB>(), p.k, p.n, p.ldb), "cublasLtMatrixLayoutCreate");
    check(cublasLtMatrixLayoutCreate(&d.second, cublaslt_type<TA>(), p.k, p.m, p.lda), "cublasLtMatrixLayoutCreate");
    check(cublasLtMatrixLayoutCreate(&d.c, cublaslt_type<TC>(), p.n, p.m, p.ldc), "cublasLtMatrixLayoutCreate");
    check(cublasLtMatmul(cublaslt_handle(), d.desc, &p.alpha, p.b, d.first, p.a, d.second, &p.beta, p.c, d.c, p.c, d.c,
                         nullptr, nullptr, 0, space.cuda_stream()),
          "cublasLtMatmul");
  }
};

}  // namespace kamp::detail
#endif
#endif
#endif
