#include <kamp/model/dist/sharding.hpp>

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
  const std::vector<sharding>& levels = sharding_levels();
  std::string alternatives;
  for (std::size_t i = 0; i < levels.size(); ++i) {
    if (s == name(levels[i])) return levels[i];
    const std::string stage = zero_stage(levels[i]);
    alternatives += (i == 0                   ? ""
                     : i + 1 == levels.size() ? " or "
                                              : ", ") +
                    std::string(name(levels[i])) + (stage.empty() ? "" : " (" + stage + ")");
  }
  throw std::invalid_argument("unknown sharding '" + s + "': use " + alternatives);
}

}  // namespace kamp
