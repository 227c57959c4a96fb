#ifndef KAMP_MODEL_STATE_FILE_RULES_HPP
#define KAMP_MODEL_STATE_FILE_RULES_HPP

// The two rules every kamp program opens files by, so that no program has its own:
// - an input is a regular file (symbolic links followed), checked before any open() that could
//   block on a FIFO or read a device forever;
// - an output is never an input (by device and inode, after resolving symbolic links), never a
//   file of another user, and is written either in place (streams: --metrics) or through a
//   temporary file created with O_EXCL | O_NOFOLLOW in its directory and renamed over it
//   (documents: checkpoints, llm.c exports, --summary). Both are checked before a run starts and
//   again when the file is opened.

#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

namespace kamp {

/// A path that breaks the input or the output rule; what() names the option, the path, what it
/// is instead and the fix.
class file_rule_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A path a program was given, with what names it in messages and, for an input, what it should
/// be: {"--data", "corpus.txt", "a text file"}.
struct named_path {
  std::string what;
  std::string path;
  std::string noun = "a regular file";
};

/// What `path` is when it is neither a regular file nor a directory: "a FIFO (named pipe)", "a
/// character device", "a block device" or "a socket". Empty for regular files, directories and
/// paths that do not exist. Symbolic links are followed.
std::string special_file_kind(const std::string& path);

/// Why `path` breaks the input rule, as the rest of a sentence that begins with the path ("is a
/// FIFO (named pipe), not a checkpoint file" for noun "a checkpoint file"); empty when it is a
/// readable regular file. Nothing is opened.
std::string input_file_problem(const std::string& path, const std::string& noun);

/// The input rule: throws file_rule_error "<what> '<path>' <problem>" unless `input.path` names a regular file (after
/// symbolic links), saying what it is instead: missing, a directory, a FIFO, a device, a loop of
/// symbolic links, unreadable. Nothing is opened.
void require_input_file(const named_path& input);

/// Opens `input` for reading under the input rule without ever blocking (O_NONBLOCK, then the
/// opened file checked again with fstat). Returns the descriptor, which the caller closes.
int open_input_file(const named_path& input);

/// The whole content of an input file, read under the input rule.
std::string read_input_file(const named_path& input);

/// How an output is written.
enum class output_kind {
  document,  ///< replaced whole through a temporary file: the target is absent or a regular file
  stream,    ///< written in place (appended on a resume): also a character device or a FIFO with a reader
};

/// The output rule, before anything is written: throws file_rule_error when `output` is (after
/// symbolic links) one of `inputs` or inside an input directory, the same file as another of
/// `others`, a file of another user, a directory, a device or FIFO where a document is written,
/// a symbolic link to nothing, or in a directory that does not exist.
void check_output(const named_path& output, output_kind kind, const std::vector<named_path>& inputs = {},
                  const std::vector<named_path>& others = {});

/// Opens a stream output (checked again with check_output against `inputs`); "a" appends.
std::FILE* open_output_stream(const named_path& output, bool append, const std::vector<named_path>& inputs = {});

/// \brief A document output being written: a new temporary file beside its target (created
/// with O_EXCL | O_NOFOLLOW, so a planted file or link there is never written through), renamed
/// over the target by commit() after an fsync, removed if never committed.
class replacement_file {
 public:
  /// Checks `output` (check_output, document) and creates the temporary file.
  explicit replacement_file(const named_path& output, const std::vector<named_path>& inputs = {});
  replacement_file(const replacement_file&) = delete;
  replacement_file& operator=(const replacement_file&) = delete;
  ~replacement_file();
  /// The temporary file, open for writing.
  std::FILE* stream() const { return stream_; }
  /// Flushes, syncs and closes the temporary file, then renames it over the target and syncs
  /// the directory. Throws file_rule_error naming the output and the reason.
  void commit();

 private:
  named_path output_;
  std::string target_, temporary_;
  std::FILE* stream_ = nullptr;
};

/// Makes room for a temporary file another library creates with O_EXCL (HDF5's H5F_ACC_EXCL):
/// removes a leftover entry at `path` (a killed write's file, or a planted symbolic link, which
/// is removed itself and never followed). Returns an error text, empty on success.
std::string clear_temporary_path(const std::string& path);

}  // namespace kamp

#endif
