#ifndef KAMP_APPS_TRAIN_OPTION_CHECKS_HPP
#define KAMP_APPS_TRAIN_OPTION_CHECKS_HPP

// Option checks kamp-train and kamp-generate share, so that the same mistake gets the same
// message and the same exit status (CLI11's ValidationError, 105) in both. Header-only: the
// programs share no library.

#include <kamp/model/state/checkpoint.hpp>

#include <CLI/CLI.hpp>

#include <string>

namespace kamp::app {

/// --seed: CLI11 reads "-1" into an unsigned seed as 2^64 - 1 (strtoull) rather than refusing it.
inline CLI::Validator seed_check() {
  return CLI::Validator(
      [](const std::string& v) {
        return v.find('-') == std::string::npos ? std::string() : "the seed is a non-negative integer, got " + v;
      },
      "NONNEGATIVE");
}

/// --accept-unhashed-checkpoint: the one spelling, in every program that reads checkpoints.
inline void add_accept_unhashed_option(CLI::App& app, checkpoint_read_options& reading) {
  app.add_flag("--accept-unhashed-checkpoint", reading.accept_unhashed,
               "Read a format-1 checkpoint, whose tensors have no content hashes (refused otherwise: nothing could "
               "tell a zeroed chunk in it); saving it again writes a verifiable file");
}

/// Refuses an empty value for every option of `app` that takes one. CLI11 would read "" as 0
/// for a number, and a program as the option left out for a path: either way the default,
/// silently. Call it after the options are added.
inline void refuse_empty_values(CLI::App& app) {
  for (CLI::Option* option : app.get_options([](const CLI::Option* o) { return o->get_type_size() > 0; })) {
    const std::string name = option->get_name();
    option->check(CLI::Validator(
        [name](const std::string& v) {
          return v.empty() ? "the value is empty: give one, or leave " + name + " out for its default" : std::string();
        },
        ""));
  }
}

}  // namespace kamp::app

#endif
