#include "roofline.hpp"

#include <algorithm>
#include <tuple>

// The roofline's arithmetic, apart from the timing that feeds it (roofline.cpp) so that a test
// checks it on made-up records (tests/app/test_roofline.cpp).
namespace kamp::bench {

std::string region_of(const gemm_record& r) {
  return "kamp::gemm[" + r.path + "," + name(r.a) + "," + name(r.b) + "," + name(r.c) + "]";
}

double core_rates::seconds(const kernel_arithmetic& w) const {
  return w.simple / simple + w.exp / exp + w.divide / divide + w.sqrt / sqrt + w.log / log;
}

roofline combine_roofline(const step_traffic& traffic, double triad_gb_per_s, const core_rates& rates,
                          const gemm_timer& time) {
  roofline out;
  using problem_key = std::tuple<int, int, int, int, bool, bool, float, float, bool, dtype, dtype, dtype, std::string,
                                 std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t,
                                 int, std::int64_t, std::int64_t, std::int64_t>;
  std::map<problem_key, gemm_bound> timed;
  for (const gemm_record& r : traffic.gemms()) {
    const problem_key key{r.m,
                          r.n,
                          r.k,
                          r.batch,
                          r.trans_a,
                          r.trans_b,
                          r.alpha,
                          r.beta,
                          r.bias,
                          r.a,
                          r.b,
                          r.c,
                          r.path,
                          r.lda,
                          r.ldb,
                          r.ldc,
                          r.stride_a,
                          r.stride_b,
                          r.stride_c,
                          r.inner,
                          r.inner_stride_a,
                          r.inner_stride_b,
                          r.inner_stride_c};
    auto it = timed.find(key);
    if (it == timed.end()) {  // each problem timed once, counted at every call
      bool measured = false;
      const gemm_bound bound = time(r, measured);
      if (!measured) out.unmeasured.push_back(region_of(r));
      it = timed.emplace(key, bound).first;
    }
    out.calls.push_back(it->second);
    out.bound_ms[region_of(r)] += it->second.dense_ms;
    out.gemm_ms += it->second.dense_ms;
  }
  for (const auto& [label, bytes] : traffic.bytes()) {
    const double memory_ms = 1e3 * bytes / (triad_gb_per_s * 1e9);
    const auto work = traffic.work().find(label);
    const double compute_ms = work != traffic.work().end() ? 1e3 * rates.seconds(work->second) : 0.0;
    const double ms = std::max(memory_ms, compute_ms);
    out.memory_ms[label] = memory_ms;
    out.compute_ms[label] = compute_ms;
    out.bound_ms[label] += ms;
    out.kernel_ms += ms;
  }
  return out;
}

}  // namespace kamp::bench
