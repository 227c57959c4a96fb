#ifndef KAMP_APPS_TRAIN_METRICS_HPP
#define KAMP_APPS_TRAIN_METRICS_HPP

#include <kamp/model/training/trainer.hpp>

#include <fstream>
#include <optional>
#include <string>

namespace kamp::app {

/// Per-step metrics to a file: CSV for a name ending in .csv, JSON Lines for .jsonl/.json.
/// Each row is flushed, so a killed job keeps every finished step; `append` continues a file
/// (a resumed run).
class metrics_writer {
 public:
  metrics_writer(const std::string& path, bool append);
  void write(const step_report& r, std::optional<double> validation_loss);

 private:
  std::ofstream out_;
  bool csv_;
};

/// The step line or progress bar on the terminal: a bar redrawn in place on a TTY, plain lines
/// every `every` steps otherwise (batch logs, and under an MPI launcher, whose pseudo-terminal
/// is usually a job's log file).
class progress {
 public:
  progress(int total, int every, bool plain_lines = false);
  void update(const step_report& r, std::int64_t taken, std::optional<double> validation_loss);
  void finish();

 private:
  int total_, every_;
  bool tty_;
};

}  // namespace kamp::app

#endif
