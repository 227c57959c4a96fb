// Fused optimizers against fp64 references written from the torch.optim documentation, plus
// skipped steps, loss-scale/clip factors and the pure-bf16 update schemes.
#include <kamp/kernels/adamw.hpp>
#include <kamp/kernels/sgd.hpp>
#include <kamp/kernels/unscale_and_check.hpp>

#include "../support/catch.hpp"

#include "../support/data.hpp"
#include "../support/execution_spaces.hpp"
#include "../support/views.hpp"

#include <cmath>
#include <vector>

namespace {

// torch.optim.AdamW, in double.
struct adamw_reference {
  kamp::adamw_options o;
  std::vector<double> w, m, v;
  int t = 0;
  void step(const std::vector<double>& g, double lr) {
    ++t;
    for (std::size_t i = 0; i < w.size(); ++i) {
      w[i] *= 1.0 - lr * o.weight_decay;
      m[i] = o.beta1 * m[i] + (1.0 - o.beta1) * g[i];
      v[i] = o.beta2 * v[i] + (1.0 - o.beta2) * g[i] * g[i];
      const double mhat = m[i] / (1.0 - std::pow(double(o.beta1), t));
      const double vhat = v[i] / (1.0 - std::pow(double(o.beta2), t));
      w[i] -= lr * mhat / (std::sqrt(vhat) + o.eps);
    }
  }
};

// torch.optim.SGD, in double.
struct sgd_reference {
  kamp::sgd_options o;
  std::vector<double> w, buf;
  int t = 0;
  void step(const std::vector<double>& g, double lr) {
    ++t;
    for (std::size_t i = 0; i < w.size(); ++i) {
      double d = g[i] + o.weight_decay * w[i];
      if (o.momentum != 0) {
        buf[i] = t == 1 ? d : o.momentum * buf[i] + (1 - o.dampening) * d;
        d = o.nesterov ? d + o.momentum * buf[i] : buf[i];
      }
      w[i] -= lr * d;
    }
  }
};

// Error relative to max(|want|, 0.1): weights near zero are judged by the absolute error that
// fp32 arithmetic on O(0.1) updates makes.
double max_relative_error(const std::vector<float>& got, const std::vector<double>& want) {
  double worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    worst = std::max(worst, std::fabs(got[i] - want[i]) / std::max(std::fabs(want[i]), 0.1));
  return worst;
}

}  // namespace

TEMPLATE_TEST_CASE("AdamW with fp32 master matches fp64 torch.optim.AdamW", "[kernels]", KAMP_TEST_EXECUTION_SPACES) {
  using memory = typename TestType::memory_space;
  const std::size_t n = 4099;
  const auto w0 = kamp::test::normal_values(n, 0.5f, 1);
  kamp::adamw_options o;
  o.weight_decay = 0.1f;
  kamp::adamw<kamp::bf16, float, float, memory> opt(n, o);
  Kokkos::View<kamp::bf16*, memory> model("model", n);
  opt.initialize(TestType(), kamp::test::to_device<float, TestType>(w0, "w0"), model);

  adamw_reference ref{o, std::vector<double>(w0.begin(), w0.end()), std::vector<double>(n), std::vector<double>(n)};
  for (int step = 0; step < 10; ++step) {
    const auto g = kamp::test::normal_values(n, 0.1f, 100 + step);
    const float lr = 1e-3f * (step + 1);
    opt.step(TestType(), model, kamp::test::to_device<float, TestType>(g, "g"), {}, lr);
    ref.step(std::vector<double>(g.begin(), g.end()), lr);
  }
  CHECK(opt.host_step_count() == 10);
  const auto master = kamp::test::to_host(opt.master());
  CHECK(max_relative_error(master, ref.w) < 2e-5);
  CHECK(max_relative_error(kamp::test::to_host(opt.moment1()), ref.m) < 2e-5);
  CHECK(max_relative_error(kamp::test::to_host(opt.moment2()), ref.v) < 2e-5);
  // The model copy is exactly the master rounded to nearest even.
  const auto copy = kamp::test::to_host(model);
  for (std::size_t i = 0; i < n; ++i) REQUIRE(copy[i].bits == kamp::from_float<kamp::bf16>(master[i]).bits);
}

TEMPLATE_TEST_CASE("SGD variants match fp64 torch.optim.SGD", "[kernels]", KAMP_TEST_EXECUTION_SPACES) {
  using memory = typename TestType::memory_space;
  const std::size_t n = 3001;
  const auto w0 = kamp::test::normal_values(n, 0.5f, 2);
  for (const kamp::sgd_options o :
       {kamp::sgd_options{0.0f, 0.0f, 0.0f, false}, kamp::sgd_options{0.9f, 0.0f, 1e-2f, false},
        kamp::sgd_options{0.9f, 0.1f, 0.0f, false}, kamp::sgd_options{0.9f, 0.0f, 1e-3f, true}}) {
    kamp::sgd<float, float, float, memory> opt(n, o, kamp::weight_update::nearest);
    Kokkos::View<float*, memory> model("model", n);
    opt.initialize(TestType(), kamp::test::to_device<float, TestType>(w0, "w0"), model);
    sgd_reference ref{o, std::vector<double>(w0.begin(), w0.end()), std::vector<double>(n)};
    for (int step = 0; step < 8; ++step) {
      const auto g = kamp::test::normal_values(n, 0.1f, 200 + step);
      opt.step(TestType(), model, kamp::test::to_device<float, TestType>(g, "g"), {}, 0.05f);
      ref.step(std::vector<double>(g.begin(), g.end()), 0.05);
    }
    INFO("momentum " << o.momentum << " dampening " << o.dampening << " wd " << o.weight_decay << " nesterov "
                     << o.nesterov);
    CHECK(max_relative_error(kamp::test::to_host(model), ref.w) < 1e-5);
  }
  CHECK_THROWS_WITH((kamp::sgd<float, float>(4, {0.0f, 0.0f, 0.0f, true})),
                    kamp::test::contains("nesterov needs momentum > 0"));
}

TEMPLATE_TEST_CASE("optimizer applies 1/scale and the clip coefficient from device state", "[kernels]",
                   KAMP_TEST_EXECUTION_SPACES) {
  using memory = typename TestType::memory_space;
  const std::size_t n = 2500;
  const auto w0 = kamp::test::normal_values(n, 0.5f, 3);
  const auto g = kamp::test::normal_values(n, 1.0f, 4);  // global norm ~ 50, clipped to 1
  const float scale = 4096.0f, max_norm = 1.0f;
  std::vector<float> scaled(n);
  for (std::size_t i = 0; i < n; ++i) scaled[i] = g[i] * scale;  // exact: power of two

  kamp::loss_scaler_options so;
  so.init_scale = scale;
  kamp::loss_scaler<memory> scaler(so);
  Kokkos::View<kamp::gradient_check, memory> check("check");
  auto grads = kamp::test::to_device<kamp::fp16, TestType>(kamp::test::narrowed<kamp::fp16>(scaled), "grads");
  kamp::unscale_and_check(TestType(), grads, scaler.state(), check, {/*in_place=*/false, /*compute_norm=*/true});

  kamp::sgd<kamp::fp16, kamp::fp16, float, memory> opt(n, {});
  Kokkos::View<kamp::fp16*, memory> model("model", n);
  opt.initialize(TestType(), kamp::test::to_device<float, TestType>(w0, "w0"), model);
  kamp::gradient_control<memory> control{scaler.state(), check, false, max_norm};
  opt.step(TestType(), model, grads, control, 0.1f);

  const auto host_grads = kamp::test::narrowed<kamp::fp16>(scaled);
  double norm2 = 0;
  for (const auto h : host_grads) norm2 += std::pow(double(kamp::to_float(h)) / scale, 2);
  const double norm = std::sqrt(norm2), clip = max_norm / (norm + 1e-6);
  std::vector<double> want(n);
  for (std::size_t i = 0; i < n; ++i) want[i] = w0[i] - 0.1 * double(kamp::to_float(host_grads[i])) / scale * clip;
  CHECK(max_relative_error(kamp::test::to_host(opt.master()), want) < 1e-5);
  CHECK(opt.host_last_grad_norm() == Approx(norm).epsilon(1e-5));
}

TEMPLATE_TEST_CASE("a step with inf/NaN gradients changes nothing, bit for bit", "[kernels]",
                   KAMP_TEST_EXECUTION_SPACES) {
  using memory = typename TestType::memory_space;
  const std::size_t n = 5000;
  const auto w0 = kamp::test::normal_values(n, 0.5f, 5);
  kamp::adamw<kamp::bf16, kamp::bf16, float, memory> opt(n, {}, kamp::weight_update::master,
                                                         {kamp::rounding::stochastic, 1, 0});
  Kokkos::View<kamp::bf16*, memory> model("model", n);
  opt.initialize(TestType(), kamp::test::to_device<float, TestType>(w0, "w0"), model);
  kamp::loss_scaler<memory> scaler;
  Kokkos::View<kamp::gradient_check, memory> check("check");
  const kamp::gradient_control<memory> control{scaler.state(), check, false, 1.0f};

  auto good = kamp::test::narrowed<kamp::bf16>(kamp::test::normal_values(n, 1000.0f, 6));
  auto grads = kamp::test::to_device<kamp::bf16, TestType>(good, "grads");
  kamp::unscale_and_check(TestType(), grads, scaler.state(), check, {false, true});
  opt.step(TestType(), model, grads, control, 1e-3f);  // one real step, so the moments are non-zero
  scaler.update(TestType(), check);

  const auto before_master = kamp::test::to_host(opt.master()), before_m = kamp::test::to_host(opt.moment1()),
             before_v = kamp::test::to_host(opt.moment2());
  const auto before_model = kamp::test::to_host(model);
  good[n / 3] = kamp::from_float<kamp::bf16>(std::numeric_limits<float>::infinity());
  grads = kamp::test::to_device<kamp::bf16, TestType>(good, "grads");
  kamp::unscale_and_check(TestType(), grads, scaler.state(), check, {false, true});
  opt.step(TestType(), model, grads, control, 1e-3f);
  scaler.update(TestType(), check);

  CHECK(opt.host_step_count() == 1);
  CHECK(scaler.host_state().last_step_skipped == 1);
  CHECK(scaler.host_state().skipped_steps == 1);
  const auto after_model = kamp::test::to_host(model);
  CHECK(kamp::test::to_host(opt.master()) == before_master);
  CHECK(kamp::test::to_host(opt.moment1()) == before_m);
  CHECK(kamp::test::to_host(opt.moment2()) == before_v);
  for (std::size_t i = 0; i < n; ++i) REQUIRE(after_model[i].bits == before_model[i].bits);
}

TEMPLATE_TEST_CASE("pure bf16: tiny updates vanish with round-to-nearest, survive Kahan and stochastic rounding",
                   "[kernels]", KAMP_TEST_EXECUTION_SPACES) {
  using memory = typename TestType::memory_space;
  // 1000 SGD steps of +1e-4 each on weights at 1.0: the exact result is 1.1. bf16's ulp at 1 is
  // 2^-7 (half-ulp 0.0039 >> 1e-4), so every single update is below the rounding threshold.
  const std::size_t n = 4096;
  const int steps = 1000;
  const float lr = 1e-4f;
  const std::vector<float> ones(n, 1.0f), minus_one(n, -1.0f);
  const auto grads = kamp::test::to_device<float, TestType>(minus_one, "grads");
  auto run = [&](kamp::weight_update update, auto moment) {
    using Moment = decltype(moment);
    kamp::sgd<kamp::bf16, float, Moment, memory> opt(n, {}, update, {kamp::rounding::stochastic, 42, 0});
    Kokkos::View<kamp::bf16*, memory> model("model", n);
    opt.initialize(TestType(), kamp::test::to_device<float, TestType>(ones, "w0"), model);
    for (int s = 0; s < steps; ++s) opt.step(TestType(), model, grads, {}, lr);
    const auto w = kamp::test::to_host(model);
    std::vector<double> values(n);
    for (std::size_t i = 0; i < n; ++i) values[i] = kamp::to_float(w[i]);
    return values;
  };
  const double exact = 1.0 + steps * double(lr), ulp = std::ldexp(1.0, -7);

  const auto nearest = run(kamp::weight_update::nearest, float{});
  for (const double v : nearest) REQUIRE(v == 1.0);  // "the loss does not decrease": nothing moved

  // Kahan: the stored weight stays within one bf16 ulp of the exact sum.
  const auto kahan = run(kamp::weight_update::kahan, kamp::bf16{});
  for (const double v : kahan) REQUIRE(std::fabs(v - exact) <= ulp);

  // Stochastic rounding: right in expectation. Each step rounds up with p = 1e-4/ulp, adding
  // variance p(1-p)ulp^2; the mean over n weights lies within 5 standard errors of 1.1.
  const auto stochastic = run(kamp::weight_update::stochastic, float{});
  double mean = 0;
  for (const double v : stochastic) mean += v / n;
  const double p = lr / ulp, sd = std::sqrt(steps * p * (1 - p)) * ulp;
  INFO("stochastic mean " << mean << ", bound " << 5 * sd / std::sqrt(double(n)));
  CHECK(std::fabs(mean - exact) <= 5 * sd / std::sqrt(double(n)));
}

TEMPLATE_TEST_CASE("pure bf16 AdamW with bf16 moments tracks the fp32 run", "[kernels]", KAMP_TEST_EXECUTION_SPACES) {
  using memory = typename TestType::memory_space;
  const std::size_t n = 2048;
  const auto w0 = kamp::test::normal_values(n, 0.5f, 8);
  kamp::adamw<float, float, float, memory> exact(n, {}, kamp::weight_update::nearest);
  kamp::adamw<kamp::bf16, float, kamp::bf16, memory> pure(n, {}, kamp::weight_update::kahan);
  Kokkos::View<float*, memory> model32("model32", n);
  Kokkos::View<kamp::bf16*, memory> model16("model16", n);
  exact.initialize(TestType(), kamp::test::to_device<float, TestType>(w0, "w0"), model32);
  pure.initialize(TestType(), kamp::test::to_device<float, TestType>(w0, "w0"), model16);
  for (int s = 0; s < 50; ++s) {
    const auto g = kamp::test::to_device<float, TestType>(kamp::test::normal_values(n, 0.1f, 300 + s), "g");
    exact.step(TestType(), model32, g, {}, 1e-3f);
    pure.step(TestType(), model16, g, {}, 1e-3f);
  }
  const auto a = kamp::test::to_host(model32);
  const auto b = kamp::test::to_host(model16);
  double worst = 0;
  for (std::size_t i = 0; i < n; ++i) worst = std::max(worst, double(std::fabs(a[i] - kamp::to_float(b[i]))));
  CHECK(worst <= 2 * std::ldexp(1.0, -7) * 2.0);  // two bf16 ulps at |w| < 2
}
