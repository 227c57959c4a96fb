#ifndef KAMP_APPS_TRAIN_OUTPUT_FILE_HPP
#define KAMP_APPS_TRAIN_OUTPUT_FILE_HPP

// The files kamp-train writes besides checkpoints. Apart from output_checks.hpp, which kamp-demo
// (linked to the kernels alone) shares without the model's file rules.

#include <kamp/model/state/file_rules.hpp>

#include "output_checks.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace kamp::app {

/// \brief A file a run promises to write (--metrics, --summary): opened under kamp's output
/// rule (never one of the run's inputs, never through a planted link; kamp::open_output_stream),
/// and every write flushed and checked at once, so that a full disk stops the run with the
/// file's name and the reason.
class output_file {
 public:
  /// Throws kamp::file_rule_error when the rule refuses `output`, std::runtime_error when it
  /// cannot be opened.
  output_file(const kamp::named_path& output, bool append, const std::vector<kamp::named_path>& inputs)
      : file_(kamp::open_output_stream(output, append, inputs)), what_(output.what + " '" + output.path + "'") {}
  void write(const std::string& text) {
    std::fputs(text.c_str(), file_.get());
    flush_or_throw(file_.get(), what_);
  }
  /// Closes the file, reporting what only the close finds (a network file system's late error).
  void close() {
    flush_or_throw(file_.get(), what_);
    if (std::fclose(file_.release()) != 0)
      throw std::runtime_error(what_ + ": closing it failed: " + std::strerror(errno));
  }

 private:
  struct closer {
    void operator()(std::FILE* f) const { std::fclose(f); }
  };
  std::unique_ptr<std::FILE, closer> file_;
  std::string what_;
};

}  // namespace kamp::app

#endif
