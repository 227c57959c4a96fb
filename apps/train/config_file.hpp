#ifndef KAMP_APPS_TRAIN_CONFIG_FILE_HPP
#define KAMP_APPS_TRAIN_CONFIG_FILE_HPP

#include <CLI/CLI.hpp>

#include <cstddef>
#include <set>
#include <string>
#include <vector>

namespace kamp::app {

/// CLI11 reads `--config FILE` as TOML; a file whose first character is '{' is read as a flat
/// JSON object instead (keys are option names, arrays are lists). Either way every key must
/// name an option, so a typo is an error rather than a silently ignored setting, and a file's
/// cost is bounded by its size: at most `max_bytes` (1 MiB), nesting at most `max_depth` (8)
/// levels, numbers within double's range, each key once, lists only for the options that take
/// several values.
class toml_or_json_config : public CLI::ConfigTOML {
 public:
  static constexpr std::size_t max_bytes = 1 << 20;
  static constexpr int max_depth = 8;
  /// `list_options`: the keys whose value may be a list (e.g. "fp32-layers").
  explicit toml_or_json_config(std::set<std::string> list_options) : list_options_(std::move(list_options)) {}
  std::vector<CLI::ConfigItem> from_config(std::istream& input) const override;

 private:
  std::set<std::string> list_options_;
};

/// --config's check, which CLI11 runs before it opens the file: the path must name a readable
/// regular file. A FIFO would block the open until a writer comes, a device would be read
/// without end; either is refused by what it is.
CLI::Validator config_file_check();

}  // namespace kamp::app

#endif
