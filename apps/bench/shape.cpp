#include "shape.hpp"

#include <kamp/model/diagnostics/memory_tracker.hpp>
#include <kamp/model/network/gpt_parameters.hpp>
#include <kamp/model/training/data.hpp>
#include <kamp/model/training/trainer.hpp>

#include <sys/resource.h>

#include <algorithm>
#include <cstdio>

namespace kamp::bench {

double model_flops_per_token(const gpt_config& config) {
  const double parameters = double(gpt_parameters(config).table.parameter_count()) -
                            double(config.padded_vocab() - config.vocab) * config.d_model;
  return 6 * parameters + 12.0 * config.layers * config.d_model * config.context;
}

token_dataset benchmark_data(const gpt_config& config) {
  const std::size_t bytes = std::max<std::size_t>(std::size_t(1) << 20, std::size_t(40) * (config.context + 1));
  return token_dataset(default_corpus(bytes), 0.1, config.context, "built-in corpus");
}

void shape_throughput(report& out, const gpt_config& config, int batch, int steps,
                      const std::vector<precision_mode>& modes, activation_recompute recompute) {
  const token_dataset data = benchmark_data(config);
  train_options options;
  options.batch = batch;
  options.steps = steps + 2;
  options.recompute = recompute;
  const double flops = model_flops_per_token(config);
  std::printf("  GPT %d layers, %d heads, d_model %d, context %d, vocab %d; batch %d; %.3g FLOPs per token\n",
              config.layers, config.heads, config.d_model, config.context, config.vocab, batch, flops);
  nlohmann::json& shape = out.doc()["shape"];
  shape["config"] = {{"vocab", config.vocab}, {"context", config.context},    {"layers", config.layers},
                     {"heads", config.heads}, {"d_model", config.d_model},    {"mlp", config.mlp},
                     {"batch", batch},        {"recompute", name(recompute)}, {"flops_per_token", flops}};
  for (const precision_mode mode : modes) {
    precision_policy policy;
    policy.mode = mode;
    const memory_tracker memory;
    trainer t(config, policy, options, data);
    for (int i = 0; i < 2; ++i) t.step();
    std::vector<double> rates;
    for (int i = 0; i < steps; ++i) {
      const auto r = t.step();
      rates.push_back(r.tokens / r.seconds);
    }
    std::sort(rates.begin(), rates.end());
    const double median = rates[rates.size() / 2];
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    nlohmann::json& m = shape["modes"][name(mode)];
    m["tokens_per_s"] = median;
    m["model_flop_per_s"] = median * flops;
    m["peak_allocated_bytes"] = memory.peak_total();
    m["process_peak_rss_bytes"] = double(usage.ru_maxrss) * 1024;  // this process so far: run one mode per process
    std::printf("  %-10s %9.0f tokens/s  %7.1f GFLOP/s  %8.1f MB allocated at peak\n", name(mode), median,
                median * flops / 1e9, memory.peak_total() / 1e6);
  }
}

}  // namespace kamp::bench
