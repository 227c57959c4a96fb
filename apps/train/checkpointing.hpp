#ifndef KAMP_APPS_TRAIN_CHECKPOINTING_HPP
#define KAMP_APPS_TRAIN_CHECKPOINTING_HPP

#include <kamp/model/checkpoint.hpp>
#include <kamp/model/trainer.hpp>

#include <csignal>
#include <cstdint>
#include <string>

namespace kamp::app {

/// \brief When periodic checkpoints are written: every N optimizer steps, or every S seconds.
struct checkpoint_interval {
  std::int64_t steps = 0;  ///< 0: not by steps
  double seconds = 0;      ///< 0: not by time

  /// "0" (off), "500" (steps), "90s", "30m", "2h". Throws std::invalid_argument otherwise.
  static checkpoint_interval parse(const std::string& text);
  bool due(std::int64_t steps_taken, double seconds_since_last) const;
  /// Optimizer steps from `steps_taken` to the next checkpoint by steps (none: the maximum).
  std::int64_t steps_until_due(std::int64_t steps_taken) const;
};

/// \brief SIGTERM, SIGUSR1 (Slurm's `--signal=USR1@120`) and SIGINT ask the run to stop after
/// the current step, checkpoint and exit 0. Each handler fires once: the same signal again
/// terminates the process the usual way.
class stop_request {
 public:
  stop_request();
  ~stop_request();
  stop_request(const stop_request&) = delete;
  stop_request& operator=(const stop_request&) = delete;

  /// The signal received, 0 if none.
  int signal() const;
  static const char* name(int signal);

 private:
  struct sigaction previous_[3];
};

/// Loads into `t` the checkpoint `which` names: a file, or "auto" for the newest file in `dir`
/// that loads (files that do not are reported and skipped). Returns the path loaded; empty when
/// "auto" found no checkpoint at all. Throws when the named file, or every file, fails.
/// Options that differ from the checkpoint's (training options, fp32 layer overrides) are printed.
std::string resume(trainer& t, const checkpoint_directory& dir, const std::string& which, const train_options& now,
                   const precision_policy& policy);

}  // namespace kamp::app

#endif
