#ifndef KAMP_APPS_TRAIN_CONFIG_FILE_HPP
#define KAMP_APPS_TRAIN_CONFIG_FILE_HPP

#include <CLI/CLI.hpp>

namespace kamp::app {

/// CLI11 reads `--config FILE` as TOML; a file whose first character is '{' is read as a flat
/// JSON object instead (keys are option names, arrays are lists). Either way every key must
/// name an option, so a typo is an error rather than a silently ignored setting.
class toml_or_json_config : public CLI::ConfigTOML {
 public:
  std::vector<CLI::ConfigItem> from_config(std::istream& input) const override;
};

}  // namespace kamp::app

#endif
