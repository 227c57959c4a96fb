#ifndef KAMP_APPS_TRAIN_METRICS_HPP
#define KAMP_APPS_TRAIN_METRICS_HPP

#include <kamp/model/training/trainer.hpp>

#include "output_file.hpp"

#include <optional>
#include <string>
#include <vector>

namespace kamp::app {

/// Per-step metrics to a file: CSV for a name ending in .csv, JSON Lines for .jsonl/.json.
/// Each row is flushed, so a killed job keeps every finished step, and checked: a write that
/// fails throws std::runtime_error naming the file. `append` continues a file (a resumed run).
/// amp_fp8 (`fp8`): rows with the FP8 casts of their step carry the values that saturated and
/// underflowed to zero, per Linear in JSON Lines, summed in CSV (two more columns).
class metrics_writer {
 public:
  /// `inputs`: the run's input files, which the output rule keeps the file from being.
  metrics_writer(const std::string& path, bool append, bool fp8 = false,
                 const std::vector<kamp::named_path>& inputs = {});
  /// Throws std::invalid_argument unless `path` names a format (.csv, .jsonl): checked before a
  /// run starts.
  static void check_name(const std::string& path);
  void write(const step_report& r, std::optional<double> validation_loss,
             const std::vector<fp8_tensor_report>& fp8 = {});
  /// Closes the file; throws if the close finds an error the writes did not.
  void close() { out_.close(); }

 private:
  bool csv_, fp8_;
  output_file out_;
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
