#ifndef KAMP_APPS_TRAIN_ENUM_OPTION_HPP
#define KAMP_APPS_TRAIN_ENUM_OPTION_HPP

#include <CLI/CLI.hpp>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

namespace kamp::app {

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
