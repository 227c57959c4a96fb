// Stochastic rounding: only the two neighbours of x ever come out, and their average is x.
#include <kamp/numeric.hpp>

#include "../support/catch.hpp"

#include "../support/oracles.hpp"

#include <cmath>
#include <vector>

namespace {

using kamp::test::reference_round;
using kamp::test::reference_rounding;

// Inputs spread over each format's binades, its subnormals, and the overflow edge.
template <class T>
std::vector<float> probe_values() {
  using t = kamp::format_traits<T>;
  std::vector<float> xs = {1.0f + 1.0f / 3.0f,
                           -2.7182817f,
                           0.1f,
                           1e-3f,
                           -123.456f,
                           static_cast<float>(t::min_normal() * 0.37),    // subnormal
                           static_cast<float>(t::min_subnormal() * 0.3),  // below the smallest subnormal
                           static_cast<float>(t::max() * 1.001),          // between max and infinity
                           static_cast<float>(t::min_normal() * 1.5)};
  return xs;
}

}  // namespace

TEMPLATE_TEST_CASE("stochastic rounding yields only the two neighbours", "[numeric]", kamp::fp16, kamp::bf16) {
  constexpr int e = kamp::format_traits<TestType>::exponent_bits;
  for (const float x : probe_values<TestType>()) {
    const double down =
        x < 0 ? reference_round(x, e, reference_rounding::up) : reference_round(x, e, reference_rounding::down);
    const double up =
        x < 0 ? reference_round(x, e, reference_rounding::down) : reference_round(x, e, reference_rounding::up);
    for (std::uint64_t i = 0; i < 20000; ++i) {
      const double got = kamp::to_float(kamp::from_float_stochastic<TestType>(x, kamp::counter_random(7, i)));
      if (got != down && got != up) {
        INFO("x = " << x << " gave " << got << "; neighbours " << down << " and " << up);
        REQUIRE(false);
      }
    }
  }
  // Representable values never move, and the extreme random words pick the two ends.
  const auto one = kamp::from_float<TestType>(1.0f);
  CHECK(kamp::from_float_stochastic<TestType>(1.0f, 0).bits == one.bits);
  CHECK(kamp::from_float_stochastic<TestType>(1.0f, 0xffffffffu).bits == one.bits);
  const float third = 1.0f + 1.0f / 3.0f;
  CHECK(kamp::to_float(kamp::from_float_stochastic<TestType>(third, 0)) ==
        reference_round(third, e, reference_rounding::up));
  CHECK(kamp::to_float(kamp::from_float_stochastic<TestType>(third, 0xffffffffu)) ==
        reference_round(third, e, reference_rounding::down));
}

TEMPLATE_TEST_CASE("stochastic rounding is unbiased", "[numeric]", kamp::fp16, kamp::bf16) {
  constexpr int e = kamp::format_traits<TestType>::exponent_bits;
  constexpr int draws = 200000;
  for (const float x : probe_values<TestType>()) {
    const double lo = reference_round(std::fabs(x), e, reference_rounding::down);
    const double hi = reference_round(std::fabs(x), e, reference_rounding::up);
    // Skip exact values (nothing to round) and draws that may be infinite (no mean).
    if (lo == hi || std::isinf(hi)) continue;
    const double p = (std::fabs(x) - lo) / (hi - lo);
    int ups = 0;
    for (std::uint64_t i = 0; i < draws; ++i) {
      const double got =
          std::fabs(kamp::to_float(kamp::from_float_stochastic<TestType>(x, kamp::counter_random(11, i))));
      ups += got == hi ? 1 : 0;
    }
    // The count of round-ups is Binomial(draws, p): allow 5 standard deviations.
    const double sigma = std::sqrt(draws * p * (1 - p));
    INFO("x = " << x << ", p = " << p << ", ups = " << ups);
    CHECK(std::fabs(ups - draws * p) <= 5 * sigma + 1);
    const double mean = lo + (hi - lo) * ups / draws;
    CHECK(std::fabs(mean - std::fabs(x)) <= (hi - lo) * (5 * sigma + 1) / draws);
  }
}

TEST_CASE("stochastic rounding past the maximum reaches infinity with the right probability", "[numeric]") {
  // 65520 sits half-way between fp16's max (65504) and the next binade (65536, i.e. infinity).
  int infinities = 0;
  constexpr int draws = 100000;
  for (std::uint64_t i = 0; i < draws; ++i) {
    infinities +=
        std::isinf(kamp::to_float(kamp::from_float_stochastic<kamp::fp16>(65520.0f, kamp::counter_random(3, i)))) ? 1
                                                                                                                  : 0;
  }
  CHECK(std::abs(infinities - draws / 2) <= 5 * std::sqrt(draws * 0.25));
}

TEST_CASE("counter_random words are uniform and depend only on (seed, counter)", "[numeric]") {
  CHECK(kamp::counter_random(1, 2) == kamp::counter_random(1, 2));
  CHECK(kamp::counter_random(1, 2) != kamp::counter_random(2, 2));
  CHECK(kamp::counter_random(1, 2) != kamp::counter_random(1, 3));
  // Chi-square over 16 buckets of the top 4 bits: 15 degrees of freedom, 99.99% quantile ~ 44.3.
  constexpr int n = 160000;
  int buckets[16] = {};
  for (std::uint64_t i = 0; i < n; ++i) ++buckets[kamp::counter_random(5, i) >> 28];
  double chi2 = 0;
  for (const int b : buckets) chi2 += (b - n / 16.0) * (b - n / 16.0) / (n / 16.0);
  CHECK(chi2 < 44.3);
}

TEST_CASE("the bf16 stochastic fast path equals the generic definition", "[numeric]") {
  // narrow_stochastic_generic works for any format and serves fp16; bf16 has a shortcut.
  std::uint64_t mismatches = 0;
  for (std::uint64_t i = 0; i < 4000000; ++i) {
    const std::uint32_t u = kamp::counter_random(21, i), r = kamp::counter_random(22, i);
    const float x = kamp::test::float_of(u);
    const auto fast = kamp::from_float_stochastic<kamp::bf16>(x, r).bits;
    const auto generic = kamp::detail::narrow_stochastic_generic<kamp::bf16>(x, r);
    mismatches += fast == generic ? 0 : 1;
  }
  CHECK(mismatches == 0);
}
