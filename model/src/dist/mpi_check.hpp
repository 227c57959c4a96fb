#ifndef KAMP_MODEL_SRC_DIST_MPI_CHECK_HPP
#define KAMP_MODEL_SRC_DIST_MPI_CHECK_HPP

#include <mpi.h>

#include <stdexcept>
#include <string>

namespace kamp::dist {

/// Throws std::runtime_error with MPI's own message unless `code` is MPI_SUCCESS: MPI_COMM_WORLD
/// returns error codes (MPI_ERRORS_RETURN), which kamp turns into exceptions here.
inline void check(int code, const char* call) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  throw std::runtime_error(std::string("kamp::dist: ") + call + " failed: " + std::string(text, length));
}

}  // namespace kamp::dist

#endif
