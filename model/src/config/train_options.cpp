#include <kamp/model/config/train_options.hpp>

#include <string>

#include <cmath>
#include <stdexcept>

namespace kamp {

void train_options::validate() const {
  const auto require = [](bool ok, const std::string& what) {
    if (!ok) throw std::invalid_argument("training options: " + what);
  };
  require(batch >= 1, "batch must be >= 1, got " + std::to_string(batch));
  require(micro_batches >= 1, "micro_batches must be >= 1, got " + std::to_string(micro_batches));
  require(steps >= 0, "steps must be >= 0, got " + std::to_string(steps));
  require(lr > 0.0f && std::isfinite(lr), "lr must be finite and > 0, got " + std::to_string(lr));
  require(warmup >= 0, "warmup must be >= 0, got " + std::to_string(warmup));
  require(min_lr_ratio >= 0.0f && min_lr_ratio <= 1.0f, "min_lr_ratio must lie in [0, 1]");
  require(grad_clip >= 0.0f && std::isfinite(grad_clip), "grad_clip must be finite and >= 0 (0 turns clipping off)");
  adamw_rule::validate(adamw);
  scaler.validate();
}

}  // namespace kamp
