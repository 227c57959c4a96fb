#include <kamp/model/precision/run_request.hpp>

namespace kamp {

void apply_loss_scaling(const run_request& request, train_options& options) {
  if (request.loss_scaling == "static") options.scaler.dynamic = false;
  if (request.loss_scaling == "off") {
    options.scaler.dynamic = false;
    options.scaler.init_scale = 1.0f;
  }
}

}  // namespace kamp
