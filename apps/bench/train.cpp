#include "train.hpp"

#include "amp_kernels.hpp"
#include "roofline.hpp"
#include "shape.hpp"
#include "step_profile.hpp"

#include <kamp/model/training/trainer.hpp>
#include <kamp/tools/launch_counter.hpp>

#include <algorithm>
#include <cstdio>

namespace kamp::bench {

namespace {

std::string strides_of(const gemm_record& g) {
  const auto operand = [&](const char* name, std::int64_t ld, std::int64_t stride, std::int64_t inner_stride) {
    std::string s = std::string(name) + " ld " + std::to_string(ld);
    if (g.batch > 1) s += " batch " + std::to_string(stride);
    if (g.inner > 1) s += "/" + std::to_string(inner_stride);
    return s;
  };
  return operand("A", g.lda, g.stride_a, g.inner_stride_a) + ", " + operand("B", g.ldb, g.stride_b, g.inner_stride_b) +
         ", " + operand("C", g.ldc, g.stride_c, g.inner_stride_c);
}

// Every GEMM call of a step, those of one problem, layout and kernel together: the time in the
// step, the rate, and the rates of the same call alone at its own strides and of the vendor on
// dense operands (JSON `profiles.<mode>.gemm_calls`). `calls`: outermost GEMM regions in order
// over `steps` steps, matched in order to the traffic's records of kamp::gemm calls (an FP8
// GEMM's record is its wrapper's; the bf16 GEMM it runs has a record and region of its own).
void gemm_call_table(report& out, precision_mode mode, const step_traffic& traffic, const roofline& limit,
                     const std::vector<std::pair<std::string, double>>& calls, int steps, bool print) {
  const std::vector<gemm_record>& records = traffic.gemms();
  const auto next_record = [&](std::size_t from, const std::string& region) {
    while (from < records.size() && region_of(records[from]) != region) ++from;
    return from;
  };
  std::vector<std::size_t> matched;  // the record index of every call
  for (std::size_t i = 0, j = 0; i < calls.size(); ++i, ++j) {
    j = next_record(j, calls[i].first);
    if (j == records.size()) j = next_record(0, calls[i].first);  // the next step's first
    if (j == records.size()) break;
    matched.push_back(j);
  }
  if (matched.size() != calls.size() || calls.empty() || calls.size() % std::size_t(steps) != 0) {
    std::printf("    (GEMM call table skipped: the %zu profiled calls do not match the step's GEMM records)\n",
                calls.size());
    return;
  }
  const std::size_t per_step = calls.size() / std::size_t(steps);
  struct row {
    const gemm_record* record;
    int count = 0;
    double ms = 0, dense_ms = 0, own_ms = 0;
  };
  std::map<std::string, row> rows;
  for (std::size_t i = 0; i < calls.size(); ++i) {
    const std::size_t j = matched[i];
    const gemm_record& g = records[j];
    const std::string key = region_of(g) + " " + std::to_string(g.m) + "x" + std::to_string(g.n) + "x" +
                            std::to_string(g.k) + " x" + std::to_string(g.batch) + (g.trans_a ? " A^T" : "") +
                            (g.trans_b ? " B^T" : "") + " " + strides_of(g) + " " + g.implementation;
    row& r = rows[key];
    r.record = &g;
    if (i < per_step) {
      ++r.count;
      r.dense_ms += limit.calls[j].dense_ms;
      r.own_ms += limit.calls[j].own_ms;
    }
    r.ms += 1e3 * calls[i].second / steps;
  }
  std::vector<std::pair<double, const row*>> order;
  for (const auto& [key, r] : rows) order.emplace_back(r.ms, &r);
  std::sort(order.rbegin(), order.rend());
  if (print)
    std::printf("    GEMM calls %s (GFLOP/s in the step | alone at its strides | vendor dense):\n", name(mode));
  nlohmann::json& table = out.doc()["profiles"][name(mode)]["gemm_calls"];
  for (const auto& [ms, r] : order) {
    const gemm_record& g = *r->record;
    const double gflop = 2e-9 * g.m * g.n * double(g.k) * g.batch * r->count;
    const auto rate = [&](double t) { return t > 0 ? gflop / (1e-3 * t) : 0.0; };
    if (print)
      std::printf("      %7.2f ms %3dx  %6.1f | %6.1f | %6.1f  %dx%dx%d x%d%s%s [%s] %s  %s\n", ms, r->count, rate(ms),
                  rate(r->own_ms), rate(r->dense_ms), g.m, g.n, g.k, g.batch, g.trans_a ? " A^T" : "",
                  g.trans_b ? " B^T" : "", strides_of(g).c_str(), region_of(g).c_str(), g.implementation.c_str());
    table.push_back({{"m", g.m},
                     {"n", g.n},
                     {"k", g.k},
                     {"batch", g.batch},
                     {"inner", g.inner},
                     {"trans_a", g.trans_a},
                     {"trans_b", g.trans_b},
                     {"ld", {g.lda, g.ldb, g.ldc}},
                     {"batch_strides", {g.stride_a, g.stride_b, g.stride_c}},
                     {"inner_strides", {g.inner_stride_a, g.inner_stride_b, g.inner_stride_c}},
                     {"region", region_of(g)},
                     {"implementation", g.implementation},
                     {"calls_per_step", r->count},
                     {"ms_per_step", ms},
                     {"gflop_per_s", rate(ms)},
                     {"alone_gflop_per_s", rate(r->own_ms)},
                     {"dense_gflop_per_s", rate(r->dense_ms)},
                     {"fraction_of_dense", r->dense_ms / ms}});
  }
}

// Milliseconds per step by GEMM region and kernel label, the largest first, over `steps` more
// steps (kept apart from the timed ones: the callbacks cost a little), each beside its bound.
std::map<std::string, double> profile_steps(report& out, trainer& t, precision_mode mode, int steps,
                                            const roofline& limit, const step_traffic& traffic, bool print) {
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
    gemm_call_table(out, mode, traffic, limit, profile.gemm_calls(), steps, print);
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
      if (bound != limit.bound_ms.end()) {
        const auto compute = limit.compute_ms.find(rows[i].second);
        const bool by_compute =
            compute != limit.compute_ms.end() && compute->second > limit.memory_ms.at(rows[i].second);
        std::printf("      %7.2f ms  %5.1f%%  bound %6.2f ms (%4.2f)%s  %s\n", rows[i].first,
                    100 * rows[i].first / step_ms, bound->second, bound->second / rows[i].first,
                    by_compute ? " compute" : "", rows[i].second.c_str());
      } else
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
      "  %-44s %6.1f ms (GEMMs %.1f at their vendor rates + kernels %.1f at %.1f GB/s or the cores' rates); step "
      "%.1f ms: %.2f of the limit\n",
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
    if (bytes != traffic.bytes().end()) {
      k["bytes"] = bytes->second;
      const double memory = limit.memory_ms.at(label), compute = limit.compute_ms.at(label);
      k["memory_bound_ms"] = memory;
      k["compute_bound_ms"] = compute;
      k["bound_by"] = compute > memory ? "compute" : "memory";
    }
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

void training_steps(report& out, const gpt_config& config, int batch, int steps, bool profile) {
  const token_dataset data = benchmark_data(config);
  train_options options;
  options.steps = steps + 3;
  if (batch > 0) options.batch = batch;
  std::printf(
      "  training steps of the GPT with %d layers, %d heads, d_model %d, context %d (%d x %d tokens per step)\n",
      config.layers, config.heads, config.d_model, config.context, options.batch, config.context);
  // The bandwidth the kernels' bytes are bounded by, measured here alone (2^25 elements: above
  // any L3 of these machines).
  double triad_gb_per_s = 0;
  {
    const stream_triad triad(std::size_t(1) << 25);
    triad_gb_per_s = triad.bytes() / median_seconds(10, triad) / 1e9;
  }
  out.value("train_stream_triad_gb_per_s", triad_gb_per_s);
  // The cores' rates, the arithmetic side of each kernel's bound (element operations per second).
  const core_rates cores = core_rates::measure();
  out.doc()["core_rates_per_s"] = {
      {"simple", cores.simple}, {"exp", cores.exp}, {"divide", cores.divide}, {"sqrt", cores.sqrt}, {"log", cores.log}};
  std::printf("  cores: %.1f G simple operations/s, %.1f G exp/s, %.1f G divisions/s, %.1f G sqrt/s, %.2f G log/s\n",
              cores.simple * 1e-9, cores.exp * 1e-9, cores.divide * 1e-9, cores.sqrt * 1e-9, cores.log * 1e-9);
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
    const roofline limit = step_roofline(traffic, triad_gb_per_s, cores, 5);
    const auto ms = profile_steps(out, t, mode, steps, limit, traffic, profile);
    report_roofline(out, mode, limit, traffic, 1e3 * seconds[seconds.size() / 2], ms, triad_gb_per_s);
  }
}

}  // namespace kamp::bench
