#ifndef KAMP_KERNELS_DETAIL_GEMM_WIDENED_HPP
#define KAMP_KERNELS_DETAIL_GEMM_WIDENED_HPP

// 16-bit GEMMs on a host through an fp32 vendor problem, in one of two forms, the first that a
// vendor serves:
//  - C staged in fp32: the 16-bit operands go to the vendor as they are (oneDNN's bf16 dot
//    products), C is an fp32 workspace (beta·C widened into it first where beta != 0), rounded
//    once into the 16-bit C afterwards. A 16-bit C that the vendor would read back (beta != 0,
//    or a bias added first by kamp's prologue) takes this form, so it is rounded exactly once.
//  - everything widened: the operands are copied to fp32 for the fastest fp32 vendor path
//    (oneDNN's jit sgemm), where no vendor has the 16-bit types (bf16 below AVX-512 in oneDNN
//    2.6, fp16 in every oneDNN 2). That is the portable kernel's arithmetic (fp32 products and
//    sums, one rounding of a 16-bit C) with the vendor's summation order.
// Which form runs, or none, is what the vendors say of the problem on this machine.
#include <kamp/kernels/detail/chunked_range.hpp>
#include <kamp/kernels/detail/fence.hpp>
#include <kamp/kernels/detail/gemm_dispatch.hpp>
#include <kamp/kernels/detail/gemm_portable.hpp>
#include <kamp/kernels/tpls/gemm_tpl_avail.hpp>
#include <kamp/numeric/element_access.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <type_traits>

namespace kamp::detail {

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

/// Copies `batch` matrices of rows x cols (row stride ld, batch b at src + at(b)) into dst as
/// contiguous fp32, batch after batch.
template <class T, class BatchOffset>
void widen_matrices(const Kokkos::DefaultHostExecutionSpace& space, float* dst, const T* src, int batch, int rows,
                    int cols, std::int64_t ld, BatchOffset at) {
  Kokkos::parallel_for("kamp::gemm::widen",
                       Kokkos::RangePolicy<Kokkos::DefaultHostExecutionSpace>(space, 0, batch * rows), [=](int r) {
                         const T* KAMP_RESTRICT in = src + at(r / rows) + std::int64_t(r % rows) * ld;
                         float* KAMP_RESTRICT out = dst + std::int64_t(r) * cols;
                         KAMP_SIMD()
                         for (int c = 0; c < cols; ++c) out[c] = load_float(in + c);
                       });
}

template <class TA, class TB, class TC>
struct gemm_tpl<widened_path, Kokkos::DefaultHostExecutionSpace, TA, TB, TC> {
  using ExecutionSpace = Kokkos::DefaultHostExecutionSpace;
  using problem = gemm_problem<TA, TB, TC>;
  static constexpr bool c_is_fp32 = std::is_same_v<TC, float>;
  static constexpr bool available = std::is_same_v<typename problem::accum, float> &&
                                    !(std::is_same_v<TA, float> && std::is_same_v<TB, float> && c_is_fp32);
  static constexpr const char* name = "widened";

  static bool accepts(const problem& p) { return p.k > 0 && form(p) != staging::none; }

  static std::string explain(const problem& p) {
    if (p.k == 0) return "nothing to widen for K = 0";
    switch (form(p)) {
      case staging::c_only: {
        const auto s = staged<TA, TB>(p, nullptr, nullptr, nullptr);
        return "C summed in fp32 and rounded once, operands as they are, for " +
               gemm_explanation<ExecutionSpace>(s, route(s).path, gemm_vendor_order());
      }
      case staging::all: {
        const auto s = staged<float, float>(p, nullptr, nullptr, nullptr);
        return std::string("operands widened to fp32") + (c_is_fp32 ? "" : ", C rounded once") + " for " +
               gemm_explanation<ExecutionSpace>(s, route(s).path, gemm_vendor_order());
      }
      default:
        return "no fp32 vendor path takes the widened problem";
    }
  }

  /// The fp32 vendor kernel the staged problem runs on.
  static std::string implementation(const problem& p) {
    if (form(p) == staging::c_only) {
      const auto s = staged<TA, TB>(p, nullptr, nullptr, nullptr);
      return "fp32 C, " + route(s).implementation(s);
    }
    const auto s = staged<float, float>(p, nullptr, nullptr, nullptr);
    return "fp32 operands, " + route(s).implementation(s);
  }

  static void run(const ExecutionSpace& space, const problem& p) {
    widening_workspace& w = widening_workspace::instance();
    const std::lock_guard<std::mutex> lock(w.mutex());
    float* c = c_is_fp32 ? nullptr : w.get(2, std::size_t(p.batch) * p.m * p.n);
    if constexpr (!c_is_fp32) {
      if (p.beta != 0.0f) widen_matrices(space, c, p.c, p.batch, p.m, p.n, p.ldc, offsets_c(p));
    }
    if (form(p) == staging::c_only) {
      fence_for_host_library(space, "before a GEMM on widened operands");
      const auto s = staged<TA, TB>(p, nullptr, nullptr, c);
      route(s).run(space, s);
    } else {
      const int a_rows = p.trans_a ? p.k : p.m, a_cols = p.trans_a ? p.m : p.k;
      const int b_rows = p.trans_b ? p.n : p.k, b_cols = p.trans_b ? p.k : p.n;
      const auto elements = [&](int rows, int cols) { return std::size_t(p.batch) * rows * cols; };
      float* a = std::is_same_v<TA, float> ? nullptr : w.get(0, elements(a_rows, a_cols));
      float* b = std::is_same_v<TB, float> ? nullptr : w.get(1, elements(b_rows, b_cols));
      if constexpr (!std::is_same_v<TA, float>)
        widen_matrices(space, a, p.a, p.batch, a_rows, a_cols, p.lda,
                       [p](int i) { return p.offset(i, p.stride_a, p.inner_stride_a); });
      if constexpr (!std::is_same_v<TB, float>)
        widen_matrices(space, b, p.b, p.batch, b_rows, b_cols, p.ldb,
                       [p](int i) { return p.offset(i, p.stride_b, p.inner_stride_b); });
      fence_for_host_library(space, "before a GEMM on widened operands");
      const auto s = staged<float, float>(p, a, b, c);
      route(s).run(space, s);
    }
    if constexpr (!c_is_fp32) {
      TC* out = p.c;
      const int m = p.m, n = p.n;
      const std::int64_t ldc = p.ldc;
      const auto at = offsets_c(p);
      Kokkos::parallel_for("kamp::gemm::round", Kokkos::RangePolicy<ExecutionSpace>(space, 0, p.batch * m), [=](int r) {
        const float* KAMP_RESTRICT in = c + std::int64_t(r) * n;
        TC* KAMP_RESTRICT row = out + at(r / m) + std::int64_t(r % m) * ldc;
        KAMP_SIMD()
        for (int j = 0; j < n; ++j) store_nearest(row + j, in[j]);
      });
      fence_for_host_library(space, "the widened GEMM's workspace is free again");
    }
  }

 private:
  enum class staging { none, c_only, all };

  static auto offsets_c(const problem& p) {
    return [p](int i) { return p.offset(i, p.stride_c, p.inner_stride_c); };
  }

  template <class SA, class SB>
  static gemm_route<ExecutionSpace, SA, SB, float> route(const gemm_problem<SA, SB, float>& s) {
    return {s, gemm_algorithm::automatic, gemm_vendor_order()};
  }
  /// The first form a vendor serves: C alone staged needs a vendor with the operand types
  /// themselves (not this path again), widening everything any fp32 vendor.
  static staging form(const problem& p) {
    if constexpr (!c_is_fp32) {
      const std::string_view path = route(staged<TA, TB>(p, nullptr, nullptr, nullptr)).path;
      if (path != "portable" && path != name) return staging::c_only;
    }
    return std::string_view(route(staged<float, float>(p, nullptr, nullptr, nullptr)).path) != "portable"
               ? staging::all
               : staging::none;
  }

  /// The problem with fp32 C and operand types SA, SB (each TA/TB, read in place, or float, read
  /// from the widened buffer a/b); C is the staging buffer c where C is 16-bit.
  template <class SA, class SB>
  static gemm_problem<SA, SB, float> staged(const problem& p, const float* a, const float* b, float* c) {
    const std::int64_t a_cols = p.trans_a ? p.m : p.k, b_cols = p.trans_b ? p.k : p.n;
    auto s = shaped_problem<SA, SB, float>(p.m, p.n, p.k);
    s.batch = p.batch;
    s.trans_a = p.trans_a;
    s.trans_b = p.trans_b;
    s.alpha = p.alpha;
    s.beta = p.beta;
    s.bias = p.bias;
    s.inner = p.inner;
    // A staged operand is contiguous: `inner` matrices of `size` elements per outer batch.
    const auto contiguous = [&](std::int64_t size, std::int64_t& stride, std::int64_t& inner_stride) {
      stride = size * p.inner;
      inner_stride = size;
    };
    if constexpr (std::is_same_v<SA, TA>) {
      s.a = p.a, s.lda = p.lda, s.stride_a = p.stride_a, s.inner_stride_a = p.inner_stride_a;
    } else {
      s.a = a, s.lda = a_cols;
      contiguous(a_cols * (p.trans_a ? p.k : p.m), s.stride_a, s.inner_stride_a);
    }
    if constexpr (std::is_same_v<SB, TB>) {
      s.b = p.b, s.ldb = p.ldb, s.stride_b = p.stride_b, s.inner_stride_b = p.inner_stride_b;
    } else {
      s.b = b, s.ldb = b_cols;
      contiguous(b_cols * (p.trans_b ? p.n : p.k), s.stride_b, s.inner_stride_b);
    }
    if constexpr (c_is_fp32) {
      s.c = p.c, s.ldc = p.ldc, s.stride_c = p.stride_c, s.inner_stride_c = p.inner_stride_c;
    } else {
      s.c = c, s.ldc = p.n;
      contiguous(std::int64_t(p.m) * p.n, s.stride_c, s.inner_stride_c);
    }
    if (p.batch == 1) s.stride_a = s.stride_b = s.stride_c = s.inner_stride_a = s.inner_stride_b = s.inner_stride_c = 0;
    return s;
  }
};

}  // namespace kamp::detail

#endif
