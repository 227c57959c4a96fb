#ifndef KAMP_KERNELS_TPLS_GEMM_CUBLAS_HPP
#define KAMP_KERNELS_TPLS_GEMM_CUBLAS_HPP

// fp32/bf16/fp16 GEMMs on CUDA through cublasGemmEx with fp32 compute.
#include <kamp/config.hpp>
#include <kamp/kernels/detail/gemm_portable.hpp>
#include <kamp/kernels/tpls/gemm_tpl_avail.hpp>
#include <kamp/numeric/format.hpp>

#if defined(KAMP_ENABLE_CUBLAS) && defined(KOKKOS_ENABLE_CUDA)
#include <cublas_v2.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace kamp::detail {

template <class T>
constexpr cudaDataType_t cuda_type() {
  if constexpr (std::is_same_v<T, float>)
    return CUDA_R_32F;
  else if constexpr (std::is_same_v<T, bf16>)
    return CUDA_R_16BF;
  else
    return CUDA_R_16F;
}

/// One cuBLAS handle per process (cublasCreate is expensive); the stream is set per call.
inline cublasHandle_t cublas_handle() {
  static cublasHandle_t handle = [] {
    cublasHandle_t h;
    if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) throw std::runtime_error("kamp::gemm: cublasCreate failed");
    return h;
  }();
  return handle;
}

/// The compute capability (major * 10 + minor) of the device Kokkos runs on, read once.
inline int cuda_compute_capability() {
  static const int cc = [] {
    int device = 0, major = 0, minor = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device);
    return major * 10 + minor;
  }();
  return cc;
}

/// cublasGemmEx takes bf16 operands from compute capability 8.0 on, fp16 from 5.3.
template <class T>
constexpr int cublas_minimum_capability() {
  return std::is_same_v<T, bf16> ? 80 : std::is_same_v<T, fp16> ? 53 : 0;
}

template <class TA, class TB, class TC>
struct gemm_tpl<cublas_path, Kokkos::Cuda, TA, TB, TC> {
  static constexpr bool available =
      !std::is_same_v<TA, double> && !std::is_same_v<TB, double> && !std::is_same_v<TC, double>;
  static constexpr const char* name = "cublas";
  static constexpr int needed =
      std::max({cublas_minimum_capability<TA>(), cublas_minimum_capability<TB>(), cublas_minimum_capability<TC>()});
  static bool accepts(const gemm_problem<TA, TB, TC>& p) {
    return p.bias == nullptr && p.k > 0 && cuda_compute_capability() >= needed;
  }
  static std::string explain(const gemm_problem<TA, TB, TC>& p) {
    const std::string device = "compute capability " + std::to_string(cuda_compute_capability() / 10) + "." +
                               std::to_string(cuda_compute_capability() % 10);
    if (cuda_compute_capability() < needed)
      return "cublasGemmEx needs compute capability " + std::to_string(needed / 10) + "." +
             std::to_string(needed % 10) + " for these types; this device has " + device;
    if (p.k == 0) return "not called for K = 0";
    if (p.bias != nullptr) return "cublasGemmEx adds no bias";
    return "cublasGemmStridedBatchedEx, fp32 compute, " + device;
  }
  /// Attention's heads in place have two batch strides: one call per outer batch.
  static std::string implementation(const gemm_problem<TA, TB, TC>& p) {
    const int calls = p.one_batch_stride() ? 1 : p.batch / p.inner;
    return "cublasGemmStridedBatchedEx" + (calls > 1 ? " x" + std::to_string(calls) : std::string());
  }
  static void run(const Kokkos::Cuda& space, const gemm_problem<TA, TB, TC>& p) {
    const cublasHandle_t h = cublas_handle();
    cublasSetStream(h, space.cuda_stream());
    // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: swap the operands.
    const cublasOperation_t opb = p.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, opa = p.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    // Two batch dimensions with one stride between all batches are one; otherwise one call per
    // outer batch, each over the inner batches.
    const bool one_call = p.one_batch_stride();
    const int calls = one_call ? 1 : p.batch / p.inner, per_call = one_call ? p.batch : p.inner;
    const auto stride = [&](std::int64_t outer, std::int64_t inner) { return p.inner == 1 ? outer : inner; };
    for (int o = 0; o < calls; ++o) {
      const cublasStatus_t s = cublasGemmStridedBatchedEx(
          h, opb, opa, p.n, p.m, p.k, &p.alpha, p.b_of(o * p.inner), cuda_type<TB>(), int(p.ldb),
          stride(p.stride_b, p.inner_stride_b), p.a_of(o * p.inner), cuda_type<TA>(), int(p.lda),
          stride(p.stride_a, p.inner_stride_a), &p.beta, p.c_of(o * p.inner), cuda_type<TC>(), int(p.ldc),
          stride(p.stride_c, p.inner_stride_c), per_call, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
      if (s != CUBLAS_STATUS_SUCCESS)
        throw std::runtime_error("kamp::gemm: cublasGemmStridedBatchedEx failed with status " + std::to_string(int(s)));
    }
  }
};

}  // namespace kamp::detail

#endif
#endif
