#ifndef KAMP_TESTS_SUPPORT_SCRATCH_DIR_HPP
#define KAMP_TESTS_SUPPORT_SCRATCH_DIR_HPP

#include <unistd.h>

#include <filesystem>
#include <string>

namespace kamp::test {

/// An empty directory under the system's temporary one, named for the test and this process,
/// removed with everything in it when the test ends.
struct scratch_dir {
  std::filesystem::path path;
  explicit scratch_dir(const std::string& name)
      : path(std::filesystem::temp_directory_path() / (name + "_" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~scratch_dir() { std::filesystem::remove_all(path); }
  scratch_dir(const scratch_dir&) = delete;
  scratch_dir& operator=(const scratch_dir&) = delete;
  /// The path of `file` inside it.
  std::string operator/(const std::string& file) const { return (path / file).string(); }
};

}  // namespace kamp::test

#endif
