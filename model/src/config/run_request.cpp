#include <kamp/model/config/run_request.hpp>

#include "config/spellings.hpp"

#include <stdexcept>

namespace kamp {

const std::vector<loss_scaling>& loss_scaling_modes() {
  static const std::vector<loss_scaling> all{loss_scaling::dynamic, loss_scaling::fixed, loss_scaling::off};
  return all;
}

const char* name(loss_scaling s) {
  switch (s) {
    case loss_scaling::dynamic:
      return "dynamic";
    case loss_scaling::fixed:
      return "static";
    case loss_scaling::off:
      return "off";
  }
  return "?";
}

loss_scaling parse_loss_scaling(const std::string& s) {
  return detail::parse_spelling(s, loss_scaling_modes(), "loss scaling");
}

void apply_loss_scaling(const run_request& request, train_options& options) {
  if (request.loss_scaling == loss_scaling::fixed) options.scaler.dynamic = false;
  if (request.loss_scaling == loss_scaling::off) {
    options.scaler.dynamic = false;
    options.scaler.init_scale = 1.0f;
  }
}

}  // namespace kamp
