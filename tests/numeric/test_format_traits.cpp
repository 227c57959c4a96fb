// Format traits against the published properties of the formats (IEEE 754-2008 binary16,
// bfloat16 as in Intel's BF16 white paper) and against the bit patterns they describe.
#include <kamp/numeric.hpp>

#include "../support/catch.hpp"

#include "../support/oracles.hpp"

TEST_CASE("fp16 traits match IEEE binary16", "[numeric]") {
  using t = kamp::format_traits<kamp::fp16>;
  CHECK(t::bits == 16);
  CHECK(t::exponent_bits == 5);
  CHECK(t::mantissa_bits == 10);
  CHECK(t::max() == 65504.0);
  CHECK(t::min_normal() == 6.103515625e-05);
  CHECK(t::min_subnormal() == 5.9604644775390625e-08);
  CHECK(t::epsilon() == 0.0009765625);
  CHECK(t::digits10 == 3);
}

TEST_CASE("bf16 traits match bfloat16", "[numeric]") {
  using t = kamp::format_traits<kamp::bf16>;
  CHECK(t::exponent_bits == 8);
  CHECK(t::mantissa_bits == 7);
  CHECK(t::max() == Approx(3.3895313892515355e38).epsilon(1e-15));
  CHECK(t::min_normal() == 1.1754943508222875e-38);
  CHECK(t::min_subnormal() == 9.183549615799121e-41);
  CHECK(t::epsilon() == 0.0078125);
  CHECK(t::digits10 == 2);
}

TEMPLATE_TEST_CASE("traits agree with the values of their own bit patterns", "[numeric]", kamp::fp16, kamp::bf16) {
  using t = kamp::format_traits<TestType>;
  const auto value = [](std::uint16_t bits) { return kamp::test::reference_decode(bits, t::exponent_bits); };
  CHECK(value(t::max_bits) == t::max());
  CHECK(value(t::min_normal_bits) == t::min_normal());
  CHECK(value(t::min_subnormal_bits) == t::min_subnormal());
  CHECK(value(t::infinity_bits) == INFINITY);
  CHECK(std::isnan(value(t::infinity_bits | t::quiet_bit)));
  CHECK(value(std::uint16_t(t::min_normal_bits * ((1 << (t::exponent_bits - 1)) - 1) + 1)) - 1.0 == t::epsilon());
  CHECK(kamp::to_float(TestType::from_bits(t::max_bits)) == static_cast<float>(t::max()));
}

TEST_CASE("fp32 traits match std::numeric_limits", "[numeric]") {
  using t = kamp::format_traits<float>;
  CHECK(t::max() == std::numeric_limits<float>::max());
  CHECK(t::min_normal() == std::numeric_limits<float>::min());
  CHECK(t::min_subnormal() == std::numeric_limits<float>::denorm_min());
  CHECK(t::epsilon() == std::numeric_limits<float>::epsilon());
  CHECK(t::digits10 == std::numeric_limits<float>::digits10);
}

// The FP8 formats against the table of the OCP 8-bit floating point specification v1.0 (E4M3,
// E5M2) and PyTorch's c10 headers for AMD's fnuz variants.
TEST_CASE("FP8 traits match the published formats", "[numeric]") {
  using e4m3 = kamp::format_traits<kamp::fp8_e4m3>;
  using e5m2 = kamp::format_traits<kamp::fp8_e5m2>;
  using e4m3fnuz = kamp::format_traits<kamp::fp8_e4m3fnuz>;
  using e5m2fnuz = kamp::format_traits<kamp::fp8_e5m2fnuz>;
  CHECK(e4m3::max() == 448.0);
  CHECK(e4m3::min_normal() == 0.015625);        // 2^-6
  CHECK(e4m3::min_subnormal() == 0.001953125);  // 2^-9
  CHECK(e4m3::exponent_bias == 7);
  CHECK(e5m2::max() == 57344.0);
  CHECK(e5m2::min_normal() == 6.103515625e-05);       // 2^-14
  CHECK(e5m2::min_subnormal() == 1.52587890625e-05);  // 2^-16
  CHECK(e5m2::exponent_bias == 15);
  CHECK(e4m3fnuz::max() == 240.0);
  CHECK(e4m3fnuz::min_normal() == 0.0078125);        // 2^-7
  CHECK(e4m3fnuz::min_subnormal() == 0.0009765625);  // 2^-10
  CHECK(e5m2fnuz::max() == 57344.0);
  CHECK(e5m2fnuz::min_normal() == 3.0517578125e-05);      // 2^-15
  CHECK(e5m2fnuz::min_subnormal() == 7.62939453125e-06);  // 2^-17
  CHECK(e4m3::has_infinity == false);
  CHECK(e5m2::has_infinity == true);
  CHECK(e4m3fnuz::has_negative_zero == false);
  CHECK(e4m3::epsilon() == 0.125);
  CHECK(e5m2::epsilon() == 0.25);
}

TEMPLATE_TEST_CASE("FP8 traits agree with the values of their own bit patterns", "[numeric]", kamp::fp8_e4m3,
                   kamp::fp8_e5m2, kamp::fp8_e4m3fnuz, kamp::fp8_e5m2fnuz) {
  using t = kamp::format_traits<TestType>;
  const kamp::test::fp8_definition f{t::exponent_bits, t::fnuz};
  CHECK(f.decode(t::max_bits) == t::max());
  CHECK(std::isnan(f.decode(std::uint8_t(t::max_bits + 1))) != t::has_infinity);
  CHECK(f.decode(t::min_normal_bits) == t::min_normal());
  CHECK(f.decode(t::min_subnormal_bits) == t::min_subnormal());
  CHECK(std::isnan(f.decode(t::nan_bits)));
  if (t::has_infinity) CHECK(f.decode(t::infinity_bits) == INFINITY);
  CHECK(kamp::to_float(TestType::from_bits(t::max_bits)) == static_cast<float>(t::max()));
}
