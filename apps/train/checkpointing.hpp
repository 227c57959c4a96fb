#ifndef KAMP_APPS_TRAIN_CHECKPOINTING_HPP
#define KAMP_APPS_TRAIN_CHECKPOINTING_HPP

#include <kamp/model/state/checkpoint.hpp>
#include <kamp/model/state/checkpoint_directory.hpp>
#include <kamp/model/training/trainer.hpp>

#include <chrono>
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

/// \brief Writes the trainer's state, with the run's settings, into a checkpoint directory. It
/// remembers the state and the time of its last write: a state already on disk is not written
/// twice, and checkpoints by wall-clock time count from the last one.
class checkpoint_writer {
 public:
  /// `run_config`: the program's settings, stored with each checkpoint.
  checkpoint_writer(const trainer& t, const checkpoint_directory& dir, std::string run_config);

  struct written {
    std::string path;
    double seconds;  ///< the write's duration
  };
  /// Writes a checkpoint of the trainer's state now (collective: each rank writes its shard).
  written save();
  /// save() unless the trainer is where the last save() left it (same steps and attempts); rank 0
  /// prints the file as "checkpoint (<why>): ...".
  void save_if_new(const char* why);
  double seconds_since_save() const;
  /// The duration of the last write (0 before the first).
  double last_save_seconds() const { return last_save_seconds_; }

 private:
  const trainer& trainer_;
  const checkpoint_directory& dir_;
  std::string run_config_;
  std::int64_t saved_steps_, saved_attempts_;
  std::chrono::steady_clock::time_point saved_at_;
  double last_save_seconds_ = 0;
};

/// Loads into `t` the checkpoint `which` names: a file, or "auto" for the newest file in `dir`
/// that loads (files that do not are reported and skipped). Returns the path loaded; empty when
/// "auto" found no checkpoint at all. Throws when the named file, or every file, fails.
/// Options that differ from the checkpoint's (training options, fp32 layer overrides) are printed.
std::string resume(trainer& t, const checkpoint_directory& dir, const std::string& which, const train_options& now,
                   const checkpoint_read_options& reading, const precision_policy& policy);

}  // namespace kamp::app

#endif
