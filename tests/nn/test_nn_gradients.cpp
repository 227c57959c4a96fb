// Every nn kernel's backward pass against central finite differences of its forward pass, in
// fp64 on every execution space: L = Σ w ⊙ forward(x) with random w, so dL/dout = w.
#include <kamp/kernels/nn.hpp>

#include "../support/catch.hpp"

#include "../support/execution_spaces.hpp"
#include "../support/finite_differences.hpp"
#include "../support/oracles.hpp"
#include "../support/views.hpp"

namespace {

using kamp::test::gradient_error;
using kamp::test::normal_doubles;
using kamp::test::sample_indices;

template <class Space>
using dvec = Kokkos::View<double*, typename Space::memory_space>;
template <class Space>
using dmat = Kokkos::View<double**, Kokkos::LayoutRight, typename Space::memory_space>;

template <class Space>
dmat<Space> matrix_from(const std::vector<double>& host, std::size_t rows, std::size_t cols) {
  dmat<Space> m("m", rows, cols);
  Kokkos::deep_copy(m, Kokkos::View<const double**, Kokkos::LayoutRight, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(
                           host.data(), rows, cols));
  return m;
}
template <class View>
std::vector<double> flat_host(const View& v) {
  const auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  return std::vector<double>(h.data(), h.data() + h.size());
}
double weighted_sum(const std::vector<double>& w, const std::vector<double>& y) {
  double s = 0;
  for (std::size_t i = 0; i < y.size(); ++i) s += w[i] * y[i];
  return s;
}

constexpr double tolerance = 1e-6;

// GPT-2's GELU, tanh form, in fp64: the reference for the fp32 kernel.
double gelu_fp64(double v) { return 0.5 * v * (1 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v))); }

}  // namespace

TEMPLATE_TEST_CASE("layernorm backward matches finite differences in fp64", "[nn]", KAMP_TEST_EXECUTION_SPACES) {
  using Space = TestType;
  const std::size_t n = 5, c = 24;
  auto x = normal_doubles(n * c, 1.5, 1, 0.3), gamma = normal_doubles(c, 0.5, 2, 1.0), beta = normal_doubles(c, 0.5, 3);
  const auto w = normal_doubles(n * c, 1.0, 4);
  const auto loss = [&] {
    const auto y = dmat<Space>("y", n, c);
    const dvec<Space> mean("mean", n), rstd("rstd", n);
    kamp::layernorm_forward(Space(), matrix_from<Space>(x, n, c), kamp::test::to_device<double, Space>(gamma, "g"),
                            kamp::test::to_device<double, Space>(beta, "b"), y, mean, rstd);
    return weighted_sum(w, flat_host(y));
  };
  const auto xs = matrix_from<Space>(x, n, c);
  const auto g = kamp::test::to_device<double, Space>(gamma, "g"), b = kamp::test::to_device<double, Space>(beta, "b");
  const auto y = dmat<Space>("y", n, c);
  const dvec<Space> mean("mean", n), rstd("rstd", n), dgamma("dg", c), dbeta("db", c);
  kamp::layernorm_forward(Space(), xs, g, b, y, mean, rstd);
  // dx accumulates: start from a known value and subtract it afterwards.
  const auto dx = matrix_from<Space>(std::vector<double>(n * c, 0.25), n, c);
  kamp::layernorm_backward(Space(), matrix_from<Space>(w, n, c), xs, g, mean, rstd, dx, dgamma, dbeta);
  auto gx = flat_host(dx);
  for (auto& v : gx) v -= 0.25;
  CHECK(gradient_error(loss, x, gx, sample_indices(0, n * c, n * c, 5)) < tolerance);
  CHECK(gradient_error(loss, gamma, flat_host(dgamma), sample_indices(0, c, c, 6)) < tolerance);
  CHECK(gradient_error(loss, beta, flat_host(dbeta), sample_indices(0, c, c, 7)) < tolerance);
}

TEMPLATE_TEST_CASE("gelu backward matches finite differences in fp64", "[nn]", KAMP_TEST_EXECUTION_SPACES) {
  using Space = TestType;
  const std::size_t n = 64;
  auto x = normal_doubles(n, 2.0, 11);
  const auto w = normal_doubles(n, 1.0, 12);
  const auto loss = [&] {
    const dvec<Space> y("y", n);
    kamp::gelu_forward(Space(), kamp::test::to_device<double, Space>(x, "x"), y);
    return weighted_sum(w, flat_host(y));
  };
  const dvec<Space> dx("dx", n);
  kamp::gelu_backward(Space(), kamp::test::to_device<double, Space>(w, "w"),
                      kamp::test::to_device<double, Space>(x, "x"), dx);
  CHECK(gradient_error(loss, x, flat_host(dx), sample_indices(0, n, n, 13)) < tolerance);
  // GELU(x) = x Φ(x) approximately; the tanh form is within 1e-3 of the erf form.
  const dvec<Space> y("y", n);
  kamp::gelu_forward(Space(), kamp::test::to_device<double, Space>(x, "x"), y);
  const auto yh = flat_host(y);
  for (std::size_t i = 0; i < n; ++i)
    CHECK(yh[i] == Approx(0.5 * x[i] * (1 + std::erf(x[i] / std::sqrt(2.0)))).margin(1e-3));
}

TEMPLATE_TEST_CASE("causal softmax backward matches finite differences in fp64", "[nn]", KAMP_TEST_EXECUTION_SPACES) {
  using Space = TestType;
  const std::size_t t = 6, rows = 3 * t;  // three (batch, head) pairs of t queries
  auto s = normal_doubles(rows * t, 2.0, 21);
  const auto w = normal_doubles(rows * t, 1.0, 22);
  const auto forward = [&](dmat<Space>& scores) {
    scores = matrix_from<Space>(s, rows, t);
    const dmat<Space> low("low", rows, t);
    kamp::causal_softmax_forward(Space(), scores, low);
    return flat_host(scores);
  };
  const auto loss = [&] {
    dmat<Space> p;
    return weighted_sum(w, forward(p));
  };
  dmat<Space> probs;
  const auto p = forward(probs);
  for (std::size_t r = 0; r < rows; ++r) {
    double sum = 0;
    for (std::size_t j = 0; j < t; ++j) {
      if (j > r % t) CHECK(p[r * t + j] == 0.0);
      sum += p[r * t + j];
    }
    CHECK(sum == Approx(1.0).epsilon(1e-14));
  }
  const dmat<Space> ds("ds", rows, t);
  kamp::causal_softmax_backward(Space(), probs, matrix_from<Space>(w, rows, t), ds);
  CHECK(gradient_error(loss, s, flat_host(ds), sample_indices(0, rows * t, rows * t, 23)) < tolerance);
}

TEMPLATE_TEST_CASE("cross entropy gradient matches finite differences in fp64", "[nn]", KAMP_TEST_EXECUTION_SPACES) {
  using Space = TestType;
  const std::size_t n = 7, v = 11;
  auto z = normal_doubles(n * v, 3.0, 31);
  const std::vector<int> targets{0, 3, 10, 5, 5, 2, 9};
  const auto t = kamp::test::to_device<int, Space>(targets, "targets");
  const auto loss = [&] {
    const dvec<Space> losses("losses", n);
    kamp::cross_entropy(Space(), matrix_from<Space>(z, n, v), Kokkos::View<const int*, typename Space::memory_space>(t),
                        losses, dmat<Space>(), 1.0);
    double mean = 0;
    for (double l : flat_host(losses)) mean += l / n;
    return mean;
  };
  const dvec<Space> losses("losses", n);
  const dmat<Space> dz("dz", n, v);
  kamp::cross_entropy(Space(), matrix_from<Space>(z, n, v), Kokkos::View<const int*, typename Space::memory_space>(t),
                      losses, dz, 1.0 / n);
  // The per-row loss against log-sum-exp computed on the host.
  const auto lh = flat_host(losses);
  for (std::size_t r = 0; r < n; ++r) {
    double m = z[r * v], s = 0;
    for (std::size_t j = 0; j < v; ++j) m = std::max(m, z[r * v + j]);
    for (std::size_t j = 0; j < v; ++j) s += std::exp(z[r * v + j] - m);
    CHECK(lh[r] == Approx(std::log(s) + m - z[r * v + targets[r]]).epsilon(1e-13));
  }
  CHECK(gradient_error(loss, z, flat_host(dz), sample_indices(0, n * v, n * v, 32)) < tolerance);
}

namespace {

// bf16 logits (a 16-bit lm_head's output), the gradient written over them as the model does:
// the same losses and gradient as with a separate gradient buffer, bit for bit; losses within
// fp32 rounding of fp64 log-sum-exp, and the gradient within bf16 rounding of fp64's.
template <class Space>
void check_cross_entropy_in_place() {
  using memory = typename Space::memory_space;
  using matrix16 = Kokkos::View<kamp::bf16**, Kokkos::LayoutRight, memory>;
  using const_matrix16 = Kokkos::View<const kamp::bf16**, Kokkos::LayoutRight, memory>;
  const std::size_t n = 37, v = 300;  // rows not a multiple of a team's, V not of a vector
  const auto z = normal_doubles(n * v, 4.0, 41);
  std::vector<kamp::bf16> z16(n * v);
  for (std::size_t i = 0; i < z.size(); ++i) kamp::store_nearest(&z16[i], float(z[i]));
  const auto logit = [&](std::size_t i) { return double(kamp::to_float(z16[i])); };
  std::vector<int> targets(n);
  for (std::size_t r = 0; r < n; ++r) targets[r] = int((r * 97) % v);
  const Kokkos::View<const int*, memory> t(kamp::test::to_device<int, Space>(targets, "targets"));
  const auto in_place = kamp::test::to_device<kamp::bf16, Space>(z16, "logits");
  const matrix16 logits(in_place.data(), n, v);
  const Kokkos::View<float*, memory> losses("losses", n), losses_separate("losses_separate", n);
  kamp::cross_entropy(Space(), const_matrix16(logits), t, losses, logits, 0.5 / n);
  const auto copy = kamp::test::to_device<kamp::bf16, Space>(z16, "copy");
  const matrix16 separate("separate", n, v);
  kamp::cross_entropy(Space(), const_matrix16(copy.data(), n, v), t, losses_separate, separate, 0.5 / n);
  const auto grad = kamp::test::to_host(in_place);
  const auto want = kamp::test::to_host(Kokkos::View<kamp::bf16*, memory>(separate.data(), n * v));
  int differ = 0;
  for (std::size_t i = 0; i < grad.size(); ++i) differ += grad[i].bits != want[i].bits;
  CHECK(differ == 0);
  const auto l = kamp::test::to_host(losses), l_separate = kamp::test::to_host(losses_separate);
  int gradient_wrong = 0;
  for (std::size_t r = 0; r < n; ++r) {
    CHECK(kamp::test::raw_bits(l[r]) == kamp::test::raw_bits(l_separate[r]));
    double m = logit(r * v), s = 0;
    for (std::size_t j = 0; j < v; ++j) m = std::max(m, logit(r * v + j));
    for (std::size_t j = 0; j < v; ++j) s += std::exp(logit(r * v + j) - m);
    CHECK(l[r] == Approx(std::log(s) + m - logit(r * v + targets[r])).epsilon(1e-5));
    for (std::size_t j = 0; j < v; ++j) {
      const double d = (std::exp(logit(r * v + j) - m) / s - (int(j) == targets[r] ? 1.0 : 0.0)) * 0.5 / double(n);
      gradient_wrong += std::abs(kamp::to_float(grad[r * v + j]) - d) > std::ldexp(std::abs(d), -8) * 1.01 + 1e-12;
    }
  }
  CHECK(gradient_wrong == 0);
  // A gradient over logits of another type, or over rows with a leading dimension, is refused.
  const Kokkos::View<float**, Kokkos::LayoutRight, memory> wide("wide", n, v);
  CHECK_THROWS_AS(
      kamp::cross_entropy(Space(), wide, t, losses, matrix16(reinterpret_cast<kamp::bf16*>(wide.data()), n, v), 1.0),
      std::invalid_argument);
  const Kokkos::View<kamp::bf16**, Kokkos::LayoutStride, memory> strided(in_place.data(),
                                                                         Kokkos::LayoutStride(n / 2, 2 * v, v, 1));
  CHECK_THROWS_AS(kamp::cross_entropy(Space(), strided, t, losses, strided, 1.0), std::invalid_argument);
}

// A padded vocabulary (llm.c's Vp): the loss reads the first V columns of an (N, Vp) buffer and
// writes its gradient over the whole of it. Losses and the first V gradient columns are those
// of an unpadded (N, V) copy, bit for bit; the padding columns, NaN and 1e30 before, are 0.
template <class Space>
void check_cross_entropy_padded() {
  using memory = typename Space::memory_space;
  const std::size_t n = 19, v = 300, vp = 384;
  const auto z = normal_doubles(n * v, 4.0, 43);
  std::vector<float> padded(n * vp), unpadded(n * v);
  for (std::size_t r = 0; r < n; ++r)
    for (std::size_t j = 0; j < vp; ++j)
      padded[r * vp + j] = j < v ? (unpadded[r * v + j] = float(z[r * v + j])) : (j % 2 ? NAN : 1e30f);
  std::vector<int> targets(n);
  for (std::size_t r = 0; r < n; ++r) targets[r] = int((r * 89) % v);
  const Kokkos::View<const int*, memory> t(kamp::test::to_device<int, Space>(targets, "targets"));
  const auto buffer = kamp::test::to_device<float, Space>(padded, "padded");
  const Kokkos::View<float**, Kokkos::LayoutRight, memory> whole(buffer.data(), n, vp);
  const auto classes = Kokkos::subview(Kokkos::View<const float**, Kokkos::LayoutRight, memory>(whole), Kokkos::ALL,
                                       std::pair<std::size_t, std::size_t>(0, v));
  const Kokkos::View<float*, memory> losses("losses", n), losses_unpadded("losses_unpadded", n);
  kamp::cross_entropy(Space(), classes, t, losses, whole, 0.25, {});
  const auto plain = kamp::test::to_device<float, Space>(unpadded, "unpadded");
  const Kokkos::View<float**, Kokkos::LayoutRight, memory> plain_matrix(plain.data(), n, v);
  kamp::cross_entropy(Space(), Kokkos::View<const float**, Kokkos::LayoutRight, memory>(plain_matrix), t,
                      losses_unpadded, plain_matrix, 0.25, {});
  const auto got = kamp::test::to_host(buffer), want = kamp::test::to_host(plain);
  const auto l = kamp::test::to_host(losses), l_want = kamp::test::to_host(losses_unpadded);
  int loss_differs = 0, grad_differs = 0, padding_not_zero = 0;
  for (std::size_t r = 0; r < n; ++r) {
    loss_differs += kamp::test::raw_bits(l[r]) != kamp::test::raw_bits(l_want[r]);
    for (std::size_t j = 0; j < vp; ++j) {
      const float g = got[r * vp + j];
      if (j < v)
        grad_differs += kamp::test::raw_bits(g) != kamp::test::raw_bits(want[r * v + j]);
      else
        padding_not_zero += kamp::test::raw_bits(g) != 0u;
    }
  }
  CHECK(loss_differs == 0);
  CHECK(grad_differs == 0);
  CHECK(padding_not_zero == 0);
  // Fewer gradient columns than classes is refused.
  const Kokkos::View<float**, Kokkos::LayoutRight, memory> narrow("narrow", n, v - 1);
  CHECK_THROWS_AS(kamp::cross_entropy(Space(), classes, t, losses, narrow, 1.0, {}), std::invalid_argument);
}

}  // namespace

TEMPLATE_TEST_CASE("cross entropy over 16-bit logits writes its gradient in place", "[nn]",
                   KAMP_TEST_EXECUTION_SPACES) {
  check_cross_entropy_in_place<TestType>();
}

TEMPLATE_TEST_CASE("cross entropy over a padded vocabulary ignores and zeroes the padding columns", "[nn]",
                   KAMP_TEST_EXECUTION_SPACES) {
  check_cross_entropy_padded<TestType>();
}

// Logits far beyond the loss's own size (llm.c weights of 1e30): computed as (log(sum) + max) -
// target, log(sum) vanished against the max and the loss came out 0; relative to the max it is
// the fp64 value. Rows: all equal (log V exactly), the target 1e30 ahead, another token ahead.
TEMPLATE_TEST_CASE("cross entropy keeps its accuracy for logits of 1e30", "[nn]", KAMP_TEST_EXECUTION_SPACES) {
  using Space = TestType;
  using memory = typename Space::memory_space;
  const std::size_t n = 3, v = 256;
  std::vector<float> z(n * v, 1e30f);
  z[1 * v + 7] = 2e30f;
  z[2 * v + 9] = 1e30f + 1e24f;  // row 2: another token leads by about 1e24
  const std::vector<int> targets{0, 7, 3};
  const Kokkos::View<const int*, memory> t(kamp::test::to_device<int, Space>(targets, "targets"));
  const auto logits = kamp::test::to_device<float, Space>(z, "logits");
  const Kokkos::View<float*, memory> losses("losses", n);
  kamp::cross_entropy(Space(), Kokkos::View<const float**, Kokkos::LayoutRight, memory>(logits.data(), n, v), t, losses,
                      Kokkos::View<float**, Kokkos::LayoutRight, memory>(), 1.0);
  const auto l = kamp::test::to_host(losses);
  for (std::size_t r = 0; r < n; ++r) {
    double m = z[r * v], s = 0;
    for (std::size_t j = 0; j < v; ++j) m = std::max(m, double(z[r * v + j]));
    for (std::size_t j = 0; j < v; ++j) s += std::exp(double(z[r * v + j]) - m);
    const double want = std::log(s) - (double(z[r * v + targets[r]]) - m);
    CAPTURE(r, want);
    CHECK(double(l[r]) == Approx(want).epsilon(1e-6));
  }
  CHECK(double(l[0]) == Approx(std::log(256.0)).epsilon(1e-6));
}

TEMPLATE_TEST_CASE("embedding backward sums the rows of each token and position", "[nn]", KAMP_TEST_EXECUTION_SPACES) {
  using Space = TestType;
  const int batch = 3, t = 4, vocab = 9, c = 5;
  const std::vector<int> tokens{1, 4, 4, 0, 8, 1, 4, 2, 0, 0, 7, 1};
  auto wte = normal_doubles(vocab * c, 1.0, 41), wpe = normal_doubles(t * c, 1.0, 42);
  const auto w = normal_doubles(batch * t * c, 1.0, 43);
  Kokkos::View<int**, Kokkos::LayoutRight, typename Space::memory_space> tok("tokens", batch, t);
  Kokkos::deep_copy(tok,
                    Kokkos::View<const int**, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(tokens.data(), batch, t));
  const Kokkos::View<const int**, Kokkos::LayoutRight, typename Space::memory_space> ctok = tok;
  const auto loss = [&] {
    const dmat<Space> out("out", batch * t, c);
    kamp::embedding_forward(Space(), ctok, matrix_from<Space>(wte, vocab, c), matrix_from<Space>(wpe, t, c), out);
    return weighted_sum(w, flat_host(out));
  };
  const kamp::token_rows<typename Space::memory_space> index(tokens.data(), tokens.size(), vocab);
  const auto dwte = matrix_from<Space>(std::vector<double>(vocab * c, 0.0), vocab, c);
  const auto dwpe = matrix_from<Space>(std::vector<double>(t * c, 0.0), t, c);
  kamp::embedding_backward(Space(), index, t, matrix_from<Space>(w, batch * t, c), dwte, dwpe);
  CHECK(gradient_error(loss, wte, flat_host(dwte), sample_indices(0, vocab * c, vocab * c, 44)) < tolerance);
  CHECK(gradient_error(loss, wpe, flat_host(dwpe), sample_indices(0, t * c, t * c, 45)) < tolerance);
  CHECK_THROWS_WITH((kamp::token_rows<typename Space::memory_space>(std::vector<int>{3, 9}.data(), 2, vocab)),
                    kamp::test::contains("token 9 at position 1 is outside the vocabulary"));
}

TEMPLATE_TEST_CASE("column sums add rows in fp64 and accumulate", "[nn]", KAMP_TEST_EXECUTION_SPACES) {
  using Space = TestType;
  const std::size_t n = 37, c = 21;  // c is not a multiple of the CPU column block
  const auto x = normal_doubles(n * c, 1.0, 51);
  const auto sums = kamp::test::to_device<double, Space>(std::vector<double>(c, 1.0), "sums");
  kamp::column_sums(Space(), matrix_from<Space>(x, n, c), sums);
  const auto got = flat_host(sums);
  for (std::size_t j = 0; j < c; ++j) {
    double s = 1.0;
    for (std::size_t r = 0; r < n; ++r) s += x[r * c + j];
    CHECK(got[j] == Approx(s).epsilon(1e-14));
  }
}

TEST_CASE("the vectorizable fp32 exp and tanh behind GELU are accurate", "[nn]") {
  double worst_exp = 0, worst_tanh = 0;
  for (int i = -800000; i <= 800000; ++i) {
    const float x = float(i) * 1e-4f;  // [-80, 80]
    worst_exp = std::max(worst_exp, std::abs(kamp::detail::exp_polynomial(x) / std::exp(double(x)) - 1.0));
    worst_tanh = std::max(worst_tanh, std::abs(double(kamp::detail::tanh_of(x)) - std::tanh(double(x))));
  }
  CHECK(worst_exp < 3e-7);
  CHECK(worst_tanh < 5e-7);
  CHECK(kamp::detail::tanh_of(1e4f) == 1.0f);
  CHECK(kamp::detail::tanh_of(-1e4f) == -1.0f);
}

TEMPLATE_TEST_CASE("fp32 GELU is the fp64 tanh form to an ulp of x, and exact where it saturates", "[nn]",
                   KAMP_TEST_EXECUTION_SPACES) {
  using Space = TestType;
  std::vector<float> x;
  for (int i = -120000; i <= 120000; ++i) x.push_back(float(i) * 1e-4f);  // [-12, 12]
  const std::vector<float> saturated = {-3e38f, -1e30f, -1e10f, -100.0f, 100.0f, 1e10f, 1e30f, 3e38f};
  x.insert(x.end(), saturated.begin(), saturated.end());
  Kokkos::View<float*, typename Space::memory_space> y("y", x.size());
  kamp::gelu_forward(Space(), kamp::test::to_device<float, Space>(x, "x"), y);
  const auto yh = kamp::test::to_host(y);
  int outside = 0;
  for (std::size_t i = 0; i + saturated.size() < x.size(); ++i) {
    const double v = x[i], want = gelu_fp64(v);
    // fp32 rounding of the result, plus the cancellation of x against x·(1 − sigmoid) for x < 0.
    outside += std::abs(double(yh[i]) - want) > 4e-7 * std::abs(want) + 1.2e-7 * std::abs(v);
  }
  CHECK(outside == 0);
  for (std::size_t i = x.size() - saturated.size(); i < x.size(); ++i) {
    INFO("x = " << x[i]);
    CHECK(yh[i] == (x[i] > 0 ? x[i] : 0.0f));
  }
}

TEMPLATE_TEST_CASE("fp32 GELU with a bf16 output is its fp32 value rounded once to nearest even", "[nn]",
                   KAMP_TEST_EXECUTION_SPACES) {
  // Exactly the fp32 result rounded by the exhaustively tested scalar cast: one rounding, to
  // nearest even (truncating, or rounding through an intermediate, differs on some of 4096 inputs);
  // and within one bf16 ulp of GELU in fp64.
  using Space = TestType;
  const std::size_t n = 4096;
  const auto xd = normal_doubles(n, 3.0, 61);
  const std::vector<float> x(xd.begin(), xd.end());
  const auto xs = kamp::test::to_device<float, Space>(x, "x");
  Kokkos::View<kamp::bf16*, typename Space::memory_space> y("y", n);
  Kokkos::View<float*, typename Space::memory_space> y32("y32", n);
  kamp::gelu_forward(Space(), xs, y);
  kamp::gelu_forward(Space(), xs, y32);
  const auto yh = kamp::test::to_host(y);
  const auto y32h = kamp::test::to_host(y32);
  int not_rounded_once = 0, off_by_more_than_one_ulp = 0, halfway_or_inexact = 0;
  for (std::size_t i = 0; i < n; ++i) {
    not_rounded_once += yh[i].bits != kamp::from_float<kamp::bf16>(y32h[i]).bits;
    halfway_or_inexact += (kamp::test::bits_of(y32h[i]) & 0xffffu) != 0;
    // and within one bf16 ulp of GELU in fp64 (the fp32 formula's own error included)
    const double want = gelu_fp64(x[i]);
    const double ulp = want == 0.0 ? 0.0 : std::ldexp(1.0, std::ilogb(want) - 7);  // ilogb(0) is INT_MIN
    off_by_more_than_one_ulp += std::abs(double(kamp::to_float(yh[i])) - want) > ulp + 1e-6;
  }
  CHECK(not_rounded_once == 0);
  CHECK(off_by_more_than_one_ulp == 0);
  CHECK(halfway_or_inexact > int(n) / 2);  // the rounding was exercised, not a no-op
}
