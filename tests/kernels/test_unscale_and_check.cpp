#include <kamp/kernels/loss_scaler.hpp>
#include <kamp/kernels/unscale_and_check.hpp>

#include "../support/catch.hpp"

#include "../support/data.hpp"
#include "../support/execution_spaces.hpp"
#include "../support/views.hpp"

#include <cmath>
#include <limits>

namespace {

// Gradients of a loss scaled by `scale`: N(0, 1e-3) values times the scale.
std::vector<float> gradients(std::size_t n, float scale) {
  auto g = kamp::test::normal_values(n, 1e-3f, 5);
  for (auto& v : g) v *= scale;
  return g;
}

}  // namespace

TEMPLATE_TEST_CASE("unscale_and_check multiplies by 1/scale and sums squares in fp32", "[kernels]",
                   KAMP_TEST_EXECUTION_SPACES) {
  using memory = typename TestType::memory_space;
  const std::size_t n = 100003;
  const float scale = 1024.0f * 3.0f;  // 1/scale is inexact: PyTorch rounds 1/double(scale) once to float
  const auto x = gradients(n, scale);
  kamp::loss_scaler_options o;
  o.init_scale = scale;
  kamp::loss_scaler<memory> scaler(o);
  Kokkos::View<kamp::gradient_check, memory> result("result");

  auto run = [&](auto format) {
    using T = decltype(format);
    const auto host_in = kamp::test::narrowed<T>(x);
    auto g = kamp::test::to_device<T, TestType>(host_in, "grads");
    kamp::unscale_and_check(TestType(), g, scaler.state(), result);
    const auto r = kamp::test::scalar_to_host(result);
    const auto out = kamp::test::to_host(g);
    const float inv = static_cast<float>(1.0 / double(scale));
    double norm2 = 0, abs2 = 0;
    std::size_t mismatches = 0;
    for (std::size_t i = 0; i < n; ++i) {
      // fp32 product of two floats, correctly rounded: the double product is exact.
      const float want = static_cast<float>(double(kamp::to_float(host_in[i])) * double(inv));
      mismatches += kamp::test::raw_bits(out[i]) == kamp::test::raw_bits(kamp::from_float<T>(want)) ? 0 : 1;
      norm2 += double(want) * double(want);
      abs2 += double(want) * double(want);
    }
    CHECK(mismatches == 0);
    CHECK(r.found_inf == 0);
    // fp64 sum of exact fp64 squares: relative error within n * 2^-53 (the order differs).
    CHECK(std::fabs(r.norm_squared - norm2) <= double(n) * std::ldexp(1.0, -53) * abs2);
  };
  run(float{});
  run(kamp::bf16{});
  run(kamp::fp16{});
}

TEMPLATE_TEST_CASE("unscale_and_check finds every inf and NaN, wherever it is", "[kernels]",
                   KAMP_TEST_EXECUTION_SPACES) {
  using memory = typename TestType::memory_space;
  const std::size_t n = 3 * 2048 + 17;
  kamp::loss_scaler<memory> scaler;
  Kokkos::View<kamp::gradient_check, memory> result("result");
  const float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
  for (const std::size_t where : {std::size_t(0), std::size_t(2047), std::size_t(2048), n - 1}) {
    for (const float bad : {inf, -inf, nan}) {
      auto x = gradients(n, 1.0f);
      x[where] = bad;
      auto g = kamp::test::to_device<kamp::bf16, TestType>(kamp::test::narrowed<kamp::bf16>(x), "grads");
      kamp::unscale_and_check(TestType(), g, scaler.state(), result);
      INFO("bad value " << bad << " at " << where);
      CHECK(kamp::test::scalar_to_host(result).found_inf == 1);
    }
  }
  // A finite gradient that overflows when unscaled (scale < 1) is caught too.
  kamp::loss_scaler_options o;
  o.init_scale = 1.0f / 1024.0f;
  kamp::loss_scaler<memory> small(o);
  auto x = gradients(n, 1.0f);
  x[n / 2] = 3e36f;  // times 1024 exceeds fp32 max
  auto g = kamp::test::to_device<float, TestType>(x, "grads");
  kamp::unscale_and_check(TestType(), g, small.state(), result);
  CHECK(kamp::test::scalar_to_host(result).found_inf == 1);
}

TEMPLATE_TEST_CASE("unscale_and_check can check without writing and skip the norm", "[kernels]",
                   KAMP_TEST_EXECUTION_SPACES) {
  using memory = typename TestType::memory_space;
  const auto x = gradients(4097, 512.0f);
  auto g = kamp::test::to_device<float, TestType>(x, "grads");
  kamp::loss_scaler<memory> scaler;
  Kokkos::View<kamp::gradient_check, memory> result("result");
  kamp::unscale_and_check(TestType(), g, scaler.state(), result, {/*in_place=*/false, /*compute_norm=*/false});
  const auto r = kamp::test::scalar_to_host(result);
  CHECK(r.found_inf == 0);
  CHECK(r.norm_squared == 0.0f);
  CHECK(kamp::test::to_host(g) == x);

  // Empty gradients: nothing found, nothing summed.
  Kokkos::View<float*, memory> none("none", 0);
  kamp::unscale_and_check(TestType(), none, scaler.state(), result);
  CHECK(kamp::test::scalar_to_host(result).found_inf == 0);
}
