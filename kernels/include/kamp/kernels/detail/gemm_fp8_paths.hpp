#ifndef KAMP_KERNELS_DETAIL_GEMM_FP8_PATHS_HPP
#define KAMP_KERNELS_DETAIL_GEMM_FP8_PATHS_HPP

// gemm_fp8's paths: its workspace, route, region names, the bf16 widening and the epilogue (gemm_fp8.hpp).
#include <kamp/config.hpp>
#include <kamp/kernels/detail/chunked_range.hpp>
#include <kamp/kernels/gemm.hpp>
#include <kamp/kernels/tpls/gemm_cublaslt_fp8.hpp>
#include <kamp/numeric/convert.hpp>
#include <kamp/numeric/element_access.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <string>
#include <type_traits>

namespace kamp {
namespace detail {

/// Scratch of the FP8 GEMMs in one memory space: the fp32 product and (hosts) the bf16 operands.
/// Grown to the largest problem seen, freed by Kokkos::finalize. FP8 GEMMs in one memory space
/// share it, so they must be issued on one execution space instance at a time (one stream
/// orders them), as a model's passes are.
template <class MemorySpace>
class fp8_gemm_workspace {
 public:
  static fp8_gemm_workspace& instance() {
    static fp8_gemm_workspace& w = *[] {
      auto* created = new fp8_gemm_workspace;
      Kokkos::push_finalize_hook([created] {
        created->product_ = {};
        created->a_ = {};
        created->b_ = {};
      });
      return created;
    }();
    return w;
  }
  float* product(std::size_t n) { return grown(product_, n, "kamp::gemm_fp8::product"); }
  bf16* operand(int which, std::size_t n) {
    return grown(which == 0 ? a_ : b_, n, which == 0 ? "kamp::gemm_fp8::a" : "kamp::gemm_fp8::b");
  }

 private:
  template <class T>
  static T* grown(Kokkos::View<T*, MemorySpace>& v, std::size_t n, const char* label) {
    if (v.extent(0) < n)
      v = Kokkos::View<T*, MemorySpace>(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string(label)), n);
    return v.data();
  }
  Kokkos::View<float*, MemorySpace> product_;
  Kokkos::View<bf16*, MemorySpace> a_, b_;
};

template <class ExecutionSpace>
constexpr bool is_host_space() {
  return Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename ExecutionSpace::memory_space>::accessible &&
         std::is_same_v<typename ExecutionSpace::memory_space, Kokkos::HostSpace>;
}

/// The bf16 problem the widened path hands to kamp::gemm: contiguous operands, fp32 product.
template <class TA, class TB, class TC>
gemm_problem<bf16, bf16, float> widened_problem(const gemm_problem<TA, TB, TC>& p, bf16* a, bf16* b, float* product) {
  const int a_cols = p.trans_a ? p.m : p.k, b_cols = p.trans_b ? p.k : p.n;
  return {p.m, p.n, p.k, 1, p.trans_a, p.trans_b, 1.0f, 0.0f, a, a_cols, 0, b, b_cols, 0, product, p.n, 0, nullptr};
}

/// p's product alone, alpha 1 and no bias, into the fp32 rows `product` (ld n): the scales, beta
/// and the bias are the epilogue's.
template <class TA, class TB, class TC>
gemm_problem<TA, TB, float> fp8_product_problem(const gemm_problem<TA, TB, TC>& p, float* product) {
  auto q = shaped_problem<TA, TB, float>(p.m, p.n, p.k);
  q.trans_a = p.trans_a;
  q.trans_b = p.trans_b;
  q.a = p.a;
  q.lda = p.lda;
  q.b = p.b;
  q.ldb = p.ldb;
  q.c = product;
  q.ldc = p.n;
  return q;
}

struct fp8_route {
  const char* path;
  std::string reason;
};

/// Where an FP8 problem runs and why (each path says whether it serves it).
template <class ExecutionSpace, class TA, class TB, class TC>
fp8_route gemm_fp8_route(const gemm_problem<TA, TB, TC>& p, gemm_algorithm algorithm) {
  std::string why;
  if (algorithm == gemm_algorithm::automatic) {
#if defined(KAMP_ENABLE_CUBLAS) && defined(KOKKOS_ENABLE_CUDA) && KAMP_HAVE_CUBLASLT_FP8
    if constexpr (std::is_same_v<ExecutionSpace, Kokkos::Cuda>) {
      const std::string no = cublaslt_fp8::declines<TA, TB, TC>(p);
      if (no.empty()) return {"cublaslt", "cublaslt: cublasLtMatmul, fp32 accumulation, scales read on the device"};
      why = "cublaslt declines: " + no + "; ";
    }
#endif
    if constexpr (is_host_space<ExecutionSpace>()) {
      const auto q = widened_problem(p, nullptr, nullptr, nullptr);
      const gemm_route<ExecutionSpace, bf16, bf16, float> bf16_route(q, gemm_algorithm::automatic, gemm_vendor_order());
      if (std::string_view(bf16_route.path) != "portable")
        return {"bf16_widened", why + "bf16_widened: operands widened to bf16 (exact), kamp::gemm takes " +
                                    bf16_route.path + " for bf16 x bf16 -> fp32"};
      why += "bf16_widened declines: kamp::gemm has no vendor path for bf16 here; ";
    }
  }
  return {"portable", why + "portable: kamp's own tiled kernel, the FP8 tiles widened as they are loaded"};
}

/// The region name of a path for these types, built once per combination.
template <class TA, class TB, class TC>
const std::string& gemm_fp8_region(const char* path) {
  static const std::string cublaslt = gemm_region_name<TA, TB, TC>("cublaslt", "kamp::gemm_fp8"),
                           widened = gemm_region_name<TA, TB, TC>("bf16_widened", "kamp::gemm_fp8"),
                           portable = gemm_region_name<TA, TB, TC>("portable", "kamp::gemm_fp8");
  const std::string_view p(path);
  return p == "cublaslt" ? cublaslt : p == "bf16_widened" ? widened : portable;
}

/// rows x cols FP8 (row stride ld) into contiguous bf16, exactly.
template <class ExecutionSpace, class T>
void widen_fp8_to_bf16(const ExecutionSpace& space, bf16* dst, const T* src, int rows, int cols, std::int64_t ld) {
  Kokkos::parallel_for(
      "kamp::gemm_fp8::widen", Kokkos::RangePolicy<ExecutionSpace>(space, 0, rows), KOKKOS_LAMBDA(int r) {
        const T* KAMP_RESTRICT in = src + std::int64_t(r) * ld;
        bf16* KAMP_RESTRICT out = dst + std::int64_t(r) * cols;
        KAMP_SIMD()
        for (int c = 0; c < cols; ++c) out[c].bits = std::uint16_t(widen_fp8_bits<T>(in[c].bits) >> 16);
      });
}

/// C = alpha·sa·sb·product + beta·C + bias (the scales left out where the product has them:
/// `scaled`), rounded once into C (in place when C is the product). Hosts take a row per work
/// item (a vectorized loop); GPUs an element per thread, columns innermost (coalesced).
template <class ExecutionSpace, class TC>
void fp8_gemm_epilogue(const ExecutionSpace& space, const float* product, TC* c, std::int64_t ldc, int m, int n,
                       float alpha, const Kokkos::View<const float, typename ExecutionSpace::memory_space>& sa,
                       const Kokkos::View<const float, typename ExecutionSpace::memory_space>& sb, bool scaled,
                       float beta, const float* bias) {
  const auto element = KOKKOS_LAMBDA(int i, int j, float s) {
    float v = s * product[std::int64_t(i) * n + j];
    TC* out = c + std::int64_t(i) * ldc + j;
    if (beta != 0.0f) v += beta * load_float(out);
    if (bias != nullptr) v += bias[j];
    store_nearest(out, v);
  };
  if constexpr (is_host_space<ExecutionSpace>()) {
    Kokkos::parallel_for(
        "kamp::gemm_fp8::scale", Kokkos::RangePolicy<ExecutionSpace>(space, 0, m), KOKKOS_LAMBDA(int i) {
          const float s = scaled ? alpha : alpha * (sa() * sb());
          for (int j = 0; j < n; ++j) element(i, j, s);
        });
  } else {
    Kokkos::parallel_for(
        "kamp::gemm_fp8::scale", Kokkos::MDRangePolicy<ExecutionSpace, Kokkos::Rank<2>>(space, {0, 0}, {m, n}),
        KOKKOS_LAMBDA(int i, int j) { element(i, j, scaled ? alpha : alpha * (sa() * sb())); });
  }
}

}  // namespace detail

}  // namespace kamp

#endif
