// kamp-plan: the memory a training run needs, by category, for a model shape or a parameter
// count, a precision mode and a number of data-parallel shards.
#include <kamp/model/config/sharding.hpp>
#include <kamp/model/diagnostics/memory_plan.hpp>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "train/enum_option.hpp"
#include "train/model_options.hpp"
#include "train/option_checks.hpp"
#include "train/output_checks.hpp"

#include <climits>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <string>

namespace {

// The largest run kamp-plan plans: 10^15 parameters (a thousand times the largest models trained
// today) and 10^18 bytes, an exabyte, in all. Beyond them a figure prints as "inf" or as a
// number of 20 digits, and the input is a typo rather than a plan.
constexpr double max_parameters = 1e15, max_bytes = 1e18;

std::string human(double bytes) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB", "PB", "EB"};
  int u = 0;
  while (bytes >= 1000 && u < 6) bytes /= 1000, ++u;
  char text[32];
  std::snprintf(text, sizeof text, bytes < 10 ? "%.2f %s" : bytes < 100 ? "%.1f %s" : "%.0f %s", bytes, units[u]);
  return text;
}

std::string number(double n) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", n);
  return text;
}

nlohmann::json as_json(const kamp::memory_plan& p) {
  return {{"parameters", p.parameters}, {"gradients", p.gradients},     {"master", p.master},
          {"optimizer", p.optimizer},   {"activations", p.activations}, {"fp8", p.fp8},
          {"total", p.total()}};
}

// What to plan, as the command line gives it.
struct plan_request {
  kamp::gpt_config model;
  kamp::app::precision_options precision;
  double parameters = 0;  ///< > 0: plan this many parameters instead of `model`
  int batch = 16, shards = 1;
  std::string split = "parameters", recompute = "none";
  bool json = false;
};

// --parameters: a finite count from 1 to max_parameters, checked on the text so that nan and
// inf are refused by name (CLI::PositiveNumber lets nan through and prints its range in full).
CLI::Validator parameter_count() {
  return CLI::Validator(
      [](const std::string& text) -> std::string {
        if (text.empty()) return {};  // refuse_empty_values' words, as in every program
        double n = 0;
        if (!CLI::detail::lexical_cast(text, n) || std::isnan(n))
          return text + " is not a number: give a parameter count such as 70e9";
        if (std::isinf(n)) return text + " is not a finite number: give a parameter count such as 70e9";
        if (n < 1) return text + " is not a positive count: give a parameter count such as 70e9";
        if (n > max_parameters)
          return text + " is more than the " + number(max_parameters) +
                 " parameters kamp-plan plans: give a parameter count such as 70e9";
        return "";
      },
      "NUMBER in [1, " + number(max_parameters) + "]");
}

// --batch, --shards: a whole number from 1 to INT_MAX, checked on the text so that 0, -1, 2.5
// and nan get the range rather than CLI11's "Value 0 not in range 0 to 1.8e308" or "Could not
// convert".
CLI::Validator whole_count(const char* what) {
  return CLI::Validator(
      [what](const std::string& text) -> std::string {
        if (text.empty()) return {};  // refuse_empty_values' words, as in every program
        int n = 0;
        if (!CLI::detail::lexical_cast(text, n) || n < 1)
          return text + " is not a number of " + what + ": give a whole number from 1 to " + std::to_string(INT_MAX);
        return "";
      },
      "INT in [1, " + std::to_string(INT_MAX) + "]");
}

void add_options(CLI::App& app, plan_request& r) {
  kamp::app::add_model_options(app, r.model);
  kamp::app::add_precision_options(app, r.precision);
  app.add_option("--parameters", r.parameters,
                 "Plan the state of this many parameters (e.g. 70e9) instead of a model shape; no activations")
      ->check(parameter_count());
  app.add_option("--batch", r.batch, "Sequences per micro-batch (activations)")
      ->capture_default_str()
      ->check(whole_count("sequences"));
  app.add_option("--shards", r.shards, "Data-parallel ranks sharing the state")
      ->capture_default_str()
      ->check(whole_count("ranks"));
  app.add_option("--sharding", r.split,
                 "What the shards split: optimizer (ZeRO-1: master + moments), gradients (ZeRO-2: + gradients), "
                 "parameters (ZeRO-3/FSDP full shard: + the model copy), none")
      ->check(kamp::app::one_of(kamp::sharding_levels(), kamp::parse_sharding))
      ->capture_default_str();
  kamp::app::add_recompute_option(app, r.recompute);
  app.add_flag("--json", r.json, "Print JSON");
}

// One rank's plan when `shards` ranks share the state, and the whole run's in one process.
struct plans {
  double elements;
  kamp::memory_plan per_rank, unsharded, per_parameter;
};

// Plans from the shape alone (kamp::plan_memory builds no table), after kamp-train's check of
// the shape and within kamp-plan's bounds, so any input is answered at once.
plans make_plans(const plan_request& r) {
  const kamp::precision_policy policy = r.precision.policy();
  const kamp::sharding how = kamp::parse_sharding(r.split);
  if (r.parameters > 0)
    return {r.parameters, kamp::plan_state(r.parameters, policy, r.shards, how), kamp::plan_state(r.parameters, policy),
            kamp::bytes_per_parameter(policy)};
  r.model.validate();
  const double elements = kamp::parameter_estimate(r.model);
  if (elements > max_parameters)
    throw std::invalid_argument("this shape has " + number(elements) + " parameters, more than the " +
                                number(max_parameters) +
                                " kamp-plan plans: use fewer --layers or a smaller --d-model or --mlp");
  const kamp::activation_recompute recompute = kamp::parse_activation_recompute(r.recompute);
  const plans p{elements, kamp::plan_memory(r.model, policy, r.batch, r.shards, how, true, recompute),
                kamp::plan_memory(r.model, policy, r.batch, 1, kamp::sharding::optimizer, true, recompute),
                kamp::bytes_per_parameter(policy)};
  if (p.unsharded.total() > max_bytes)
    throw std::invalid_argument("this run's activations are " + number(p.unsharded.activations) +
                                " bytes, more than the " + number(max_bytes) +
                                " kamp-plan plans in all: use a smaller --batch or --context");
  return p;
}

void print_json(const plan_request& r, const plans& p) {
  std::cout << nlohmann::json{{"parameters", p.elements},
                              {"mode", r.precision.mode},
                              {"shards", r.shards},
                              {"sharding", r.split},
                              {"recompute", r.recompute},
                              {"bytes_per_parameter", as_json(p.per_parameter)},
                              {"one_rank_of_all", as_json(p.per_rank)},
                              {"unsharded", as_json(p.unsharded)}}
                   .dump(2)
            << '\n';
}

void print_table(const plan_request& r, const plans& p) {
  std::printf("kamp-plan: %.4g parameters, mode %s, %d shard%s (sharding: %s)%s\n", p.elements,
              r.precision.mode.c_str(), r.shards, r.shards == 1 ? "" : "s", r.split.c_str(),
              r.recompute == "blocks" ? "; activations recomputed per block" : "");
  std::printf("  %-12s %10s %12s %12s\n", "category", "bytes/param", "unsharded", "per rank");
  const auto row = [&](const char* name, double bytes_per, double all, double one) {
    std::printf("  %-12s %10s %12s %12s\n", name, bytes_per > 0 ? std::to_string(int(bytes_per)).c_str() : "-",
                human(all).c_str(), human(one).c_str());
  };
  const kamp::memory_plan &per = p.per_parameter, &whole = p.unsharded, &plan = p.per_rank;
  row("parameters", per.parameters, whole.parameters, plan.parameters);
  row("gradients", per.gradients, whole.gradients, plan.gradients);
  row("master", per.master, whole.master, plan.master);
  row("optimizer", per.optimizer, whole.optimizer, plan.optimizer);
  if (r.parameters == 0) row("activations", 0, whole.activations, plan.activations);
  if (whole.fp8 > 0) row("fp8", 0, whole.fp8, plan.fp8);
  row("total", per.total(), whole.total(), plan.total());
  std::printf("  per parameter, by mode (parameters + fp32 gradients + master + optimizer):");
  for (const auto mode : kamp::precision_modes()) {
    kamp::precision_policy policy;
    policy.mode = mode;
    const auto b = kamp::bytes_per_parameter(policy);
    std::printf(" %s %g+%g+%g+%g = %g;", kamp::name(mode), b.parameters, b.gradients, b.master, b.optimizer, b.total());
  }
  std::printf("\n");
  const kamp::sharding how = kamp::parse_sharding(r.split);
  if (r.shards > 1 && how != kamp::sharding::none)
    std::printf("  kamp-train on %d MPI ranks with --sharding %s holds this%s\n", r.shards, kamp::name(how),
                r.parameters == 0
                    ? ", the buffers units are gathered into and reduced from included"
                    : " plus the buffers of the units gathered at a time (give a model shape to see them)");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "kamp-plan: bytes for parameters, gradients, master weights, optimizer state and activations of a "
      "training run, per rank. Give a model shape (the kamp-train options) or --parameters N."};
  plan_request request;
  add_options(app, request);
  kamp::app::refuse_empty_values(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return kamp::app::exit_status("kamp-plan", app.exit(e));
  }
  try {
    const plans p = make_plans(request);
    if (request.json) {
      print_json(request, p);
    } else {
      print_table(request, p);
    }
    return kamp::app::exit_status("kamp-plan", 0);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kamp-plan: error: %s\n", e.what());
    return 1;
  }
}
