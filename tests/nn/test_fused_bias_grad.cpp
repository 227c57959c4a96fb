// The fused bias-gradient passes (cast_and_column_sums, gelu_backward_and_bias_grad) against
// the two passes each replaces, bit for bit, and against fp64 references computed here on the
// host, which share no code with the kernels.
#include <kamp/kernels/cast.hpp>
#include <kamp/kernels/nn.hpp>

#include "../support/catch.hpp"

#include "../support/data.hpp"
#include "../support/execution_spaces.hpp"
#include "../support/oracles.hpp"
#include "../support/views.hpp"

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace {

using kamp::test::raw_bits;

template <class Space, class T>
using matrix = Kokkos::View<T**, Kokkos::LayoutRight, typename Space::memory_space>;

template <class Space, class T>
matrix<Space, T> matrix_from(const std::vector<T>& host, std::size_t rows, std::size_t cols) {
  matrix<Space, T> m("m", rows, cols);
  Kokkos::deep_copy(m, Kokkos::View<const T**, Kokkos::LayoutRight, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(
                           host.data(), rows, cols));
  return m;
}

// A contiguous matrix's elements as a vector, for kamp::cast and gelu_backward, which take
// vectors.
template <class T, class... P>
auto flat(const Kokkos::View<T**, P...>& m) {
  using memory = typename Kokkos::View<T**, P...>::memory_space;
  return Kokkos::View<T*, memory, Kokkos::MemoryUnmanaged>(m.data(), m.size());
}

// The elements of a contiguous matrix, row after row, on the host.
template <class T, class... P>
std::vector<T> elements(const Kokkos::View<T**, P...>& m) {
  return kamp::test::to_host(flat(m));
}

template <class T>
std::vector<std::uint32_t> bits(const std::vector<T>& v) {
  std::vector<std::uint32_t> b(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) b[i] = raw_bits(v[i]);
  return b;
}

// Exact values of stored elements, decoded without kamp's conversions.
double value_of(float x) { return x; }
template <int E>
double value_of(kamp::float16<E> x) {
  return kamp::test::reference_decode(x.bits, E);
}

// x rounded to nearest even in T, by the oracle's arithmetic in double.
double rounded_to(float x, float) { return x; }
template <int E>
double rounded_to(float x, kamp::float16<E>) {
  return kamp::test::reference_round(x, E, kamp::test::reference_rounding::nearest_even);
}

template <class T>
std::string name_of() {
  if constexpr (std::is_same_v<T, kamp::bf16>) return "bf16";
  if constexpr (std::is_same_v<T, kamp::fp16>) return "fp16";
  return "fp32";
}

// The unit roundoff of T's normal numbers, and half its smallest subnormal (the absolute error
// of a rounding into its subnormal range).
template <class T>
constexpr double unit_roundoff = 0x1p-24;
template <>
constexpr double unit_roundoff<kamp::bf16> = 0x1p-8;
template <>
constexpr double unit_roundoff<kamp::fp16> = 0x1p-11;
template <class T>
constexpr double subnormal_half_ulp = 0x1p-150;
template <>
constexpr double subnormal_half_ulp<kamp::bf16> = 0x1p-134;
template <>
constexpr double subnormal_half_ulp<kamp::fp16> = 0x1p-25;

// A recursive fp32 sum s0 + x_1 + ... + x_n errs by at most γ_n (|s0| + Σ|x_i|), γ_n =
// n u / (1 - n u) with u = 2^-24 (Higham, Accuracy and Stability, (4.4)); (n + 1) u is above
// γ_n for the n of these tests.
double sum_bound(std::size_t n, double abs_sum) { return double(n + 1) * 0x1p-24 * abs_sum; }

// Normal values with the cases that tell roundings apart planted in row 0: ties of bf16 and of
// fp16 (to even, down and up), an fp16 overflow, an fp16 subnormal, GELU's saturated tails.
std::vector<float> inputs(std::size_t n, std::size_t c, unsigned seed) {
  auto x = kamp::test::normal_values(n * c, 2.0f, seed);
  const float planted[] = {
      1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f, -(1.0f + 0x1p-11f), 1.0f + 3 * 0x1p-11f, 7e4f, 3e-6f, -12.0f, 9.0f};
  for (std::size_t i = 0; i < sizeof planted / sizeof planted[0] && i < x.size(); ++i) x[i] = planted[i];
  return x;
}

// Sums start away from zero: the kernels add to them.
std::vector<float> start_sums(std::size_t c, unsigned seed) { return kamp::test::normal_values(c, 3.0f, seed); }

const std::pair<std::size_t, std::size_t> shapes[] = {
    {37, 45},  // 45 = 2 CPU column blocks of 16 and a partial one
    {1, 1},
    {3, 16},  // one full block
    {0, 5},   // no rows: the sums stay as they were
};

// And enough columns that a CPU walks 64-column blocks (every thread still gets one), the last
// one partial.
template <class Space>
std::vector<std::pair<std::size_t, std::size_t>> with_wide_blocks() {
  std::vector<std::pair<std::size_t, std::size_t>> all(std::begin(shapes), std::end(shapes));
  all.emplace_back(13, 64 * std::size_t(Space().concurrency()) + 13);
  return all;
}

template <class Space, class Y>
void cast_matches_unfused(std::size_t n, std::size_t c) {
  INFO("fp32 -> " << name_of<Y>() << ", " << n << " x " << c);
  const auto xh = inputs(n, c, 101), s0 = start_sums(c, 102);
  const auto x = matrix_from<Space>(xh, n, c);
  const matrix<Space, Y> y_fused("y", n, c), y_unfused("y", n, c);
  const auto sums_fused = kamp::test::to_device<float, Space>(s0, "sums"),
             sums_unfused = kamp::test::to_device<float, Space>(s0, "sums");

  kamp::cast_and_column_sums(Space(), x, y_fused, sums_fused);
  kamp::cast(Space(), flat(y_unfused), flat(x));
  kamp::column_sums(Space(), x, sums_unfused);

  const auto y = elements(y_fused);
  const auto sums = kamp::test::to_host(sums_fused);
  CHECK(bits(y) == bits(elements(y_unfused)));
  CHECK(bits(sums) == bits(kamp::test::to_host(sums_unfused)));

  // y is x rounded once to nearest even.
  for (std::size_t i = 0; i < y.size(); ++i) {
    INFO("element " << i << ", x = " << xh[i]);
    CHECK(value_of(y[i]) == rounded_to(xh[i], Y()));
  }
  // The sums are of the unrounded x.
  for (std::size_t j = 0; j < c; ++j) {
    double exact = s0[j], abs_sum = std::fabs(s0[j]);
    for (std::size_t r = 0; r < n; ++r) {
      exact += xh[r * c + j];
      abs_sum += std::fabs(xh[r * c + j]);
    }
    INFO("column " << j);
    CHECK(std::fabs(double(sums[j]) - exact) <= sum_bound(n, abs_sum));
    if (n == 0) CHECK(raw_bits(sums[j]) == raw_bits(s0[j]));
  }
}

// GELU'(x) of the tanh form 0.5 x (1 + tanh u), u = √(2/π)(x + 0.044715 x³), differentiated
// by hand and evaluated in fp64.
constexpr double gelu_scale = 0.7978845608028654, gelu_cubic = 0.044715;
double gelu_grad_fp64(double x) {
  const double t = std::tanh(gelu_scale * (x + gelu_cubic * x * x * x));
  return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * gelu_scale * (1 + 3 * gelu_cubic * x * x);
}

// How far the fp32 kernel's GELU'(x) may be from the fp64 one. Its tanh errs by at most 5e-7
// (kamp::detail::tanh_of, checked over [-80, 80] in test_nn_gradients.cpp), plus about 1e-7
// from u's own fp32 rounding; GELU' = 0.5 (1 + t) + 0.5 x (1 - t²) du/dx passes an error e in t
// on as e (0.5 + |x t| du/dx) <= e (0.5 + |x| du/dx). The remaining fp32 operations add a few
// units of 2^-24 of terms of size about 1 (under 5e-7). So 2e-6 (1 + |x| du/dx) has a margin of
// more than 1.5x, and a wrong formula is off by 1e-2 or more.
double gelu_grad_bound(double x) { return 2e-6 * (1 + std::fabs(x) * gelu_scale * (1 + 3 * gelu_cubic * x * x)); }

template <class Space, class DX>
void gelu_matches_unfused(std::size_t n, std::size_t m) {
  INFO("fp32 -> " << name_of<DX>() << ", " << n << " x " << m);
  auto xh = inputs(n, m, 201);
  if (xh.size() > 4) xh[4] = 5.0f;  // not 7e4, whose GELU' bound is vacuous and would void its column's check
  const auto dyh = kamp::test::normal_values(n * m, 1.0f, 202), s0 = start_sums(m, 203);
  const auto x = matrix_from<Space>(xh, n, m), dy = matrix_from<Space>(dyh, n, m);
  const matrix<Space, DX> dx_fused("dx", n, m), dx_unfused("dx", n, m);
  const auto db_fused = kamp::test::to_device<float, Space>(s0, "dbias"),
             db_unfused = kamp::test::to_device<float, Space>(s0, "dbias");

  kamp::gelu_backward_and_bias_grad(Space(), dy, x, dx_fused, db_fused);
  kamp::gelu_backward(Space(), flat(dy), flat(x), flat(dx_unfused));
  kamp::column_sums(Space(), dx_unfused, db_unfused);

  const auto dx = elements(dx_fused);
  const auto db = kamp::test::to_host(db_fused);
  // dx: the fp32 product (one rounding) and the store into DX (one more) on top of the error of GELU'.
  std::vector<double> dx_ref(dx.size()), dx_bound(dx.size());
  for (std::size_t i = 0; i < dx.size(); ++i) {
    dx_ref[i] = double(dyh[i]) * gelu_grad_fp64(xh[i]);
    dx_bound[i] = std::fabs(dyh[i]) * gelu_grad_bound(xh[i]) +
                  (unit_roundoff<DX> + 0x1p-24) * 1.01 * std::fabs(dx_ref[i]) + subnormal_half_ulp<DX>;
    INFO("element " << i << ", x = " << xh[i] << ", dy = " << dyh[i]);
    CHECK(std::fabs(value_of(dx[i]) - dx_ref[i]) <= dx_bound[i]);
  }
  // The same formula and order as the unfused pair, but not always its bits: a compiler may
  // contract GELU' (its exp polynomial included) into fused multiply-adds differently in the two
  // loops (g++ 16 with Kokkos 4.5's Serial build: up to 8 fp32 ulps in 4% of the elements). So
  // the two agree within their fp64 bounds, and the fp64 checks hold each on its own.
  const auto dx_apart = elements(dx_unfused);
  const auto db_apart = kamp::test::to_host(db_unfused);
  std::size_t apart = 0;
  for (std::size_t i = 0; i < dx.size(); ++i)
    apart += std::fabs(value_of(dx[i]) - value_of(dx_apart[i])) > 2 * dx_bound[i];
  CHECK(apart == 0);
  for (std::size_t j = 0; j < m; ++j) {
    // dbias sums the stored dx: against the fp64 sum of those values, with the fp32 summation
    // bound, and against the fp64 sum of the reference dx, adding each element's bound.
    double of_stored = s0[j], of_reference = s0[j], abs_sum = std::fabs(s0[j]), elements_bound = 0;
    for (std::size_t r = 0; r < n; ++r) {
      of_stored += value_of(dx[r * m + j]);
      of_reference += dx_ref[r * m + j];
      abs_sum += std::fabs(value_of(dx[r * m + j]));
      elements_bound += dx_bound[r * m + j];
    }
    INFO("column " << j);
    CHECK(std::fabs(double(db[j]) - of_stored) <= sum_bound(n, abs_sum));
    CHECK(std::fabs(double(db[j]) - of_reference) <= sum_bound(n, abs_sum) + elements_bound);
    CHECK(std::fabs(double(db[j]) - double(db_apart[j])) <= 2 * (sum_bound(n, abs_sum) + elements_bound));
    if (n == 0) CHECK(raw_bits(db[j]) == raw_bits(s0[j]));
  }
}

}  // namespace

TEMPLATE_TEST_CASE("cast_and_column_sums equals kamp::cast then column_sums, bit for bit", "[nn][fused]",
                   KAMP_TEST_EXECUTION_SPACES) {
  using Space = TestType;
  for (const auto& [n, c] : with_wide_blocks<Space>()) {
    cast_matches_unfused<Space, kamp::bf16>(n, c);
    cast_matches_unfused<Space, kamp::fp16>(n, c);
    cast_matches_unfused<Space, float>(n, c);
  }
}

TEMPLATE_TEST_CASE("gelu_backward_and_bias_grad matches gelu_backward then column_sums and fp64", "[nn][fused]",
                   KAMP_TEST_EXECUTION_SPACES) {
  using Space = TestType;
  for (const auto& [n, m] : with_wide_blocks<Space>()) {
    gelu_matches_unfused<Space, kamp::bf16>(n, m);
    gelu_matches_unfused<Space, kamp::fp16>(n, m);
    gelu_matches_unfused<Space, float>(n, m);
  }
}

TEMPLATE_TEST_CASE("fused bias-gradient passes follow the row stride of sub-matrices", "[nn][fused]",
                   KAMP_TEST_EXECUTION_SPACES) {
  using Space = TestType;
  // (n, c) windows of (n, 64) matrices whose padding columns hold a marker: the kernels must
  // step rows by stride(0) and leave the padding alone.
  const std::size_t n = 9, c = 21, ld = 64;
  const float marker = -3.5f;
  const auto xh = inputs(n, c, 301), dyh = kamp::test::normal_values(n * c, 1.0f, 302), s0 = start_sums(c, 303);
  const auto window = [&](const auto& wide) { return Kokkos::subview(wide, Kokkos::ALL, std::make_pair(0, int(c))); };
  const auto widened = [&](const std::vector<float>& h) {
    std::vector<float> w(n * ld, marker);
    for (std::size_t r = 0; r < n; ++r)
      for (std::size_t j = 0; j < c; ++j) w[r * ld + j] = h[r * c + j];
    return matrix_from<Space>(w, n, ld);
  };
  const auto x_wide = widened(xh), dy_wide = widened(dyh);
  const auto out_wide = matrix_from<Space>(std::vector<float>(n * ld, marker), n, ld);
  const auto x = matrix_from<Space>(xh, n, c), dy = matrix_from<Space>(dyh, n, c);
  const matrix<Space, float> out("out", n, c);

  const auto check = [&](const auto& strided_sums, const auto& contiguous_sums) {
    const auto wide = elements(out_wide), dense = elements(out);
    for (std::size_t r = 0; r < n; ++r)
      for (std::size_t j = 0; j < ld; ++j) {
        INFO("row " << r << ", column " << j);
        CHECK(raw_bits(wide[r * ld + j]) == raw_bits(j < c ? dense[r * c + j] : marker));
      }
    CHECK(bits(kamp::test::to_host(strided_sums)) == bits(kamp::test::to_host(contiguous_sums)));
  };
  {
    const auto strided = kamp::test::to_device<float, Space>(s0, "sums"),
               contiguous = kamp::test::to_device<float, Space>(s0, "sums");
    kamp::cast_and_column_sums(Space(), window(x_wide), window(out_wide), strided);
    kamp::cast_and_column_sums(Space(), x, out, contiguous);
    check(strided, contiguous);
  }
  {
    const auto strided = kamp::test::to_device<float, Space>(s0, "dbias"),
               contiguous = kamp::test::to_device<float, Space>(s0, "dbias");
    kamp::gelu_backward_and_bias_grad(Space(), window(dy_wide), window(x_wide), window(out_wide), strided);
    kamp::gelu_backward_and_bias_grad(Space(), dy, x, out, contiguous);
    check(strided, contiguous);
  }
}

TEMPLATE_TEST_CASE("fused bias-gradient passes refuse mismatched extents", "[nn][fused]", KAMP_TEST_EXECUTION_SPACES) {
  using Space = TestType;
  const std::size_t n = 4, c = 6;
  const matrix<Space, float> a("a", n, c), wide("wide", n, c + 1), tall("tall", n + 1, c);
  const matrix<Space, kamp::bf16> low("low", n, c), low_wide("low", n, c + 1), low_tall("low", n + 1, c);
  const Kokkos::View<float*, typename Space::memory_space> sums("sums", c), short_sums("sums", c - 1);
  using kamp::test::contains;

  CHECK_NOTHROW(kamp::cast_and_column_sums(Space(), a, low, sums));
  CHECK_THROWS_AS(kamp::cast_and_column_sums(Space(), a, low_tall, sums), std::invalid_argument);
  CHECK_THROWS_AS(kamp::cast_and_column_sums(Space(), a, low_wide, sums), std::invalid_argument);
  CHECK_THROWS_AS(kamp::cast_and_column_sums(Space(), a, low, short_sums), std::invalid_argument);
  CHECK_THROWS_WITH(kamp::cast_and_column_sums(Space(), a, low_wide, sums),
                    contains("kamp::cast_and_column_sums: y columns has extent 7, expected 6"));

  CHECK_NOTHROW(kamp::gelu_backward_and_bias_grad(Space(), a, a, low, sums));
  CHECK_THROWS_AS(kamp::gelu_backward_and_bias_grad(Space(), tall, a, low, sums), std::invalid_argument);
  CHECK_THROWS_AS(kamp::gelu_backward_and_bias_grad(Space(), wide, a, low, sums), std::invalid_argument);
  CHECK_THROWS_AS(kamp::gelu_backward_and_bias_grad(Space(), a, a, low_tall, sums), std::invalid_argument);
  CHECK_THROWS_AS(kamp::gelu_backward_and_bias_grad(Space(), a, a, low_wide, sums), std::invalid_argument);
  CHECK_THROWS_AS(kamp::gelu_backward_and_bias_grad(Space(), a, a, low, short_sums), std::invalid_argument);
  CHECK_THROWS_WITH(kamp::gelu_backward_and_bias_grad(Space(), a, a, low, short_sums),
                    contains("kamp::gelu_backward_and_bias_grad: dbias has extent 5, expected 6"));
}
