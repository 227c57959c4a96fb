#ifndef KAMP_KERNELS_IMPL_GEMM_WIDENED_HPP
#define KAMP_KERNELS_IMPL_GEMM_WIDENED_HPP

// 16-bit GEMMs on a host whose vendor libraries have no 16-bit kernel for this CPU (oneDNN 2.6
// below AVX-512, fp16 anywhere): the operands are widened to fp32 and the problem runs on the
// fastest fp32 vendor path. Without bf16 dot products a bf16 GEMM is widen-then-FMA anyway, so
// this is the portable kernel's arithmetic (fp32 products and sums, one rounding of a 16-bit C)
// with the vendor's summation order.
#include <kamp/kernels/detail/chunked_range.hpp>
#include <kamp/kernels/impl/gemm_dispatch.hpp>
#include <kamp/kernels/impl/gemm_portable.hpp>
#include <kamp/kernels/tpls/gemm_tpl_avail.hpp>
#include <kamp/numeric/element_access.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <type_traits>

namespace kamp::detail {

/// The portable kernel's 4x16 fp32 register block fits the 32 vector registers of AVX-512, where
/// it outruns OpenBLAS' sgemm (1.13-1.60x measured); with AVX2's 16 it reaches half to three
/// quarters of it, so there 16-bit problems are widened for a vendor's fp32 GEMM instead.
#ifdef __AVX512F__
inline constexpr bool widen_for_host_vendors = false;
#else
inline constexpr bool widen_for_host_vendors = true;
#endif

/// fp32 buffers the widened operands go to, kept between calls (one GEMM after another reuses
/// them), grown to the largest problem seen and freed by Kokkos::finalize.
class widening_workspace {
 public:
  using buffer = Kokkos::View<float*, Kokkos::HostSpace>;
  static widening_workspace& instance() {
    static widening_workspace& w = *[] {
      auto* created = new widening_workspace;
      Kokkos::push_finalize_hook([created] {
        for (buffer& b : created->buffers_) b = buffer();
      });
      return created;
    }();
    return w;
  }
  std::mutex& mutex() { return mutex_; }
  /// Buffer `which` (0: A, 1: B, 2: C), at least `elements` long.
  float* get(int which, std::size_t elements) {
    buffer& b = buffers_[which];
    if (b.extent(0) < elements)
      b = buffer(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kamp::gemm::widened"), elements);
    return b.data();
  }

 private:
  buffer buffers_[3];
  std::mutex mutex_;
};

/// Copies `batch` matrices of rows x cols (row stride ld, batch stride stride) into dst as
/// contiguous fp32, batch after batch.
template <class T>
void widen_matrices(const Kokkos::DefaultHostExecutionSpace& space, float* dst, const T* src, int batch, int rows,
                    int cols, std::int64_t ld, std::int64_t stride) {
  Kokkos::parallel_for(
      "kamp::gemm::widen", Kokkos::RangePolicy<Kokkos::DefaultHostExecutionSpace>(space, 0, batch * rows),
      [=](int r) {
        const T* KAMP_RESTRICT in = src + (r / rows) * stride + std::int64_t(r % rows) * ld;
        float* KAMP_RESTRICT out = dst + std::int64_t(r) * cols;
        KAMP_SIMD()
        for (int c = 0; c < cols; ++c) out[c] = load_float(in + c);
      });
}

template <class TA, class TB, class TC>
struct gemm_tpl<widened_path, Kokkos::DefaultHostExecutionSpace, TA, TB, TC> {
  using ExecutionSpace = Kokkos::DefaultHostExecutionSpace;
  using problem = gemm_problem<TA, TB, TC>;
  using fp32_problem = gemm_problem<float, float, float>;
  using fp32_route = gemm_route<ExecutionSpace, float, float, float>;
  static constexpr bool available =
      widen_for_host_vendors && std::is_same_v<typename problem::accum, float> &&
      !(std::is_same_v<TA, float> && std::is_same_v<TB, float> && std::is_same_v<TC, float>);
  static constexpr const char* name = "widened";

  /// Where a vendor runs the fp32 problem; where only the portable kernel would, it may as well
  /// read the 16-bit operands itself.
  static bool accepts(const problem& p) {
    return p.k > 0 && std::string_view(route(widened(p, nullptr, nullptr, nullptr)).path) != "portable";
  }

  static std::string explain(const problem& p) {
    if (p.k == 0) return "nothing to widen for K = 0";
    const fp32_problem w = widened(p, nullptr, nullptr, nullptr);
    const fp32_route r = route(w);
    if (std::string_view(r.path) == "portable") return "no fp32 vendor path takes the widened problem";
    return std::string("operands widened to fp32") + (std::is_same_v<TC, float> ? "" : ", C rounded once") +
           " for " + gemm_explanation<ExecutionSpace>(w, r.path, gemm_vendor_order());
  }

  static void run(const ExecutionSpace& space, const problem& p) {
    widening_workspace& w = widening_workspace::instance();
    const std::lock_guard<std::mutex> lock(w.mutex());
    const int a_rows = p.trans_a ? p.k : p.m, a_cols = p.trans_a ? p.m : p.k;
    const int b_rows = p.trans_b ? p.n : p.k, b_cols = p.trans_b ? p.k : p.n;
    const auto elements = [&](int rows, int cols) { return std::size_t(p.batch) * rows * cols; };
    float* a = std::is_same_v<TA, float> ? nullptr : w.get(0, elements(a_rows, a_cols));
    float* b = std::is_same_v<TB, float> ? nullptr : w.get(1, elements(b_rows, b_cols));
    float* c = std::is_same_v<TC, float> ? nullptr : w.get(2, elements(p.m, p.n));
    if constexpr (!std::is_same_v<TA, float>) widen_matrices(space, a, p.a, p.batch, a_rows, a_cols, p.lda, p.stride_a);
    if constexpr (!std::is_same_v<TB, float>) widen_matrices(space, b, p.b, p.batch, b_rows, b_cols, p.ldb, p.stride_b);
    if constexpr (!std::is_same_v<TC, float>) {
      if (p.beta != 0.0f) widen_matrices(space, c, p.c, p.batch, p.m, p.n, p.ldc, p.stride_c);
    }
    space.fence();  // the vendor may run on its own threads
    const fp32_problem wp = widened(p, a, b, c);
    route(wp).run(space, wp);
    if constexpr (!std::is_same_v<TC, float>) {
      TC* out = p.c;
      const int m = p.m, n = p.n;
      const std::int64_t ldc = p.ldc, stride_c = p.stride_c;
      Kokkos::parallel_for(
          "kamp::gemm::round", Kokkos::RangePolicy<ExecutionSpace>(space, 0, p.batch * m), [=](int r) {
            const float* KAMP_RESTRICT in = c + std::int64_t(r) * n;
            TC* KAMP_RESTRICT row = out + (r / m) * stride_c + std::int64_t(r % m) * ldc;
            KAMP_SIMD()
            for (int j = 0; j < n; ++j) store_nearest(row + j, in[j]);
          });
      space.fence();
    }
  }

 private:
  static fp32_route route(const fp32_problem& w) { return fp32_route(w, gemm_algorithm::automatic, gemm_vendor_order()); }

  /// The fp32 problem on the widened buffers (a, b, c; each null where the operand is fp32
  /// already and is read in place).
  static fp32_problem widened(const problem& p, const float* a, const float* b, float* c) {
    const std::int64_t a_cols = p.trans_a ? p.m : p.k, b_cols = p.trans_b ? p.k : p.n;
    fp32_problem w{p.m, p.n, p.k, p.batch, p.trans_a, p.trans_b, p.alpha, p.beta, nullptr, 0, 0, nullptr, 0, 0,
                   nullptr, 0, 0, p.bias};
    if constexpr (std::is_same_v<TA, float>) {
      w.a = p.a, w.lda = p.lda, w.stride_a = p.stride_a;
    } else {
      w.a = a, w.lda = a_cols, w.stride_a = a_cols * (p.trans_a ? p.k : p.m);
    }
    if constexpr (std::is_same_v<TB, float>) {
      w.b = p.b, w.ldb = p.ldb, w.stride_b = p.stride_b;
    } else {
      w.b = b, w.ldb = b_cols, w.stride_b = b_cols * (p.trans_b ? p.n : p.k);
    }
    if constexpr (std::is_same_v<TC, float>) {
      w.c = p.c, w.ldc = p.ldc, w.stride_c = p.stride_c;
    } else {
      w.c = c, w.ldc = p.n, w.stride_c = std::int64_t(p.m) * p.n;
    }
    if (p.batch == 1) w.stride_a = w.stride_b = w.stride_c = 0;
    return w;
  }
};

}  // namespace kamp::detail

#endif
