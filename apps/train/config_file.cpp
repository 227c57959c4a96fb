#include "config_file.hpp"

#include <nlohmann/json.hpp>

#include <sstream>

namespace kamp::app {

std::vector<CLI::ConfigItem> toml_or_json_config::from_config(std::istream& input) const {
  std::stringstream text;
  text << input.rdbuf();
  const std::string s = text.str();
  const auto first = s.find_first_not_of(" \t\r\n");
  if (first == std::string::npos || s[first] != '{') {
    std::istringstream again(s);
    return CLI::ConfigTOML::from_config(again);
  }
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(s);
  } catch (const nlohmann::json::parse_error& e) {
    throw CLI::ConversionError("config file: invalid JSON: " + std::string(e.what()));
  }
  if (!j.is_object()) throw CLI::ConversionError("config file: the JSON must be one object of option: value pairs");
  const auto scalar = [](const nlohmann::json& v, const std::string& key) -> std::string {
    if (v.is_string()) return v.get<std::string>();
    if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
    if (v.is_number()) return v.dump();
    throw CLI::ConversionError("config file: '" + key + "' must be a string, number, boolean or a list of them");
  };
  std::vector<CLI::ConfigItem> items;
  for (const auto& [key, value] : j.items()) {
    CLI::ConfigItem item;
    item.name = key;
    if (value.is_array()) {
      for (const auto& v : value) item.inputs.push_back(scalar(v, key));
    } else {
      item.inputs.push_back(scalar(value, key));
    }
    items.push_back(std::move(item));
  }
  return items;
}

}  // namespace kamp::app
