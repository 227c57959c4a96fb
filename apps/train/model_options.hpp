#ifndef KAMP_APPS_TRAIN_MODEL_OPTIONS_HPP
#define KAMP_APPS_TRAIN_MODEL_OPTIONS_HPP

#include <kamp/model/network/gpt_config.hpp>
#include <kamp/model/precision/precision_policy.hpp>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

namespace kamp::app {

/// The precision options as given on the command line; `policy()` parses them.
struct precision_options {
  std::string mode = "amp_bf16", pure_update = "kahan";
  std::vector<std::string> fp32_layers;

  precision_policy policy() const;
};

/// --layers, --heads, --d-model, --mlp, --context: the same options in every kamp program.
void add_model_options(CLI::App& app, gpt_config& model);
/// --mode, --pure-bf16-update, --fp32-layers.
void add_precision_options(CLI::App& app, precision_options& precision);

/// A CLI11 check that an option names one of `choices`, values of an enum whose name() spells
/// them. The help lists them as "{a,b,c}"; a value the enum's own `parse` refuses gets that
/// function's message, one it accepts but `choices` leaves out "x not in {a,b,c}".
template <class Enum>
CLI::Validator one_of(const std::vector<Enum>& choices, Enum (*parse)(const std::string&)) {
  std::string listed;
  for (const Enum c : choices) listed += (listed.empty() ? "{" : ",") + std::string(name(c));
  listed += "}";
  return CLI::Validator(
      [choices, parse, listed](const std::string& value) -> std::string {
        try {
          if (std::find(choices.begin(), choices.end(), parse(value)) != choices.end()) return "";
          return value + " not in " + listed;
        } catch (const std::invalid_argument& e) {
          return e.what();
        }
      },
      listed);
}

}  // namespace kamp::app

#endif
