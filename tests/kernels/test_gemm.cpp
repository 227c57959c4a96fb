// GEMM against an fp64 reference on the same (already rounded) inputs, with the bound
// |C - C64| <= c * K * 2^-24 * sum_k |a||b|  (+ one rounding of C when C is 16-bit).
#include <kamp/kernels/gemm.hpp>
#include <kamp/kernels/gemm_epilogue.hpp>

#include "../support/catch.hpp"

#include "../support/cpu_features.hpp"
#include "../support/data.hpp"
#include "../support/execution_spaces.hpp"
#include "../support/views.hpp"

#include <cmath>
#include <limits>
#include <set>
#include <string>
#include <vector>

namespace {

// The first word of the first `kamp::gemm[path,...]` region a GEMM opened (Kokkos Tools; a
// widened GEMM opens its fp32 path's region inside its own).
std::string gemm_region_path;
void record_region(const char* name) {
  const std::string region(name);
  if (gemm_region_path.empty() && region.rfind("kamp::gemm[", 0) == 0)
    gemm_region_path = region.substr(11, region.find(',') - 11);
}

// The path a problem of these types (K > 0, contiguous operands) must take here, from the
// build's vendor libraries and the CPU's features; empty where more than one may be right (AVX-512
// without bf16, where oneDNN 2.6 may or may not have an optimized bf16 matmul; CUDA devices).
// `reads_c`: a 16-bit C that a vendor would read back (beta != 0, or a bias it adds in a
// prologue because alpha != 1), which kamp stages in fp32 so that C is rounded once.
template <class ExecSpace, class TA, class TB, class TC>
std::string expected_path(bool reads_c = false) {
  if constexpr (!std::is_same_v<ExecSpace, Kokkos::DefaultHostExecutionSpace>) {
#ifdef KOKKOS_ENABLE_CUDA
    if constexpr (std::is_same_v<ExecSpace, Kokkos::Cuda>) return {};
#endif
    return "portable";
  } else {
#ifdef KAMP_ENABLE_DNNL
    constexpr bool dnnl = true;
#else
    constexpr bool dnnl = false;
#endif
#ifdef KAMP_ENABLE_KOKKOSKERNELS
    constexpr bool blas = true;
#else
    constexpr bool blas = false;
#endif
    // A bias never keeps a vendor away: where it adds none (KokkosBlas) or would scale it by
    // alpha (oneDNN), kamp's bias prologue adds it first.
    const char* fp32 = dnnl ? "dnnl" : blas ? "kokkosblas" : "portable";
    const std::string widened = std::string(fp32) != "portable" ? "widened" : "portable";
    if constexpr (std::is_same_v<TA, float> && std::is_same_v<TB, float> && std::is_same_v<TC, float>) {
      return fp32;
    } else {
      constexpr bool c16 = !std::is_same_v<TC, float>;
      constexpr bool dnnl_bf16_types = dnnl && std::is_same_v<TA, kamp::bf16> && std::is_same_v<TB, kamp::bf16> &&
                                       (std::is_same_v<TC, float> || std::is_same_v<TC, kamp::bf16>);
      if (c16 && reads_c) return widened;
      if (dnnl_bf16_types && !kamp::test::onednn_below_avx512())
        return kamp::test::onednn_may_use_avx512_bf16() ? "dnnl" : "";
      return widened;
    }
  }
}

template <class T>
double unit_roundoff() {
  if constexpr (std::is_same_v<T, float>) {
    return std::ldexp(1.0, -24);
  } else {
    return std::ldexp(1.0, -kamp::format_traits<T>::mantissa_bits - 1);
  }
}

// Runs one GEMM on the device and checks every element against fp64 math.
template <class ExecSpace, class TA, class TB, class TC>
void check_gemm(int m, int n, int k, kamp::op op_a, kamp::op op_b, float alpha, float beta, bool with_bias,
                kamp::gemm_algorithm algorithm) {
  using memory = typename ExecSpace::memory_space;
  const bool ta = op_a == kamp::op::transpose, tb = op_b == kamp::op::transpose;
  const int ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
  const auto a_h = kamp::test::narrowed<TA>(kamp::test::normal_values(std::size_t(ar) * ac, 1.0f, 1 + m + n));
  const auto b_h = kamp::test::narrowed<TB>(kamp::test::normal_values(std::size_t(br) * bc, 1.0f, 2 + k));
  auto c0 = kamp::test::narrowed<TC>(kamp::test::normal_values(std::size_t(m) * n, 1.0f, 3));
  if (beta == 0.0f && !c0.empty()) c0[0] = kamp::from_float<TC>(std::nanf(""));  // must not leak
  const auto bias_h = kamp::test::normal_values(n, 1.0f, 4);

  Kokkos::View<TA**, Kokkos::LayoutRight, memory> A("A", ar, ac);
  Kokkos::View<TB**, Kokkos::LayoutRight, memory> B("B", br, bc);
  Kokkos::View<TC**, Kokkos::LayoutRight, memory> C("C", m, n);
  Kokkos::deep_copy(
      A, Kokkos::View<const TA**, Kokkos::LayoutRight, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(a_h.data(), ar, ac));
  Kokkos::deep_copy(
      B, Kokkos::View<const TB**, Kokkos::LayoutRight, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(b_h.data(), br, bc));
  Kokkos::deep_copy(
      C, Kokkos::View<const TC**, Kokkos::LayoutRight, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(c0.data(), m, n));
  const auto bias =
      with_bias ? kamp::test::to_device<float, ExecSpace>(bias_h, "bias") : Kokkos::View<float*, memory>();
  gemm_region_path.clear();
  Kokkos::Tools::Experimental::set_push_region_callback(record_region);
  kamp::gemm(ExecSpace(), op_a, op_b, alpha, A, B, beta, C, bias, algorithm);
  Kokkos::Tools::Experimental::set_push_region_callback(nullptr);
  {
    // The path that ran is the one gemm_path_for names, and on a CPU below AVX-512 (or capped
    // there) the one this machine must take.
    const std::string path = algorithm == kamp::gemm_algorithm::portable
                                 ? std::string("portable")
                                 : kamp::gemm_path_for<ExecSpace>(op_a, op_b, alpha, A, B, beta, C, bias);
    INFO(m << "x" << n << "x" << k << " ran " << gemm_region_path << ", gemm_path_for says " << path);
    CHECK(gemm_region_path == path);
    const std::string expected = expected_path<ExecSpace, TA, TB, TC>(beta != 0.0f || (with_bias && alpha != 1.0f));
    // Where oneDNN has native bf16, it alone decides which small or odd shapes get only its
    // reference kernel (and go portable); the 256^3 case below asserts it takes the rest.
    const bool onednn_bf16 = expected == "dnnl" && !std::is_same_v<TA, float>;
    if (algorithm == kamp::gemm_algorithm::automatic && k > 0 && !expected.empty() && !onednn_bf16)
      CHECK(path == expected);
  }
  const auto c_h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), C);

  const auto a = [&](int i, int p) {
    return double(kamp::to_float(ta ? a_h[std::size_t(p) * ac + i] : a_h[std::size_t(i) * ac + p]));
  };
  const auto b = [&](int p, int j) {
    return double(kamp::to_float(tb ? b_h[std::size_t(j) * bc + p] : b_h[std::size_t(p) * bc + j]));
  };
  int bad = 0;
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      double exact = 0, magnitude = 0;
      for (int p = 0; p < k; ++p) {
        exact += a(i, p) * b(p, j);
        magnitude += std::fabs(a(i, p) * b(p, j));
      }
      const double c_old = beta != 0.0f ? kamp::to_float(c0[std::size_t(i) * n + j]) : 0.0;  // may be NaN otherwise
      const double want = alpha * exact + beta * c_old + (with_bias ? bias_h[j] : 0.0);
      const double tol =
          2.0 * (k + 2) * std::ldexp(1.0, -24) * (std::fabs(alpha) * magnitude + std::fabs(beta * c_old) + 1.0) +
          unit_roundoff<TC>() * std::fabs(want);
      const double got = kamp::to_float(c_h(i, j));
      if (!(std::fabs(got - want) <= tol) && ++bad <= 5) {
        INFO(kamp::detail::dtype_name<TA>()
             << " x " << kamp::detail::dtype_name<TB>() << " -> " << kamp::detail::dtype_name<TC>() << ", " << m << "x"
             << n << "x" << k << ", op_a " << int(op_a) << ", op_b " << int(op_b) << ", alpha " << alpha << ", beta "
             << beta);
        INFO("C(" << i << "," << j << ") = " << got << ", fp64 " << want << ", bound " << tol);
        CHECK(false);
      }
    }
  }
  CHECK(bad == 0);
}

template <class ExecSpace, class TA, class TB, class TC>
void check_all_shapes(kamp::gemm_algorithm algorithm) {
  for (const auto oa : {kamp::op::none, kamp::op::transpose})
    for (const auto ob : {kamp::op::none, kamp::op::transpose})
      for (const int s : {1, 7, 33, 65, 127}) {
        INFO("size " << s << " op_a " << int(oa) << " op_b " << int(ob));
        check_gemm<ExecSpace, TA, TB, TC>(s, s + 2, s + 1, oa, ob, 1.0f, 0.0f, false, algorithm);
      }
  check_gemm<ExecSpace, TA, TB, TC>(130, 70, 300, kamp::op::none, kamp::op::transpose, 0.5f, 2.0f, false, algorithm);
  check_gemm<ExecSpace, TA, TB, TC>(20, 30, 0, kamp::op::none, kamp::op::none, 1.0f, 0.5f, false, algorithm);  // K = 0
  check_gemm<ExecSpace, TA, TB, TC>(17, 19, 23, kamp::op::transpose, kamp::op::none, -1.5f, 1.0f, true,
                                    algorithm);  // bias
  check_gemm<ExecSpace, TA, TB, TC>(9, 11, 13, kamp::op::none, kamp::op::none, 0.0f, 1.0f, false,
                                    algorithm);  // alpha = 0
  check_gemm<ExecSpace, TA, TB, TC>(31, 45, 64, kamp::op::none, kamp::op::transpose, 1.0f, 0.0f, true,
                                    algorithm);  // Linear layer: A W^T + bias
  check_gemm<ExecSpace, TA, TB, TC>(31, 45, 64, kamp::op::none, kamp::op::transpose, 1.0f, 1.0f, true,
                                    algorithm);  // residual Linear: C + A W^T + bias
}

}  // namespace

TEMPLATE_TEST_CASE("portable gemm, every type combination, all transposes and edge shapes", "[kernels][gemm]",
                   KAMP_TEST_EXECUTION_SPACES) {
  const auto portable = kamp::gemm_algorithm::portable;
  check_all_shapes<TestType, kamp::bf16, kamp::bf16, float>(portable);
  check_all_shapes<TestType, kamp::bf16, kamp::bf16, kamp::bf16>(portable);
  check_all_shapes<TestType, kamp::fp16, kamp::fp16, kamp::fp16>(portable);
  check_all_shapes<TestType, float, float, float>(portable);
  check_gemm<TestType, kamp::bf16, float, kamp::fp16>(33, 65, 127, kamp::op::none, kamp::op::transpose, 1.0f, 0.0f,
                                                      false, portable);
  check_gemm<TestType, float, kamp::fp16, kamp::bf16>(65, 33, 7, kamp::op::transpose, kamp::op::none, 1.0f, 1.0f, false,
                                                      portable);
}

namespace {

// Every (A, B, C) type combination, all four transpose pairs, two odd sizes.
template <class ExecSpace, class TA, class TB, class TC>
void check_combination() {
  for (const auto oa : {kamp::op::none, kamp::op::transpose})
    for (const auto ob : {kamp::op::none, kamp::op::transpose}) {
      check_gemm<ExecSpace, TA, TB, TC>(33, 65, 7, oa, ob, 1.0f, 0.5f, false, kamp::gemm_algorithm::portable);
      check_gemm<ExecSpace, TA, TB, TC>(65, 33, 70, oa, ob, 1.0f, 0.0f, false, kamp::gemm_algorithm::portable);
    }
}
template <class ExecSpace, class TA, class TB>
void check_output_types() {
  check_combination<ExecSpace, TA, TB, float>();
  check_combination<ExecSpace, TA, TB, kamp::bf16>();
  check_combination<ExecSpace, TA, TB, kamp::fp16>();
}
template <class ExecSpace, class TA>
void check_b_types() {
  check_output_types<ExecSpace, TA, float>();
  check_output_types<ExecSpace, TA, kamp::bf16>();
  check_output_types<ExecSpace, TA, kamp::fp16>();
}

}  // namespace

TEMPLATE_TEST_CASE("portable gemm: all 27 type combinations x all transposes", "[kernels][gemm]",
                   KAMP_TEST_EXECUTION_SPACES) {
  check_b_types<TestType, float>();
  check_b_types<TestType, kamp::bf16>();
  check_b_types<TestType, kamp::fp16>();
}

namespace {

template <class ExecSpace, class TA, class TB, class TC>
void check_machine_path() {
  const kamp::gemm_path_info info = kamp::gemm_path_on_this_machine<ExecSpace, TA, TB, TC>();
  const std::string expected = expected_path<ExecSpace, TA, TB, TC>();
  INFO(kamp::detail::dtype_name<TA>() << " x " << kamp::detail::dtype_name<TB>() << " -> "
                                      << kamp::detail::dtype_name<TC>() << ": " << info.path << " (" << info.reason
                                      << "); oneDNN ISA cap '" << kamp::test::onednn_isa_cap() << "'");
  CHECK(!info.reason.empty());
  if (!expected.empty()) CHECK(info.path == expected);
}

}  // namespace

TEMPLATE_TEST_CASE("the GEMM path per type combination is the one this CPU and build call for", "[kernels][gemm]",
                   KAMP_TEST_EXECUTION_SPACES) {
  check_machine_path<TestType, float, float, float>();
  check_machine_path<TestType, kamp::bf16, kamp::bf16, float>();
  check_machine_path<TestType, kamp::bf16, kamp::bf16, kamp::bf16>();
  check_machine_path<TestType, kamp::fp16, kamp::fp16, kamp::fp16>();
  check_machine_path<TestType, kamp::fp16, kamp::fp16, float>();
#ifdef KAMP_ENABLE_DNNL
  if constexpr (std::is_same_v<TestType, Kokkos::DefaultHostExecutionSpace>) {
    if (kamp::test::onednn_below_avx512()) {
      // oneDNN 2.6 has no bf16 matmul here: the reason says so, and names the ISA it saw.
      const auto info = kamp::gemm_path_on_this_machine<TestType, kamp::bf16, kamp::bf16, float>();
      CHECK_THAT(info.reason, kamp::test::contains("dnnl declines") && kamp::test::contains("ISA"));
    }
  }
#endif
}

TEMPLATE_TEST_CASE("gemm with vendor libraries where present agrees with the fp64 bound", "[kernels][gemm]",
                   KAMP_TEST_EXECUTION_SPACES) {
  const auto automatic = kamp::gemm_algorithm::automatic;
  check_all_shapes<TestType, float, float, float>(automatic);
  check_all_shapes<TestType, kamp::bf16, kamp::bf16, float>(automatic);
  check_all_shapes<TestType, kamp::bf16, kamp::bf16, kamp::bf16>(automatic);
  check_all_shapes<TestType, kamp::fp16, kamp::fp16, float>(automatic);
  check_all_shapes<TestType, kamp::fp16, kamp::fp16, kamp::fp16>(automatic);
  check_gemm<TestType, kamp::bf16, float, kamp::fp16>(33, 65, 127, kamp::op::none, kamp::op::transpose, 1.0f, 0.0f,
                                                      true, automatic);
}

namespace {

// A 16-bit C is rounded once whatever the vendor does with beta and a bias: every beta kind,
// every transpose, with and without a bias and alpha != 1, on the path this machine takes.
template <class ExecSpace, class TA, class TB, class TC>
void check_c_rounded_once() {
  for (const auto oa : {kamp::op::none, kamp::op::transpose})
    for (const auto ob : {kamp::op::none, kamp::op::transpose})
      for (const float beta : {0.0f, 1.0f, -0.5f})
        for (const bool bias : {false, true})
          for (const float alpha : {1.0f, -1.5f}) {
            check_gemm<ExecSpace, TA, TB, TC>(17, 19, 23, oa, ob, alpha, beta, bias, kamp::gemm_algorithm::automatic);
            check_gemm<ExecSpace, TA, TB, TC>(64, 96, 256, oa, ob, alpha, beta, bias, kamp::gemm_algorithm::automatic);
          }
}

}  // namespace

TEMPLATE_TEST_CASE("gemm rounds a 16-bit C once for every beta, bias and transpose", "[kernels][gemm]",
                   KAMP_TEST_EXECUTION_SPACES) {
  check_c_rounded_once<TestType, kamp::bf16, kamp::bf16, kamp::bf16>();
  check_c_rounded_once<TestType, kamp::fp16, kamp::fp16, kamp::fp16>();
  check_c_rounded_once<TestType, kamp::bf16, kamp::bf16, kamp::fp16>();
  check_c_rounded_once<TestType, kamp::fp16, kamp::fp16, kamp::bf16>();
}

namespace {

template <class ExecSpace, class T>
void check_attention_heads() {
  using memory = typename ExecSpace::memory_space;
  // qkv (B*H, T, 3*D) holds q, k and v side by side; attention scores S = q k^T per head.
  const int batch = 6, t = 37, d = 16;
  Kokkos::View<T***, Kokkos::LayoutRight, memory> qkv("qkv", batch, t, 3 * d);
  const auto values = kamp::test::narrowed<T>(kamp::test::normal_values(std::size_t(batch) * t * 3 * d, 1.0f, 9));
  Kokkos::deep_copy(qkv, Kokkos::View<const T***, Kokkos::LayoutRight, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(
                             values.data(), batch, t, 3 * d));
  const auto q = Kokkos::subview(qkv, Kokkos::ALL, Kokkos::ALL, std::make_pair(0, d));
  const auto k = Kokkos::subview(qkv, Kokkos::ALL, Kokkos::ALL, std::make_pair(d, 2 * d));
  Kokkos::View<float***, Kokkos::LayoutRight, memory> s("s", batch, t, t);
  kamp::gemm_strided_batched(ExecSpace(), kamp::op::none, kamp::op::transpose, 0.25f, q, k, 0.0f, s);
  const auto s_h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), s);
  const auto at = [&](int b, int i, int c) {
    return double(kamp::to_float(values[(std::size_t(b) * t + i) * 3 * d + c]));
  };
  double worst = 0;
  for (int b = 0; b < batch; ++b)
    for (int i = 0; i < t; ++i)
      for (int j = 0; j < t; ++j) {
        double exact = 0, mag = 0;
        for (int c = 0; c < d; ++c) {
          exact += at(b, i, c) * at(b, j, d + c);
          mag += std::fabs(at(b, i, c) * at(b, j, d + c));
        }
        worst = std::max(worst, std::fabs(s_h(b, i, j) - 0.25 * exact) / (0.25 * mag + 1e-30));
      }
  INFO(kamp::detail::dtype_name<T>() << " heads");
  CHECK(worst <= 2.0 * (d + 2) * std::ldexp(1.0, -24));
}

}  // namespace

TEMPLATE_TEST_CASE("strided-batched gemm on head sub-views", "[kernels][gemm]", KAMP_TEST_EXECUTION_SPACES) {
  check_attention_heads<TestType, kamp::bf16>();
  check_attention_heads<TestType, float>();
}

namespace {

// Attention's GEMMs on heads read and written in place: (B, T, 3C) projection rows hold q, k and
// v, H heads of width D each; rank-4 views (B, H, T, D) with strides (T·3C, D, 3C, 1) reach
// them with no copy. Checked against fp64 per (b, h), with everything outside the written head
// columns left bit for bit as it was.
template <class ExecSpace, class T>
void check_heads_in_place(kamp::gemm_algorithm algorithm) {
  using memory = typename ExecSpace::memory_space;
  using heads = Kokkos::View<T****, Kokkos::LayoutStride, memory>;
  using const_heads = Kokkos::View<const T****, Kokkos::LayoutStride, memory>;
  const int nb = 3, t = 21, nh = 4, d = 8, c = nh * d, width = 3 * c;
  const std::size_t row_elements = std::size_t(nb) * t * width;
  const auto rows_h = kamp::test::narrowed<T>(kamp::test::normal_values(row_elements, 1.0f, 31));
  const auto probs_h = kamp::test::narrowed<T>(kamp::test::normal_values(std::size_t(nb) * nh * t * t, 0.5f, 32));
  const auto rows = kamp::test::to_device<T, ExecSpace>(rows_h, "rows");
  const auto probs = kamp::test::to_device<T, ExecSpace>(probs_h, "probs");
  const auto part = [&](T* data, int offset, int row_width) {
    return heads(data + offset, Kokkos::LayoutStride(nb, std::size_t(t) * row_width, nh, d, t, row_width, d, 1));
  };
  const auto value = [&](int b, int h, int i, int col) {
    return double(kamp::to_float(rows_h[(std::size_t(b) * t + i) * width + h * d + col]));
  };
  const auto prob = [&](int b, int h, int i, int j) {
    return double(kamp::to_float(probs_h[((std::size_t(b) * nh + h) * t + i) * t + j]));
  };
  const const_heads q = part(rows.data(), 0, width), k = part(rows.data(), c, width);
  const Kokkos::View<const T****, Kokkos::LayoutRight, memory> p(probs.data(), nb, nh, t, t);
  const double u = std::ldexp(1.0, -24), u_c = std::is_same_v<T, kamp::bf16>   ? std::ldexp(1.0, -8)
                                               : std::is_same_v<T, kamp::fp16> ? std::ldexp(1.0, -11)
                                                                               : 0.0;
  INFO(kamp::detail::dtype_name<T>() << (algorithm == kamp::gemm_algorithm::portable ? " portable" : " automatic"));

  // Scores into contiguous fp32 (B, H, T, T): S = 0.5 q kᵀ.
  Kokkos::View<float****, Kokkos::LayoutRight, memory> s("s", nb, nh, t, t);
  kamp::gemm_strided_batched(ExecSpace(), kamp::op::none, kamp::op::transpose, 0.5f, q, k, 0.0f, s, algorithm);
  const auto s_h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), s);
  double worst = 0;
  for (int b = 0; b < nb; ++b)
    for (int h = 0; h < nh; ++h)
      for (int i = 0; i < t; ++i)
        for (int j = 0; j < t; ++j) {
          double exact = 0, mag = 0;
          for (int e = 0; e < d; ++e) {
            exact += value(b, h, i, e) * value(b, h, j, c + e);
            mag += std::fabs(value(b, h, i, e) * value(b, h, j, e + c));
          }
          worst = std::max(worst, std::fabs(s_h(b, h, i, j) - 0.5 * exact) / (0.5 * mag + 1e-30));
        }
  CHECK(worst <= 2.0 * (d + 2) * u);

  // The same scores from head-major (B, H, T, D) copies, one stride between all matrices (the
  // form cuBLAS takes in one call): equal within the two results' rounding.
  std::vector<T> q_h(std::size_t(nb) * nh * t * d), k_h(q_h.size());
  for (int b = 0; b < nb; ++b)
    for (int h = 0; h < nh; ++h)
      for (int i = 0; i < t; ++i)
        for (int e = 0; e < d; ++e) {
          const std::size_t at = ((std::size_t(b) * nh + h) * t + i) * d + e;
          q_h[at] = rows_h[(std::size_t(b) * t + i) * width + h * d + e];
          k_h[at] = rows_h[(std::size_t(b) * t + i) * width + c + h * d + e];
        }
  const auto q_d = kamp::test::to_device<T, ExecSpace>(q_h, "q"), k_d = kamp::test::to_device<T, ExecSpace>(k_h, "k");
  Kokkos::View<float****, Kokkos::LayoutRight, memory> s2("s2", nb, nh, t, t);
  kamp::gemm_strided_batched(ExecSpace(), kamp::op::none, kamp::op::transpose, 0.5f,
                             Kokkos::View<const T****, Kokkos::LayoutRight, memory>(q_d.data(), nb, nh, t, d),
                             Kokkos::View<const T****, Kokkos::LayoutRight, memory>(k_d.data(), nb, nh, t, d), 0.0f, s2,
                             algorithm);
  const auto s2_h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), s2);
  int apart = 0;
  for (int b = 0; b < nb; ++b)
    for (int h = 0; h < nh; ++h)
      for (int i = 0; i < t; ++i)
        for (int j = 0; j < t; ++j) {
          double mag = 0;
          for (int e = 0; e < d; ++e) mag += std::fabs(value(b, h, i, e) * value(b, h, j, c + e));
          apart += std::fabs(s2_h(b, h, i, j) - s_h(b, h, i, j)) > 4.0 * (d + 2) * u * 0.5 * mag;
        }
  CHECK(apart == 0);

  // Merged heads written in place into (B, T, C) rows: Y = P v.
  Kokkos::View<T*, memory> y("y", std::size_t(nb) * t * c);
  kamp::gemm_strided_batched(ExecSpace(), kamp::op::none, kamp::op::none, 1.0f, p,
                             const_heads(part(rows.data(), 2 * c, width)), 0.0f, part(y.data(), 0, c), algorithm);
  const auto y_h = kamp::test::to_host(y);
  worst = 0;
  for (int b = 0; b < nb; ++b)
    for (int h = 0; h < nh; ++h)
      for (int i = 0; i < t; ++i)
        for (int e = 0; e < d; ++e) {
          double exact = 0, mag = 0;
          for (int j = 0; j < t; ++j) {
            exact += prob(b, h, i, j) * value(b, h, j, 2 * c + e);
            mag += std::fabs(prob(b, h, i, j) * value(b, h, j, 2 * c + e));
          }
          const double got = kamp::to_float(y_h[(std::size_t(b) * t + i) * c + h * d + e]);
          worst = std::max(worst, std::fabs(got - exact) / (mag + 1e-30));
        }
  CHECK(worst <= 2.0 * (t + 2) * u + u_c);

  // A gradient accumulated in place into the k columns of (B, T, 3C) rows: dk = 0.5 Pᵀ q + dk.
  // The q and v columns stay as they were, bit for bit.
  const auto grad = kamp::test::to_device<T, ExecSpace>(rows_h, "grad");
  kamp::gemm_strided_batched(ExecSpace(), kamp::op::transpose, kamp::op::none, 0.5f, p, q, 1.0f,
                             part(grad.data(), c, width), algorithm);
  const auto grad_h = kamp::test::to_host(grad);
  worst = 0;
  int moved = 0;
  for (int b = 0; b < nb; ++b)
    for (int i = 0; i < t; ++i)
      for (int col = 0; col < width; ++col) {
        const std::size_t at = (std::size_t(b) * t + i) * width + col;
        if (col < c || col >= 2 * c) {
          moved += kamp::test::raw_bits(grad_h[at]) != kamp::test::raw_bits(rows_h[at]);
          continue;
        }
        const int h = (col - c) / d, e = (col - c) % d;
        double exact = 0, mag = 0;
        for (int j = 0; j < t; ++j) {
          exact += prob(b, h, j, i) * value(b, h, j, e);
          mag += std::fabs(prob(b, h, j, i) * value(b, h, j, e));
        }
        const double before = kamp::to_float(rows_h[at]);
        const double got = kamp::to_float(grad_h[at]);
        worst = std::max(worst, std::fabs(got - (0.5 * exact + before)) / (0.5 * mag + std::fabs(before) + 1e-30));
      }
  CHECK(moved == 0);
  CHECK(worst <= 2.0 * (t + 3) * u + u_c);
}

}  // namespace

TEMPLATE_TEST_CASE("rank-4 strided-batched gemm reads and writes attention heads in place", "[kernels][gemm]",
                   KAMP_TEST_EXECUTION_SPACES) {
  for (const auto algorithm : {kamp::gemm_algorithm::automatic, kamp::gemm_algorithm::portable}) {
    check_heads_in_place<TestType, float>(algorithm);
    check_heads_in_place<TestType, kamp::bf16>(algorithm);
    check_heads_in_place<TestType, kamp::fp16>(algorithm);
  }
}

#ifdef KAMP_ENABLE_DNNL
namespace {

/// Sets oneDNN's packing rule for a scope (the rule is process-wide).
struct dnnl_packing_scope {
  explicit dnnl_packing_scope(kamp::detail::dnnl_packing packing) {
    kamp::detail::dnnl_context::instance().set_packing(packing);
  }
  ~dnnl_packing_scope() { kamp::detail::dnnl_context::instance().set_packing(kamp::detail::dnnl_packing::automatic); }
};

/// What a call reported of its GEMMs.
struct gemm_log : kamp::traffic_listener {
  std::vector<kamp::gemm_record> gemms;
  void kernel(const char*, double, const kamp::kernel_arithmetic&) override {}
  void gemm(const kamp::gemm_record& r) override { gemms.push_back(r); }
};

/// The path and kernel of attention's score GEMM on (B, H) heads inside (B, T, 3C) rows.
template <class T>
kamp::gemm_record attention_scores_record() {
  using memory = Kokkos::HostSpace;
  using heads = Kokkos::View<const T****, Kokkos::LayoutStride, memory>;
  const int nb = 2, t = 64, nh = 4, d = 32, width = 3 * nh * d;
  const Kokkos::View<T*, memory> rows("rows", std::size_t(nb) * t * width);
  const Kokkos::View<float****, Kokkos::LayoutRight, memory> s("s", nb, nh, t, t);
  const auto part = [&](int offset) {
    return heads(rows.data() + offset, Kokkos::LayoutStride(nb, std::size_t(t) * width, nh, d, t, width, d, 1));
  };
  gemm_log log;
  const kamp::traffic_scope listening(log);
  kamp::gemm_strided_batched(Kokkos::DefaultHostExecutionSpace(), kamp::op::none, kamp::op::transpose, 0.125f, part(0),
                             part(nh * d), 0.0f, s);
  REQUIRE(log.gemms.size() == 1);
  return log.gemms[0];
}

}  // namespace

TEST_CASE("attention heads packed into dense copies for oneDNN give the in-place results", "[kernels][gemm]") {
  const dnnl_packing_scope packed(kamp::detail::dnnl_packing::always);
  check_heads_in_place<Kokkos::DefaultHostExecutionSpace, float>(kamp::gemm_algorithm::automatic);
  check_heads_in_place<Kokkos::DefaultHostExecutionSpace, kamp::bf16>(kamp::gemm_algorithm::automatic);
  const kamp::gemm_record r = attention_scores_record<float>();
  INFO(r.path << ": " << r.implementation);
  CHECK(r.path == "dnnl");
  CHECK(r.implementation.find("packed") != std::string::npos);
}

TEST_CASE("attention heads run on oneDNN's AMX kernel where the CPU has one, copied only for it", "[kernels][gemm]") {
  // oneDNN 2.6 serves heads in place only with gemm:jit, which has no AMX code, so an AMX host
  // copies them for brgemm; oneDNN 3.12 takes them in place on brgemm. Elsewhere gemm:jit in
  // place is as fast as brgemm on copies (docs/gemm.md), so nothing is copied.
  const kamp::gemm_record r = attention_scores_record<kamp::bf16>();
  INFO(r.path << ": " << r.implementation);
  CHECK(r.lda == 3 * 4 * 32);
  CHECK(r.inner == 4);
  const bool packed = r.implementation.find("packed") != std::string::npos;
  if (r.path != "dnnl")
    CHECK_FALSE(kamp::test::onednn_may_use_avx512_bf16());
  else if (kamp::test::onednn_may_use_amx_bf16())
    CHECK(r.implementation.find("amx") != std::string::npos);
  else
    CHECK_FALSE(packed);
  const kamp::gemm_record f = attention_scores_record<float>();
  INFO(f.path << ": " << f.implementation);
  CHECK(f.implementation.find("packed") == std::string::npos);
}
#endif

namespace {

// Linear + GELU with the pre-activation kept: on every path the unfused composition (gemm with
// bias, then gelu_forward of what it stored) bit for bit, and pre within the GEMM bound of fp64.
template <class ExecSpace, class T, class Y>
void check_bias_gelu(kamp::gemm_algorithm algorithm, kamp::op op_b) {
  using memory = typename ExecSpace::memory_space;
  const int m = 45, n = 70, k = 33;  // edge tiles in every dimension
  const bool tb = op_b == kamp::op::transpose;
  const auto a_h = kamp::test::narrowed<T>(kamp::test::normal_values(std::size_t(m) * k, 1.0f, 51));
  const auto b_h = kamp::test::narrowed<T>(kamp::test::normal_values(std::size_t(k) * n, 0.3f, 52));
  const auto bias_h = kamp::test::normal_values(std::size_t(n), 0.5f, 53);
  const auto a_d = kamp::test::to_device<T, ExecSpace>(a_h, "a"), b_d = kamp::test::to_device<T, ExecSpace>(b_h, "b");
  const Kokkos::View<const T**, Kokkos::LayoutRight, memory> a(a_d.data(), m, k), b(b_d.data(), tb ? n : k, tb ? k : n);
  const Kokkos::View<const float*, memory> bias(kamp::test::to_device<float, ExecSpace>(bias_h, "bias"));
  const Kokkos::View<float**, Kokkos::LayoutRight, memory> pre("pre", m, n), pre_unfused("pre_unfused", m, n);
  const Kokkos::View<Y**, Kokkos::LayoutRight, memory> act("act", m, n), act_unfused("act_unfused", m, n);
  kamp::gemm_bias_gelu(ExecSpace(), kamp::op::none, op_b, 1.0f, a, b, bias, pre, act, algorithm);
  kamp::gemm(ExecSpace(), kamp::op::none, op_b, 1.0f, a, b, 0.0f, pre_unfused, bias, algorithm);
  kamp::gelu_forward(ExecSpace(), Kokkos::View<const float*, memory>(pre_unfused.data(), pre_unfused.size()),
                     Kokkos::View<Y*, memory>(act_unfused.data(), act_unfused.size()));
  const auto flat = [](const auto& v) {
    return kamp::test::to_host(
        Kokkos::View<typename std::decay_t<decltype(v)>::value_type*, memory>(v.data(), v.size()));
  };
  const auto pre_h = flat(pre), pre_u = flat(pre_unfused);
  const auto act_h = flat(act), act_u = flat(act_unfused);
  int pre_differ = 0, act_differ = 0;
  double worst = 0;
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      const std::size_t at = std::size_t(i) * n + j;
      pre_differ += kamp::test::raw_bits(pre_h[at]) != kamp::test::raw_bits(pre_u[at]);
      // GELU's error bound apart (an ulp of pre each way, test_nn_gradients.cpp) plus act's
      // rounding: the write-back's scalar GELU may be contracted into multiply-adds differently
      // from gelu_forward's vector loop (bit for bit on a vendor path, which runs it).
      const double want = kamp::to_float(act_u[at]), u_act = std::is_same_v<Y, float>        ? std::ldexp(1.0, -23)
                                                             : std::is_same_v<Y, kamp::bf16> ? std::ldexp(1.0, -7)
                                                                                             : std::ldexp(1.0, -10);
      act_differ += std::fabs(kamp::to_float(act_h[at]) - want) >
                    std::ldexp(std::fabs(pre_h[at]), -22) + u_act * std::fabs(want) + std::ldexp(1.0, -24);
      double exact = bias_h[j], mag = std::fabs(bias_h[j]);
      for (int e = 0; e < k; ++e) {
        const double x = kamp::to_float(a_h[std::size_t(i) * k + e]);
        const double w = kamp::to_float(b_h[tb ? std::size_t(j) * k + e : std::size_t(e) * n + j]);
        exact += x * w;
        mag += std::fabs(x * w);
      }
      worst = std::max(worst, std::fabs(pre_h[at] - exact) / (mag + 1e-30));
    }
  INFO(kamp::detail::dtype_name<T>() << " -> " << kamp::detail::dtype_name<Y>() << ", op(B) "
                                     << (tb ? "transposed" : "plain") << ", path "
                                     << kamp::gemm_path_for<ExecSpace>(kamp::op::none, op_b, 1.0f, a, b, 0.0f, pre,
                                                                       bias));
  CHECK(pre_differ == 0);
  CHECK(act_differ == 0);
  CHECK(worst <= 2.0 * (k + 2) * std::ldexp(1.0, -24));
}

}  // namespace

TEMPLATE_TEST_CASE("gemm_bias_gelu is gemm with bias then gelu_forward on every path", "[kernels][gemm]",
                   KAMP_TEST_EXECUTION_SPACES) {
  for (const auto algorithm : {kamp::gemm_algorithm::automatic, kamp::gemm_algorithm::portable})
    for (const auto op_b : {kamp::op::none, kamp::op::transpose}) {
      check_bias_gelu<TestType, float, float>(algorithm, op_b);
      check_bias_gelu<TestType, kamp::bf16, kamp::bf16>(algorithm, op_b);
      check_bias_gelu<TestType, kamp::fp16, kamp::fp16>(algorithm, op_b);
    }
  using memory = typename TestType::memory_space;
  const Kokkos::View<float**, Kokkos::LayoutRight, memory> a("a", 4, 3), b("b", 3, 5), pre("pre", 4, 5),
      act("act", 4, 6);
  CHECK_THROWS_WITH(kamp::gemm_bias_gelu(TestType(), kamp::op::none, kamp::op::none, 1.0f, a, b,
                                         Kokkos::View<const float*, memory>(), pre, act),
                    kamp::test::contains("act is 4x6, pre is 4x5"));
}

TEST_CASE("gemm rejects mismatched shapes with the dimensions in the message", "[kernels][gemm]") {
  Kokkos::View<float**, Kokkos::LayoutRight, Kokkos::HostSpace> a("a", 3, 4), b("b", 5, 6), c("c", 3, 6);
  CHECK_THROWS_WITH(
      kamp::gemm(Kokkos::DefaultHostExecutionSpace(), kamp::op::none, kamp::op::none, 1.0f, a, b, 0.0f, c),
      kamp::test::contains("op(A) is 3x4, op(B) is 5x6"));
}
