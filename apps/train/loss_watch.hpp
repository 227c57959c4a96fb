#ifndef KAMP_APPS_TRAIN_LOSS_WATCH_HPP
#define KAMP_APPS_TRAIN_LOSS_WATCH_HPP

#include <kamp/model/training/trainer.hpp>

#include <string>
#include <vector>

namespace kamp::app {

/// \brief Decides when kamp-train calls the precision doctor on its own: the loss turned
/// non-finite (or three steps in a row were skipped for inf/NaN gradients), or the loss stopped
/// falling (the mean of the last `window` steps is not below the mean of the window before).
/// It answers yes once per run.
class loss_watch {
 public:
  explicit loss_watch(int window = 50) : window_(window) {}

  /// Returns why the doctor should run now ("" = it should not).
  std::string update(const step_report& r);

 private:
  int window_, skips_ = 0;
  bool fired_ = false;
  std::vector<double> losses_;
};

}  // namespace kamp::app

#endif
