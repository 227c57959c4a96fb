#include "roofline.hpp"

#include "report.hpp"

#include <kamp/kernels/detail/chunked_range.hpp>
#include <kamp/kernels/gemm.hpp>
#include <kamp/kernels/nn/detail/nn_common.hpp>
#include <kamp/numeric/convert.hpp>

#include <Kokkos_Core.hpp>

#include <functional>
#include <string_view>

namespace kamp::bench {

namespace {

using space = Kokkos::DefaultExecutionSpace;
using memory = space::memory_space;

struct gemm_timing {
  double seconds;
  std::string path;
};

template <class T>
Kokkos::View<T*, memory> filled(const char* label, std::size_t n) {
  Kokkos::View<T*, memory> v(std::string(label), n);
  Kokkos::deep_copy(v, from_float<T>(0.01f));
  return v;
}

/// Elements from an operand's first to one past its last: `outer` x `inner` matrices of rows x
/// cols at the given strides.
std::size_t span(int batch, int inner, int rows, int cols, std::int64_t ld, std::int64_t stride,
                 std::int64_t inner_stride) {
  const int outer = batch / inner;
  return std::size_t((outer - 1) * stride + (inner - 1) * inner_stride + (rows - 1) * ld + cols);
}

/// The problem of `r` on fresh operands, contiguous (`layout::dense`) or at the record's own
/// leading dimensions and batch strides (`layout::own`, what the step's call reads): its median
/// time and the path it took.
template <class TA, class TB, class TC>
gemm_timing time_gemm(const gemm_record& r, int repeat, gemm_layout layout) {
  const op oa = r.trans_a ? op::transpose : op::none, ob = r.trans_b ? op::transpose : op::none;
  const int ar = r.trans_a ? r.k : r.m, ac = r.trans_a ? r.m : r.k;
  const int br = r.trans_b ? r.n : r.k, bc = r.trans_b ? r.k : r.n;
  const bool own = layout == gemm_layout::own;
  const int inner = own ? r.inner : 1;
  // Dense: one batch dimension, matrices back to back.
  const std::int64_t lda = own ? r.lda : ac, ldb = own ? r.ldb : bc, ldc = own ? r.ldc : r.n;
  const std::int64_t sa = own ? r.stride_a : std::int64_t(ar) * ac, sb = own ? r.stride_b : std::int64_t(br) * bc,
                     sc = own ? r.stride_c : std::int64_t(r.m) * r.n;
  const std::int64_t ia = own ? r.inner_stride_a : 0, ib = own ? r.inner_stride_b : 0, ic = own ? r.inner_stride_c : 0;
  const auto a = filled<TA>("kamp::bench::roofline_a", span(r.batch, inner, ar, ac, lda, sa, ia));
  const auto b = filled<TB>("kamp::bench::roofline_b", span(r.batch, inner, br, bc, ldb, sb, ib));
  const auto c = filled<TC>("kamp::bench::roofline_c", span(r.batch, inner, r.m, r.n, ldc, sc, ic));
  const auto bias = r.bias ? filled<float>("kamp::bench::roofline_bias", r.n) : Kokkos::View<float*, memory>();
  using unmanaged = Kokkos::MemoryTraits<Kokkos::Unmanaged>;
  std::function<void()> run;
  if (r.batch == 1) {
    const Kokkos::View<const TA**, Kokkos::LayoutStride, memory, unmanaged> a2(a.data(),
                                                                               Kokkos::LayoutStride(ar, lda, ac, 1));
    const Kokkos::View<const TB**, Kokkos::LayoutStride, memory, unmanaged> b2(b.data(),
                                                                               Kokkos::LayoutStride(br, ldb, bc, 1));
    const Kokkos::View<TC**, Kokkos::LayoutStride, memory, unmanaged> c2(c.data(),
                                                                         Kokkos::LayoutStride(r.m, ldc, r.n, 1));
    run = [=] { gemm(space(), oa, ob, r.alpha, a2, b2, r.beta, c2, bias); };
  } else {
    const int outer = r.batch / inner;
    const auto heads = [&](int rows, int cols, std::int64_t ld, std::int64_t stride, std::int64_t inner_stride) {
      return Kokkos::LayoutStride(outer, stride, inner, inner_stride, rows, ld, cols, 1);
    };
    const Kokkos::View<const TA****, Kokkos::LayoutStride, memory, unmanaged> a4(a.data(), heads(ar, ac, lda, sa, ia));
    const Kokkos::View<const TB****, Kokkos::LayoutStride, memory, unmanaged> b4(b.data(), heads(br, bc, ldb, sb, ib));
    const Kokkos::View<TC****, Kokkos::LayoutStride, memory, unmanaged> c4(c.data(), heads(r.m, r.n, ldc, sc, ic));
    run = [=] { gemm_strided_batched(space(), oa, ob, r.alpha, a4, b4, r.beta, c4); };
  }
  // The path is the one the call reports (a batched call has no gemm_path_for).
  step_traffic first;
  {
    const traffic_scope listening(first);
    fenced_seconds(run);
  }
  return {median_seconds(repeat, run), first.gemms().at(0).path};
}

/// Calls f(A{}, B{}, C{}) for the element types of a record whose A and B share a type (every
/// 16- and 32-bit GEMM of the model); false where they do not, and for FP8 records (kamp::gemm_fp8),
/// whose vendor time is that of the bf16 GEMM recorded inside them where they widen to one.
template <class F>
bool with_types(dtype a, dtype b, dtype c, F&& f) {
  if (a != b || a == dtype::fp64 || c == dtype::fp64 || is_fp8(a) || is_fp8(b)) return false;
  visit_dtype<float>(a, [&](auto ta) { visit_dtype<float>(c, [&](auto tc) { f(ta, ta, tc); }); });
  return true;
}

/// The vendor's own time for a record on dense operands: the record's problem itself, or for a
/// widened one the fp32-C problem it hands over (its operand types where a vendor takes them,
/// else fp32). With `layout::own`, the record's call alone at its own strides, path and all.
double vendor_seconds(const gemm_record& r, int repeat, gemm_layout layout, bool& measured) {
  double seconds = 0;
  measured = with_types(r.a, r.b, r.c, [&](auto ta, auto tb, auto tc) {
    using TA = decltype(ta);
    using TB = decltype(tb);
    using TC = decltype(tc);
    if (r.path != "widened" || layout == gemm_layout::own) {
      seconds = time_gemm<TA, TB, TC>(r, repeat, layout).seconds;
      return;
    }
    const gemm_timing staged = time_gemm<TA, TB, float>(r, repeat, layout);
    seconds = staged.path != "widened" && staged.path != "portable"
                  ? staged.seconds
                  : time_gemm<float, float, float>(r, repeat, layout).seconds;
  });
  return seconds;
}

}  // namespace

roofline step_roofline(const step_traffic& traffic, double triad_gb_per_s, const core_rates& rates, int repeat) {
  return combine_roofline(traffic, triad_gb_per_s, rates, [repeat](const gemm_record& r, bool& measured) {
    bool measured_own = false;
    const double dense = vendor_seconds(r, repeat, gemm_layout::dense, measured);
    const double own = vendor_seconds(r, repeat, gemm_layout::own, measured_own);
    return gemm_bound{measured ? 1e3 * dense : 0.0, measured_own ? 1e3 * own : 0.0};
  });
}

namespace {

/// x = op(x) on every element of a buffer that stays in cache, many passes: `op` is applied
/// elements x passes times.
template <class Op>
double applications_per_second(Op op) {
  constexpr int chunk = 1024, passes = 512;
  const int items = 4 * space().concurrency();
  const Kokkos::View<float*, memory> x("kamp::bench::core_rates", std::size_t(items) * chunk);
  Kokkos::deep_copy(x, 0.5f);
  const auto run = [&] {
    Kokkos::parallel_for(
        "kamp::bench::core_rates", Kokkos::RangePolicy<space>(0, items), KOKKOS_LAMBDA(int k) {
          float* KAMP_RESTRICT v = x.data() + std::size_t(k) * chunk;
          for (int p = 0; p < passes; ++p) {
            KAMP_SIMD()
            for (int i = 0; i < chunk; ++i) v[i] = op(v[i]);
          }
        });
  };
  return double(items) * chunk * passes / median_seconds(5, run);
}

// One application each: 8 fused multiply-adds; exp_of, a division, sqrt_of or log_of, each
// with one simple operation that keeps the values in range (subtracted below).
struct eight_fmas {
  KOKKOS_INLINE_FUNCTION float operator()(float v) const {
    for (int i = 0; i < 8; ++i) v = v * 0.999f + 0.0005f;
    return v;
  }
};
struct exp_op {
  KOKKOS_INLINE_FUNCTION float operator()(float v) const { return detail::exp_of(-v); }
};
struct divide_op {
  KOKKOS_INLINE_FUNCTION float operator()(float v) const { return 1.0f / (v + 1.0f); }
};
struct sqrt_op {
  KOKKOS_INLINE_FUNCTION float operator()(float v) const { return detail::sqrt_of(v + 0.5f); }
};
struct log_op {
  KOKKOS_INLINE_FUNCTION float operator()(float v) const { return detail::log_of(v + 2.0f); }
};

}  // namespace

core_rates core_rates::measure() {
  core_rates r;
  r.simple = 8 * applications_per_second(eight_fmas());
  // An application's time less its one simple operation's; kept whole where noise makes it the smaller.
  const auto without_one_simple = [&](double per_second) {
    return per_second < r.simple / 2 ? 1 / (1 / per_second - 1 / r.simple) : per_second;
  };
  r.exp = without_one_simple(applications_per_second(exp_op()));
  r.divide = without_one_simple(applications_per_second(divide_op()));
  r.sqrt = without_one_simple(applications_per_second(sqrt_op()));
  r.log = without_one_simple(applications_per_second(log_op()));
  return r;
}

}  // namespace kamp::bench
