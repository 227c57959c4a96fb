#include <kamp/model/state/file_rules.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>

namespace kamp {

namespace {

namespace fs = std::filesystem;

std::string in_quotes(const std::string& path) { return "'" + path + "'"; }

std::string kind_of(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISDIR(mode)) return "a directory";
  return "";
}

// Why stat() failed on `path`, as the rest of a sentence that begins with the path.
std::string unreachable(const std::string& path, int error) {
  if (error == ELOOP) return "is a loop of symbolic links (each one points on to the next): fix or remove the links";
  if (error == ENOENT) {
    char target[PATH_MAX];
    const ssize_t n = ::readlink(path.c_str(), target, sizeof target - 1);
    if (n >= 0)
      return "is a symbolic link to " + in_quotes(std::string(target, std::size_t(n))) + ", which does not exist";
    return "does not exist";
  }
  if (error == ENOTDIR) return "does not exist (a part of the path before the name is not a directory)";
  return std::string("cannot be examined: ") + std::strerror(error);
}

// The path `path` stands for once every symbolic link is resolved; for a path that does not
// exist yet, its resolved directory and its name. Empty when that directory does not exist.
std::string resolved(const std::string& path) {
  char out[PATH_MAX];
  if (::realpath(path.c_str(), out) != nullptr) return out;
  const fs::path p(path);
  const std::string dir = p.has_parent_path() ? p.parent_path().string() : ".";
  if (::realpath(dir.c_str(), out) == nullptr) return "";
  return (fs::path(out) / p.filename()).string();
}

struct identity {
  dev_t device;
  ino_t inode;
  bool operator==(const identity& o) const { return device == o.device && inode == o.inode; }
};

std::optional<struct stat> status_of(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) return std::nullopt;
  return info;
}

// An output's target: the resolved path and, when it exists, what it is.
struct target {
  std::string path;
  std::optional<struct stat> status;
};

std::string said(const named_path& p) { return p.what + " " + in_quotes(p.path); }

target output_target(const named_path& output) {
  const auto refuse = [&](const std::string& problem) { throw file_rule_error(said(output) + " " + problem); };
  if (output.path.empty()) throw file_rule_error(output.what + ": the path is empty: give a file name");
  struct stat link {};
  if (::lstat(output.path.c_str(), &link) == 0 && S_ISLNK(link.st_mode)) {
    struct stat info {};
    if (::stat(output.path.c_str(), &info) != 0)
      refuse(unreachable(output.path, errno) + ": kamp creates no file through a symbolic link; give a real path");
  }
  target t{resolved(output.path), std::nullopt};
  if (t.path.empty()) {
    const fs::path p(output.path);
    refuse("cannot be written: its directory " + in_quotes(p.parent_path().string()) +
           " does not exist; create it first or give another path");
  }
  t.status = status_of(t.path);
  if (!t.status && errno != ENOENT) refuse(unreachable(output.path, errno));
  return t;
}

// Throws when `t`, an existing regular file, is one of `inputs` or lies in an input directory.
void refuse_inputs(const named_path& output, const target& t, const std::vector<named_path>& inputs) {
  for (const named_path& input : inputs) {
    const std::optional<struct stat> in = status_of(input.path);
    if (!in) continue;
    if (S_ISDIR(in->st_mode)) {
      const std::string dir = resolved(input.path);
      if (!dir.empty() && t.path.compare(0, dir.size() + 1, dir + "/") == 0)
        throw file_rule_error(said(output) + " is inside " + said(input) +
                              ", which is read as input: a later run would read it back; give a path outside it");
    } else if (t.status && S_ISREG(t.status->st_mode) &&
               identity{t.status->st_dev, t.status->st_ino} == identity{in->st_dev, in->st_ino}) {
      throw file_rule_error(said(output) + " is the same file as " + said(input) +
                            ": writing it would destroy that input; give the output another path");
    }
  }
}

void refuse_target(const named_path& output, output_kind kind, const target& t) {
  const auto refuse = [&](const std::string& problem) { throw file_rule_error(said(output) + " " + problem); };
  if (!t.status) {
    const std::string dir = fs::path(t.path).parent_path().string();
    if (::access(dir.c_str(), W_OK) != 0)
      refuse("cannot be created: its directory " + in_quotes(dir) + " is not writable (" + std::strerror(errno) +
             "); give another path");
    return;
  }
  const mode_t mode = t.status->st_mode;
  if (S_ISDIR(mode)) refuse("is a directory: name a file (in it, or elsewhere)");
  const bool streamable = S_ISCHR(mode) || S_ISFIFO(mode);
  if (!S_ISREG(mode) && !(kind == output_kind::stream && streamable))
    refuse("is " + kind_of(mode) + ", not a regular file: kamp would " +
           (kind == output_kind::document ? "replace it with a file" : "not be able to write it") +
           "; give the path of a file");
  if (S_ISREG(mode) && t.status->st_uid != ::geteuid())
    refuse("belongs to another user (uid " + std::to_string(t.status->st_uid) +
           "): kamp writes only files of the user it runs as" +
           (t.path != output.path ? " (the path leads there through a symbolic link)" : std::string()) +
           "; give another path");
}

std::string random_suffix() {
  static std::atomic<std::uint64_t> counter{0};
  std::uint64_t x = std::uint64_t(::getpid()) << 32 ^ counter++ ^
                    std::uint64_t(std::chrono::steady_clock::now().time_since_epoch().count());
  // splitmix64's finalizer: neighbouring counters give unrelated names.
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  x ^= x >> 31;
  static const char digits[] = "0123456789abcdefghijklmnopqrstuvwxyz";
  std::string s;
  for (int i = 0; i < 8; ++i, x /= 36) s += digits[x % 36];
  return s;
}

}  // namespace

std::string special_file_kind(const std::string& path) {
  const std::optional<struct stat> info = status_of(path);
  if (!info || S_ISDIR(info->st_mode)) return "";
  return kind_of(info->st_mode);
}

std::string input_file_problem(const std::string& path, const std::string& noun) {
  if (path.empty()) return "is an empty path: give " + noun;
  const std::optional<struct stat> info = status_of(path);
  if (!info) return unreachable(path, errno);
  if (!S_ISREG(info->st_mode)) return "is " + kind_of(info->st_mode) + ", not " + noun;
  if (::access(path.c_str(), R_OK) != 0) return std::string("cannot be read: ") + std::strerror(errno);
  return "";
}

void require_input_file(const named_path& input) {
  if (const std::string problem = input_file_problem(input.path, input.noun); !problem.empty())
    throw file_rule_error(said(input) + " " + problem);
}

int open_input_file(const named_path& input) {
  require_input_file(input);
  // The path may have been replaced since the check: O_NONBLOCK keeps a FIFO from blocking the
  // open, and fstat checks what was opened.
  const int fd = ::open(input.path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw file_rule_error(said(input) + " cannot be opened: " + std::strerror(errno));
  struct stat info {};
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    ::close(fd);
    throw file_rule_error(said(input) + " was replaced by " + kind_of(info.st_mode) + " while being opened, not " +
                          input.noun);
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

std::string read_input_file(const named_path& input) {
  const int fd = open_input_file(input);
  std::string text;
  char block[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, block, sizeof block);
    if (n == 0) break;
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      ::close(fd);
      throw file_rule_error(said(input) + ": reading it failed: " + std::strerror(error));
    }
    text.append(block, std::size_t(n));
  }
  ::close(fd);
  return text;
}

namespace {

// check_output's verdict, keeping the target it resolved: opening the file uses that path.
target checked_target(const named_path& output, output_kind kind, const std::vector<named_path>& inputs,
                      const std::vector<named_path>& others) {
  const target t = output_target(output);
  refuse_target(output, kind, t);
  refuse_inputs(output, t, inputs);
  for (const named_path& other : others) {
    if (other.path.empty() || (other.what == output.what && other.path == output.path)) continue;
    const std::string theirs = resolved(other.path);
    if (!theirs.empty() && theirs == t.path && !(t.status && !S_ISREG(t.status->st_mode)))
      throw file_rule_error(said(output) + " is the same file as " + said(other) +
                            ": each output needs a file of its own; give one of them another path");
  }
  return t;
}

}  // namespace

void check_output(const named_path& output, output_kind kind, const std::vector<named_path>& inputs,
                  const std::vector<named_path>& others) {
  checked_target(output, kind, inputs, others);
}

std::FILE* open_output_stream(const named_path& output, bool append, const std::vector<named_path>& inputs) {
  const std::string path = checked_target(output, output_kind::stream, inputs, {}).path;
  // O_NOFOLLOW: the resolved path ends in no link unless one was planted since the check.
  // O_NONBLOCK: a FIFO without a reader fails (ENXIO) instead of blocking. No O_TRUNC before
  // the opened file is known to be the one checked.
  const int fd =
      ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | (append ? O_APPEND : 0), 0666);
  if (fd < 0) {
    const int error = errno;
    if (error == ENXIO)
      throw file_rule_error(said(output) + " is a FIFO that no process reads: start its reader first");
    throw file_rule_error(said(output) + " cannot be opened for writing: " + std::strerror(error));
  }
  struct stat info {};
  const bool regular = ::fstat(fd, &info) == 0 && S_ISREG(info.st_mode);
  try {
    if (regular) {
      refuse_target(output, output_kind::stream, {path, info});
      refuse_inputs(output, {path, info}, inputs);
      if (!append && ::ftruncate(fd, 0) != 0)
        throw file_rule_error(said(output) + " cannot be emptied: " + std::strerror(errno));
    }
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  std::FILE* stream = ::fdopen(fd, append ? "a" : "w");
  if (stream == nullptr) {
    const int error = errno;
    ::close(fd);
    throw file_rule_error(said(output) + " cannot be opened for writing: " + std::strerror(error));
  }
  return stream;
}

replacement_file::replacement_file(const named_path& output, const std::vector<named_path>& inputs) : output_(output) {
  target_ = checked_target(output, output_kind::document, inputs, {}).path;
  for (int attempt = 0; attempt < 100 && stream_ == nullptr; ++attempt) {
    temporary_ = target_ + ".tmp-" + random_suffix();
    const int fd = ::open(temporary_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd < 0 && errno == EEXIST) continue;
    if (fd < 0)
      throw file_rule_error(said(output) + ": cannot create the temporary file " + in_quotes(temporary_) + ": " +
                            std::strerror(errno));
    stream_ = ::fdopen(fd, "wb");
    if (stream_ == nullptr) {
      ::close(fd);
      ::unlink(temporary_.c_str());
      throw file_rule_error(said(output) + ": cannot write the temporary file " + in_quotes(temporary_));
    }
  }
  if (stream_ == nullptr)
    throw file_rule_error(said(output) + ": no free name for a temporary file beside it (100 tries)");
}

replacement_file::~replacement_file() {
  if (stream_ == nullptr) return;
  std::fclose(stream_);
  ::unlink(temporary_.c_str());
}

void replacement_file::commit() {
  const auto fail = [&](const std::string& why) {
    if (stream_ != nullptr) std::fclose(stream_);
    stream_ = nullptr;
    ::unlink(temporary_.c_str());
    throw file_rule_error(said(output_) + ": writing failed: " + why);
  };
  errno = 0;
  if (std::fflush(stream_) != 0 || std::ferror(stream_))
    fail(errno != 0 ? std::strerror(errno) : "an earlier write failed");
  if (::fsync(::fileno(stream_)) != 0) fail(std::string("fsync: ") + std::strerror(errno));
  std::FILE* closing = stream_;
  stream_ = nullptr;
  if (std::fclose(closing) != 0) {
    const int error = errno;
    ::unlink(temporary_.c_str());
    throw file_rule_error(said(output_) + ": writing failed: close: " + std::strerror(error));
  }
  if (std::rename(temporary_.c_str(), target_.c_str()) != 0) {
    const int error = errno;
    ::unlink(temporary_.c_str());
    throw file_rule_error(said(output_) + ": cannot rename " + in_quotes(temporary_) +
                          " over it: " + std::strerror(error));
  }
  // The rename is durable only once the directory entry is.
  const std::string dir = fs::path(target_).parent_path().string();
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

std::string clear_temporary_path(const std::string& path) {
  // Nothing there is nothing to remove (unlink would say EROFS on a read-only file system, before
  // the create that names the real problem).
  struct stat entry {};
  if (::lstat(path.c_str(), &entry) != 0 && errno == ENOENT) return "";
  if (::unlink(path.c_str()) == 0 || errno == ENOENT) return "";
  return "cannot remove the leftover " + in_quotes(path) + " (" + std::strerror(errno) +
         "); remove it by hand, then write again";
}

}  // namespace kamp
