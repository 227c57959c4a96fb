// Scaler trajectories on scripted overflow patterns. The expected sequences are worked out by
// hand from the documented algorithms (PyTorch _amp_update_scale_, DeepSpeed DynamicLossScaler).
#include <kamp/kernels/loss_scaler.hpp>

#include "../support/catch.hpp"

#include "../support/execution_spaces.hpp"
#include "../support/views.hpp"

#include <limits>
#include <vector>

namespace {

// Feeds the flags (1 = overflow) one step at a time and records the scale after each update.
template <class ExecSpace>
std::vector<float> trajectory(const kamp::loss_scaler_options& o, const std::vector<int>& overflow,
                              std::vector<int>* skipped = nullptr) {
  using memory = typename ExecSpace::memory_space;
  kamp::loss_scaler<memory> scaler(o);
  Kokkos::View<kamp::gradient_check, memory> check("check");
  std::vector<float> scales;
  for (const int f : overflow) {
    Kokkos::deep_copy(check, kamp::gradient_check{f, 0.0f});
    scaler.update(ExecSpace(), check);
    const auto s = scaler.host_state();
    scales.push_back(s.scale);
    if (skipped) skipped->push_back(s.last_step_skipped);
  }
  return scales;
}

}  // namespace

TEMPLATE_TEST_CASE("default scaler follows PyTorch GradScaler", "[kernels]", KAMP_TEST_EXECUTION_SPACES) {
  kamp::loss_scaler_options o;
  CHECK(o.init_scale == 65536.0f);
  CHECK(o.growth_factor == 2.0f);
  CHECK(o.backoff_factor == 0.5f);
  CHECK(o.growth_interval == 2000);
  o.growth_interval = 3;  // short, so the pattern below exercises growth
  std::vector<int> skipped;
  // clean clean clean -> x2 (tracker 3 == interval); overflow -> /2, tracker 0;
  // clean clean overflow -> /2 (tracker resets, no growth); overflow -> /2 again (no minimum);
  // clean x3 -> x2.
  const auto got = trajectory<TestType>(o, {0, 0, 0, 1, 0, 0, 1, 1, 0, 0, 0}, &skipped);
  const std::vector<float> want = {65536, 65536, 131072, 65536, 65536, 65536, 32768, 16384, 16384, 16384, 32768};
  CHECK(got == want);
  CHECK(skipped == std::vector<int>{0, 0, 0, 1, 0, 0, 1, 1, 0, 0, 0});
}

TEMPLATE_TEST_CASE("scaler has no minimum by default and grows only to finite values", "[kernels]",
                   KAMP_TEST_EXECUTION_SPACES) {
  kamp::loss_scaler_options o;
  o.init_scale = 1.0f;
  CHECK(trajectory<TestType>(o, {1, 1, 1}) == std::vector<float>{0.5f, 0.25f, 0.125f});

  o.init_scale = 2e38f;  // x2 would overflow fp32: PyTorch keeps the scale
  o.growth_interval = 1;
  CHECK(trajectory<TestType>(o, {0, 0}) == std::vector<float>{2e38f, 2e38f});
}

TEMPLATE_TEST_CASE("scaler clamps to min_scale and max_scale", "[kernels]", KAMP_TEST_EXECUTION_SPACES) {
  kamp::loss_scaler_options o;
  o.init_scale = 4.0f;
  o.min_scale = 1.0f;
  o.max_scale = 16.0f;
  o.growth_interval = 1;
  CHECK(trajectory<TestType>(o, {1, 1, 1, 0, 0, 0, 0, 0}) == std::vector<float>{2, 1, 1, 2, 4, 8, 16, 16});
}

TEMPLATE_TEST_CASE("hysteresis tolerates overflows before backing off (DeepSpeed)", "[kernels]",
                   KAMP_TEST_EXECUTION_SPACES) {
  kamp::loss_scaler_options o;
  o.init_scale = 1024.0f;
  o.hysteresis = 2;
  o.growth_interval = 2;
  std::vector<int> skipped;
  // 1st overflow only consumes hysteresis (2 -> 1); the 2nd backs off. Hysteresis stays used up
  // until the scale grows (non-consecutive mode), so the next overflow backs off at once.
  // After growth it is refilled: the overflow after that is tolerated again.
  const auto got = trajectory<TestType>(o, {1, 1, 0, 1, 0, 0, 1, 1}, &skipped);
  CHECK(got == std::vector<float>{1024, 512, 512, 256, 256, 512, 512, 256});
  CHECK(skipped == std::vector<int>{1, 1, 0, 1, 0, 0, 1, 1});

  // Consecutive hysteresis refills after every clean step.
  o.consecutive_hysteresis = true;
  o.growth_interval = 100;
  CHECK(trajectory<TestType>(o, {1, 0, 1, 0, 1, 1}) == std::vector<float>{1024, 1024, 1024, 1024, 1024, 512});
}

TEMPLATE_TEST_CASE("scaler counts steps and skipped steps, and restores a saved state", "[kernels]",
                   KAMP_TEST_EXECUTION_SPACES) {
  using memory = typename TestType::memory_space;
  kamp::loss_scaler_options o;
  o.growth_interval = 5;
  kamp::loss_scaler<memory> scaler(o);
  Kokkos::View<kamp::gradient_check, memory> check("check");
  for (const int f : {0, 1, 0, 0, 1, 0}) {
    Kokkos::deep_copy(check, kamp::gradient_check{f, 0.0f});
    scaler.update(TestType(), check);
  }
  const auto s = scaler.host_state();
  CHECK(s.steps == 6);
  CHECK(s.skipped_steps == 2);
  CHECK(s.growth_tracker == 1);
  CHECK(s.scale == 16384.0f);

  kamp::loss_scaler<memory> resumed(o);
  resumed.restore(s);
  const auto r = resumed.host_state();
  CHECK(r.scale == s.scale);
  CHECK(r.growth_tracker == s.growth_tracker);
  auto bad = s;
  bad.growth_tracker = 7;  // impossible with growth_interval 5
  CHECK_THROWS_WITH(resumed.restore(bad), kamp::test::contains("different growth_interval"));
}

TEST_CASE("scaler options are validated", "[kernels]") {
  kamp::loss_scaler_options o;
  o.backoff_factor = 1.5f;
  CHECK_THROWS_WITH(o.validate(), kamp::test::contains("backoff_factor must be in (0, 1)"));
  o = {};
  o.init_scale = 0.0f;
  CHECK_THROWS_WITH(o.validate(), kamp::test::contains("init_scale"));
  o = {};
  o.hysteresis = 0;
  CHECK_THROWS_WITH(kamp::loss_scaler<Kokkos::HostSpace>(o), kamp::test::contains("hysteresis must be >= 1"));
}
