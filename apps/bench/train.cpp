#include "train.hpp"

#include <kamp/model/trainer.hpp>

#include <algorithm>
#include <cstdio>

namespace kamp::bench {

void training_steps(report& out, int steps) {
  const gpt_config config;  // the reference model
  const token_dataset data(default_corpus(), 0.1, config.context, "built-in corpus");
  train_options options;
  options.steps = steps + 3;
  std::printf("  training steps of the reference GPT (%d x %d tokens per step)\n", options.batch, config.context);
  for (const auto mode : {precision_mode::fp32, precision_mode::amp_bf16, precision_mode::amp_fp16,
                          precision_mode::pure_bf16}) {
    precision_policy policy;
    policy.mode = mode;
    trainer t(config, policy, options, data);
    for (int i = 0; i < 3; ++i) t.step();
    std::vector<double> rates;
    for (int i = 0; i < steps; ++i) {
      const auto r = t.step();
      rates.push_back(r.tokens / r.seconds);
    }
    std::sort(rates.begin(), rates.end());
    const double median = rates[rates.size() / 2];
    out.value(std::string("train_tokens_per_s_") + name(mode), median);
    std::printf("  %-44s %8.0f tokens/s\n", (std::string("train step ") + name(mode)).c_str(), median);
  }
}

}  // namespace kamp::bench
