// GEMM throughput against OpenBLAS sgemm and oneDNN (bf16 -> fp32) called directly.
#include "gemm.hpp"

#include "roofline.hpp"

#include <kamp/kamp.hpp>
#include <kamp/kernels/tpls/gemm_dnnl.hpp>  // dnnl_matmul_desc

#ifdef KAMP_BENCH_HAVE_OPENBLAS
#include <cblas.h>
#endif

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace kamp::bench {

namespace {

using exec = Kokkos::DefaultExecutionSpace;
using memory = exec::memory_space;
template <class T>
using matrix = Kokkos::View<T**, Kokkos::LayoutRight, memory>;

struct shape {
  const char* name;
  int m, n, k;
  op a, b;
};

template <class T>
matrix<T> random_matrix(const char* label, int rows, int cols) {
  matrix<T> x(std::string(label), rows, cols);
  Kokkos::parallel_for(
      "kamp::bench::fill_matrix", Kokkos::RangePolicy<exec>(0, rows * cols), KOKKOS_LAMBDA(int i) {
        const float v = float(counter_random(7, i) >> 8) * (1.0f / 16777216.0f) - 0.5f;
        x.data()[i] = from_float<T>(v);
      });
  return x;
}

#ifdef KAMP_ENABLE_DNNL
// oneDNN's matmul as a user would call it: primitive built once, executed on plain pointers.
class dnnl_matmul {
 public:
  /// Throws dnnl::error where oneDNN has no bf16 matmul for this CPU.
  dnnl_matmul(const shape& s, const bf16* a, const bf16* b, float* c)
      : engine_(dnnl::engine::kind::cpu, 0), stream_(engine_) {
    using dims = dnnl::memory::dims;
    using dt = dnnl::memory::data_type;
    const bool ta = s.a == op::transpose, tb = s.b == op::transpose;
    const dnnl::memory::desc ad({s.m, s.k}, dt::bf16, ta ? dims{1, s.m} : dims{s.k, 1});
    const dnnl::memory::desc bd({s.k, s.n}, dt::bf16, tb ? dims{1, s.k} : dims{s.n, 1});
    const dnnl::memory::desc cd({s.m, s.n}, dt::f32, dims{s.n, 1});
    primitive_ = dnnl::matmul(detail::dnnl_matmul_desc(engine_, ad, bd, nullptr, cd));
    a_ = dnnl::memory(ad, engine_, const_cast<bf16*>(a));
    b_ = dnnl::memory(bd, engine_, const_cast<bf16*>(b));
    c_ = dnnl::memory(cd, engine_, c);
  }
  void operator()() {
    primitive_.execute(stream_, {{DNNL_ARG_SRC, a_}, {DNNL_ARG_WEIGHTS, b_}, {DNNL_ARG_DST, c_}});
    stream_.wait();
  }

 private:
  dnnl::engine engine_;
  dnnl::stream stream_;
  dnnl::matmul primitive_;
  dnnl::memory a_, b_, c_;
};
#endif

/// The reference GPT's attention heads: (B, H) matrices of (T, D) inside (B, T, 3C) QKV rows.
struct attention_shape {
  int batch = 16, heads = 4, context = 128, head_size = 64;
  int width() const { return heads * head_size; }
};

/// Part `part` (q, k, v) of QKV rows as (B, H, T, D) heads, in place.
template <class T>
Kokkos::View<const T****, Kokkos::LayoutStride, memory> heads_in_rows(const Kokkos::View<T*, memory>& rows,
                                                                      const attention_shape& a, int part) {
  const std::size_t row = 3 * std::size_t(a.width());
  return Kokkos::View<const T****, Kokkos::LayoutStride, memory>(
      rows.data() + part * a.width(),
      Kokkos::LayoutStride(a.batch, a.context * row, a.heads, a.head_size, a.context, row, a.head_size, 1));
}

/// Attention's two forward GEMMs, heads in place, against the same GEMMs on contiguous heads
/// (the vendor's dense rate at that shape), in alternation: where the in-place strides push a
/// GEMM off the vendor's fast kernel, the ratio shows it. On oneDNN also both packing choices
/// forced, with the name of the kernel each runs.
void attention_gemms(report& out, int repeat) {
  const exec space;
  const attention_shape a;
  const auto rows = random_matrix<bf16>("qkv", 1, a.batch * a.context * 3 * a.width());
  const Kokkos::View<bf16*, memory> qkv(rows.data(), rows.size());
  const auto dense = random_matrix<bf16>("heads", 1, a.batch * a.heads * a.context * a.head_size);
  using heads = Kokkos::View<const bf16****, Kokkos::LayoutRight, memory>;
  const heads dense_heads(dense.data(), a.batch, a.heads, a.context, a.head_size);
  const Kokkos::View<float****, Kokkos::LayoutRight, memory> scores("scores", a.batch, a.heads, a.context, a.context);
  const auto probs = random_matrix<bf16>("probs", 1, scores.size());
  const heads dense_probs(probs.data(), a.batch, a.heads, a.context, a.context);
  const Kokkos::View<bf16*, memory> merged("merged", std::size_t(a.batch) * a.context * a.width());
  const Kokkos::View<bf16****, Kokkos::LayoutStride, memory> out_heads(
      merged.data(), Kokkos::LayoutStride(a.batch, std::size_t(a.context) * a.width(), a.heads, a.head_size, a.context,
                                          a.width(), a.head_size, 1));
  const Kokkos::View<bf16****, Kokkos::LayoutRight, memory> dense_out("dense_out", a.batch, a.heads, a.context,
                                                                      a.head_size);
  const double flop = 2.0 * a.batch * a.heads * a.context * a.context * a.head_size;
  struct gemm_case {
    const char* name;
    std::function<void()> in_place, dense;
  };
  const gemm_case cases[] = {
      {"QK^T",
       [&] {
         gemm_strided_batched(space, op::none, op::transpose, 0.125f, heads_in_rows(qkv, a, 0),
                              heads_in_rows(qkv, a, 1), 0.0f, scores);
       },
       [&] { gemm_strided_batched(space, op::none, op::transpose, 0.125f, dense_heads, dense_heads, 0.0f, scores); }},
      {"P.V",
       [&] {
         gemm_strided_batched(space, op::none, op::none, 1.0f, dense_probs, heads_in_rows(qkv, a, 2), 0.0f, out_heads);
       },
       [&] { gemm_strided_batched(space, op::none, op::none, 1.0f, dense_probs, dense_heads, 0.0f, dense_out); }}};
  std::printf("\n  attention GEMMs, %d x %d heads of %d x %d (GFLOP/s; ratio to the same GEMM on contiguous heads)\n",
              a.batch, a.heads, a.context, a.head_size);
  const auto measure = [&](const gemm_case& c, const std::string& how) {
    step_traffic record;
    {
      const traffic_scope listening(record);
      c.in_place();
    }
    const gemm_record& g = record.gemms().at(0);
    const paired_timing t = time_against(repeat, c.in_place, c.dense);
    std::printf("  %-6s %-26s %8.1f GFLOP/s  %5.2f x dense  %s: %s\n", c.name, how.c_str(), flop / t.seconds / 1e9,
                t.speed_ratio, g.path.c_str(), g.implementation.c_str());
    out.doc()["results"].push_back({{"name", std::string("attention ") + c.name + " " + how},
                                    {"kind", "attention_gemm"},
                                    {"path", g.path},
                                    {"implementation", g.implementation},
                                    {"gflop_per_s", flop / t.seconds / 1e9},
                                    {"ratio_to_dense", t.speed_ratio}});
  };
  for (const gemm_case& c : cases) {
    measure(c, "heads in place");
#ifdef KAMP_ENABLE_DNNL
    if constexpr (std::is_same_v<memory, Kokkos::HostSpace>) {
      auto& dnnl = detail::dnnl_context::instance();
      for (const auto& [packing, how] : {std::pair{detail::dnnl_packing::never, "oneDNN in place forced"},
                                         std::pair{detail::dnnl_packing::always, "oneDNN packed forced"}}) {
        dnnl.set_packing(packing);
        measure(c, how);
      }
      dnnl.set_packing(detail::dnnl_packing::automatic);
    }
#endif
  }
}

}  // namespace

void gemm_kernels(report& out, int repeat, bool large) {
  std::vector<shape> shapes = {{"forward NN", 2048, 1024, 256, op::none, op::none},
                               {"forward NT", 2048, 1024, 256, op::none, op::transpose},
                               {"data-grad NN", 2048, 256, 1024, op::none, op::none},
                               {"weight-grad TN", 1024, 256, 2048, op::transpose, op::none},
                               {"square 1024", 1024, 1024, 1024, op::none, op::none}};
  if (large) shapes.push_back({"square 2048", 2048, 2048, 2048, op::none, op::none});
  const exec space;
  std::printf("\n  GEMM (GFLOP/s; ratios from runs alternating with the reference)\n");
  for (const shape& s : shapes) {
    const bool ta = s.a == op::transpose, tb = s.b == op::transpose;
    const auto a32 = random_matrix<float>("a32", ta ? s.k : s.m, ta ? s.m : s.k);
    const auto b32 = random_matrix<float>("b32", tb ? s.n : s.k, tb ? s.k : s.n);
    const auto a16 = random_matrix<bf16>("a16", ta ? s.k : s.m, ta ? s.m : s.k);
    const auto b16 = random_matrix<bf16>("b16", tb ? s.n : s.k, tb ? s.k : s.n);
    matrix<float> c("c", s.m, s.n), c_ref("c_ref", s.m, s.n);
    const double flop = 2.0 * s.m * s.n * s.k;
    // The fp32 reference: OpenBLAS on the host; elsewhere (GPUs) kamp's own fp32 vendor path.
#ifdef KAMP_BENCH_HAVE_OPENBLAS
    constexpr bool host_blas = std::is_same_v<memory, Kokkos::HostSpace>;
#else
    constexpr bool host_blas = false;
#endif
    const char* reference_name = host_blas ? "sgemm" : "fp32-vendor";
    const auto sgemm = [&] {
#ifdef KAMP_BENCH_HAVE_OPENBLAS
      if constexpr (host_blas) {
        cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, s.m, s.n, s.k, 1.0f,
                    a32.data(), int(a32.extent(1)), b32.data(), int(b32.extent(1)), 0.0f, c_ref.data(), s.n);
        return;
      }
#endif
      gemm(space, s.a, s.b, 1.0f, a32, b32, 0.0f, c_ref);
    };
    const auto run = [&](const std::string& what, const std::string& path, const auto& body, const auto& reference,
                         const char* reference_label) {
      const paired_timing t = time_against(repeat, body, reference);
      const double gflops = flop / t.seconds / 1e9;
      const std::string label = what + " [" + path + "]";
      std::printf("  %-15s %-40s %8.1f GFLOP/s  %5.2f x %s\n", s.name, label.c_str(), gflops, t.speed_ratio,
                  reference_label);
      out.doc()["results"].push_back({{"name", std::string("gemm ") + s.name + " " + what},
                                      {"kind", "gemm"},
                                      {"path", path},
                                      {"m", s.m},
                                      {"n", s.n},
                                      {"k", s.k},
                                      {"gflop_per_s", gflops},
                                      {"ratio_to_" + std::string(reference_label), t.speed_ratio}});
    };
    run(host_blas ? "OpenBLAS sgemm (reference)" : "fp32 vendor path (reference)",
        host_blas ? "openblas" : gemm_path_for<exec>(s.a, s.b, 1.0f, a32, b32, 0.0f, c_ref), sgemm, sgemm,
        reference_name);
    const auto portable = gemm_algorithm::portable;
    run(
        "kamp bf16 -> fp32", "portable", [&] { gemm(space, s.a, s.b, 1.0f, a16, b16, 0.0f, c, {}, portable); }, sgemm,
        reference_name);
    run(
        "kamp fp32", "portable", [&] { gemm(space, s.a, s.b, 1.0f, a32, b32, 0.0f, c, {}, portable); }, sgemm,
        reference_name);
    run(
        "kamp fp32", gemm_path_for<exec>(s.a, s.b, 1.0f, a32, b32, 0.0f, c),
        [&] { gemm(space, s.a, s.b, 1.0f, a32, b32, 0.0f, c); }, sgemm, reference_name);
    run(
        "kamp bf16 -> fp32", gemm_path_for<exec>(s.a, s.b, 1.0f, a16, b16, 0.0f, c),
        [&] { gemm(space, s.a, s.b, 1.0f, a16, b16, 0.0f, c); }, sgemm, reference_name);
    // What a Linear layer of the model runs: bf16 output rounded once, fp32 bias.
    const auto bias = random_matrix<float>("bias", 1, s.n);
    const Kokkos::View<const float*, memory> bias_row(bias.data(), s.n);
    const auto c16 = random_matrix<bf16>("c16", s.m, s.n);
    run(
        "kamp bf16 -> bf16 + bias", gemm_path_for<exec>(s.a, s.b, 1.0f, a16, b16, 0.0f, c16, bias_row),
        [&] { gemm(space, s.a, s.b, 1.0f, a16, b16, 0.0f, c16, bias_row); }, sgemm, reference_name);
    // amp_fp8's Linear: E4M3 operands with their scale_inv on the device, bf16 output + bias.
    const auto a8 = random_matrix<fp8_e4m3>("a8", ta ? s.k : s.m, ta ? s.m : s.k);
    const auto b8 = random_matrix<fp8_e4m3>("b8", tb ? s.n : s.k, tb ? s.k : s.n);
    Kokkos::View<float, memory> scale_inv("scale_inv");
    Kokkos::deep_copy(scale_inv, 0.5f);
    run(
        "kamp fp8 -> bf16 + bias", gemm_fp8_path_for<exec>(s.a, s.b, a8, b8, c16, bias_row).path,
        [&] { gemm_fp8(space, s.a, s.b, 1.0f, a8, scale_inv, b8, scale_inv, 0.0f, c16, bias_row); }, sgemm,
        reference_name);
#ifdef KAMP_ENABLE_DNNL
    if constexpr (std::is_same_v<memory, Kokkos::HostSpace>) {
      try {
        dnnl_matmul direct(s, a16.data(), b16.data(), c_ref.data());
        run(
            "oneDNN bf16 direct", "dnnl", [&] { direct(); }, sgemm, reference_name);
      } catch (const dnnl::error&) {
        std::printf("  %-15s oneDNN bf16 direct: no bf16 matmul on this CPU\n", s.name);
      }
    }
#endif
  }
  attention_gemms(out, repeat);
}

}  // namespace kamp::bench
