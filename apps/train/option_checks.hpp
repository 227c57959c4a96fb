#ifndef KAMP_APPS_TRAIN_OPTION_CHECKS_HPP
#define KAMP_APPS_TRAIN_OPTION_CHECKS_HPP

// Option checks kamp-train and kamp-generate share, so that the same mistake gets the same
// message and the same exit status (CLI11's ValidationError, 105) in both. Header-only: the
// programs share no library.

#include <kamp/model/state/checkpoint.hpp>

#include <CLI/CLI.hpp>

#include <cerrno>
#include <cstdlib>
#include <string>

namespace kamp::app {

/// --seed: an integer 0 .. 2^64 - 1 in decimal digits. CLI11 reads "-1" as 2^64 - 1 and any
/// larger number as 2^64 - 1 (strtoull saturates): both would run with a seed nobody gave.
inline CLI::Validator seed_check() {
  return CLI::Validator(
      [](const std::string& v) {
        if (v.empty()) return std::string();  // refuse_empty_values() names that mistake
        if (v.find_first_not_of("0123456789") == std::string::npos) {
          errno = 0;
          std::strtoull(v.c_str(), nullptr, 10);
          if (errno != ERANGE) return std::string();
        }
        return "the seed is a whole number from 0 to 18446744073709551615 (2^64 - 1), got " + v;
      },
      "0..2^64-1");
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
