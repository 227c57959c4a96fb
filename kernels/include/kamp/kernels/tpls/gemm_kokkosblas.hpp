#ifndef KAMP_KERNELS_TPLS_GEMM_KOKKOSBLAS_HPP
#define KAMP_KERNELS_TPLS_GEMM_KOKKOSBLAS_HPP

// fp32 x fp32 -> fp32 through Kokkos Kernels' KokkosBlas::gemm, which itself dispatches to the
// BLAS it was built with (OpenBLAS on the host, cuBLAS on CUDA).
#include <kamp/config.hpp>
#include <kamp/kernels/detail/gemm_portable.hpp>
#include <kamp/kernels/tpls/gemm_tpl_avail.hpp>

#ifdef KAMP_ENABLE_KOKKOSKERNELS
#include <KokkosBlas3_gemm.hpp>

#include <string>

namespace kamp::detail {

// The host's default execution space only: KokkosBlas::gemm (3.4 API) runs on the views'
// default space, and on CUDA kamp calls cuBLAS itself (tpls/gemm_cublas.hpp).
template <>
struct gemm_tpl<kokkosblas_path, Kokkos::DefaultHostExecutionSpace, float, float, float> {
  using ExecutionSpace = Kokkos::DefaultHostExecutionSpace;
  static constexpr bool available = true;
  static constexpr const char* name = "kokkosblas";

  /// Kokkos Kernels reaches its BLAS only for LayoutLeft/LayoutRight views, so rows must be
  /// contiguous (ld == columns); other shapes take the portable path, and so does K = 0, where
  /// KokkosBlas 3.4 leaves C unscaled by beta.
  static bool accepts(const gemm_problem<float, float, float>& p) {
    return p.k > 0 && p.bias == nullptr && p.lda == (p.trans_a ? p.m : p.k) && p.ldb == (p.trans_b ? p.k : p.n) &&
           p.ldc == p.n;
  }

  static std::string explain(const gemm_problem<float, float, float>& p) {
    if (p.k == 0) return "KokkosBlas leaves C unscaled for K = 0";
    if (p.bias != nullptr) return "KokkosBlas adds no bias";
    if (!accepts(p)) return "KokkosBlas reaches its BLAS only for contiguous rows";
    return "Kokkos Kernels' BLAS sgemm";
  }

  static void run(const ExecutionSpace&, const gemm_problem<float, float, float>& p) {
    using memory = typename ExecutionSpace::memory_space;
    using view = Kokkos::View<float**, Kokkos::LayoutRight, memory, Kokkos::MemoryUnmanaged>;
    using const_view = Kokkos::View<const float**, Kokkos::LayoutRight, memory, Kokkos::MemoryUnmanaged>;
    for (int b = 0; b < p.batch; ++b) {
      const const_view a(p.a_of(b), p.trans_a ? p.k : p.m, p.trans_a ? p.m : p.k);
      const const_view bm(p.b_of(b), p.trans_b ? p.n : p.k, p.trans_b ? p.k : p.n);
      const view c(p.c_of(b), p.m, p.n);
      KokkosBlas::gemm(p.trans_a ? "T" : "N", p.trans_b ? "T" : "N", p.alpha, a, bm, p.beta, c);
    }
  }
};

}  // namespace kamp::detail

#endif
#endif
