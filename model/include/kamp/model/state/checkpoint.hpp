#ifndef KAMP_MODEL_STATE_CHECKPOINT_HPP
#define KAMP_MODEL_STATE_CHECKPOINT_HPP

#include <kamp/model/dist/communicator.hpp>
#include <kamp/model/state/training_state.hpp>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace kamp {

/// \brief A checkpoint cannot be written, read, or is not what it must be. The message names
/// the file, the object in it (dataset, attribute) and what was expected.
class checkpoint_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The checkpoint format this kamp writes; it reads versions 1 to 4 (docs/checkpoint.md: 2 adds
/// per-tensor content hashes, 3 makes them sums over positions that ranks compute in parts, 4
/// binds each hash to its tensor's name, role, type and shape and adds a digest of the file's
/// description and table of contents).
inline constexpr std::int64_t checkpoint_format_version = 4;

/// What a reader accepts beyond a file it can verify completely.
struct checkpoint_read_options {
  /// Read a format-1 file, which has no content hashes: a zeroed chunk (values and Fletcher-32
  /// checksum) would go unnoticed in it. Off by default, since lowering a newer file's version
  /// to 1 after deleting its hashes would otherwise switch the verification off.
  bool accept_unhashed = false;
};

/// Writes `state` (all of it, state.slice whole) as an HDF5 checkpoint at `path`, atomically:
/// into "<path>.tmp" beside it, flushed and fsync'ed, renamed to `path`, then the directory
/// fsync'ed. A crash at any moment leaves `path` as it was or complete, never partly written.
void write_checkpoint(const std::string& path, const training_state& state);
/// The same file from the ranks of a data-parallel run, each passing its own slice
/// (trainer::state()); the slices must cover the flat buffers. Collective: with parallel HDF5
/// every rank writes its slices into the one file (MPI-IO, collective transfers), so no rank
/// ever holds more than its slice; rank 0 commits the file once all have closed it.
void write_checkpoint(const std::string& path, const training_state& state, const dist::communicator& ranks);

/// Reads a checkpoint and checks all of it before returning: format and version, every
/// attribute, each dataset's presence, element type and shape (from the stored model shape and
/// precision mode), and every chunk's Fletcher-32 checksum (HDF5 checksums the metadata).
/// Throws checkpoint_error naming the file and what is wrong.
training_state read_checkpoint(const std::string& path, const checkpoint_read_options& options = {});
/// Elements `slice` of every tensor of the checkpoint (a rank's shard), whatever number of ranks
/// wrote it: resharding N -> M without a gather. The same checks, collective over `ranks`: every
/// rank throws if one fails. The content hashes are summed over the ranks' parts, so they are
/// checked when the slices cover the flat buffers (each rank its shard); otherwise Fletcher-32
/// alone guards the values read.
training_state read_checkpoint(const std::string& path, const dist::communicator& ranks, element_range slice,
                               const checkpoint_read_options& options = {});

/// The bytes of the tensors a checkpoint of this model and policy holds (the file is this plus
/// some kB of metadata).
std::uint64_t checkpoint_tensor_bytes(const gpt_config& model, const precision_policy& policy);

}  // namespace kamp

#endif
