#ifndef KAMP_APPS_TRAIN_TRAINING_LOOP_HPP
#define KAMP_APPS_TRAIN_TRAINING_LOOP_HPP

#include <kamp/model/training/data.hpp>
#include <kamp/model/training/trainer.hpp>

#include "checkpointing.hpp"
#include "metrics.hpp"
#include "run_settings.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kamp::app {

/// What kamp-train's training loop measured, for the run's summary.
struct training_record {
  std::int64_t first_step = 0;       ///< the loop's first attempt (after a resume, not 1)
  double first_loss = 0;             ///< the training loss of `first_step`
  double initial_validation = 0;     ///< the validation loss before `first_step`
  std::vector<double> losses;        ///< the training loss of each step taken (skipped ones left out)
  std::vector<double> tokens_per_s;  ///< of each step taken from the run's third optimizer step on
  std::optional<double> validation;  ///< the validation loss after the last step, if it had one
  double seconds = 0;                ///< spent in the steps
  int skipped = 0;                   ///< attempts skipped for inf/NaN gradients
  int stopped_by = 0;       ///< the stop signal that ended the loop, or stopped_by_time_limit; 0: it reached --steps
  double seconds_left = 0;  ///< when stopped_by_time_limit: the time left to the limit (rank 0's)
};

/// training_record::stopped_by when --time-limit ended the loop (above every signal number, so
/// that the ranks agree on the cause with a maximum).
constexpr int stopped_by_time_limit = 1 << 16;

/// "SIGUSR1", "the time limit".
std::string stop_cause_name(int stopped_by);

/// Trains from the trainer's position up to --steps, until a stop signal reaches any rank, or
/// until --time-limit leaves only the time for the next steps, a checkpoint and the exit.
/// Along the way: the progress line, validation passes, samples, --metrics rows (`metrics`,
/// null for none), periodic checkpoints, and the precision doctor (or the way to call it) when
/// the loss watch fires. Throws after 50 consecutive skipped steps. Collective over the
/// trainer's ranks.
training_record run_training_loop(trainer& t, const run_settings& s, const token_dataset& data,
                                  checkpoint_writer& checkpoints, metrics_writer* metrics, const stop_request& stop);

}  // namespace kamp::app

#endif
