#ifndef KAMP_APPS_TRAIN_TIME_LIMIT_HPP
#define KAMP_APPS_TRAIN_TIME_LIMIT_HPP

#include "slurm_job.hpp"

#include <chrono>
#include <optional>
#include <string>

namespace kamp::app {

/// Seconds in "90s", "30m" or "2h"; none when `text` is not a number followed by s, m or h.
std::optional<double> parse_duration(const std::string& text);

/// \brief --time-limit: when the run must have stopped, with its checkpoint written. The loop
/// stops early enough for the steps up to its next look, a checkpoint and the exit to fit, so
/// that a batch job ends by itself before the scheduler's SIGTERM and SIGKILL, with or without
/// `--signal`.
class time_limit {
 public:
  /// The seconds kept for the exit beyond the next steps and the checkpoint (MPI_Finalize,
  /// the job's epilogue, clock differences between the node and the controller).
  static constexpr double exit_seconds = 10;
  /// Before a run's first checkpoint write its duration is unknown: a checkpoint's bytes at this
  /// pace (one writer on a busy shared file system; slow on purpose) stand in for it.
  static constexpr double assumed_write_bytes_per_second = 100e6;

  /// "none", a duration from now ("90s", "30m", "2h"), or "auto": the end of `job` (none
  /// outside Slurm is an error; a job without a limit has none). Throws on anything else.
  static time_limit parse(const std::string& text, const std::optional<slurm_job>& job);

  bool set() const { return end_.has_value(); }
  double seconds_left() const;
  /// The time to keep before the end: twice (the next steps' time + a checkpoint's) + exit_seconds.
  static double reserve(double next_steps_seconds, double checkpoint_seconds);
  /// "at 2026-12-03T11:20:00 (the Slurm job's end, from squeue)"; empty when not set.
  const std::string& description() const { return description_; }

 private:
  std::optional<std::chrono::system_clock::time_point> end_;
  std::string description_;
};

}  // namespace kamp::app

#endif
