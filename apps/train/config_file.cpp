#include "config_file.hpp"

#include <kamp/model/state/file_rules.hpp>

#include <nlohmann/json.hpp>

#include <sstream>

namespace kamp::app {

namespace {

// Each key of one object once, and nesting bounded, checked while nlohmann parses (it keeps the
// last of two equal keys silently).
struct json_guard {
  std::vector<std::set<std::string>> keys;  ///< per open object
  bool operator()(int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using event_t = nlohmann::json::parse_event_t;
    if (depth > toml_or_json_config::max_depth)
      throw CLI::ConversionError("config file: JSON nested deeper than " +
                                 std::to_string(toml_or_json_config::max_depth) + " levels");
    if (event == event_t::object_start) keys.emplace_back();
    if (event == event_t::object_end && !keys.empty()) keys.pop_back();
    if (event == event_t::key && !keys.empty() && !keys.back().insert(parsed.get<std::string>()).second)
      throw CLI::ConversionError("config file: key '" + parsed.get<std::string>() +
                                 "' appears twice: give each option once");
    return true;
  }
};

// TOML, before CLI11 parses it: section headers nested beyond the bound, and keys given twice
// (CLI11 would merge them into a list).
void check_toml(const std::string& s) {
  std::istringstream lines(s);
  std::string section;
  std::set<std::string> keys;
  for (std::string line; std::getline(lines, line);) {
    const auto first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#') continue;
    if (line[first] == '[') {
      int depth = 1;
      for (const char c : line) depth += c == '.';
      if (depth > toml_or_json_config::max_depth)
        throw CLI::ConversionError("config file: a TOML section nested deeper than " +
                                   std::to_string(toml_or_json_config::max_depth) + " levels");
      section = line.substr(first) + ".";
      continue;
    }
    const auto equals = line.find('=');
    if (equals == std::string::npos) continue;
    std::string key = line.substr(first, equals - first);
    key.erase(key.find_last_not_of(" \t") + 1);
    if (!keys.insert(section + key).second)
      throw CLI::ConversionError("config file: key '" + key + "' appears twice: give each option once");
  }
}

}  // namespace

std::vector<CLI::ConfigItem> toml_or_json_config::from_config(std::istream& input) const {
  // Read at most one byte past the bound: /dev/zero or a huge file is refused, not swallowed.
  std::string s(max_bytes + 1, '\0');
  input.read(s.data(), std::streamsize(s.size()));
  s.resize(std::size_t(input.gcount()));
  if (s.size() > max_bytes)
    throw CLI::ConversionError("config file: larger than " + std::to_string(max_bytes >> 20) +
                               " MiB; a kamp config is a few lines of option = value");
  if (s.compare(0, 2, "\xff\xfe") == 0 || s.compare(0, 2, "\xfe\xff") == 0)
    throw CLI::ConversionError("config file: UTF-16 text (it begins with a UTF-16 byte-order mark): save it as UTF-8");
  if (s.find('\0') != std::string::npos) throw CLI::ConversionError("config file: holds NUL bytes: it is not text");
  // Editors on Windows begin UTF-8 files with a byte-order mark, which says nothing here.
  if (s.compare(0, 3, "\xef\xbb\xbf") == 0) s.erase(0, 3);
  std::vector<CLI::ConfigItem> items;
  const auto first = s.find_first_not_of(" \t\r\n");
  // A TOML section header begins with '[' too; only a whole JSON document is an array.
  if (first != std::string::npos && s[first] == '[' && nlohmann::json::accept(s))
    throw CLI::ConversionError(
        "config file: a JSON array; kamp's config is one JSON object of option: value pairs, {\"steps\": 500}, or "
        "TOML lines, steps = 500");
  if (first == std::string::npos || s[first] != '{') {
    check_toml(s);
    std::istringstream again(s);
    items = CLI::ConfigTOML::from_config(again);
  } else {
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(s, json_guard());
    } catch (const nlohmann::json::out_of_range& e) {
      throw CLI::ConversionError("config file: a number is out of range: " + std::string(e.what()));
    } catch (const nlohmann::json::exception& e) {
      throw CLI::ConversionError("config file: invalid JSON: " + std::string(e.what()));
    }
    if (!j.is_object()) throw CLI::ConversionError("config file: the JSON must be one object of option: value pairs");
    const auto scalar = [](const nlohmann::json& v, const std::string& key) -> std::string {
      if (v.is_string()) return v.get<std::string>();
      if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
      if (v.is_number()) return v.dump();
      throw CLI::ConversionError("config file: '" + key + "' must be a string, number, boolean or a list of them");
    };
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
  }
  // Keys given twice were refused above (check_toml, json_guard): more than one input is a list.
  for (const auto& item : items) {
    const std::string key = item.fullname();
    if (item.inputs.size() > 1 && list_options_.count(key) == 0)
      throw CLI::ConversionError("config file: '" + key + "' takes one value, not a list of " +
                                 std::to_string(item.inputs.size()));
  }
  return items;
}

namespace {
std::string config_file_problem(const std::string& path) {
  if (path.empty()) return "the value is empty: name a TOML or JSON file, or leave --config out";
  const std::string problem = input_file_problem(path, "a config file");
  return problem.empty() ? "" : "'" + path + "' " + problem + ": give a TOML or JSON file";
}
}  // namespace

CLI::Validator config_file_check() { return CLI::Validator(config_file_problem, ""); }

}  // namespace kamp::app
