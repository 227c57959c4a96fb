#include "mlp.hpp"

#include <kamp.h>
#include <kamp/model/training/session.hpp>
#include <kamp/numeric/counter_random.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace kamp::bench {

namespace {

struct mlp_shape {
  const char* key;  // "" for the large one: mlp_samples_per_s_<mode>; "small_": mlp_small_...
  std::vector<int> sizes;
  int batch;
};

std::string sizes_text(const std::vector<int>& sizes, const char* separator) {
  std::string s;
  for (const int v : sizes) s += (s.empty() ? "" : separator) + std::to_string(v);
  return s;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

std::string config_text(const mlp_shape& shape, const std::string& mode) {
  return "model: {type: mlp, parameters: {layer_sizes: [" + sizes_text(shape.sizes, ", ") +
         "], activation: gelu}}\noptimizer: {type: adamw, parameters: {learning_rate: 1e-3}}\nprecision: " + mode;
}

template <class Layout>
using samples = Kokkos::View<float**, Layout, Kokkos::DefaultExecutionSpace::memory_space>;

// A batch of inputs and labels (labels sin(2x) of the first inputs).
template <class Layout>
std::pair<samples<Layout>, samples<Layout>> batch_of(const mlp_shape& shape) {
  const int in = shape.sizes.front(), out = shape.sizes.back();
  samples<Layout> x("x", shape.batch, in), y("y", shape.batch, out);
  Kokkos::parallel_for(
      "bench::mlp::data", shape.batch, KOKKOS_LAMBDA(int i) {
        for (int j = 0; j < in; ++j)
          x(i, j) = float(counter_random(1, std::uint64_t(i) * in + j) >> 8) * 0x1p-23f - 1.0f;
        for (int j = 0; j < out; ++j) y(i, j) = j < in ? sinf(2.0f * x(i, j)) : 0.0f;
      });
  return {x, y};
}

template <class Layout>
double kamp_samples_per_s(const mlp_shape& shape, const std::string& mode, int steps) {
  session<> s(session_config::parse(config_text(shape, mode)));
  const auto [x, y] = batch_of<Layout>(shape);
  for (int k = 0; k < 3; ++k) s.train_step(x, y);
  Kokkos::fence();
  Kokkos::Timer timer;
  for (int k = 0; k < steps; ++k) s.train_step(x, y);
  Kokkos::fence();
  return double(shape.batch) * steps / timer.seconds();
}

/// The C API's time per step over the C++ session's on the same arrays, adjacent blocks of
/// `steps` steps alternating 4 x `rounds` times (the median of the ratios): what kamp.h costs.
double c_api_step_ratio(const mlp_shape& shape, const std::string& mode, int steps, int rounds) {
  session<> direct(session_config::parse(config_text(shape, mode)));
  kamp_session* handle = nullptr;
  if (kamp_session_create_from_text(&handle, config_text(shape, mode).c_str(), nullptr) != KAMP_OK)
    throw std::runtime_error(std::string("kamp-bench: ") + kamp_last_error());
  const auto data = batch_of<Kokkos::LayoutRight>(shape);  // not a structured binding: lambdas use it
  const auto &x = data.first, &y = data.second;
  const std::int64_t x_shape[] = {shape.batch, shape.sizes.front()}, y_shape[] = {shape.batch, shape.sizes.back()};
  const kamp_device device =
      Kokkos::SpaceAccessibility<Kokkos::HostSpace, samples<Kokkos::LayoutRight>::memory_space>::accessible ? KAMP_HOST
#if defined(KOKKOS_ENABLE_HIP)
                                                                                                            : KAMP_HIP;
#else
                                                                                                            : KAMP_CUDA;
#endif
  const kamp_tensor tx{x.data(), 2, x_shape, nullptr, KAMP_FP32, device, 1};
  const kamp_tensor ty{y.data(), 2, y_shape, nullptr, KAMP_FP32, device, 1};
  const auto c_block = [&] {
    for (int k = 0; k < steps; ++k)
      if (kamp_session_train_step(handle, &tx, &ty) != KAMP_OK)
        throw std::runtime_error(std::string("kamp-bench: ") + kamp_last_error());
    double loss;
    kamp_session_loss(handle, &loss);  // waits for the C API session's device
  };
  const auto cpp_block = [&] {
    for (int k = 0; k < steps; ++k) direct.train_step(x, y);
    Kokkos::fence();
  };
  // ABBA: each pair in the other order than the one before, so that neither path always runs
  // second (after the other's fence).
  std::vector<double> ratios;
  const auto timed = [](const auto& block) {
    Kokkos::Timer timer;
    block();
    return timer.seconds();
  };
  for (int r = 0; r <= 4 * rounds; ++r) {
    double cpp, c;
    if (r % 2) {
      cpp = timed(cpp_block);
      c = timed(c_block);
    } else {
      c = timed(c_block);
      cpp = timed(cpp_block);
    }
    if (r > 0) ratios.push_back(c / cpp);  // the first pair warms both up
  }
  kamp_session_destroy(&handle);
  return median(ratios);
}

/// PyTorch's samples/s for one mode, at the better of its two GOMP settings; nothing where
/// Debian's python3 cannot run it (no python3-torch).
std::optional<double> pytorch_samples_per_s(const std::string& scripts, const mlp_shape& shape, const std::string& mode,
                                            int steps) {
  std::optional<double> best;
  for (const char* env : {"", "GOMP_SPINCOUNT=0 "}) {
    const std::string command = std::string(env) + "/usr/bin/python3 '" + scripts + "/pytorch_mlp.py' --mode " + mode +
                                " --sizes " + sizes_text(shape.sizes, ",") + " --batch " + std::to_string(shape.batch) +
                                " --steps " + std::to_string(steps) + " --repeat 1 --threads " +
                                std::to_string(Kokkos::DefaultExecutionSpace().concurrency()) + " 2>/dev/null";
    FILE* pipe = popen(command.c_str(), "r");
    if (pipe == nullptr) return best;
    std::string text;
    char buffer[512];
    while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) text += buffer;
    if (pclose(pipe) != 0) return best;
    try {
      const double v = nlohmann::json::parse(text).at("samples_per_s").get<double>();
      best = best ? std::max(*best, v) : v;
    } catch (const std::exception&) {
      return best;
    }
  }
  return best;
}

bool cpu_has_bf16_dot_products() {
  std::ifstream info("/proc/cpuinfo");
  std::string word;
  while (info >> word)
    if (word == "avx512_bf16" || word == "amx_bf16") return true;
  return false;
}

}  // namespace

void mlp_sessions(report& out, int steps, int rounds, const std::string& scripts) {
  const std::vector<mlp_shape> shapes{{"", {4, 512, 512, 512, 4}, 4096}, {"small_", {4, 64, 64, 4}, 256}};
  const std::vector<std::string> modes{"fp32", "amp_bf16", "amp_fp16", "pure_bf16"};
  // PyTorch 1.13 has no fp16 autocast on CPUs, and its bf16 paths crawl without bf16 dot
  // products: those modes are compared with PyTorch fp32 (the note says which).
  const bool bf16 = cpu_has_bf16_dot_products();
  const std::map<std::string, std::string> reference{{"fp32", "fp32"},
                                                     {"amp_bf16", bf16 ? "bf16" : "fp32"},
                                                     {"amp_fp16", "fp32"},
                                                     {"pure_bf16", bf16 ? "pure_bf16" : "fp32"}};
  for (const mlp_shape& shape : shapes) {
    std::map<std::string, std::vector<double>> kamp_runs, left_runs, torch_runs;
    const int shape_steps = shape.batch >= 4096 ? steps : steps * 10;
    for (int r = 0; r < rounds; ++r) {
      for (const std::string& mode : modes) {
        kamp_runs[mode].push_back(kamp_samples_per_s<Kokkos::LayoutRight>(shape, mode, shape_steps));
        if (mode == "fp32" || mode == "amp_bf16")
          left_runs[mode].push_back(kamp_samples_per_s<Kokkos::LayoutLeft>(shape, mode, shape_steps));
      }
      for (const char* m : {"fp32", "bf16", "pure_bf16"}) {
        if (!bf16 && std::string(m) != "fp32") continue;
        if (const auto v = pytorch_samples_per_s(scripts, shape, m, shape_steps)) torch_runs[m].push_back(*v);
      }
    }
    const std::string prefix = std::string("mlp_") + shape.key;
    std::printf("  MLP %s, batch %d (median of %d rounds, kamp and PyTorch alternating)\n",
                sizes_text(shape.sizes, "-").c_str(), shape.batch, rounds);
    for (const std::string& mode : modes) {
      const double kamp = median(kamp_runs[mode]);
      out.value(prefix + "samples_per_s_" + mode, kamp);
      const std::string& ref = reference.at(mode);
      std::string line = "    " + mode + ": " + std::to_string(int(kamp)) + " samples/s";
      if (!torch_runs[ref].empty()) {
        const double torch = median(torch_runs[ref]);
        out.value(prefix + "pytorch_samples_per_s_" + mode, torch);
        out.value(prefix + "pytorch_reference_" + mode, ref);
        out.value(prefix + "ratio_to_pytorch_" + mode, kamp / torch);
        line += ", PyTorch " + ref + " " + std::to_string(int(torch)) + ": " +
                std::to_string(kamp / torch).substr(0, 4) + "x";
      } else {
        line += " (no PyTorch: install python3-torch)";
      }
      if (!left_runs[mode].empty()) {
        const double ratio = median(left_runs[mode]) / kamp;
        out.value(prefix + "layout_left_ratio_" + mode, ratio);
        line += ", LayoutLeft inputs " + std::to_string(ratio).substr(0, 4) + "x LayoutRight";
        const double c_api = c_api_step_ratio(shape, mode, shape_steps, rounds);
        out.value(prefix + "c_api_step_time_ratio_" + mode, c_api);
        line += ", C API step time " + std::to_string(c_api).substr(0, 5) + "x the C++ session's";
      }
      std::printf("%s\n", line.c_str());
    }
  }
}

}  // namespace kamp::bench
