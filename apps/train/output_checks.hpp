#ifndef KAMP_APPS_TRAIN_OUTPUT_CHECKS_HPP
#define KAMP_APPS_TRAIN_OUTPUT_CHECKS_HPP

// Writes the kamp programs promise are checked: on a full disk (or /dev/full) a program names
// the output it lost and exits non-zero instead of leaving an empty file behind an exit 0.
// Header-only: kamp-train, kamp-generate and kamp-demo share it without a common library.

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>

namespace kamp::app {

/// Flushes `stream`; returns why writing it failed, in this flush or an earlier write (whose
/// error flag stays set), or "" when nothing failed.
inline std::string write_failure(std::FILE* stream) {
  errno = 0;
  if (std::fflush(stream) == 0 && !std::ferror(stream)) return "";
  return errno != 0 ? std::strerror(errno) : "an earlier write failed";
}

/// Flushes `stream` and throws std::runtime_error "<what>: writing failed: <reason>" if writing
/// it failed.
inline void flush_or_throw(std::FILE* stream, const std::string& what) {
  if (const std::string why = write_failure(stream); !why.empty())
    throw std::runtime_error(what + ": writing failed: " + why);
}

/// The exit status of a program whose result is `status`: 1 instead of 0 when its standard output
/// could not be written (the reason goes to stderr), for output that was lost is no success.
inline int exit_status(const char* program, int status) {
  const std::string why = write_failure(stdout);
  if (why.empty()) return status;
  std::fprintf(stderr, "%s: error: the standard output: writing failed: %s\n", program, why.c_str());
  return status == 0 ? 1 : status;
}

}  // namespace kamp::app

#endif
