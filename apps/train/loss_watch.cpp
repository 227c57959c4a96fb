#include "loss_watch.hpp"

#include <cmath>
#include <cstdio>
#include <numeric>

namespace kamp::app {

std::string loss_watch::update(const step_report& r) {
  if (fired_) return "";
  std::string why;
  skips_ = r.skipped ? skips_ + 1 : 0;
  if (!std::isfinite(r.loss)) {
    why = "the loss is " + std::string(std::isnan(r.loss) ? "NaN" : "infinite") + " at step " + std::to_string(r.step);
  } else if (skips_ == 3) {
    why = "3 steps in a row had inf/NaN gradients (step " + std::to_string(r.step) + ")";
  } else if (!r.skipped) {
    losses_.push_back(r.loss);
    const std::size_t w = std::size_t(window_), n = losses_.size();
    if (n >= 2 * w && n % w == 0) {
      const double now = std::accumulate(losses_.end() - w, losses_.end(), 0.0) / double(w);
      const double before = std::accumulate(losses_.end() - 2 * w, losses_.end() - w, 0.0) / double(w);
      if (now >= before) {
        char text[160];
        std::snprintf(text, sizeof text, "the loss stopped falling (mean %.4f over the last %zu steps, %.4f before)",
                      now, w, before);
        why = text;
      }
    }
  }
  fired_ = !why.empty();
  return why;
}

}  // namespace kamp::app
