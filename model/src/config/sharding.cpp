#include <kamp/model/config/sharding.hpp>

#include "config/spellings.hpp"

#include <stdexcept>

namespace kamp {

namespace {

// The name users may know a level by, for messages ("" for none).
const char* zero_stage(sharding s) {
  switch (s) {
    case sharding::none:
      return "";
    case sharding::optimizer:
      return "ZeRO-1";
    case sharding::gradients:
      return "ZeRO-2";
    case sharding::parameters:
      return "ZeRO-3/FSDP";
  }
  return "";
}

}  // namespace

const std::vector<sharding>& sharding_levels() {
  static const std::vector<sharding> all{sharding::none, sharding::optimizer, sharding::gradients,
                                         sharding::parameters};
  return all;
}

const char* name(sharding s) {
  switch (s) {
    case sharding::none:
      return "none";
    case sharding::optimizer:
      return "optimizer";
    case sharding::gradients:
      return "gradients";
    case sharding::parameters:
      return "parameters";
  }
  return "?";
}

sharding parse_sharding(const std::string& s) {
  for (const sharding level : sharding_levels())
    if (s == name(level)) return level;
  throw std::invalid_argument("unknown sharding '" + s + "': use " +
                              detail::spelled_alternatives(sharding_levels(), zero_stage));
}

}  // namespace kamp
