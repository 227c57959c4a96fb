#include <kamp/kernels/cast.hpp>

#include "../support/catch.hpp"

#include "../support/execution_spaces.hpp"
#include "../support/oracles.hpp"
#include "../support/views.hpp"

#include <cmath>
#include <limits>
#include <random>

namespace {

std::vector<float> cast_inputs(std::size_t n) {
  std::mt19937 rng(17);
  std::uniform_real_distribution<float> mag(-30.0f, 14.0f);  // fp16 subnormals up to 2^15: no overflow
  std::vector<float> x(n);
  for (auto& v : x)
    v = std::ldexp(1.0f + std::generate_canonical<float, 24>(rng), int(mag(rng))) * (rng() & 1 ? 1 : -1);
  x[0] = std::numeric_limits<float>::infinity();  // not an overflow: already infinite
  x[1] = std::nanf("");
  x[2] = 1e6f;                               // overflows fp16
  x[3] = 65520.0f;                           // fp16's max + half an ulp: the tie rounds to infinity
  x[4] = std::nextafter(65520.0f, 0.0f);     // just below: fp16's max
  x[5] = kamp::test::float_of(0x7f7f8000u);  // bf16's max + half an ulp: infinity in bf16 (and fp16)
  x[6] = kamp::test::float_of(0x7f7f7fffu);  // just below: bf16's max
  x[n - 1] = -7e4f;                          // overflows fp16
  return x;
}

}  // namespace

TEMPLATE_TEST_CASE("cast fp32 -> 16-bit rounds like from_float and counts overflows", "[kernels]",
                   KAMP_TEST_EXECUTION_SPACES) {
  const std::size_t n = 10007;  // not a multiple of any chunk size
  const auto x = cast_inputs(n);
  const auto in = kamp::test::to_device<float, TestType>(x, "in");
  auto check = [&](auto format) {
    using T = decltype(format);
    Kokkos::View<T*, typename TestType::memory_space> out("out", n);
    const std::size_t overflowed = kamp::cast(TestType(), out, in);
    const auto got = kamp::test::to_host(out);
    std::size_t expected_overflows = 0, mismatches = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const double r = kamp::test::reference_round(x[i], kamp::format_traits<T>::exponent_bits,
                                                   kamp::test::reference_rounding::nearest_even);
      expected_overflows += (std::isfinite(x[i]) && std::isinf(r)) ? 1 : 0;
      const float v = kamp::to_float(got[i]);
      const bool ok = std::isnan(x[i]) ? std::isnan(v) : double(v) == r;
      mismatches += ok ? 0 : 1;
    }
    CHECK(mismatches == 0);
    CHECK(overflowed == expected_overflows);
    CHECK(overflowed == (std::is_same_v<T, kamp::fp16> ? std::size_t(5) : std::size_t(1)));
    // Without waiting: the count lands in a device View, or (an empty View) is not taken; the
    // values are the same.
    using memory = typename TestType::memory_space;
    Kokkos::View<T*, memory> counted("counted", n), uncounted("uncounted", n);
    Kokkos::View<std::size_t, memory> count("count");
    kamp::cast(TestType(), counted, in, {}, count);
    kamp::cast(TestType(), uncounted, in, {}, Kokkos::View<std::size_t, memory>());
    CHECK(kamp::test::scalar_to_host(count) == expected_overflows);
    const auto a = kamp::test::to_host(counted), b = kamp::test::to_host(uncounted);
    std::size_t different = 0;
    for (std::size_t i = 0; i < n; ++i)
      different += (kamp::test::raw_bits(a[i]) != kamp::test::raw_bits(got[i])) +
                   (kamp::test::raw_bits(b[i]) != kamp::test::raw_bits(got[i]));
    CHECK(different == 0);
  };
  check(kamp::fp16{});
  check(kamp::bf16{});
}

TEMPLATE_TEST_CASE("stochastic cast is reproducible from its seed and widening is exact", "[kernels]",
                   KAMP_TEST_EXECUTION_SPACES) {
  const std::size_t n = 5000;
  const auto x = cast_inputs(n);
  const auto in = kamp::test::to_device<float, TestType>(x, "in");
  using memory = typename TestType::memory_space;
  Kokkos::View<kamp::bf16*, memory> a("a", n), b("b", n), c("c", n);
  kamp::rounding_options sr{kamp::rounding::stochastic, 99, 0};
  kamp::cast(TestType(), a, in, sr);
  kamp::cast(TestType(), b, in, sr);
  sr.seed = 100;
  kamp::cast(TestType(), c, in, sr);
  const auto ha = kamp::test::to_host(a), hb = kamp::test::to_host(b), hc = kamp::test::to_host(c);
  std::size_t same_ab = 0, same_ac = 0;
  for (std::size_t i = 0; i < n; ++i) {
    same_ab += ha[i].bits == hb[i].bits;
    same_ac += ha[i].bits == hc[i].bits;
    CHECK(ha[i].bits == kamp::from_float_stochastic<kamp::bf16>(x[i], kamp::counter_random(99, i)).bits);
  }
  CHECK(same_ab == n);
  CHECK(same_ac < n);  // another seed rounds some elements the other way

  Kokkos::View<float*, memory> back("back", n);
  CHECK(kamp::cast(TestType(), back, a) == 0);
  const auto hback = kamp::test::to_host(back);
  for (std::size_t i = 2; i < n; ++i) REQUIRE(kamp::test::bits_of(hback[i]) == (std::uint32_t(ha[i].bits) << 16));

  Kokkos::View<float*, memory> wrong("wrong", n + 1);
  CHECK_THROWS_WITH(kamp::cast(TestType(), wrong, a), kamp::test::contains("has 5001 elements but input 'a' has 5000"));
}
