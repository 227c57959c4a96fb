// The roofline's arithmetic (kamp-bench --suite train) on made-up records with answers worked out
// by hand: each GEMM problem timed once and counted at every call, unmeasured ones listed and
// adding nothing, each kernel bounded by the larger of its bytes at the triad's rate and its
// arithmetic at the cores' rates.
#include "../../apps/bench/roofline.hpp"

#include "../support/catch.hpp"

#include <string>
#include <vector>

namespace {

kamp::gemm_record record(int m, kamp::dtype type, const std::string& path) {
  kamp::gemm_record r{};
  r.m = m, r.n = 8, r.k = 8, r.batch = 1;
  r.alpha = 1, r.beta = 0;
  r.a = r.b = r.c = type;
  r.path = path;
  return r;
}

}  // namespace

TEST_CASE("roofline: the arithmetic on made-up records", "[app][roofline]") {
  kamp::bench::step_traffic traffic;
  // Three calls of one problem, one of another, one FP8 record without a timing.
  for (int call = 0; call < 3; ++call) traffic.gemm(record(16, kamp::dtype::bf16, "dnnl"));
  traffic.gemm(record(32, kamp::dtype::fp32, "kokkosblas"));
  traffic.gemm(record(64, kamp::dtype::fp8_e4m3, "portable"));
  // 10 GB at 100 GB/s: 100 ms of memory; 1e9 exps at 1e10/s and 2e9 simple at 1e11/s: 120 ms.
  kamp::kernel_arithmetic softmax;
  softmax.exp = 1e9;
  softmax.simple = 2e9;
  traffic.kernel("kamp::softmax", 10e9, softmax);
  // Memory-bound: 5 GB, 50 ms; its arithmetic 1e9 simple, 10 ms.
  kamp::kernel_arithmetic add;
  add.simple = 1e9;
  traffic.kernel("kamp::add", 5e9, add);
  traffic.kernel("kamp::add", 5e9, add);  // a second launch of the label adds to it
  kamp::bench::core_rates rates;
  rates.simple = 1e11, rates.exp = 1e10, rates.divide = 1e9, rates.sqrt = 1e9, rates.log = 1e9;
  int asked = 0;
  const kamp::bench::roofline r =
      kamp::bench::combine_roofline(traffic, 100.0, rates, [&](const kamp::gemm_record& g, bool& measured) {
        ++asked;
        measured = !kamp::is_fp8(g.a);  // as kamp-bench's timer: no timing, 0 ms
        if (!measured) return kamp::bench::gemm_bound{};
        return kamp::bench::gemm_bound{g.m == 16 ? 2.0 : 7.0, g.m == 16 ? 3.0 : 7.5};
      });
  CHECK(asked == 3);  // each distinct problem once
  REQUIRE(r.calls.size() == 5);
  CHECK(r.calls[2].dense_ms == 2.0);
  CHECK(r.calls[2].own_ms == 3.0);
  CHECK(r.gemm_ms == 3 * 2.0 + 7.0);
  CHECK(r.unmeasured == std::vector<std::string>{"kamp::gemm[portable,fp8_e4m3,fp8_e4m3,fp8_e4m3]"});
  CHECK(r.bound_ms.at("kamp::gemm[dnnl,bf16,bf16,bf16]") == 6.0);
  CHECK(r.memory_ms.at("kamp::softmax") == Approx(100.0).epsilon(1e-12));
  CHECK(r.compute_ms.at("kamp::softmax") == Approx(120.0).epsilon(1e-12));
  CHECK(r.bound_ms.at("kamp::softmax") == Approx(120.0).epsilon(1e-12));
  CHECK(r.memory_ms.at("kamp::add") == Approx(100.0).epsilon(1e-12));
  CHECK(r.compute_ms.at("kamp::add") == Approx(20.0).epsilon(1e-12));
  CHECK(r.kernel_ms == Approx(220.0).epsilon(1e-12));
  CHECK(r.total_ms() == Approx(233.0).epsilon(1e-12));
}
