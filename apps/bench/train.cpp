#include "train.hpp"

#include "step_profile.hpp"

#include <kamp/model/trainer.hpp>
#include <kamp/tools/launch_counter.hpp>

#include <algorithm>
#include <cstdio>

namespace kamp::bench {

namespace {

// Milliseconds per step by GEMM region and kernel label, the largest first, over `steps` more
// steps (kept apart from the timed ones: the callbacks cost a little).
void profile_steps(report& out, trainer& t, precision_mode mode, int steps) {
  std::vector<std::pair<double, std::string>> rows;
  double total = 0, step_seconds = 0;
  {
    const step_profile profile;
    for (int i = 0; i < steps; ++i) step_seconds += t.step().seconds;
    for (const auto& [label, seconds] : profile.seconds()) {
      rows.emplace_back(1e3 * seconds / steps, label);
      total += 1e3 * seconds / steps;
    }
  }
  std::sort(rows.rbegin(), rows.rend());
  const double step_ms = 1e3 * step_seconds / steps;
  std::printf("    profile %s: %.1f ms per step, %.1f ms in Kokkos kernels and GEMM regions\n", name(mode), step_ms,
              total);
  auto& entry = out.doc()["profiles"][name(mode)];
  entry["step_ms"] = step_ms;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    entry["ms_per_step"][rows[i].second] = rows[i].first;
    if (i < 14) std::printf("      %7.2f ms  %5.1f%%  %s\n", rows[i].first, 100 * rows[i].first / step_ms, rows[i].second.c_str());
  }
}

}  // namespace

void training_steps(report& out, int steps, bool profile) {
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
    // What one steady-state step asks of the device; its report is read outside the count.
    const launch_tally step = count_launches([&] { t.advance(); });
    t.reports();
    const std::string suffix = std::string("_") + name(mode);
    out.value("train_step_launches" + suffix, step.launches);
    out.value("train_step_fences" + suffix, step.fences);
    out.value("train_step_host_fences" + suffix, step.host_fences);
    out.value("train_step_copies" + suffix, step.copies);
    out.value("train_step_gemms" + suffix, double(step.gemms.size()));
    std::printf("  %-44s %5d launches, %d fences (+%d host-only), %d copies, %zu GEMMs\n",
                ("one step " + std::string(name(mode))).c_str(), step.launches, step.fences, step.host_fences,
                step.copies, step.gemms.size());
    std::vector<double> rates;
    for (int i = 0; i < steps; ++i) {
      const auto r = t.step();
      rates.push_back(r.tokens / r.seconds);
    }
    std::sort(rates.begin(), rates.end());
    const double median = rates[rates.size() / 2];
    out.value(std::string("train_tokens_per_s_") + name(mode), median);
    std::printf("  %-44s %8.0f tokens/s\n", (std::string("train step ") + name(mode)).c_str(), median);
    if (profile) profile_steps(out, t, mode, steps);
  }
}

}  // namespace kamp::bench
