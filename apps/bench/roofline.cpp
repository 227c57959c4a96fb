#include "roofline.hpp"

#include "report.hpp"

#include <kamp/kernels/gemm.hpp>
#include <kamp/numeric/convert.hpp>

#include <Kokkos_Core.hpp>

#include <functional>
#include <string_view>
#include <tuple>

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

/// The problem of `r` on fresh contiguous operands of types TA, TB, TC: its median time and the
/// path it took.
template <class TA, class TB, class TC>
gemm_timing time_gemm(const gemm_record& r, int repeat) {
  const op oa = r.trans_a ? op::transpose : op::none, ob = r.trans_b ? op::transpose : op::none;
  const int ar = r.trans_a ? r.k : r.m, ac = r.trans_a ? r.m : r.k;
  const int br = r.trans_b ? r.n : r.k, bc = r.trans_b ? r.k : r.n;
  const std::size_t batch = std::size_t(r.batch);
  const auto a = filled<TA>("kamp::bench::roofline_a", batch * ar * ac);
  const auto b = filled<TB>("kamp::bench::roofline_b", batch * br * bc);
  const auto c = filled<TC>("kamp::bench::roofline_c", batch * r.m * r.n);
  const auto bias = r.bias ? filled<float>("kamp::bench::roofline_bias", r.n) : Kokkos::View<float*, memory>();
  using unmanaged = Kokkos::MemoryTraits<Kokkos::Unmanaged>;
  std::function<void()> run;
  if (r.batch == 1) {
    const Kokkos::View<const TA**, Kokkos::LayoutRight, memory, unmanaged> a2(a.data(), ar, ac);
    const Kokkos::View<const TB**, Kokkos::LayoutRight, memory, unmanaged> b2(b.data(), br, bc);
    const Kokkos::View<TC**, Kokkos::LayoutRight, memory, unmanaged> c2(c.data(), r.m, r.n);
    run = [=] { gemm(space(), oa, ob, r.alpha, a2, b2, r.beta, c2, bias); };
  } else {
    const Kokkos::View<const TA***, Kokkos::LayoutRight, memory, unmanaged> a3(a.data(), r.batch, ar, ac);
    const Kokkos::View<const TB***, Kokkos::LayoutRight, memory, unmanaged> b3(b.data(), r.batch, br, bc);
    const Kokkos::View<TC***, Kokkos::LayoutRight, memory, unmanaged> c3(c.data(), r.batch, r.m, r.n);
    run = [=] { gemm_strided_batched(space(), oa, ob, r.alpha, a3, b3, r.beta, c3); };
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

/// The vendor's own time for a record: the record's problem itself, or for a widened one the
/// fp32-C problem it hands over (its operand types where a vendor takes them, else fp32).
double vendor_seconds(const gemm_record& r, int repeat, bool& measured) {
  double seconds = 0;
  measured = with_types(r.a, r.b, r.c, [&](auto ta, auto tb, auto tc) {
    using TA = decltype(ta);
    using TB = decltype(tb);
    using TC = decltype(tc);
    if (r.path != "widened") {
      seconds = time_gemm<TA, TB, TC>(r, repeat).seconds;
      return;
    }
    const gemm_timing staged = time_gemm<TA, TB, float>(r, repeat);
    seconds = staged.path != "widened" && staged.path != "portable" ? staged.seconds
                                                                    : time_gemm<float, float, float>(r, repeat).seconds;
  });
  return seconds;
}

std::string region_of(const gemm_record& r) {
  return "kamp::gemm[" + r.path + "," + name(r.a) + "," + name(r.b) + "," + name(r.c) + "]";
}

}  // namespace

roofline step_roofline(const step_traffic& traffic, double triad_gb_per_s, int repeat) {
  roofline out;
  std::map<std::tuple<int, int, int, int, bool, bool, float, float, bool, dtype, dtype, dtype, std::string>, double>
      timed;
  for (const gemm_record& r : traffic.gemms()) {
    const auto key =
        std::make_tuple(r.m, r.n, r.k, r.batch, r.trans_a, r.trans_b, r.alpha, r.beta, r.bias, r.a, r.b, r.c, r.path);
    auto it = timed.find(key);
    if (it == timed.end()) {
      bool measured = false;
      const double s = vendor_seconds(r, repeat, measured);
      if (!measured) out.unmeasured.push_back(region_of(r));
      it = timed.emplace(key, measured ? s : 0.0).first;
    }
    out.bound_ms[region_of(r)] += 1e3 * it->second;
    out.gemm_ms += 1e3 * it->second;
  }
  for (const auto& [label, bytes] : traffic.bytes()) {
    const double ms = 1e3 * bytes / (triad_gb_per_s * 1e9);
    out.bound_ms[label] += ms;
    out.kernel_ms += ms;
  }
  return out;
}

}  // namespace kamp::bench
