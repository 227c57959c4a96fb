// FP8 scaling and GEMMs on every execution space: the quantizing cast against a host loop over
// the exhaustively tested scalar cast, amaxes and counts in double, the recipes' scales against
// Transformer Engine's formulas evaluated on the host, and the GEMM against fp64 sums.
#include <kamp/kernels/fp8_scaling.hpp>
#include <kamp/kernels/gemm_fp8.hpp>
#include <kamp/tools/launch_counter.hpp>

#include "../support/catch.hpp"

#include "../support/data.hpp"
#include "../support/execution_spaces.hpp"
#include "../support/views.hpp"

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace {

template <class ExecSpace>
Kokkos::View<float, typename ExecSpace::memory_space> device_scalar(float value, const char* label) {
  Kokkos::View<float, typename ExecSpace::memory_space> v(std::string{label});
  Kokkos::deep_copy(v, value);
  return v;
}

template <class View>
Kokkos::View<const kamp::fp8_cast_stats*, typename View::memory_space> read_only_stats(const View& v) {
  return v;
}

}  // namespace

TEMPLATE_TEST_CASE("quantize_fp8 casts, measures and writes scale_inv in one launch", "[kernels][fp8]",
                   KAMP_TEST_EXECUTION_SPACES) {
  using memory = typename TestType::memory_space;
  const TestType space;
  auto check = [&](auto format, float scale_value) {
    using F = decltype(format);
    std::vector<float> xs = kamp::test::normal_values(10007, 3.0f, 7);
    xs[5] = 1000.0f;  // saturates E4M3 at scale 1 (448) and at scale 4 (1792 > 448)
    xs[6] = -7e5f;    // saturates every format at these scales
    xs[7] = 1e-30f;
    const auto in = kamp::test::to_device<float, TestType>(xs, "in");
    Kokkos::View<F*, memory> out("out", xs.size());
    const auto scale = device_scalar<TestType>(scale_value, "scale");
    Kokkos::View<kamp::fp8_cast_stats, memory> stats("stats");
    const auto tally = kamp::count_launches([&] { kamp::quantize_fp8(space, out, in, scale, stats); });
    CHECK(tally.launches == 1);
    CHECK(tally.fences == 0);

    const auto got = kamp::test::to_host(out);
    double amax = 0;
    std::uint32_t saturated = 0, underflowed = 0;
    int wrong = 0;
    for (std::size_t i = 0; i < xs.size(); ++i) {
      const float scaled = xs[i] * scale_value;
      amax = std::max(amax, std::fabs(double(xs[i])));
      saturated += std::fabs(double(scaled)) > kamp::format_traits<F>::max() ? 1 : 0;
      // below half the smallest subnormal (a tie goes to zero, the even pattern)
      underflowed += (xs[i] != 0 && std::fabs(double(scaled)) <= kamp::format_traits<F>::min_subnormal() / 2) ? 1 : 0;
      wrong += got[i].bits == kamp::from_float_saturated<F>(scaled).bits ? 0 : 1;
    }
    const auto s = kamp::test::scalar_to_host(stats);
    INFO(kamp::format_traits<F>::name << " scale " << scale_value);
    CHECK(wrong == 0);
    CHECK(double(s.amax) == amax);
    CHECK(s.saturated == saturated);
    CHECK(saturated > 0);
    CHECK(s.underflowed == underflowed);
    CHECK(underflowed > 0);
    CHECK(s.scale_inv == 1.0f / scale_value);
  };
  check(kamp::fp8_e4m3{}, 1.0f);
  check(kamp::fp8_e4m3{}, 4.0f);
  check(kamp::fp8_e5m2{}, 0.5f);
  check(kamp::fp8_e4m3fnuz{}, 3.0f);
  check(kamp::fp8_e5m2fnuz{}, 1.0f);
}

TEMPLATE_TEST_CASE("amax is max |x|, and +inf for data holding inf or NaN", "[kernels][fp8]",
                   KAMP_TEST_EXECUTION_SPACES) {
  using memory = typename TestType::memory_space;
  std::vector<float> xs = kamp::test::normal_values(5000, 2.0f, 3);
  xs[4321] = -37.5f;
  Kokkos::View<float, memory> amax("amax");
  kamp::amax(TestType(), kamp::test::to_device<float, TestType>(xs, "x"), amax);
  CHECK(kamp::test::scalar_to_host(amax) == 37.5f);
  for (const float bad : {INFINITY, -INFINITY, NAN}) {
    xs[17] = bad;
    kamp::amax(TestType(), kamp::test::to_device<float, TestType>(xs, "x"), amax);
    CHECK(kamp::test::scalar_to_host(amax) == INFINITY);
    Kokkos::View<kamp::fp8_e4m3*, memory> out("out", xs.size());
    Kokkos::View<kamp::fp8_cast_stats, memory> stats("stats");
    kamp::quantize_fp8(TestType(), out, kamp::test::to_device<float, TestType>(xs, "x"),
                       device_scalar<TestType>(1.0f, "scale"), stats);
    CHECK(kamp::test::scalar_to_host(stats).amax == INFINITY);
  }
}

TEMPLATE_TEST_CASE("current scaling follows Transformer Engine's compute_scale_from_amax", "[kernels][fp8]",
                   KAMP_TEST_EXECUTION_SPACES) {
  const TestType space;
  const auto scale_for = [&](float amax_value, kamp::fp8_scaling_options o) {
    const auto amax = kamp::test::to_device<float, TestType>({amax_value}, "amax");
    const auto scale = kamp::test::to_device<float, TestType>({123.0f}, "scale");
    kamp::fp8_current_scale<kamp::fp8_e4m3>(space, amax, scale, o);
    return kamp::test::to_host(scale)[0];
  };
  const kamp::fp8_scaling_options plain;
  CHECK(scale_for(3.0f, plain) == 448.0f / 3.0f);  // a correctly rounded fp32 division
  CHECK(scale_for(0.0f, plain) == 1.0f);
  CHECK(scale_for(INFINITY, plain) == 1.0f);
  CHECK(scale_for(NAN, plain) == 1.0f);
  CHECK(scale_for(1e-40f, plain) == FLT_MAX);  // 448 / 1e-40 overflows fp32
  kamp::fp8_scaling_options pow2;
  pow2.power_of_2 = true;
  CHECK(scale_for(3.0f, pow2) == 128.0f);  // 149.33 rounded down to a power of two
  kamp::fp8_scaling_options floor;
  floor.amax_epsilon = 0.5f;
  CHECK(scale_for(0.01f, floor) == 896.0f);
  CHECK(scale_for(0.0f, floor) == 896.0f);
  // A group: one launch for every tensor, each from its own amax.
  const auto amax = kamp::test::to_device<float, TestType>({2.0f, 0.0f, 57344.0f}, "amax");
  const auto scale = kamp::test::to_device<float, TestType>({7.0f, 7.0f, 7.0f}, "scale");
  const auto tally = kamp::count_launches([&] { kamp::fp8_current_scale<kamp::fp8_e5m2>(space, amax, scale); });
  CHECK(tally.launches == 1);
  CHECK(kamp::test::to_host(scale) == std::vector<float>{28672.0f, 1.0f, 1.0f});
}

TEMPLATE_TEST_CASE("delayed scaling takes the largest amax of its window and keeps its scale without data",
                   "[kernels][fp8]", KAMP_TEST_EXECUTION_SPACES) {
  using memory = typename TestType::memory_space;
  const TestType space;
  // Two tensors in one group: the first follows `amaxes`, the second sees half of each.
  Kokkos::View<float**, Kokkos::LayoutRight, memory> history("history", 2, 4);
  const auto scale = kamp::test::to_device<float, TestType>({1.0f, 1.0f}, "scale");
  Kokkos::View<kamp::fp8_cast_stats*, memory> last("last", 2);
  std::vector<std::vector<double>> window(2, std::vector<double>(4, 0.0));
  std::vector<double> expected{1.0, 1.0};
  const float amaxes[] = {0.0f, 2.0f, 8.0f, INFINITY, 1.0f, 0.5f, NAN, 0.25f, 0.125f};
  std::int64_t slot = 0;
  const auto set_last = [&](float a, float b) {
    Kokkos::deep_copy(last,
                      kamp::test::to_device<kamp::fp8_cast_stats, TestType>(
                          {kamp::fp8_cast_stats{a, 1.0f, 0u, 0u}, kamp::fp8_cast_stats{b, 1.0f, 0u, 0u}}, "stats"));
  };
  for (const float a : amaxes) {
    set_last(a, a / 2);
    const auto tally = kamp::count_launches(
        [&] { kamp::fp8_delayed_update<kamp::fp8_e4m3>(space, history, slot, read_only_stats(last), scale); });
    CHECK(tally.launches == 1);
    CHECK(tally.fences == 0);
    const auto got = kamp::test::to_host(scale);
    for (int t = 0; t < 2; ++t) {
      const double amax = t == 0 ? a : a / 2;
      window[t][slot % 4] = std::isfinite(amax) ? amax : 0.0;  // a non-finite amax enters as 0
      double m = 0;
      for (const double w : window[t]) m = std::max(m, w);
      if (m > 0) expected[t] = float(448.0f / float(m));
      INFO("tensor " << t << " after amax " << amax);
      CHECK(got[t] == float(expected[t]));
    }
    ++slot;
  }
  // With a margin of 1 the scale halves.
  kamp::fp8_scaling_options margin;
  margin.margin = 1;
  kamp::fp8_delayed_update<kamp::fp8_e4m3>(space, history, slot, read_only_stats(last), scale, margin);
  window[0][slot % 4] = 0.125;
  double m = 0;
  for (const double w : window[0]) m = std::max(m, w);
  CHECK(kamp::test::to_host(scale)[0] == float(448.0f / float(m)) / 2.0f);

  // A window without data (zeros, or only non-finite amaxes) keeps the scale it had.
  Kokkos::View<float**, Kokkos::LayoutRight, memory> fresh("fresh", 2, 2);
  Kokkos::deep_copy(scale, 5.0f);
  for (const float a : {0.0f, INFINITY, NAN}) {
    set_last(a, a);
    kamp::fp8_delayed_update<kamp::fp8_e4m3>(space, fresh, 0, read_only_stats(last), scale);
    CHECK(kamp::test::to_host(scale) == std::vector<float>{5.0f, 5.0f});
  }
}

namespace {

// FP8 operands with scale_inv, C in fp32 or bf16, against fp64: |C - C64| <= 2 K 2^-24 sum|a b| s
// + one rounding of C.
template <class ExecSpace, class TA, class TB, class TC>
void check_gemm_fp8(kamp::op op_a, kamp::op op_b, float beta, bool with_bias, kamp::gemm_algorithm algorithm,
                    std::string* path_taken = nullptr) {
  using memory = typename ExecSpace::memory_space;
  const int m = 37, n = 48, k = 80;
  const bool ta = op_a == kamp::op::transpose, tb = op_b == kamp::op::transpose;
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 40.0f);
  const auto fp8s = [&](int count) {
    std::vector<TA> a(count);
    for (auto& x : a) x = kamp::from_float_saturated<TA>(normal(rng));
    return a;
  };
  const auto fp8s_b = [&](int count) {
    std::vector<TB> b(count);
    for (auto& x : b) x = kamp::from_float_saturated<TB>(normal(rng) / 64.0f);
    return b;
  };
  const std::vector<TA> a = fp8s(m * k);
  const std::vector<TB> b = fp8s_b(k * n);
  std::vector<float> c0(m * n), bias(n);
  for (auto& x : c0) x = normal(rng);
  for (auto& x : bias) x = normal(rng);
  const float sa = 0.0625f, sb = 3.0f, alpha = 0.5f;

  Kokkos::View<TA**, Kokkos::LayoutRight, memory> A("A", ta ? k : m, ta ? m : k);
  Kokkos::View<TB**, Kokkos::LayoutRight, memory> B("B", tb ? n : k, tb ? k : n);
  Kokkos::View<TC**, Kokkos::LayoutRight, memory> C("C", m, n);
  auto A_h = Kokkos::create_mirror_view(A);
  auto B_h = Kokkos::create_mirror_view(B);
  auto C_h = Kokkos::create_mirror_view(C);
  for (int i = 0; i < int(A.extent(0)); ++i)
    for (int j = 0; j < int(A.extent(1)); ++j) A_h(i, j) = a[i * A.extent(1) + j];
  for (int i = 0; i < int(B.extent(0)); ++i)
    for (int j = 0; j < int(B.extent(1)); ++j) B_h(i, j) = b[i * B.extent(1) + j];
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) C_h(i, j) = kamp::from_float<TC>(c0[i * n + j]);
  Kokkos::deep_copy(A, A_h);
  Kokkos::deep_copy(B, B_h);
  Kokkos::deep_copy(C, C_h);
  const auto bias_d = kamp::test::to_device<float, ExecSpace>(bias, "bias");
  const auto sa_d = device_scalar<ExecSpace>(sa, "sa"), sb_d = device_scalar<ExecSpace>(sb, "sb");

  const Kokkos::View<const float*, memory> bias_arg = with_bias ? bias_d : Kokkos::View<const float*, memory>();
  if (path_taken) *path_taken = kamp::gemm_fp8_path_for<ExecSpace>(op_a, op_b, A, B, C, bias_arg).path;
  kamp::gemm_fp8(ExecSpace(), op_a, op_b, alpha, A, sa_d, B, sb_d, beta, C, bias_arg, algorithm);
  Kokkos::deep_copy(C_h, C);

  int wrong = 0;
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      double sum = 0, magnitude = 0;
      for (int p = 0; p < k; ++p) {
        const double x = kamp::to_float(ta ? A_h(p, i) : A_h(i, p)), y = kamp::to_float(tb ? B_h(j, p) : B_h(p, j));
        sum += x * y;
        magnitude += std::fabs(x * y);
      }
      const double s = double(alpha) * sa * sb;
      const double c_in = kamp::to_float(kamp::from_float<TC>(c0[i * n + j]));
      const double want = s * sum + beta * c_in + (with_bias ? bias[j] : 0.0);
      const double got = kamp::to_float(C_h(i, j));
      const double rounding = std::is_same_v<TC, float> ? 0x1p-24 : 0x1p-8;
      const double bound = 2.0 * k * 0x1p-24 * magnitude * s +
                           4 * 0x1p-24 * (std::fabs(beta * c_in) + std::fabs(bias[j])) + rounding * std::fabs(want) +
                           1e-30;
      if (!(std::fabs(got - want) <= bound) && ++wrong <= 3) {
        INFO("C(" << i << "," << j << ") = " << got << ", fp64 " << want << ", bound " << bound);
        CHECK(false);
      }
    }
  }
  CHECK(wrong == 0);
}

}  // namespace

TEMPLATE_TEST_CASE("gemm_fp8 equals fp64 sums of the scaled FP8 products on every path", "[kernels][fp8][gemm]",
                   KAMP_TEST_EXECUTION_SPACES) {
  using kamp::op;
  for (const auto algorithm : {kamp::gemm_algorithm::automatic, kamp::gemm_algorithm::portable}) {
    for (const op oa : {op::none, op::transpose}) {
      for (const op ob : {op::none, op::transpose}) {
        INFO("op_a " << int(oa) << ", op_b " << int(ob) << ", algorithm " << int(algorithm));
        check_gemm_fp8<TestType, kamp::fp8_e4m3, kamp::fp8_e4m3, float>(oa, ob, 0.0f, false, algorithm);
        check_gemm_fp8<TestType, kamp::fp8_e5m2, kamp::fp8_e4m3, kamp::bf16>(oa, ob, 0.0f, true, algorithm);
        check_gemm_fp8<TestType, kamp::fp8_e4m3, kamp::fp8_e5m2, float>(oa, ob, 1.0f, false, algorithm);
      }
    }
    check_gemm_fp8<TestType, kamp::fp8_e4m3fnuz, kamp::fp8_e5m2fnuz, kamp::bf16>(op::none, op::transpose, 0.5f, true,
                                                                                 algorithm);
    check_gemm_fp8<TestType, kamp::fp8_e5m2, kamp::fp8_e5m2, float>(op::transpose, op::none, 0.0f, true, algorithm);
  }
}

TEMPLATE_TEST_CASE("gemm_fp8 takes the path that serves it and says why", "[kernels][fp8][gemm]",
                   KAMP_TEST_EXECUTION_SPACES) {
  std::string path;
  check_gemm_fp8<TestType, kamp::fp8_e4m3, kamp::fp8_e4m3, kamp::bf16>(kamp::op::none, kamp::op::transpose, 0.0f, true,
                                                                       kamp::gemm_algorithm::automatic, &path);
  INFO("path " << path);
  if constexpr (std::is_same_v<TestType, Kokkos::DefaultHostExecutionSpace>) {
    // Widening pays only where kamp::gemm has a vendor path for bf16.
    const std::string bf16_path = kamp::gemm_path_on_this_machine<TestType, kamp::bf16, kamp::bf16, float>().path;
    CHECK(path == (bf16_path == "portable" ? "portable" : "bf16_widened"));
  } else {
#if defined(KAMP_ENABLE_CUBLAS) && defined(KOKKOS_ENABLE_CUDA) && KAMP_HAVE_CUBLASLT_FP8
    // An FP8 GPU takes cuBLASLt for this TN problem, and its result met the fp64 bound above.
    if constexpr (std::is_same_v<TestType, Kokkos::Cuda>) {
      CHECK(path == (kamp::detail::cuda_compute_capability() >= 89 ? "cublaslt" : "portable"));
      return;
    }
#endif
    CHECK(path == "portable");
  }
}
