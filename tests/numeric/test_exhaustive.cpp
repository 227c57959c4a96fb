// fp32 -> fp16, bf16 and the four FP8 formats for all 2^32 fp32 inputs against independent
// oracles: the CPU's F16C instruction for fp16, arithmetic in double for bf16 and fp16, the
// nearest of the format's decoded values for FP8. Label `long`.
#include <kamp/numeric.hpp>

#include <Kokkos_Core.hpp>
#include "../support/catch.hpp"

#include "../support/oracles.hpp"

#include <cmath>
#include <cstdint>

namespace {

using host_range = Kokkos::RangePolicy<Kokkos::DefaultHostExecutionSpace, Kokkos::IndexType<std::int64_t>>;
constexpr std::int64_t all_fp32 = std::int64_t(1) << 32;

// Counts the inputs where `agrees(u)` is false, then reports the first few of them.
template <class Agrees, class Describe>
void check_all_fp32(const char* label, Agrees agrees, Describe describe) {
  std::int64_t mismatches = 0;
  Kokkos::parallel_reduce(
      label, host_range(0, all_fp32),
      [=](std::int64_t i, std::int64_t& count) { count += agrees(static_cast<std::uint32_t>(i)) ? 0 : 1; }, mismatches);
  if (mismatches != 0) {
    int shown = 0;
    for (std::int64_t i = 0; i < all_fp32 && shown < 10; ++i) {
      if (!agrees(static_cast<std::uint32_t>(i))) {
        ++shown;
        INFO(describe(static_cast<std::uint32_t>(i)));
        CHECK(false);
      }
    }
  }
  CHECK(mismatches == 0);
}

}  // namespace

TEST_CASE("fp32 -> fp16 equals F16C for every fp32 input", "[numeric][long][hardware]") {
  if (!kamp::test::have_f16c()) {
    kamp::test::skip("this CPU has no F16C instructions: the exhaustive fp16 check is skipped");
    return;
  }
#ifdef KAMP_TEST_HAVE_X86
  const auto agrees = [](std::uint32_t u) {
    const float x = kamp::test::float_of(u);
    return kamp::from_float<kamp::fp16>(x).bits == kamp::test::f16c_narrow(x);
  };
  check_all_fp32("kamp::test::exhaustive_fp16", agrees, [](std::uint32_t u) {
    const float x = kamp::test::float_of(u);
    std::ostringstream s;
    s << std::hex << "fp32 0x" << u << ": kamp 0x" << kamp::from_float<kamp::fp16>(x).bits << ", F16C 0x"
      << kamp::test::f16c_narrow(x);
    return s.str();
  });
#endif
}

TEST_CASE("fp32 -> bf16 equals round-to-nearest-even in double for every fp32 input", "[numeric][long]") {
  const auto agrees = [](std::uint32_t u) {
    const float x = kamp::test::float_of(u);
    const auto got = kamp::from_float<kamp::bf16>(x);
    if (std::isnan(x)) {
      // quiet NaN, same sign, top payload bits kept
      return got.bits == static_cast<std::uint16_t>((u >> 16) | 0x0040u);
    }
    const double want = kamp::test::reference_round(x, 8, kamp::test::reference_rounding::nearest_even);
    const float value = kamp::to_float(got);
    return static_cast<double>(value) == want && std::signbit(value) == std::signbit(want);
  };
  check_all_fp32("kamp::test::exhaustive_bf16", agrees, [](std::uint32_t u) {
    const float x = kamp::test::float_of(u);
    std::ostringstream s;
    s << "fp32 0x" << std::hex << u << " (" << x << "): kamp " << kamp::to_float(kamp::from_float<kamp::bf16>(x))
      << ", reference " << kamp::test::reference_round(x, 8, kamp::test::reference_rounding::nearest_even);
    return s.str();
  });
}

TEST_CASE("fp32 -> fp16 equals round-to-nearest-even in double for every fp32 input", "[numeric][long]") {
  // A second, arithmetic oracle for fp16, so the check also runs where F16C is absent.
  const auto agrees = [](std::uint32_t u) {
    const float x = kamp::test::float_of(u);
    const auto got = kamp::from_float<kamp::fp16>(x);
    if (std::isnan(x))
      return kamp::is_nan(got) && (got.bits & 0x8000u) == ((u >> 16) & 0x8000u) && (got.bits & 0x0200u);
    const double want = kamp::test::reference_round(x, 5, kamp::test::reference_rounding::nearest_even);
    const float value = kamp::to_float(got);
    return static_cast<double>(value) == want && std::signbit(value) == std::signbit(want);
  };
  check_all_fp32("kamp::test::exhaustive_fp16_arith", agrees, [](std::uint32_t u) {
    std::ostringstream s;
    s << "fp32 0x" << std::hex << u;
    return s.str();
  });
}

TEMPLATE_TEST_CASE("fp32 -> FP8 equals the nearest value of the format for every fp32 input", "[numeric][long]",
                   kamp::fp8_e4m3, kamp::fp8_e5m2, kamp::fp8_e4m3fnuz, kamp::fp8_e5m2fnuz) {
  using t = kamp::format_traits<TestType>;
  const kamp::test::fp8_definition f{t::exponent_bits, t::fnuz};
  const kamp::test::fp8_reference reference(f);
  // Both overflow behaviours in one pass: a value the reference gives, NaN matching NaN with the
  // format's NaN pattern, zeros compared with their signs.
  const auto matches = [f](std::uint8_t got, double want, float x) {
    const double value = f.decode(got);
    if (std::isnan(want)) return got == (t::fnuz ? 0x80u : ((kamp::test::bits_of(x) >> 24) & 0x80u) | 0x7fu);
    return value == want && std::signbit(value) == std::signbit(want);
  };
  const auto agrees = [&](std::uint32_t u) {
    const float x = kamp::test::float_of(u);
    return matches(kamp::from_float<TestType>(x).bits, reference.round(x, false), x) &&
           matches(kamp::from_float_saturated<TestType>(x).bits, reference.round(x, true), x);
  };
  check_all_fp32("kamp::test::exhaustive_fp8", agrees, [&](std::uint32_t u) {
    const float x = kamp::test::float_of(u);
    std::ostringstream s;
    s << t::name << ": fp32 0x" << std::hex << u << " (" << x << "): kamp 0x"
      << unsigned(kamp::from_float<TestType>(x).bits) << " / saturated 0x"
      << unsigned(kamp::from_float_saturated<TestType>(x).bits) << ", reference " << reference.round(x, false) << " / "
      << reference.round(x, true);
    return s.str();
  });
}
