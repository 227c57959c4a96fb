#ifndef KAMP_APPS_TRAIN_MODEL_OPTIONS_HPP
#define KAMP_APPS_TRAIN_MODEL_OPTIONS_HPP

#include <kamp/model/config/gpt_config.hpp>
#include <kamp/model/config/precision_policy.hpp>
#include <kamp/model/network/activation_layout.hpp>

#include <CLI/CLI.hpp>

#include "enum_option.hpp"

#include <string>
#include <vector>

namespace kamp::app {

/// The precision options as given on the command line; `policy()` parses them.
struct precision_options {
  std::string mode = "amp_bf16", pure_update = "kahan", fp8_recipe = "delayed";
  std::vector<std::string> fp32_layers;
  int fp8_amax_history = 1024;

  precision_policy policy() const;
};

/// --preset, --vocab, --layers, --heads, --d-model, --mlp, --context: the same options in every
/// kamp program.
void add_model_options(CLI::App& app, gpt_config& model);
/// --recompute none|blocks, in kamp-train and kamp-plan.
void add_recompute_option(CLI::App& app, std::string& recompute);
/// --mode, --pure-bf16-update, --fp32-layers, --fp8-recipe, --fp8-amax-history.
void add_precision_options(CLI::App& app, precision_options& precision);

}  // namespace kamp::app

#endif
