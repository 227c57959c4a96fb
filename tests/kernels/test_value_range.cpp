#include <kamp/kernels/value_range.hpp>
#include <kamp/numeric/convert.hpp>

#include "../support/catch.hpp"

#include "../support/execution_spaces.hpp"
#include "../support/views.hpp"

#include <cmath>
#include <limits>
#include <random>

TEMPLATE_TEST_CASE("measure_range finds max |x| over finite values and counts inf/NaN", "[kernels]",
                   KAMP_TEST_EXECUTION_SPACES) {
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 100.0f);
  std::vector<float> x(4099);
  for (auto& v : x) v = normal(rng);
  x[17] = -70000.0f;  // the largest magnitude, negative, beyond fp16's range
  x[100] = std::numeric_limits<float>::infinity();
  x[200] = -std::numeric_limits<float>::infinity();
  x[300] = std::nanf("");
  auto check = [&](auto format) {
    using T = decltype(format);
    std::vector<T> stored(x.size());
    double expected_max = 0;
    std::uint64_t expected_bad = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      if constexpr (std::is_same_v<T, float>) {
        stored[i] = x[i];
      } else {
        stored[i] = kamp::from_float<T>(x[i]);
      }
      const double v = kamp::to_float(stored[i]);
      if (std::isfinite(v)) {
        expected_max = std::max(expected_max, std::fabs(v));
      } else {
        ++expected_bad;
      }
    }
    const auto device = kamp::test::to_device<T, TestType>(stored, "x");
    const kamp::value_range r = kamp::measure_range(TestType(), device);
    CHECK(r.max_abs == expected_max);
    CHECK(r.non_finite == expected_bad);
  };
  check(float{});
  check(kamp::bf16{});
  check(kamp::fp16{});  // -70000 overflows fp16: one more non-finite value
  const auto empty = kamp::test::to_device<float, TestType>(std::vector<float>{}, "empty");
  CHECK(kamp::measure_range(TestType(), empty).max_abs == 0);
}
