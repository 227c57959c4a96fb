// Every one of the 65536 patterns of each 16-bit format: widening gives its exact value, and
// narrowing that value gives the pattern back.
#include <kamp/numeric.hpp>

#include "../support/catch.hpp"

#include "../support/oracles.hpp"

#include <cmath>

using kamp::test::bits_of;

TEMPLATE_TEST_CASE("all 16-bit patterns widen exactly and round-trip", "[numeric]", kamp::fp16, kamp::bf16) {
  using t = kamp::format_traits<TestType>;
  int wrong_value = 0, wrong_roundtrip = 0, wrong_nan = 0;
  for (std::uint32_t h = 0; h < 65536; ++h) {
    const auto x = TestType::from_bits(static_cast<std::uint16_t>(h));
    const float wide = kamp::to_float(x);
    const double expected = kamp::test::reference_decode(static_cast<std::uint16_t>(h), t::exponent_bits);
    const auto back = kamp::from_float<TestType>(wide);
    if (std::isnan(expected)) {
      // NaN stays NaN with its sign; quiet NaNs keep their payload, signalling ones are quieted.
      const bool ok = std::isnan(wide) && kamp::is_nan(back) && (back.bits & 0x8000u) == (h & 0x8000u) &&
                      (back.bits & t::quiet_bit) && (back.bits | t::quiet_bit) == (h | t::quiet_bit);
      wrong_nan += ok ? 0 : 1;
      continue;
    }
    const bool same_value = static_cast<double>(wide) == expected && std::signbit(wide) == bool(h & 0x8000u);
    wrong_value += same_value ? 0 : 1;
    wrong_roundtrip += back.bits == h ? 0 : 1;
    if (!same_value || back.bits != h) {
      INFO("pattern 0x" << std::hex << h << " widened to " << wide << " expected " << expected << " back 0x"
                        << back.bits);
      CHECK(false);
    }
  }
  CHECK(wrong_value == 0);
  CHECK(wrong_roundtrip == 0);
  CHECK(wrong_nan == 0);
}

TEST_CASE("fp16 widening matches the CPU's F16C instruction for all patterns", "[numeric][hardware]") {
  if (!kamp::test::have_f16c()) {
    kamp::test::skip("this CPU has no F16C instructions: the hardware oracle is skipped");
    return;
  }
#ifdef KAMP_TEST_HAVE_X86
  int mismatches = 0;
  for (std::uint32_t h = 0; h < 65536; ++h) {
    const auto mine = bits_of(kamp::to_float(kamp::fp16::from_bits(static_cast<std::uint16_t>(h))));
    const auto cpu = kamp::test::f16c_widen(static_cast<std::uint16_t>(h));
    if (mine != cpu && ++mismatches <= 10) {
      INFO("fp16 0x" << std::hex << h << ": kamp 0x" << mine << ", F16C 0x" << cpu);
      CHECK(false);
    }
  }
  CHECK(mismatches == 0);
#endif
}

TEST_CASE("narrowing handles the edges of each format", "[numeric]") {
  using kamp::bf16;
  using kamp::fp16;
  const auto h = [](float x) { return kamp::from_float<fp16>(x).bits; };
  const auto b = [](float x) { return kamp::from_float<bf16>(x).bits; };
  CHECK(h(65504.0f) == 0x7bff);
  CHECK(h(65519.99f) == 0x7bff);  // just below the midpoint to 65536
  CHECK(h(65520.0f) == 0x7c00);   // the midpoint rounds to even: infinity
  CHECK(h(-1e10f) == 0xfc00);
  CHECK(h(std::ldexp(1.0f, -24)) == 0x0001);  // smallest subnormal
  CHECK(h(std::ldexp(1.0f, -25)) == 0x0000);  // half of it: tie to even (zero)
  CHECK(h(std::ldexp(1.5f, -25)) == 0x0001);
  CHECK(h(-0.0f) == 0x8000);
  CHECK(h(1.0f + std::ldexp(1.0f, -11)) == 0x3c00);  // tie: stays on the even 1.0
  CHECK(h(1.0f + std::ldexp(3.0f, -11)) == 0x3c02);  // tie: goes up to the even neighbour
  CHECK(b(3.4028235e38f) == 0x7f80);                 // fp32 max is above bf16's rounding midpoint
  CHECK(b(std::ldexp(1.0f, -133)) == 0x0001);        // bf16 smallest subnormal
  CHECK(b(-std::numeric_limits<float>::infinity()) == 0xff80);
  CHECK(b(-std::nanf("")) == 0xffc0);
  CHECK(h(std::nanf("")) == 0x7e00);
}

// Every one of the 256 patterns of each FP8 format: widening gives the value its definition
// gives, and narrowing that value (saturating or not) gives the pattern back; NaNs give the
// format's NaN (with their sign in the OCP formats).
TEMPLATE_TEST_CASE("all FP8 patterns widen exactly and round-trip", "[numeric]", kamp::fp8_e4m3, kamp::fp8_e5m2,
                   kamp::fp8_e4m3fnuz, kamp::fp8_e5m2fnuz) {
  using t = kamp::format_traits<TestType>;
  const kamp::test::fp8_definition f{t::exponent_bits, t::fnuz};
  int wrong = 0, nans = 0, infinities = 0;
  for (std::uint32_t b = 0; b < 256; ++b) {
    const auto x = TestType::from_bits(static_cast<std::uint8_t>(b));
    const float wide = kamp::to_float(x);
    const double expected = f.decode(static_cast<std::uint8_t>(b));
    const auto back = kamp::from_float<TestType>(wide).bits;
    const auto back_saturated = kamp::from_float_saturated<TestType>(wide).bits;
    bool ok;
    if (std::isnan(expected)) {
      ++nans;
      const std::uint32_t nan = t::fnuz ? 0x80u : (b & 0x80u) | 0x7fu;
      ok = std::isnan(wide) && kamp::is_nan(x) && back == nan && back_saturated == nan;
    } else if (std::isinf(expected)) {
      ++infinities;
      const std::uint32_t max = (b & 0x80u) | t::max_bits;
      ok = double(wide) == expected && !kamp::is_finite(x) && back == b && back_saturated == max;
    } else {
      ok = double(wide) == expected && std::signbit(wide) == bool(b & 0x80u) && kamp::is_finite(x) &&
           !kamp::is_nan(x) && back == b && back_saturated == b;
    }
    if (!ok) {
      ++wrong;
      INFO(t::name << " pattern 0x" << std::hex << b << " widened to " << wide << ", expected " << expected
                   << ", back 0x" << unsigned(back) << ", saturated 0x" << unsigned(back_saturated));
      CHECK(false);
    }
  }
  CHECK(wrong == 0);
  CHECK(nans == (t::fnuz ? 1 : t::has_infinity ? 6 : 2));
  CHECK(infinities == (t::has_infinity ? 2 : 0));
}
