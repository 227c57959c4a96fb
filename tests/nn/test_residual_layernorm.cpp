// residual_layernorm_forward (out = x + branch, y = LayerNorm(out) in one pass) against the
// two kernels it replaces, bit for bit, and against LayerNorm computed in fp64.
#include <kamp/kernels/nn/layernorm.hpp>
#include <kamp/tools/traffic.hpp>

#include "../support/catch.hpp"

#include "../support/data.hpp"
#include "../support/execution_spaces.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace kamp::test {

/// The unfused residual add: out = x + branch in S, rounded once to O (what the model did before
/// fusing). Plain pointers, outside the test case's function: nvcc's extended-lambda rules.
template <class S, class Space, class X, class B, class O>
void residual_add_rounded(const Space& space, const X* x, const B* branch, O* out, std::int64_t count) {
  Kokkos::parallel_for(
      "kamp::test::residual_add", Kokkos::RangePolicy<Space, Kokkos::IndexType<std::int64_t>>(space, 0, count),
      KOKKOS_LAMBDA(std::int64_t i) { store_nearest(out + i, load_as<S>(x + i) + load_as<S>(branch + i)); });
}

}  // namespace kamp::test

namespace {

template <class T, class Space>
using matrix = Kokkos::View<T**, Kokkos::LayoutRight, typename Space::memory_space>;
template <class T, class Space>
using vec = Kokkos::View<T*, typename Space::memory_space>;

/// v rounded to T by the kernels' own store (nearest even).
template <class T>
T rounded_to(double v) {
  T t;
  if constexpr (std::is_same_v<T, double>)
    kamp::store_nearest(&t, v);
  else
    kamp::store_nearest(&t, static_cast<float>(v));
  return t;
}

template <class T>
std::vector<T> rounded_all(const std::vector<float>& v, float offset) {
  std::vector<T> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = rounded_to<T>(double(v[i]) + offset);
  return out;
}

template <class T>
double value_of(const T& t) {
  return kamp::load_as<double>(&t);
}

/// Unit roundoff of each storage type: half the distance from 1 to the next value.
template <class T>
constexpr double unit_roundoff() {
  if constexpr (std::is_same_v<T, kamp::bf16>)
    return 0x1p-8;
  else if constexpr (std::is_same_v<T, kamp::fp16>)
    return 0x1p-11;
  else
    return std::numeric_limits<T>::epsilon() / 2;
}

template <class T, class Space>
matrix<T, Space> to_matrix(const std::vector<T>& h, std::size_t n, std::size_t c, const std::string& label) {
  matrix<T, Space> m(label, n, c);
  Kokkos::deep_copy(
      m, Kokkos::View<const T**, Kokkos::LayoutRight, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(h.data(), n, c));
  return m;
}
template <class T, class Space>
vec<T, Space> to_vector(const std::vector<T>& h, const std::string& label) {
  vec<T, Space> v(label, h.size());
  Kokkos::deep_copy(v, Kokkos::View<const T*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(h.data(), h.size()));
  return v;
}
/// Any contiguous view's elements on the host, in order.
template <class View>
std::vector<typename View::non_const_value_type> host(const View& v) {
  const auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  return std::vector<typename View::non_const_value_type>(h.data(), h.data() + h.size());
}

/// How many elements differ in their bits.
template <class T>
std::size_t bit_mismatches(const std::vector<T>& a, const std::vector<T>& b) {
  std::size_t wrong = a.size() == b.size() ? 0 : a.size() + b.size();
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) wrong += std::memcmp(&a[i], &b[i], sizeof(T)) != 0;
  return wrong;
}

/// x (N, C) of type X, branch of type B, gamma and beta of type P, out of type O, y of type Y,
/// statistics in S: the fused kernel against the add kernel then layernorm_forward, bitwise, and
/// against fp64.
template <class Space, class X, class B, class P, class O, class Y, class S>
void check_fused(const char* types, std::size_t n, std::size_t c, unsigned seed) {
  INFO(types << ", N = " << n << ", C = " << c);
  // x off-centre and different per row, so the centring and the row statistics both matter.
  std::vector<float> xf = kamp::test::normal_values(n * c, 1.0f, seed);
  for (std::size_t i = 0; i < xf.size(); ++i) xf[i] += 0.25f * float(i / (c ? c : 1));
  const auto xh = rounded_all<X>(xf, 1.5f);
  const auto bh = rounded_all<B>(kamp::test::normal_values(n * c, 0.5f, seed + 1), 0.0f);
  const auto gh = rounded_all<P>(kamp::test::normal_values(c, 0.3f, seed + 2), 1.0f);
  const auto betah = rounded_all<P>(kamp::test::normal_values(c, 0.2f, seed + 3), 0.0f);
  const auto x = to_matrix<X, Space>(xh, n, c, "x");
  const auto branch = to_matrix<B, Space>(bh, n, c, "branch");
  const auto gamma = to_vector<P, Space>(gh, "gamma"), beta = to_vector<P, Space>(betah, "beta");

  const matrix<O, Space> out("out", n, c), out_unfused("out_unfused", n, c);
  const matrix<Y, Space> y("y", n, c), y_unfused("y_unfused", n, c);
  const vec<S, Space> mean("mean", n), rstd("rstd", n), mean_unfused("mean_unfused", n),
      rstd_unfused("rstd_unfused", n);
  kamp::residual_layernorm_forward(Space(), x, branch, gamma, beta, out, y, mean, rstd);
  kamp::test::residual_add_rounded<S>(Space(), x.data(), branch.data(), out_unfused.data(), std::int64_t(n * c));
  kamp::layernorm_forward(Space(), out_unfused, gamma, beta, y_unfused, mean_unfused, rstd_unfused);

  // (a) The fused kernel is the composition, bit for bit.
  const auto outh = host(out);
  const auto yh = host(y);
  const auto meanh = host(mean), rstdh = host(rstd);
  CHECK(bit_mismatches(outh, host(out_unfused)) == 0);
  CHECK(bit_mismatches(yh, host(y_unfused)) == 0);
  CHECK(bit_mismatches(meanh, host(mean_unfused)) == 0);
  CHECK(bit_mismatches(rstdh, host(rstd_unfused)) == 0);
  if constexpr (std::is_same_v<B, O>) {
    // In place, as the model calls it: the Linear wrote its branch into the stream's buffer.
    const auto in_place = to_matrix<O, Space>(bh, n, c, "in_place");
    const matrix<Y, Space> y_in_place("y_in_place", n, c);
    const vec<S, Space> mean_in_place("mean_in_place", n), rstd_in_place("rstd_in_place", n);
    kamp::residual_layernorm_forward(Space(), x, in_place, gamma, beta, in_place, y_in_place, mean_in_place,
                                     rstd_in_place);
    CHECK(bit_mismatches(host(in_place), outh) == 0);
    CHECK(bit_mismatches(host(y_in_place), yh) == 0);
    CHECK(bit_mismatches(host(mean_in_place), meanh) == 0);
    CHECK(bit_mismatches(host(rstd_in_place), rstdh) == 0);
    if (n > 0 && c > 0)
      CHECK_THROWS_AS(kamp::residual_layernorm_forward(Space(), in_place, branch, gamma, beta, in_place, y_in_place,
                                                       mean_in_place, rstd_in_place),
                      std::invalid_argument);
  }

  // (b) out is x + branch rounded once from S: the sum of two values of at most fp32 precision
  // and like magnitude is exact in fp64, S(sum) its one rounding to S, then O's store.
  std::vector<O> expected_out(n * c);
  for (std::size_t i = 0; i < n * c; ++i)
    expected_out[i] = rounded_to<O>(double(static_cast<S>(value_of(xh[i]) + value_of(bh[i]))));
  CHECK(bit_mismatches(outh, expected_out) == 0);

  // y, mean and rstd against LayerNorm of the stored out in fp64. Bounds (Higham's γ_k ≈ k·u for
  // a sum of k terms in any order, u the unit roundoff of S): |Δmean| ≤ (C+10)·u·mean|v|; the
  // centred sum of squares is a sum of C non-negative terms, so rstd is off by at most
  // (C+10)·u relative; y = (v - mean)·rstd·gamma + beta then inherits |gamma|·rstd·(|Δmean| +
  // (C+10)·u·|v - mean|) + (C+10)·u·|beta| before the final rounding to Y, which adds u_Y times
  // the value it rounds (and half fp16's subnormal spacing, 2^-25, near 0). u gets 2^-53 added
  // for the fp64 reference's own rounding (it matters when S is fp64 too).
  const double u = unit_roundoff<S>() + 0x1p-53, uy = unit_roundoff<Y>();
  const double k = (double(c) + 10) * u, eps = double(static_cast<S>(1e-5));
  std::size_t mean_wrong = 0, rstd_wrong = 0, y_wrong = 0;
  double worst = 0;  // the largest |error| / bound
  for (std::size_t row = 0; row < n; ++row) {
    double sum = 0, abs_sum = 0, sq = 0;
    for (std::size_t i = 0; i < c; ++i) {
      sum += value_of(outh[row * c + i]);
      abs_sum += std::abs(value_of(outh[row * c + i]));
    }
    const double mu = sum / double(c), mean_abs = abs_sum / double(c);
    for (std::size_t i = 0; i < c; ++i) sq += (value_of(outh[row * c + i]) - mu) * (value_of(outh[row * c + i]) - mu);
    const double r = 1 / std::sqrt(sq / double(c) + eps);
    const double mean_bound = k * mean_abs, rstd_bound = k * r;
    mean_wrong += std::abs(value_of(meanh[row]) - mu) > mean_bound;
    rstd_wrong += std::abs(value_of(rstdh[row]) - r) > rstd_bound;
    for (std::size_t i = 0; i < c; ++i) {
      const double d = value_of(outh[row * c + i]) - mu, g = value_of(gh[i]), b = value_of(betah[i]);
      const double ref = d * r * g + b;
      const double in_s = std::abs(g) * r * (mean_bound + k * std::abs(d)) + k * std::abs(b);
      const double bound = in_s + uy * (std::abs(ref) + in_s) + (std::is_same_v<Y, kamp::fp16> ? 0x1p-25 : 0.0);
      const double err = std::abs(value_of(yh[row * c + i]) - ref);
      y_wrong += err > bound;
      if (bound > 0 && err / bound > worst) worst = err / bound;
    }
  }
  INFO("largest |y error| / bound: " << worst);
  CHECK(mean_wrong == 0);
  CHECK(rstd_wrong == 0);
  CHECK(y_wrong == 0);
}

struct shape {
  std::size_t n, c;
};
// C = 1; C not a multiple of 16 (a CPU's vector width) nor of 32 (a GPU row's lanes); GPT-2's
// 768; N not a multiple of the 4 rows a GPU team takes; no rows.
const shape shapes[] = {{1, 1}, {3, 1}, {5, 7}, {4, 16}, {7, 33}, {6, 100}, {3, 768}, {2, 1029}, {0, 8}};

struct traffic_log : kamp::traffic_listener {
  std::vector<std::pair<std::string, double>> kernels;
  void kernel(const char* label, double bytes, const kamp::kernel_arithmetic&) override {
    kernels.emplace_back(label, bytes);
  }
  void gemm(const kamp::gemm_record&) override {}
};

}  // namespace

TEMPLATE_TEST_CASE("residual_layernorm_forward is the residual add then layernorm_forward, bit for bit", "[nn][fused]",
                   KAMP_TEST_EXECUTION_SPACES) {
  using Space = TestType;
  using kamp::bf16;
  using kamp::fp16;
  unsigned seed = 100;
  for (const shape s : shapes) {
    // x, branch, gamma/beta, out, y, statistics
    check_fused<Space, float, float, float, float, float, float>("fp32 branch, fp32 y", s.n, s.c, seed += 10);
    check_fused<Space, float, float, float, float, bf16, float>("fp32 branch, bf16 y", s.n, s.c, seed += 10);
    check_fused<Space, float, float, float, float, fp16, float>("fp32 branch, fp16 y", s.n, s.c, seed += 10);
    check_fused<Space, float, bf16, float, float, float, float>("bf16 branch, fp32 y", s.n, s.c, seed += 10);
    check_fused<Space, float, bf16, float, float, bf16, float>("bf16 branch, bf16 y", s.n, s.c, seed += 10);
    check_fused<Space, float, bf16, float, float, fp16, float>("bf16 branch, fp16 y", s.n, s.c, seed += 10);
    // Pure bf16 (the stored out is rounded, and LayerNorm must read those values) and fp64.
    check_fused<Space, bf16, bf16, bf16, bf16, bf16, float>("pure bf16", s.n, s.c, seed += 10);
    check_fused<Space, double, double, double, double, double, double>("fp64", s.n, s.c, seed += 10);
  }
}

TEMPLATE_TEST_CASE("residual_layernorm_forward reports the bytes of one pass", "[nn][fused]",
                   KAMP_TEST_EXECUTION_SPACES) {
  using Space = TestType;
  const std::size_t n = 3, c = 40;
  const matrix<float, Space> x("x", n, c), out("out", n, c);
  const matrix<kamp::bf16, Space> branch("branch", n, c), y("y", n, c);
  const vec<float, Space> gamma("gamma", c), beta("beta", c), mean("mean", n), rstd("rstd", n);
  traffic_log log;
  {
    const kamp::traffic_scope scope(log);
    kamp::residual_layernorm_forward(Space(), x, branch, gamma, beta, out, y, mean, rstd);
  }
  REQUIRE(log.kernels.size() == 1);
  CHECK(log.kernels[0].first == "kamp::residual_layernorm_forward");
  // x and out in fp32, branch and y in bf16, once each; gamma and beta; mean and rstd.
  CHECK(log.kernels[0].second == double(n * c * (4 + 2 + 4 + 2) + c * (4 + 4) + n * (4 + 4)));
}

TEMPLATE_TEST_CASE("residual_layernorm_forward refuses mismatched extents", "[nn][fused]", KAMP_TEST_EXECUTION_SPACES) {
  using Space = TestType;
  const std::size_t n = 4, c = 6;
  const matrix<float, Space> x("x", n, c), branch("branch", n, c), out("out", n, c), y("y", n, c);
  const vec<float, Space> gamma("gamma", c), beta("beta", c), mean("mean", n), rstd("rstd", n);
  const matrix<float, Space> narrow("narrow", n, c - 1), wide("wide", n, c + 1), tall("tall", n + 1, c);
  const vec<float, Space> short_c("short_c", c - 1), short_n("short_n", n - 1), long_n("long_n", n + 1);
  const auto refuses = [](const auto& call, const std::string& what) {
    INFO(what);
    CHECK_THROWS_AS(call(), std::invalid_argument);
    CHECK_THROWS_WITH(call(), kamp::test::contains("kamp::residual_layernorm_forward: " + what));
  };
  const auto run = [&](const auto& b, const auto& g, const auto& be, const auto& o, const auto& yy, const auto& m,
                       const auto& r) {
    return [=] { kamp::residual_layernorm_forward(Space(), x, b, g, be, o, yy, m, r); };
  };
  CHECK_NOTHROW(run(branch, gamma, beta, out, y, mean, rstd)());
  refuses(run(wide, gamma, beta, out, y, mean, rstd), "branch columns");
  refuses(run(tall, gamma, beta, out, y, mean, rstd), "branch rows");
  refuses(run(branch, short_c, beta, out, y, mean, rstd), "gamma");
  refuses(run(branch, gamma, short_c, out, y, mean, rstd), "beta");
  refuses(run(branch, gamma, beta, narrow, y, mean, rstd), "out columns");
  refuses(run(branch, gamma, beta, tall, y, mean, rstd), "out rows");
  refuses(run(branch, gamma, beta, out, wide, mean, rstd), "y");
  refuses(run(branch, gamma, beta, out, y, short_n, rstd), "mean");
  refuses(run(branch, gamma, beta, out, y, mean, long_n), "rstd");
}
