#ifndef KAMP_APPS_TRAIN_SLURM_JOB_HPP
#define KAMP_APPS_TRAIN_SLURM_JOB_HPP

#include <chrono>
#include <optional>
#include <string>

namespace kamp::app {

/// \brief The Slurm job this process runs in, as its environment describes it. kamp-train logs
/// it in its banner and summary, so that a run's output names the job, array task and restart
/// that produced it, and `--time-limit auto` asks it for the job's end.
struct slurm_job {
  /// When a job's time limit ends, and which source said so ("SLURM_JOB_END_TIME", "squeue").
  struct end {
    std::chrono::system_clock::time_point at;
    const char* source;
  };

  std::string id;             ///< SLURM_JOB_ID
  std::string array_job_id;   ///< SLURM_ARRAY_JOB_ID, empty outside a job array
  std::string array_task_id;  ///< SLURM_ARRAY_TASK_ID, empty outside a job array
  int restart_count = 0;      ///< SLURM_RESTART_COUNT: how often the job was requeued (unset: 0)

  /// The job of this process's environment; none without SLURM_JOB_ID. Throws on a malformed
  /// SLURM_RESTART_COUNT.
  static std::optional<slurm_job> from_environment();

  /// "Slurm job 12 (array job 11, task 3), restart 1".
  std::string describe() const;

  /// When the job's time limit ends, as the scheduler says: SLURM_JOB_END_TIME (Unix seconds;
  /// Slurm 23.02 and newer set it), else `squeue -h -j ID -o %e` with SLURM_TIME_FORMAT=%s
  /// (Slurm 22.05 has no variable).
  /// None when the job has no time limit. Throws when neither source answers.
  std::optional<end> end_time() const;
};

}  // namespace kamp::app

#endif
