#include "train.hpp"

#include "amp_kernels.hpp"
#include "roofline.hpp"
#include "step_profile.hpp"

#include <kamp/model/training/trainer.hpp>
#include <kamp/tools/launch_counter.hpp>

#include <algorithm>
#include <cstdio>

namespace kamp::bench {

namespace {

// Milliseconds per step by GEMM region and kernel label, the largest first, over `steps` more
// steps (kept apart from the timed ones: the callbacks cost a little), each beside its bound.
std::map<std::string, double> profile_steps(report& out, trainer& t, precision_mode mode, int steps,
                                            const roofline& limit, bool print) {
  std::vector<std::pair<double, std::string>> rows;
  std::map<std::string, double> ms;
  double total = 0, step_seconds = 0;
  {
    const step_profile profile;
    for (int i = 0; i < steps; ++i) step_seconds += t.step().seconds;
    for (const auto& [label, seconds] : profile.seconds()) {
      rows.emplace_back(1e3 * seconds / steps, label);
      ms[label] = 1e3 * seconds / steps;
      total += 1e3 * seconds / steps;
    }
  }
  std::sort(rows.rbegin(), rows.rend());
  const double step_ms = 1e3 * step_seconds / steps;
  if (print)
    std::printf(
        "    profile %s: %.1f ms per step, %.1f ms in Kokkos kernels and GEMM regions (bound: the roofline's)\n",
        name(mode), step_ms, total);
  auto& entry = out.doc()["profiles"][name(mode)];
  entry["step_ms"] = step_ms;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    entry["ms_per_step"][rows[i].second] = rows[i].first;
    const auto bound = limit.bound_ms.find(rows[i].second);
    if (print && i < 16) {
      if (bound != limit.bound_ms.end())
        std::printf("      %7.2f ms  %5.1f%%  bound %6.2f ms (%4.2f)  %s\n", rows[i].first,
                    100 * rows[i].first / step_ms, bound->second, bound->second / rows[i].first,
                    rows[i].second.c_str());
      else
        std::printf("      %7.2f ms  %5.1f%%  no bound reported   %s\n", rows[i].first, 100 * rows[i].first / step_ms,
                    rows[i].second.c_str());
    }
  }
  return ms;
}

// The roofline of one mode: the limit, the measured step, the fraction, and per label the time
// against its bound (JSON `roofline.<mode>`).
void report_roofline(report& out, precision_mode mode, const roofline& limit, const step_traffic& traffic,
                     double step_ms, const std::map<std::string, double>& ms, double triad_gb_per_s) {
  const std::string m = name(mode);
  const double fraction = limit.total_ms() / step_ms;
  std::printf(
      "  %-44s %6.1f ms (GEMMs %.1f at their vendor rates + kernels %.1f at %.1f GB/s); step %.1f ms: %.2f "
      "of the limit\n",
      ("roofline " + m).c_str(), limit.total_ms(), limit.gemm_ms, limit.kernel_ms, triad_gb_per_s, step_ms, fraction);
  for (const auto& missing : limit.unmeasured) std::printf("    (no bound measured for %s)\n", missing.c_str());
  nlohmann::json& r = out.doc()["roofline"][m];
  r["roofline_ms"] = limit.total_ms();
  r["gemm_bound_ms"] = limit.gemm_ms;
  r["kernel_bound_ms"] = limit.kernel_ms;
  r["step_ms"] = step_ms;
  r["fraction_of_roofline"] = fraction;
  r["triad_gb_per_s"] = triad_gb_per_s;
  r["gemms_per_step"] = traffic.gemms().size();
  for (const gemm_record& g : traffic.gemms())
    r["gemms"].push_back({{"m", g.m},
                          {"n", g.n},
                          {"k", g.k},
                          {"batch", g.batch},
                          {"types", std::string(name(g.a)) + "," + name(g.b) + "," + name(g.c)},
                          {"path", g.path}});
  for (const auto& [label, bound] : limit.bound_ms) {
    nlohmann::json& k = r["kernels"][label];
    k["bound_ms"] = bound;
    const auto bytes = traffic.bytes().find(label);
    if (bytes != traffic.bytes().end()) k["bytes"] = bytes->second;
    const auto t = ms.find(label);
    if (t != ms.end()) {
      k["ms"] = t->second;
      k["fraction_of_bound"] = bound / t->second;
    }
  }
  for (const auto& [label, t] : ms)
    if (limit.bound_ms.count(label) == 0) r["unbounded"][label] = t;
  out.value("fraction_of_roofline_" + m, fraction);
}

}  // namespace

void training_steps(report& out, int steps, bool profile) {
  const gpt_config config;  // the reference model
  const token_dataset data(default_corpus(), 0.1, config.context, "built-in corpus");
  train_options options;
  options.steps = steps + 3;
  std::printf("  training steps of the reference GPT (%d x %d tokens per step)\n", options.batch, config.context);
  // The bandwidth the kernels' bytes are bounded by, measured here alone (2^25 elements: above
  // any L3 of these machines).
  double triad_gb_per_s = 0;
  {
    const stream_triad triad(std::size_t(1) << 25);
    triad_gb_per_s = triad.bytes() / median_seconds(10, triad) / 1e9;
  }
  out.value("train_stream_triad_gb_per_s", triad_gb_per_s);
  for (const auto mode : precision_modes()) {
    precision_policy policy;
    policy.mode = mode;
    trainer t(config, policy, options, data);
    for (int i = 0; i < 3; ++i) t.step();
    // What one steady-state step asks of the device; its report is read outside the count.
    step_traffic traffic;
    const launch_tally step = count_launches([&] {
      const traffic_scope listening(traffic);
      t.advance();
    });
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
    std::vector<double> rates, seconds;
    for (int i = 0; i < steps; ++i) {
      const auto r = t.step();
      rates.push_back(r.tokens / r.seconds);
      seconds.push_back(r.seconds);
    }
    std::sort(rates.begin(), rates.end());
    std::sort(seconds.begin(), seconds.end());
    const double median = rates[rates.size() / 2];
    out.value(std::string("train_tokens_per_s_") + name(mode), median);
    std::printf("  %-44s %8.0f tokens/s\n", (std::string("train step ") + name(mode)).c_str(), median);
    const roofline limit = step_roofline(traffic, triad_gb_per_s, 5);
    const auto ms = profile_steps(out, t, mode, steps, limit, profile);
    report_roofline(out, mode, limit, traffic, 1e3 * seconds[seconds.size() / 2], ms, triad_gb_per_s);
  }
}

}  // namespace kamp::bench
