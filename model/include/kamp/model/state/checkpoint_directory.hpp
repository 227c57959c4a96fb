#ifndef KAMP_MODEL_STATE_CHECKPOINT_DIRECTORY_HPP
#define KAMP_MODEL_STATE_CHECKPOINT_DIRECTORY_HPP

#include <kamp/model/dist/communicator.hpp>
#include <kamp/model/state/training_state.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace kamp {

/// \brief A directory of checkpoints named step-<8-digit step>.h5 that keeps the newest `keep`.
class checkpoint_directory {
 public:
  /// Creates the directory if needed. Throws checkpoint_error if it cannot, or keep < 1.
  checkpoint_directory(std::string path, int keep);

  /// Writes `state` as step-<steps_taken>.h5 (atomically), then deletes all but the newest
  /// `keep` checkpoints and any temporary file an interrupted write left. Returns the path.
  /// With several ranks, collective: each passes its slice (write_checkpoint); rank 0 manages
  /// the directory.
  std::string save(const training_state& state, const dist::communicator& ranks = {}) const;
  /// The checkpoint files, newest (highest step) first. Names like step-<digits>.h5 whose number
  /// does not fit a step counter are left out and reported by unparsable().
  std::vector<std::string> list() const;
  /// The files the last list() left out because their step number does not parse.
  const std::vector<std::string>& unparsable() const { return unparsable_; }
  /// Throws checkpoint_error unless a file can be created in the directory and its file system
  /// has room for a checkpoint of `bytes` (found before training, not at the first write; save
  /// checks again before each write). The message tells no free inodes from no free bytes.
  void check_room(std::uint64_t bytes) const;
  /// Renames the checkpoints of steps after `step` to <name>.abandoned (out of list()'s sight),
  /// so that a run resumed from an older file does not later continue the abandoned branch.
  /// Returns the new names.
  std::vector<std::string> retire_after(std::int64_t step) const;
  /// Deletes every checkpoint file of the directory (and leftovers of killed writes).
  void clear() const;
  const std::string& path() const { return path_; }

 private:
  void remove_leftovers() const;
  /// (step, path) of each checkpoint file, highest step first; fills unparsable_.
  std::vector<std::pair<std::int64_t, std::string>> steps() const;
  std::string path_;
  int keep_;
  mutable std::vector<std::string> unparsable_;
};

}  // namespace kamp

#endif
