#include <kamp/model/dist/agree.hpp>
#include <kamp/model/state/checkpoint.hpp>
#include <kamp/model/state/checkpoint_directory.hpp>
#include <kamp/model/state/file_rules.hpp>

#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <regex>

namespace kamp {

namespace fs = std::filesystem;

namespace {
const std::regex checkpoint_name(R"(step-([0-9]+)\.h5)");
}  // namespace

checkpoint_directory::checkpoint_directory(std::string path, int keep) : path_(std::move(path)), keep_(keep) {
  if (keep < 1) throw checkpoint_error("checkpoints to keep must be >= 1, got " + std::to_string(keep));
  std::error_code error;
  fs::create_directories(path_, error);
  if (error || !fs::is_directory(path_))
    throw checkpoint_error("cannot create checkpoint directory '" + path_ +
                           "': " + (error ? error.message() : "a file of that name exists"));
}

std::vector<std::pair<std::int64_t, std::string>> checkpoint_directory::steps() const {
  std::vector<std::pair<std::int64_t, std::string>> found;
  unparsable_.clear();
  for (const auto& entry : fs::directory_iterator(path_)) {
    std::smatch m;
    const std::string name = entry.path().filename().string();
    if (!entry.is_regular_file() || !std::regex_match(name, m, checkpoint_name)) continue;
    // A step number past int64 (a stray file) names no checkpoint this kamp wrote.
    const std::string digits = m[1].str();
    std::int64_t step = 0;
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), step);
    if (error != std::errc() || end != digits.data() + digits.size()) {
      unparsable_.push_back(entry.path().string());
      continue;
    }
    found.emplace_back(step, entry.path().string());
  }
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  return found;
}

std::vector<std::string> checkpoint_directory::list() const {
  std::vector<std::string> out;
  for (auto& f : steps()) out.push_back(std::move(f.second));
  return out;
}

namespace {

// Sizes in the unit a reader compares at a glance: 0.06 MiB, 1.33 MiB, 2048.00 MiB.
std::string mebibytes(std::uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f MiB", double(bytes) / double(1u << 20));
  return text;
}

// Why no file can be created in `dir` (open's `error`): a file system without free inodes
// reports ENOSPC as a full disk does, so the inodes are counted apart from the bytes.
std::string no_new_file(const std::string& dir, int error) {
  struct statvfs info {};
  if (::statvfs(dir.c_str(), &info) != 0 || (error != ENOSPC && error != EDQUOT))
    return "checkpoint directory '" + dir + "' is not writable (" + std::strerror(error) +
           "): give a --checkpoint-dir this job can write to";
  if (info.f_files > 0 && info.f_favail == 0)
    return "no free inodes (0 of " + std::to_string(info.f_files) + ") on the file system of checkpoint directory '" +
           dir + "' (" + mebibytes(std::uint64_t(info.f_bavail) * info.f_frsize) +
           " free): a checkpoint needs a new file there; delete files on it or give another --checkpoint-dir";
  return "checkpoint directory '" + dir + "' has no room for a new file (" + std::strerror(error) + "; " +
         mebibytes(std::uint64_t(info.f_bavail) * info.f_frsize) + " free, " + std::to_string(info.f_favail) + " of " +
         std::to_string(info.f_files) + " inodes free): free space there or give another --checkpoint-dir";
}

}  // namespace

void checkpoint_directory::check_room(std::uint64_t bytes) const {
  const fs::path probe = fs::path(path_) / ".kamp-write-probe";
  // Created new (O_EXCL | O_NOFOLLOW): a file or link planted under the probe's name is removed,
  // never written through.
  if (const std::string leftover = clear_temporary_path(probe.string()); !leftover.empty())
    throw checkpoint_error("checkpoint directory '" + path_ + "': " + leftover);
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) throw checkpoint_error(no_new_file(path_, errno));
  ::close(fd);
  std::error_code error;
  fs::remove(probe, error);
  const fs::space_info space = fs::space(path_, error);
  // Room for the new file while the previous one still exists (it goes only after the rename).
  const std::uint64_t needed = bytes + bytes / 16 + (1u << 20);
  if (!error && space.available < needed)
    throw checkpoint_error("checkpoint directory '" + path_ + "' has " + mebibytes(space.available) +
                           " free, a checkpoint of this model needs about " + mebibytes(needed) +
                           ": free space there or give another --checkpoint-dir");
}

std::vector<std::string> checkpoint_directory::retire_after(std::int64_t step) const {
  std::vector<std::string> retired;
  for (const auto& [s, path] : steps()) {
    if (s <= step) continue;
    const std::string to = path + ".abandoned";
    if (std::rename(path.c_str(), to.c_str()) != 0)
      throw checkpoint_error("cannot rename '" + path + "' to '" + to + "': " + std::strerror(errno));
    retired.push_back(to);
  }
  return retired;
}

std::string checkpoint_directory::save(const training_state& state, const dist::communicator& ranks) const {
  char name[32];
  std::snprintf(name, sizeof name, "step-%08lld.h5", static_cast<long long>(state.steps_taken));
  const std::string path = (fs::path(path_) / name).string();
  // The disk may have filled up since the last checkpoint: say so before writing, naming sizes.
  const std::string problem = dist::agree<checkpoint_error>(ranks, "rank 0 found no room for the checkpoint", [&] {
    if (ranks.rank() == 0) check_room(checkpoint_tensor_bytes(state.model, state.policy));
  });
  if (!problem.empty()) throw checkpoint_error(problem);
  write_checkpoint(path, state, ranks);
  if (ranks.rank() != 0) return path;
  // Only after the new checkpoint is durable do older ones and leftovers of killed writes go;
  // the new one stays even if files of higher steps are there.
  auto all = list();
  all.erase(std::remove(all.begin(), all.end(), path), all.end());
  std::error_code ignored;  // another process may have removed a file first
  for (std::size_t i = std::size_t(keep_ - 1); i < all.size(); ++i) fs::remove(all[i], ignored);
  remove_leftovers();
  return path;
}

void checkpoint_directory::remove_leftovers() const {
  std::error_code ignored;
  for (const auto& entry : fs::directory_iterator(path_)) {
    const std::string file = entry.path().filename().string();
    if (file.size() > 4 && file.compare(file.size() - 4, 4, ".tmp") == 0 &&
        std::regex_match(file.substr(0, file.size() - 4), checkpoint_name))
      fs::remove(entry.path(), ignored);
  }
}

void checkpoint_directory::clear() const {
  std::error_code ignored;
  for (const auto& file : list()) fs::remove(file, ignored);
  remove_leftovers();
}

}  // namespace kamp
