// The training session for science codes: an MLP from a config (kamp's keys and TorchFort's
// YAML), one call per step with views of any layout and type, checked against an fp64 MLP
// written here on the host, and against the session's own claims (no host wait in a step,
// skipped steps with their cause, checkpoints that resume bit for bit, bad input refused with
// the session unchanged).
#include <kamp/kamp.hpp>
#include <kamp/model/network/mlp.hpp>
#include <kamp/model/training/session.hpp>
#include <kamp/tools/launch_counter.hpp>

#include "../support/catch.hpp"

#include "../support/scratch_dir.hpp"

#include <cmath>
#include <fstream>
#include <random>
#include <string>
#include <vector>

namespace {

using space = Kokkos::DefaultExecutionSpace;
using memory = space::memory_space;

std::string config_text(const std::string& model, const std::string& optimizer, const std::string& extra = "") {
  return "model:\n  type: mlp\n  parameters:\n" + model + "loss:\n  type: MSE\noptimizer:\n" + optimizer + extra;
}

// A smooth target a surrogate learns: 4 inputs in [-1, 1], 2 outputs.
void sample(std::uint32_t seed, int n, std::vector<double>& x, std::vector<double>& y) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  x.resize(std::size_t(n) * 4);
  y.resize(std::size_t(n) * 2);
  for (int i = 0; i < n; ++i) {
    double* p = &x[std::size_t(i) * 4];
    for (int d = 0; d < 4; ++d) p[d] = u(rng);
    y[std::size_t(i) * 2] = std::sin(2.0 * p[0]) * std::cos(p[1]) + 0.5 * p[2];
    y[std::size_t(i) * 2 + 1] = p[3] * p[0] - 0.3 * p[1] * p[1];
  }
}

template <class T, class Layout = Kokkos::LayoutRight>
Kokkos::View<T**, Layout, memory> device_matrix(const std::vector<double>& values, int rows, int cols) {
  Kokkos::View<T**, Layout, memory> v("m", rows, cols);
  const auto h = Kokkos::create_mirror_view(v);
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j) {
      const double value = values[std::size_t(i) * cols + j];
      if constexpr (std::is_same_v<T, double>)
        h(i, j) = value;
      else
        kamp::store_nearest(&h(i, j), float(value));
    }
  Kokkos::deep_copy(v, h);
  return v;
}

double loss_of(const kamp::session<>& s) {
  double l;
  Kokkos::deep_copy(l, s.loss());
  return l;
}

// ---- an independent fp64 MLP ------------------------------------------------------------------

double act(kamp::activation_function a, double v) {
  switch (a) {
    case kamp::activation_function::relu:
      return v > 0 ? v : 0;
    case kamp::activation_function::gelu:
      return 0.5 * v * (1 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
    case kamp::activation_function::tanh:
      return std::tanh(v);
    case kamp::activation_function::silu:
      return v / (1 + std::exp(-v));
    default:
      return v;
  }
}
double slope(kamp::activation_function a, double v) {
  const double h = 1e-6;  // central difference of the exact function: an independent derivative
  if (a == kamp::activation_function::relu) return v > 0 ? 1 : 0;
  return (act(a, v + h) - act(a, v - h)) / (2 * h);
}

// Gradients of the mean squared error of the MLP `config` with weights `w` (laid out by
// `table`) on inputs x (n x in) and labels y (n x out), all in fp64.
std::vector<double> reference_gradients(const kamp::mlp_config& config, const kamp::mlp_parameters& p,
                                        const std::vector<float>& w, const std::vector<double>& x,
                                        const std::vector<double>& labels, int n) {
  const auto at = [&](std::size_t tensor, std::size_t k) { return double(w[p.table[tensor].offset + k]); };
  struct saved {
    std::vector<double> in, z, u, xhat, rstd;
  };
  std::vector<saved> s(p.layers.size());
  std::vector<double> a = x;
  for (std::size_t l = 0; l < p.layers.size(); ++l) {
    const auto& L = p.layers[l];
    s[l].in = a;
    std::vector<double> z(std::size_t(n) * L.out);
    for (int r = 0; r < n; ++r)
      for (int o = 0; o < L.out; ++o) {
        double v = at(L.bias, o);
        for (int i = 0; i < L.in; ++i) v += a[std::size_t(r) * L.in + i] * at(L.weight, std::size_t(o) * L.in + i);
        z[std::size_t(r) * L.out + o] = v;
      }
    s[l].z = z;
    if (!L.hidden) {
      a = z;
      continue;
    }
    std::vector<double> u = z;
    if (config.layernorm) {
      s[l].xhat.resize(z.size());
      s[l].rstd.resize(n);
      for (int r = 0; r < n; ++r) {
        double mu = 0, var = 0;
        for (int o = 0; o < L.out; ++o) mu += z[std::size_t(r) * L.out + o] / L.out;
        for (int o = 0; o < L.out; ++o) var += std::pow(z[std::size_t(r) * L.out + o] - mu, 2) / L.out;
        const double rs = 1 / std::sqrt(var + 1e-5);
        s[l].rstd[r] = rs;
        for (int o = 0; o < L.out; ++o) {
          const double xh = (z[std::size_t(r) * L.out + o] - mu) * rs;
          s[l].xhat[std::size_t(r) * L.out + o] = xh;
          u[std::size_t(r) * L.out + o] = xh * at(L.norm_weight, o) + at(L.norm_bias, o);
        }
      }
    }
    s[l].u = u;
    std::vector<double> h(u.size());
    for (std::size_t k = 0; k < u.size(); ++k) h[k] = act(config.hidden_activation, u[k]) + (L.residual ? a[k] : 0.0);
    a = h;
  }
  const int out = p.layers.back().out;
  std::vector<double> g(a.size());
  for (std::size_t k = 0; k < a.size(); ++k) g[k] = 2 * (a[k] - labels[k]) / (double(n) * out);
  std::vector<double> grads(p.table.flat_size(), 0.0);
  for (std::size_t l = p.layers.size(); l-- > 0;) {
    const auto& L = p.layers[l];
    std::vector<double> dz = g;
    if (L.hidden) {
      std::vector<double> du(g.size());
      for (std::size_t k = 0; k < g.size(); ++k) du[k] = g[k] * slope(config.hidden_activation, s[l].u[k]);
      dz = du;
      if (config.layernorm) {
        for (int r = 0; r < n; ++r) {
          double m1 = 0, m2 = 0;
          for (int o = 0; o < L.out; ++o) {
            const std::size_t k = std::size_t(r) * L.out + o;
            const double d = du[k] * at(L.norm_weight, o);
            m1 += d / L.out;
            m2 += d * s[l].xhat[k] / L.out;
            grads[p.table[L.norm_weight].offset + o] += du[k] * s[l].xhat[k];
            grads[p.table[L.norm_bias].offset + o] += du[k];
          }
          for (int o = 0; o < L.out; ++o) {
            const std::size_t k = std::size_t(r) * L.out + o;
            dz[k] = s[l].rstd[r] * (du[k] * at(L.norm_weight, o) - m1 - s[l].xhat[k] * m2);
          }
        }
      }
    }
    std::vector<double> dx(std::size_t(n) * L.in, 0.0);
    for (int r = 0; r < n; ++r)
      for (int o = 0; o < L.out; ++o) {
        const double d = dz[std::size_t(r) * L.out + o];
        grads[p.table[L.bias].offset + o] += d;
        for (int i = 0; i < L.in; ++i) {
          grads[p.table[L.weight].offset + std::size_t(o) * L.in + i] += d * s[l].in[std::size_t(r) * L.in + i];
          dx[std::size_t(r) * L.in + i] += d * at(L.weight, std::size_t(o) * L.in + i);
        }
      }
    if (L.residual)
      for (std::size_t k = 0; k < dx.size(); ++k) dx[k] += g[k];
    g = dx;
  }
  return grads;
}

}  // namespace

TEST_CASE("session: one SGD step of every activation, LayerNorm and residual MLP matches an fp64 MLP", "[session]") {
  const int n = 24;
  std::vector<double> x, y;
  sample(3, n, x, y);
  for (const char* a : {"relu", "gelu", "tanh", "silu"})
    for (const bool norm : {false, true})
      for (const bool residual : {false, true}) {
        INFO("activation " << a << ", layernorm " << norm << ", residual " << residual);
        const std::string model = std::string("    layer_sizes: [4, 16, 16, 2]\n    activation: ") + a +
                                  "\n    layernorm: " + (norm ? "true" : "false") +
                                  "\n    residual: " + (residual ? "true" : "false") + "\n";
        const auto config =
            kamp::session_config::parse(config_text(model, "  type: sgd\n  parameters:\n    learning_rate: 0.1\n"));
        kamp::session<> s(config);
        const std::vector<float> before = s.weights();
        s.train_step(device_matrix<float>(x, n, 4), device_matrix<float>(y, n, 2));
        const std::vector<float> after = s.weights();
        const kamp::mlp_parameters p(config.model);
        const auto g = reference_gradients(config.model, p, before, x, y, n);
        double worst = 0, largest = 0;
        for (std::size_t i = 0; i < g.size(); ++i) {
          largest = std::max(largest, std::fabs(g[i]));
          worst = std::max(worst, std::fabs((double(before[i]) - after[i]) / 0.1 - g[i]));
        }
        CHECK(largest > 1e-3);
        CHECK(worst < 2e-4 * largest + 5e-6);
      }
}

TEST_CASE("session: a TorchFort mlp YAML config trains through the session API", "[session]") {
  // A TorchFort user's file, unchanged: its general block, mlp model, MSE loss, adam, cosine schedule.
  const std::string torchfort = R"(general:
  report_frequency: 100
  enable_wandb_hook: 0
  verbose: 1

model:
  type: mlp
  parameters:
    dropout: 0.0
    layer_sizes: [4, 64, 64, 2]

loss:
  type: MSE

optimizer:
  type: adam
  parameters:
    learning_rate: 3e-3
    beta1: 0.9
    beta2: 0.999
    weight_decay: 0
    eps: 1e-8
    amsgrad: 0

lr_scheduler:
  type: cosine_annealing
  parameters:
    T_max: 400
)";
  const kamp::test::scratch_dir dir("session_torchfort");
  const std::string path = (dir.path / "torchfort.yaml").string();
  {
    std::ofstream f(path);
    f << torchfort;
  }
  auto s = kamp::session<>::from_file(path);
  CHECK(s.config().model.hidden_activation == kamp::activation_function::relu);
  std::vector<double> x, y;
  double first = 0, last = 0;
  for (int step = 0; step < 400; ++step) {
    sample(100 + step, 64, x, y);
    s.train_step(device_matrix<float>(x, 64, 4), device_matrix<float>(y, 64, 2));
    if (step == 0) first = loss_of(s);
  }
  sample(99999, 256, x, y);
  Kokkos::View<double**, Kokkos::LayoutRight, memory> out("out", 256, 2);
  s.predict(device_matrix<double>(x, 256, 4), out);
  const auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), out);
  for (int i = 0; i < 256; ++i)
    for (int j = 0; j < 2; ++j) last += std::pow(h(i, j) - y[std::size_t(i) * 2 + j], 2) / 512;
  INFO("first loss " << first << ", held-out mse after 400 steps " << last);
  CHECK(last < first / 10);
  const auto r = s.report();
  CHECK(r.train_steps == 400);
  CHECK(r.optimizer_steps == 400);
  CHECK(r.skipped_steps == 0);
}

TEST_CASE("session: every precision mode trains the surrogate, with no host wait in a step", "[session]") {
  std::vector<double> x, y;
  double fp32_error = 0;
  for (const char* mode : {"fp32", "amp_bf16", "amp_fp16", "pure_bf16"}) {
    INFO("precision " << mode);
    const auto config = kamp::session_config::parse(
        config_text("    layer_sizes: [4, 64, 64, 2]\n    activation: gelu\n",
                    "  type: adamw\n  parameters:\n    learning_rate: 3e-3\n    weight_decay: 0\n",
                    std::string("precision: ") + mode + "\n"));
    kamp::session<> s(config);
    for (int step = 0; step < 300; ++step) {
      sample(200 + step, 128, x, y);
      const auto in = device_matrix<float>(x, 128, 4);
      const auto labels = device_matrix<float>(y, 128, 2);
      if (step == 299) {
        const auto tally = kamp::count_launches([&] { s.train_step(in, labels); });
        CHECK(tally.fences == 0);
        CHECK(tally.copies == 0);
        CHECK(tally.launches > 0);
      } else {
        s.train_step(in, labels);
      }
    }
    sample(4242, 512, x, y);
    Kokkos::View<float**, Kokkos::LayoutLeft, memory> out("out", 512, 2);
    s.predict(device_matrix<float>(x, 512, 4), out);
    const auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), out);
    double error = 0;
    for (int i = 0; i < 512; ++i)
      for (int j = 0; j < 2; ++j) error += std::pow(h(i, j) - y[std::size_t(i) * 2 + j], 2) / 1024;
    if (std::string(mode) == "fp32") fp32_error = error;
    INFO("held-out mse " << error << " (fp32 " << fp32_error << ")");
    CHECK(error < 0.02);
    CHECK(error < 4 * fp32_error);
    CHECK(s.report().skipped_steps <= (std::string(mode) == "amp_fp16" ? 20 : 0));
  }
}

TEST_CASE("session: LayoutLeft, strided and fp64 inputs train exactly as LayoutRight fp32", "[session][layout]") {
  const auto config = kamp::session_config::parse(
      config_text("    layer_sizes: [4, 32, 2]\n", "  type: adamw\n  parameters:\n    learning_rate: 1e-2\n"));
  const int n = 50;
  std::vector<double> x, y;
  sample(7, n, x, y);
  // fp32-representable values, so fp64 inputs convert exactly.
  for (auto& v : x) v = double(float(v));
  for (auto& v : y) v = double(float(v));
  const auto train = [&](const auto& in, const auto& labels) {
    kamp::session<> s(config);
    for (int step = 0; step < 5; ++step) s.train_step(in, labels);
    return s.weights();
  };
  const auto want = train(device_matrix<float>(x, n, 4), device_matrix<float>(y, n, 2));
  CHECK(train(device_matrix<float, Kokkos::LayoutLeft>(x, n, 4), device_matrix<float, Kokkos::LayoutLeft>(y, n, 2)) ==
        want);
  CHECK(train(device_matrix<double>(x, n, 4), device_matrix<double>(y, n, 2)) == want);
  // Columns 1..4 of a wider (n, 6) array: a strided view, read where it lies.
  std::vector<double> wide(std::size_t(n) * 6, 99.0);
  for (int i = 0; i < n; ++i)
    for (int d = 0; d < 4; ++d) wide[std::size_t(i) * 6 + 1 + d] = x[std::size_t(i) * 4 + d];
  const auto w = device_matrix<float>(wide, n, 6);
  CHECK(train(Kokkos::subview(w, Kokkos::ALL, std::make_pair(1, 5)), device_matrix<float>(y, n, 2)) == want);

  // The same through kamp::as_tensor (the path of the C API and Fortran module): LayoutRight,
  // LayoutLeft, the strided subview, and a rank-3 LayoutLeft array whose two batch dimensions
  // (10, 5) do not merge, sample (i, j) being row 5 i + j.
  const auto described = [&](const auto& in, const auto& labels, int batch_dims) {
    kamp::session<> s(config);
    for (int step = 0; step < 5; ++step) s.train_step(kamp::as_tensor(in, batch_dims), kamp::as_tensor(labels, 1));
    return s.weights();
  };
  CHECK(described(device_matrix<float>(x, n, 4), device_matrix<float>(y, n, 2), 1) == want);
  CHECK(described(device_matrix<float, Kokkos::LayoutLeft>(x, n, 4), device_matrix<float, Kokkos::LayoutLeft>(y, n, 2),
                  1) == want);
  CHECK(described(Kokkos::subview(w, Kokkos::ALL, std::make_pair(1, 5)), device_matrix<float>(y, n, 2), 1) == want);
  Kokkos::View<double***, Kokkos::LayoutLeft> cube("cube", 10, 5, 4);
  const auto h = Kokkos::create_mirror_view(cube);
  for (int i = 0; i < 10; ++i)
    for (int j = 0; j < 5; ++j)
      for (int d = 0; d < 4; ++d) h(i, j, d) = x[std::size_t(i * 5 + j) * 4 + d];
  Kokkos::deep_copy(cube, h);
  CHECK(described(cube, device_matrix<float>(y, n, 2), 2) == want);
}

TEST_CASE("session: bad input is refused by name and leaves the session unchanged", "[session]") {
  const auto config = kamp::session_config::parse(
      config_text("    layer_sizes: [4, 8, 2]\n", "  type: adamw\n  parameters:\n    learning_rate: 1e-2\n"));
  kamp::session<> s(config);
  const auto before = s.weights();
  std::vector<double> x, y;
  sample(1, 10, x, y);
  const auto in = device_matrix<float>(x, 10, 4);
  const auto labels = device_matrix<float>(y, 10, 2);
  Kokkos::View<float**, memory> wrong("wrong", 10, 3), short_labels("short_labels", 9, 2);
  CHECK_THROWS_WITH(s.train_step(wrong, labels), kamp::test::contains("'wrong' has 3 columns"));
  CHECK_THROWS_WITH(s.train_step(in, short_labels), kamp::test::contains("inputs have 10 rows but labels 9"));
  CHECK(s.weights() == before);
  CHECK(s.report().train_steps == 0);

  // NaN inputs: the step runs, the optimizer skips itself, and the cause is named.
  auto nan_x = x;
  nan_x[5] = std::nan("");
  s.train_step(device_matrix<float>(nan_x, 10, 4), labels);
  const auto r = s.report();
  CHECK(r.skipped_steps == 1);
  CHECK(r.optimizer_steps == 0);
  CHECK(r.last_cause == kamp::skip_cause::non_finite_inputs);
  CHECK(s.weights() == before);
  auto inf_y = y;
  inf_y[0] = INFINITY;
  s.train_step(in, device_matrix<float>(inf_y, 10, 2));
  CHECK(s.report().last_cause == kamp::skip_cause::non_finite_labels);
  CHECK(s.weights() == before);
  s.train_step(in, labels);
  CHECK(s.report().optimizer_steps == 1);
  CHECK(s.weights() != before);

  // Config errors name the key, the line and what is accepted.
  CHECK_THROWS_WITH(
      kamp::session_config::parse(config_text("    layer_sizes: [4, 2]\n    widht: 3\n", "  type: adam\n")),
      kamp::test::contains("config:5: unknown key 'model.parameters.widht'"));
  CHECK_THROWS_WITH(
      kamp::session_config::parse(config_text("    layer_sizes: [4, 2]\n    dropout: 0.1\n", "  type: adam\n")),
      kamp::test::contains("dropout must be 0"));
  CHECK_THROWS_WITH(kamp::session_config::parse(config_text("    layer_sizes: [4, 2]\n",
                                                            "  type: adam\n  parameters:\n    weight_decay: 0.01\n")),
                    kamp::test::contains("use type: adamw"));
  CHECK_THROWS_WITH(kamp::session_config::parse(config_text("    layer_sizes: [4]\n", "  type: adam\n")),
                    kamp::test::contains("at least the input and output sizes"));
  CHECK_THROWS_WITH(kamp::session_config::parse("model: {type: torchscript}"),
                    kamp::test::contains("TorchScript models are not read"));
  CHECK_THROWS_WITH(kamp::session_config::parse("{\"model\": {\"type\": \"mlp\", \"parameters\": {\"layer_sizes\": "
                                                "[4, 2]}}, \"precision\": \"amp_fp8\"}"),
                    kamp::test::contains("a session takes fp32, amp_bf16, amp_fp16 or pure_bf16"));
  CHECK_THROWS_WITH(kamp::session_config::parse("model: [unclosed"), kamp::test::contains("not valid YAML or JSON"));
}

TEST_CASE("session: a checkpoint resumes bit for bit, reads by layer name and refuses another network", "[session]") {
  const kamp::test::scratch_dir dir("session_checkpoint");
  for (const char* mode : {"fp32", "amp_bf16", "amp_fp16", "pure_bf16"}) {
    INFO("precision " << mode);
    const auto config = kamp::session_config::parse(config_text(
        "    layer_sizes: [4, 16, 2]\n    layernorm: true\n",
        "  type: adamw\n  parameters:\n    learning_rate: 1e-2\n  general:\n    grad_accumulation_steps: 2\n",
        std::string("precision: ") + mode + "\n"));
    std::vector<double> x, y;
    const auto step = [&](kamp::session<>& s, int k) {
      sample(500 + k, 32, x, y);
      s.train_step(device_matrix<float>(x, 32, 4), device_matrix<float>(y, 32, 2));
    };
    kamp::session<> a(config);
    for (int k = 0; k < 5; ++k) step(a, k);  // ends mid-accumulation
    const std::string path = (dir.path / (std::string(mode) + ".h5")).string();
    a.save(path);
    for (int k = 5; k < 12; ++k) step(a, k);
    kamp::session<> b(config);
    b.load(path);
    CHECK(b.report().train_steps == 5);
    for (int k = 5; k < 12; ++k) step(b, k);
    CHECK(b.weights() == a.weights());
    CHECK(b.report().optimizer_steps == a.report().optimizer_steps);
  }
  // Another network's file is refused, and the session keeps its weights.
  const auto other = kamp::session_config::parse(config_text("    layer_sizes: [4, 8, 2]\n", "  type: adamw\n"));
  kamp::session<> c(other);
  const auto before = c.weights();
  CHECK_THROWS_WITH(c.load((dir.path / "fp32.h5").string()), kamp::test::contains("other layer sizes"));
  CHECK_THROWS_WITH(c.load((dir.path / "missing.h5").string()), kamp::test::contains("missing.h5"));
  CHECK(c.weights() == before);
  // Saves follow the output rule: a directory is refused by name, nothing is written.
  CHECK_THROWS_WITH(c.save(dir.path.string()), kamp::test::contains("session checkpoint"));
}
