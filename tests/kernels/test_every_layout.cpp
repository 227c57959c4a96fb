// Every public kernel on the layouts a Kokkos science code hands over: LayoutRight, LayoutLeft
// (Kokkos' default on GPUs, Fortran's order), and LayoutStride sub-views with no unit stride at
// all (every third element) or with contiguous columns and a leading dimension (the interior of
// a padded column-major array). Each result must equal the LayoutRight result of the same
// kernel (conversions bit for bit; formulas a compiler may contract and reductions within a few
// ulps, since a loop over strided addresses may be compiled and summed in another order), and the
// two cases that once gave silently wrong results are checked against fp64 directly.
#include <kamp/kamp.hpp>

#include "../support/catch.hpp"

#include "../support/execution_spaces.hpp"
#include "../support/oracles.hpp"
#include "../support/views.hpp"

#include <cmath>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <vector>

namespace {

using kamp::bf16;
using kamp::fp16;

struct right {};
struct left {};
struct stepped {};       // LayoutStride, every third element: no unit stride in either dimension
struct padded_left {};   // LayoutStride, contiguous columns with a leading dimension
struct padded_right {};  // LayoutStride, contiguous rows with a leading dimension (GEMM operands)

template <class T, class Space>
using right_matrix = Kokkos::View<T**, Kokkos::LayoutRight, typename Space::memory_space>;

template <class T, class Space, class L>
auto matrix_in(L, std::size_t rows, std::size_t cols) {
  using memory = typename Space::memory_space;
  if constexpr (std::is_same_v<L, right>) {
    return Kokkos::View<T**, Kokkos::LayoutRight, memory>("right", rows, cols);
  } else if constexpr (std::is_same_v<L, left>) {
    return Kokkos::View<T**, Kokkos::LayoutLeft, memory>("left", rows, cols);
  } else if constexpr (std::is_same_v<L, stepped>) {
    Kokkos::View<T***, Kokkos::LayoutRight, memory> storage("stepped", rows, cols, 3);
    return Kokkos::subview(storage, Kokkos::ALL, Kokkos::ALL, 1);
  } else if constexpr (std::is_same_v<L, padded_right>) {
    Kokkos::View<T**, Kokkos::LayoutRight, memory> storage("padded_right", rows + 1, cols + 3);
    return Kokkos::subview(storage, std::make_pair(std::size_t(1), rows + 1), std::make_pair(std::size_t(2), cols + 2));
  } else {
    Kokkos::View<T**, Kokkos::LayoutLeft, memory> storage("padded_left", rows + 3, cols + 1);
    return Kokkos::subview(storage, std::make_pair(std::size_t(2), rows + 2), std::make_pair(std::size_t(0), cols));
  }
}

template <class T, class Space, class L>
auto vector_in(L, std::size_t n) {
  using memory = typename Space::memory_space;
  if constexpr (std::is_same_v<L, right>) {
    return Kokkos::View<T*, Kokkos::LayoutRight, memory>("right", n);
  } else if constexpr (std::is_same_v<L, left>) {
    return Kokkos::View<T*, Kokkos::LayoutLeft, memory>("left", n);
  } else if constexpr (std::is_same_v<L, stepped>) {
    Kokkos::View<T**, Kokkos::LayoutRight, memory> storage("stepped", n, 3);
    return Kokkos::subview(storage, Kokkos::ALL, 1);  // a column of a row-major matrix
  } else {
    Kokkos::View<T*, Kokkos::LayoutRight, memory> storage("padded", n + 5);
    return Kokkos::View<T*, Kokkos::LayoutStride, memory>(
        Kokkos::subview(storage, std::make_pair(std::size_t(2), n + 2)));
  }
}

/// Writes the row-major host values into any device view (element by element on the device).
template <class Space, class View, class T>
void fill(const View& v, const std::vector<T>& values) {
  if constexpr (View::rank == 1) {
    const auto src = kamp::test::to_device<T, Space>(values, "values");
    Kokkos::parallel_for(
        Kokkos::RangePolicy<Space>(0, v.extent(0)), KOKKOS_LAMBDA(int i) { v(i) = src(i); });
  } else {
    const auto flat = kamp::test::to_device<T, Space>(values, "values");
    const std::size_t cols = v.extent(1);
    Kokkos::parallel_for(
        Kokkos::RangePolicy<Space>(0, v.extent(0) * cols),
        KOKKOS_LAMBDA(std::size_t i) { v(i / cols, i % cols) = flat(i); });
  }
  Kokkos::fence();
}

/// Element i of a vector, or element i of a matrix's row-major order.
template <class View>
KOKKOS_INLINE_FUNCTION typename View::reference_type element(const View& v, std::size_t i, std::size_t cols) {
  if constexpr (View::rank == 1)
    return v(i);
  else
    return v(i / cols, i % cols);
}

/// Any device view's values on the host, row-major.
template <class Space, class View>
std::vector<typename View::non_const_value_type> values_of(const View& v) {
  using T = typename View::non_const_value_type;
  const std::size_t rows = v.extent(0), cols = View::rank == 2 ? v.extent(1) : 1;
  Kokkos::View<T*, typename Space::memory_space> flat("flat", rows * cols);
  Kokkos::parallel_for(
      Kokkos::RangePolicy<Space>(0, rows * cols), KOKKOS_LAMBDA(std::size_t i) { flat(i) = element(v, i, cols); });
  Kokkos::fence();
  return kamp::test::to_host(flat);
}

template <class T>
std::vector<T> random_values(std::size_t n, std::uint32_t seed, float lo = -2.0f, float hi = 2.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<T> v(n);
  for (auto& x : v) kamp::store_nearest(&x, u(rng));
  return v;
}

template <class T>
double value_of(T x) {
  if constexpr (std::is_floating_point_v<T>)
    return double(x);
  else
    return double(kamp::to_float(x));
}

/// Bitwise equality (ulps 0) or agreement within `ulps` of T's precision relative
/// to the row's scale (reductions).
template <class T>
void require_same(const std::vector<T>& got, const std::vector<T>& want, double ulps, const char* what) {
  REQUIRE(got.size() == want.size());
  const double eps = std::is_same_v<T, float> ? 0x1p-23 : std::is_same_v<T, bf16> ? 0x1p-7 : 0x1p-10;
  std::size_t bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double a = value_of(got[i]), b = value_of(want[i]);
    const bool same = ulps == 0 ? kamp::test::raw_bits(got[i]) == kamp::test::raw_bits(want[i])
                                : (a == b || std::fabs(a - b) <= ulps * eps * std::max(std::fabs(b), 1.0));
    if (!same && bad++ < 3) UNSCOPED_INFO(what << "[" << i << "] = " << a << ", LayoutRight gives " << b);
  }
  CHECK(bad == 0);
}

template <class F>
void for_each_layout(const F& f) {
  f(left{}, "LayoutLeft");
  f(stepped{}, "LayoutStride (every third element)");
  f(padded_left{}, "LayoutStride (padded, contiguous columns)");
}

}  // namespace

TEMPLATE_TEST_CASE(
    "every layout (LayoutRight, LayoutLeft, LayoutStride): element-wise kernels match LayoutRight, conversions "
    "bit for bit",
    "[kernels][layout]", KAMP_TEST_EXECUTION_SPACES) {
  using Space = TestType;
  using memory = typename Space::memory_space;
  const std::size_t n = 4099;
  const auto x = random_values<float>(n, 1, -6.0f, 6.0f);
  const auto dy = random_values<float>(n, 2);

  // Runs each kernel on vectors in layout L and returns every output on the host.
  const auto run = [&](auto layout) {
    std::vector<std::vector<float>> f32;
    std::vector<std::vector<bf16>> b16;
    std::vector<std::vector<fp16>> h16;
    const auto in = vector_in<float, Space>(layout, n);
    fill<Space>(in, x);
    const auto to_bf16 = vector_in<bf16, Space>(layout, n);
    const auto to_fp16 = vector_in<fp16, Space>(layout, n);
    kamp::cast(Space(), to_bf16, in);
    kamp::cast(Space(), to_fp16, in, kamp::rounding_options{kamp::rounding::stochastic, 7, 0});
    b16.push_back(values_of<Space>(to_bf16));
    h16.push_back(values_of<Space>(to_fp16));
    const auto back = vector_in<float, Space>(layout, n);
    kamp::cast(Space(), back, to_bf16);
    f32.push_back(values_of<Space>(back));

    const auto y = vector_in<bf16, Space>(layout, n);
    kamp::gelu_forward(Space(), in, y);
    b16.push_back(values_of<Space>(y));
    const auto g = vector_in<float, Space>(layout, n), dx = vector_in<float, Space>(layout, n);
    fill<Space>(g, dy);
    kamp::gelu_backward(Space(), g, in, dx);
    f32.push_back(values_of<Space>(dx));

    // Unscale and check in place, then an AdamW step on a strided model copy and gradients.
    const kamp::loss_scaler<memory> scaler(kamp::loss_scaler_options{});
    Kokkos::View<kamp::gradient_check, memory> check("check");
    kamp::unscale_and_check(Space(), g, scaler.state(), check);
    f32.push_back(values_of<Space>(g));
    const auto c = kamp::test::scalar_to_host(check);
    f32.push_back({float(c.found_inf), float(c.norm_squared)});
    const auto r = kamp::measure_range(Space(), in);
    f32.push_back({float(r.max_abs), float(r.non_finite)});

    kamp::adamw<bf16, float, float, memory> optimizer(n, kamp::adamw_options{});
    optimizer.initialize(Space(), in, y);
    const auto grads = vector_in<float, Space>(layout, n);
    fill<Space>(grads, dy);
    for (int step = 0; step < 3; ++step) optimizer.step(Space(), y, grads, kamp::gradient_control<memory>{}, 1e-2f);
    b16.push_back(values_of<Space>(y));
    f32.push_back(kamp::test::to_host(optimizer.master()));
    return std::make_tuple(f32, b16, h16);
  };

  const auto want = run(right{});
  for_each_layout([&](auto layout, const char* name) {
    INFO(name);
    const auto got = run(layout);
    // Conversions, the unscaled gradients and the range bit for bit; GELU, the norm's fp64 sum and
    // AdamW within a few ulps: a compiler may contract their formulas into multiply-adds (and order
    // a vectorized sum) differently in a contiguous loop and a strided one (g++ 16 without OpenMP).
    const double f32_ulps[] = {0, 4, 0, 2, 0, 4}, b16_ulps[] = {0, 1, 1};
    for (std::size_t k = 0; k < std::get<0>(want).size(); ++k)
      require_same(std::get<0>(got)[k], std::get<0>(want)[k], f32_ulps[k], "fp32 output");
    for (std::size_t k = 0; k < std::get<1>(want).size(); ++k)
      require_same(std::get<1>(got)[k], std::get<1>(want)[k], b16_ulps[k], "bf16 output");
    for (std::size_t k = 0; k < std::get<2>(want).size(); ++k)
      require_same(std::get<2>(got)[k], std::get<2>(want)[k], 0, "fp16 output");
  });
}

TEMPLATE_TEST_CASE("every layout: a column of a row-major matrix casts like reference rounding (once silently wrong)",
                   "[kernels][layout]", KAMP_TEST_EXECUTION_SPACES) {
  using Space = TestType;
  using memory = typename Space::memory_space;
  Kokkos::View<float**, Kokkos::LayoutRight, memory> a("a", 64, 4);
  const auto values = random_values<float>(64 * 4, 3, -100.0f, 100.0f);
  fill<Space>(a, values);
  const auto column = Kokkos::subview(a, Kokkos::ALL, 1);
  Kokkos::View<bf16*, memory> out("out", 64);
  kamp::cast(Space(), out, column);
  const auto got = kamp::test::to_host(out);
  for (std::size_t i = 0; i < 64; ++i) {
    const double want = kamp::test::reference_round(values[4 * i + 1], 8, kamp::test::reference_rounding::nearest_even);
    REQUIRE(double(kamp::to_float(got[i])) == want);
  }
}

TEMPLATE_TEST_CASE("every layout: LayoutLeft LayerNorm matches fp64 (once silently wrong)", "[kernels][layout]",
                   KAMP_TEST_EXECUTION_SPACES) {
  using Space = TestType;
  using memory = typename Space::memory_space;
  const std::size_t n = 33, c = 70;
  const auto xv = random_values<float>(n * c, 4, -3.0f, 5.0f);
  const auto gv = random_values<float>(c, 5), bv = random_values<float>(c, 6);
  Kokkos::View<float**, Kokkos::LayoutLeft, memory> x("x", n, c), y("y", n, c);
  fill<Space>(x, xv);
  const auto gamma = kamp::test::to_device<float, Space>(gv, "gamma");
  const auto beta = kamp::test::to_device<float, Space>(bv, "beta");
  Kokkos::View<float*, memory> mean("mean", n), rstd("rstd", n);
  kamp::layernorm_forward(Space(), x, gamma, beta, y, mean, rstd);
  const auto got = values_of<Space>(y);
  double worst = 0;
  for (std::size_t r = 0; r < n; ++r) {
    double mu = 0, var = 0;
    for (std::size_t j = 0; j < c; ++j) mu += xv[r * c + j] / double(c);
    for (std::size_t j = 0; j < c; ++j) var += (xv[r * c + j] - mu) * (xv[r * c + j] - mu) / double(c);
    for (std::size_t j = 0; j < c; ++j) {
      const double want = (xv[r * c + j] - mu) / std::sqrt(var + 1e-5) * gv[j] + bv[j];
      worst = std::max(worst, std::fabs(got[r * c + j] - want));
    }
  }
  CHECK(worst < 1e-5);
}

TEMPLATE_TEST_CASE("every layout (LayoutRight, LayoutLeft, LayoutStride): row and column kernels match LayoutRight",
                   "[kernels][layout]", KAMP_TEST_EXECUTION_SPACES) {
  using Space = TestType;
  using memory = typename Space::memory_space;
  const std::size_t n = 37, c = 83;
  const auto xv = random_values<float>(n * c, 7, -3.0f, 3.0f);
  const auto bv = random_values<float>(n * c, 8);
  const auto dyv = random_values<float>(n * c, 9);
  const auto gv = random_values<float>(c, 10), betav = random_values<float>(c, 11);
  const auto gamma = kamp::test::to_device<float, Space>(gv, "gamma");
  const auto beta = kamp::test::to_device<float, Space>(betav, "beta");
  std::vector<int> targets(n);
  for (std::size_t i = 0; i < n; ++i) targets[i] = int((i * 31) % c);

  const auto run = [&](auto layout) {
    std::vector<std::vector<float>> f32;
    std::vector<std::vector<bf16>> b16;
    const auto x = matrix_in<float, Space>(layout, n, c);
    const auto branch = matrix_in<float, Space>(layout, n, c);
    const auto dy = matrix_in<float, Space>(layout, n, c);
    fill<Space>(x, xv);
    fill<Space>(branch, bv);
    fill<Space>(dy, dyv);
    const auto mean = vector_in<float, Space>(layout, n), rstd = vector_in<float, Space>(layout, n);
    const auto y = matrix_in<bf16, Space>(layout, n, c);
    kamp::layernorm_forward(Space(), x, gamma, beta, y, mean, rstd);
    b16.push_back(values_of<Space>(y));
    f32.push_back(values_of<Space>(mean));
    f32.push_back(values_of<Space>(rstd));

    const auto dx = matrix_in<float, Space>(layout, n, c);
    fill<Space>(dx, bv);  // accumulated into
    const auto dgamma = vector_in<float, Space>(layout, c), dbeta = vector_in<float, Space>(layout, c);
    kamp::layernorm_backward(Space(), dy, x, gamma, mean, rstd, dx, dgamma, dbeta);
    f32.push_back(values_of<Space>(dx));
    f32.push_back(values_of<Space>(dgamma));
    f32.push_back(values_of<Space>(dbeta));

    const auto out = matrix_in<float, Space>(layout, n, c);
    kamp::residual_layernorm_forward(Space(), x, branch, gamma, beta, out, y, mean, rstd);
    f32.push_back(values_of<Space>(out));
    b16.push_back(values_of<Space>(y));

    kamp::residual_with_bias(Space(), x, gamma, out);
    f32.push_back(values_of<Space>(out));

    const auto sums = vector_in<float, Space>(layout, c);
    kamp::column_sums(Space(), x, sums);
    f32.push_back(values_of<Space>(sums));
    const auto narrow = matrix_in<bf16, Space>(layout, n, c);
    kamp::cast_and_column_sums(Space(), x, narrow, sums);
    b16.push_back(values_of<Space>(narrow));
    f32.push_back(values_of<Space>(sums));

    const auto dpre = matrix_in<float, Space>(layout, n, c);
    kamp::gelu_backward_and_bias_grad(Space(), dy, x, dpre, sums);
    f32.push_back(values_of<Space>(dpre));
    f32.push_back(values_of<Space>(sums));

    const auto t = vector_in<int, Space>(layout, n);
    fill<Space>(t, targets);
    const auto losses = vector_in<float, Space>(layout, n);
    const auto dlogits = matrix_in<float, Space>(layout, n, c);
    kamp::cross_entropy(Space(), x, Kokkos::View<const int*, typename decltype(t)::array_layout, memory>(t), losses,
                        dlogits, 1.0 / double(n));
    f32.push_back(values_of<Space>(losses));
    f32.push_back(values_of<Space>(dlogits));
    return std::make_pair(f32, b16);
  };

  const auto want = run(right{});
  for_each_layout([&](auto layout, const char* name) {
    INFO(name);
    const auto got = run(layout);
    for (std::size_t k = 0; k < want.first.size(); ++k) {
      INFO("fp32 output " << k);
      require_same(got.first[k], want.first[k], 8, "fp32 output");
    }
    for (std::size_t k = 0; k < want.second.size(); ++k) {
      INFO("bf16 output " << k);
      require_same(got.second[k], want.second[k], 1, "bf16 output");
    }
  });
}

TEMPLATE_TEST_CASE(
    "every layout (LayoutRight, LayoutLeft, LayoutStride): gemm maps every operand layout onto "
    "transposes, against fp64",
    "[kernels][layout][gemm]", KAMP_TEST_EXECUTION_SPACES) {
  using Space = TestType;
  using memory = typename Space::memory_space;
  const int m = 19, k = 23, nn = 17;
  const auto check = [&](auto type_tag) {
    using T = decltype(type_tag);
    const auto av = random_values<T>(std::size_t(m) * k, 12), bv = random_values<T>(std::size_t(k) * nn, 13);
    const auto bias = kamp::test::to_device<float, Space>(random_values<float>(nn, 14), "bias");
    const auto bias_host = kamp::test::to_host(bias);
    const auto each = [](const auto& f) {
      f(right{});
      f(left{});
      f(padded_right{});
      f(padded_left{});
    };
    int checked = 0;
    for (const bool ta : {false, true})
      for (const bool tb : {false, true})
        each([&](auto la) {
          each([&](auto lb) {
            each([&](auto lc) {
              // op(A) is m x k: A is stored k x m when transposed, its values still op(A)'s.
              const auto A = matrix_in<T, Space>(la, ta ? k : m, ta ? m : k);
              const auto B = matrix_in<T, Space>(lb, tb ? nn : k, tb ? k : nn);
              std::vector<T> at(av.size()), bt(bv.size());
              for (int i = 0; i < m; ++i)
                for (int j = 0; j < k; ++j) at[ta ? j * m + i : i * k + j] = av[i * k + j];
              for (int i = 0; i < k; ++i)
                for (int j = 0; j < nn; ++j) bt[tb ? j * k + i : i * nn + j] = bv[i * nn + j];
              fill<Space>(A, at);
              fill<Space>(B, bt);
              const auto C = matrix_in<float, Space>(lc, m, nn);
              const bool c_column_major =
                  std::is_same_v<decltype(lc), left> || std::is_same_v<decltype(lc), padded_left>;
              const auto oa = ta ? kamp::op::transpose : kamp::op::none, ob = tb ? kamp::op::transpose : kamp::op::none;
              if (c_column_major) {
                CHECK_THROWS_AS(kamp::gemm(Space(), oa, ob, 1.0f, A, B, 0.0f, C, bias), std::invalid_argument);
                kamp::gemm(Space(), oa, ob, 1.0f, A, B, 0.0f, C);
              } else {
                kamp::gemm(Space(), oa, ob, 1.0f, A, B, 0.0f, C, bias);
              }
              const auto got = values_of<Space>(C);
              for (int i = 0; i < m; ++i)
                for (int j = 0; j < nn; ++j) {
                  double want = c_column_major ? 0.0 : bias_host[j], mag = std::fabs(want);
                  for (int p = 0; p < k; ++p) {
                    const double term = value_of(av[i * k + p]) * value_of(bv[p * nn + j]);
                    want += term;
                    mag += std::fabs(term);
                  }
                  if (std::fabs(got[i * nn + j] - want) > 1e-6 * mag + 1e-30) {
                    FAIL_CHECK("C(" << i << "," << j << ") = " << got[i * nn + j] << ", fp64 gives " << want
                                    << " (op_a " << ta << ", op_b " << tb << ")");
                    return;
                  }
                }
              ++checked;
            });
          });
        });
    CHECK(checked == 4 * 64);
  };
  check(float{});
  check(bf16{});
}

TEMPLATE_TEST_CASE("every layout: kernels that need contiguous row-major views refuse strided ones by name",
                   "[kernels][layout]", KAMP_TEST_EXECUTION_SPACES) {
  using Space = TestType;
  const auto scores = matrix_in<float, Space>(stepped{}, 8, 8);
  const auto probs = matrix_in<bf16, Space>(right{}, 8, 8);
  CHECK_THROWS_WITH(kamp::causal_softmax_forward(Space(), scores, probs), kamp::test::contains("'stepped' is strided"));
  // A matrix with neither contiguous rows nor contiguous columns cannot go to a GEMM library.
  const auto c = matrix_in<float, Space>(right{}, 8, 8);
  CHECK_THROWS_WITH(kamp::gemm(Space(), kamp::op::none, kamp::op::none, 1.0f, scores, scores, 0.0f, c),
                    kamp::test::contains("neither contiguous rows nor contiguous columns"));
}
