// The conversions inside Kokkos kernels, on every enabled execution space, give the same bits
// as the host path.
#include <kamp/numeric.hpp>

#include <Kokkos_Core.hpp>
#include "../support/catch.hpp"

#include "../support/execution_spaces.hpp"
#include "../support/oracles.hpp"

#include <cstdint>
#include <limits>
#include <vector>

namespace kamp::test {

constexpr std::uint64_t seed = 2024;

// fp32 inputs: a prime stride through all 2^32 patterns (every exponent, many mantissas),
// plus the edges of both formats.
std::vector<float> fp32_inputs() {
  std::vector<float> xs;
  for (std::uint64_t u = 0; u < (std::uint64_t(1) << 32); u += 4093)
    xs.push_back(kamp::test::float_of(std::uint32_t(u)));
  for (const float x : {0.0f, -0.0f, 65504.0f, 65520.0f, 65519.99f, 5.9604645e-08f, 2.9802322e-08f, 3.3895314e38f,
                        std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                        std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::denorm_min()})
    xs.push_back(x);
  return xs;
}

struct converted {
  std::vector<std::uint16_t> nearest, stochastic;
  std::vector<std::uint32_t> widened;
};

template <class T, class ExecSpace>
converted convert_on(const ExecSpace& space, const std::vector<float>& xs) {
  using memory = typename ExecSpace::memory_space;
  const auto n = static_cast<int>(xs.size());
  Kokkos::View<float*, memory> in("kamp::test::in", n);
  Kokkos::View<T*, memory> nearest("kamp::test::nearest", n), stochastic("kamp::test::stochastic", n);
  Kokkos::View<T*, memory> all_patterns("kamp::test::patterns", 65536);
  Kokkos::View<std::uint32_t*, memory> widened("kamp::test::widened", 65536);
  Kokkos::deep_copy(in, Kokkos::View<const float*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(xs.data(), n));

  Kokkos::parallel_for(
      "kamp::test::narrow", Kokkos::RangePolicy<ExecSpace>(space, 0, n), KOKKOS_LAMBDA(int i) {
        nearest(i) = kamp::from_float<T>(in(i));
        stochastic(i) = kamp::from_float_stochastic<T>(in(i), kamp::counter_random(seed, i));
      });
  Kokkos::parallel_for(
      "kamp::test::widen", Kokkos::RangePolicy<ExecSpace>(space, 0, 65536), KOKKOS_LAMBDA(int i) {
        all_patterns(i) = T::from_bits(static_cast<std::uint16_t>(i));
        widened(i) = kamp::detail::float_to_bits(kamp::to_float(all_patterns(i)));
      });
  space.fence();

  converted out{std::vector<std::uint16_t>(n), std::vector<std::uint16_t>(n), std::vector<std::uint32_t>(65536)};
  const auto nearest_h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), nearest);
  const auto stochastic_h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), stochastic);
  const auto widened_h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), widened);
  for (int i = 0; i < n; ++i) {
    out.nearest[i] = nearest_h(i).bits;
    out.stochastic[i] = stochastic_h(i).bits;
  }
  for (int i = 0; i < 65536; ++i) out.widened[i] = widened_h(i);
  return out;
}

}  // namespace kamp::test

TEMPLATE_TEST_CASE("conversions in kernels equal the host path bit for bit", "[numeric][kokkos]",
                   KAMP_TEST_EXECUTION_SPACES) {
  const auto xs = kamp::test::fp32_inputs();
  auto check = [&](auto format) {
    using T = decltype(format);
    const kamp::test::converted device = kamp::test::convert_on<T>(TestType(), xs);
    int mismatches = 0;
    for (std::size_t i = 0; i < xs.size(); ++i) {
      const auto host_nearest = kamp::from_float<T>(xs[i]).bits;
      const auto host_stochastic =
          kamp::from_float_stochastic<T>(xs[i], kamp::counter_random(kamp::test::seed, i)).bits;
      if ((device.nearest[i] != host_nearest || device.stochastic[i] != host_stochastic) && ++mismatches <= 5) {
        INFO(kamp::format_traits<T>::name << " input 0x" << std::hex << kamp::test::bits_of(xs[i]));
        CHECK(false);
      }
    }
    for (std::uint32_t h = 0; h < 65536; ++h) {
      const auto host = kamp::test::bits_of(kamp::to_float(T::from_bits(static_cast<std::uint16_t>(h))));
      if (device.widened[h] != host && ++mismatches <= 5) {
        INFO(kamp::format_traits<T>::name << " pattern 0x" << std::hex << h);
        CHECK(false);
      }
    }
    CHECK(mismatches == 0);
  };
  INFO("execution space " << TestType::name());
  check(kamp::fp16{});
  check(kamp::bf16{});
}

namespace kamp::test {

struct converted_fp8 {
  std::vector<std::uint8_t> nearest, saturated;
  std::vector<std::uint32_t> widened;
};

template <class T, class ExecSpace>
converted_fp8 convert_fp8_on(const ExecSpace& space, const std::vector<float>& xs) {
  using memory = typename ExecSpace::memory_space;
  const auto n = static_cast<int>(xs.size());
  Kokkos::View<float*, memory> in("kamp::test::in", n);
  Kokkos::View<T*, memory> nearest("kamp::test::nearest", n), saturated("kamp::test::saturated", n);
  Kokkos::View<std::uint32_t*, memory> widened("kamp::test::widened", 256);
  Kokkos::deep_copy(in, Kokkos::View<const float*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(xs.data(), n));
  Kokkos::parallel_for(
      "kamp::test::narrow_fp8", Kokkos::RangePolicy<ExecSpace>(space, 0, n), KOKKOS_LAMBDA(int i) {
        nearest(i) = kamp::from_float<T>(in(i));
        saturated(i) = kamp::from_float_saturated<T>(in(i));
      });
  Kokkos::parallel_for(
      "kamp::test::widen_fp8", Kokkos::RangePolicy<ExecSpace>(space, 0, 256), KOKKOS_LAMBDA(int i) {
        widened(i) = kamp::detail::float_to_bits(kamp::to_float(T::from_bits(static_cast<std::uint8_t>(i))));
      });
  space.fence();
  converted_fp8 out{std::vector<std::uint8_t>(n), std::vector<std::uint8_t>(n), std::vector<std::uint32_t>(256)};
  const auto nearest_h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), nearest);
  const auto saturated_h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), saturated);
  const auto widened_h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), widened);
  for (int i = 0; i < n; ++i) {
    out.nearest[i] = nearest_h(i).bits;
    out.saturated[i] = saturated_h(i).bits;
  }
  for (int i = 0; i < 256; ++i) out.widened[i] = widened_h(i);
  return out;
}

}  // namespace kamp::test

TEMPLATE_TEST_CASE("FP8 conversions in kernels equal the host path bit for bit", "[numeric][kokkos]",
                   KAMP_TEST_EXECUTION_SPACES) {
  auto xs = kamp::test::fp32_inputs();
  for (const float x : {448.0f, 464.0f, 464.00003f, 480.0f, 240.0f, 248.0f, 57344.0f, 61440.0f, 61439.996f,
                        0.0009765625f, 0.00048828125f, -0.00048828125f, 1.52587890625e-05f, 7.62939453125e-06f})
    xs.push_back(x);
  auto check = [&](auto format) {
    using T = decltype(format);
    const auto device = kamp::test::convert_fp8_on<T>(TestType(), xs);
    int mismatches = 0;
    for (std::size_t i = 0; i < xs.size(); ++i) {
      if ((device.nearest[i] != kamp::from_float<T>(xs[i]).bits ||
           device.saturated[i] != kamp::from_float_saturated<T>(xs[i]).bits) &&
          ++mismatches <= 5) {
        INFO(kamp::format_traits<T>::name << " input 0x" << std::hex << kamp::test::bits_of(xs[i]));
        CHECK(false);
      }
    }
    for (std::uint32_t b = 0; b < 256; ++b) {
      if (device.widened[b] != kamp::test::bits_of(kamp::to_float(T::from_bits(static_cast<std::uint8_t>(b)))) &&
          ++mismatches <= 5) {
        INFO(kamp::format_traits<T>::name << " pattern 0x" << std::hex << b);
        CHECK(false);
      }
    }
    CHECK(mismatches == 0);
  };
  INFO("execution space " << TestType::name());
  check(kamp::fp8_e4m3{});
  check(kamp::fp8_e5m2{});
  check(kamp::fp8_e4m3fnuz{});
  check(kamp::fp8_e5m2fnuz{});
}
