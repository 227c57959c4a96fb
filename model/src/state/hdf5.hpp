#ifndef KAMP_MODEL_SRC_STATE_HDF5_HPP
#define KAMP_MODEL_SRC_STATE_HDF5_HPP

#include <kamp/kernels/element_range.hpp>
#include <kamp/numeric/dtype.hpp>

#include <kamp/config.hpp>

#include <hdf5.h>

#include <cstdint>
#include <string>
#include <vector>

// A thin RAII layer over the HDF5 C API for the checkpoint: every failure becomes a
// kamp::checkpoint_error naming the object and carrying HDF5's own explanation.
namespace kamp::detail::h5 {

/// An HDF5 identifier that closes itself.
class handle {
 public:
  handle() = default;
  handle(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  handle(handle&& o) noexcept : id_(o.id_), close_(o.close_) { o.id_ = H5I_INVALID_HID; }
  handle& operator=(handle&& o) noexcept;
  handle(const handle&) = delete;
  handle& operator=(const handle&) = delete;
  ~handle() { reset(); }

  hid_t get() const { return id_; }
  /// Closes now and reports failure (a destructor cannot): a file's last writes happen here.
  void close(const std::string& what);

 private:
  void reset();
  hid_t id_ = H5I_INVALID_HID;
  herr_t (*close_)(hid_t) = nullptr;
};

/// Throws checkpoint_error("<what>: <HDF5's innermost messages>") and clears HDF5's error stack.
/// Within a collective_failures scope it calls that scope's handler first.
[[noreturn]] void fail(const std::string& what);

/// \brief While it lives, an HDF5 failure calls `handler` (which must not return) instead of
/// throwing: a rank that fails inside a parallel file's collective calls must end the job, since
/// unwinding would close the file collectively and wait for ranks that never get there.
class collective_failures {
 public:
  explicit collective_failures(void (*handler)(const std::string& message, const void* context), const void* context);
  ~collective_failures();
  collective_failures(const collective_failures&) = delete;
  collective_failures& operator=(const collective_failures&) = delete;
};

/// The file type of `t`: IEEE little-endian binary32/64, IEEE binary16, and bfloat16 as an HDF5
/// user-defined float (sign 15, exponent 7..14, mantissa 0..6, bias 127): h5dump prints its
/// values and h5py reads it into float32 exactly.
handle file_type(dtype t);
/// The same layout in the host's byte order, for reading and writing memory.
handle memory_type(dtype t);
/// "16-bit float (bf16 layout)", "64-bit integer", ...: what a dataset's type is, for messages.
std::string describe_type(hid_t type);

/// Creates `path`, which must not exist: HDF5 opens it with O_EXCL, so nothing planted there
/// (a file, a symbolic link) is written through.
handle create_file(const std::string& path);
handle open_file(const std::string& path);
handle create_group(hid_t parent, const std::string& name);
/// Opens group `name` after checking it exists under that one name (a hard link giving one group
/// two names is refused, as open_dataset refuses a dataset's).
handle open_group(hid_t parent, const std::string& name, const std::string& path_for_messages);
bool has_attribute(hid_t object, const std::string& name);

void write_attribute(hid_t object, const std::string& name, std::int64_t value);
void write_attribute(hid_t object, const std::string& name, std::uint64_t value);
void write_attribute(hid_t object, const std::string& name, double value);
void write_attribute(hid_t object, const std::string& name, const std::string& value);
std::int64_t read_int_attribute(hid_t object, const std::string& name, const std::string& where);
std::uint64_t read_uint_attribute(hid_t object, const std::string& name, const std::string& where);
double read_float_attribute(hid_t object, const std::string& name, const std::string& where);
std::string read_string_attribute(hid_t object, const std::string& name, const std::string& where);

#ifdef KAMP_HAVE_PARALLEL_HDF5
/// Creates `path` for the ranks of `comm` to write together (MPI-IO driver, collective metadata):
/// every rank calls it, and then every function that creates an object, with the same arguments.
handle create_parallel_file(const std::string& path, MPI_Comm comm);
#endif

/// A dataset of `shape` in type `t`, chunked with a Fletcher-32 checksum per chunk, of which
/// this process writes `part` (elements in row-major order over the shape) from `data` (collectively: every rank of a
/// parallel file calls it, possibly with an empty part), and `hash` (content_hash() of all its elements) in the
/// attribute `content_hash`.
void write_dataset(hid_t parent, const std::string& name, dtype t, const std::vector<std::size_t>& shape,
                   const void* data, element_range part, std::uint64_t hash, bool collective);
/// Opens dataset `name` after checking it exists with element type `t` and `shape`, under that
/// one name (not a soft link to another object, nor one object reachable under two names through
/// hard links); each problem throws naming `where`.
handle open_dataset(hid_t parent, const std::string& name, dtype t, const std::vector<std::size_t>& shape,
                    const std::string& where);
/// The content hash of format 3: Σ mix(i · 2^32 + bits of element i) mod 2^64 over elements
/// `first` ... `first + count - 1` of a dataset (their values at `data`), so that the ranks' parts
/// add up to the whole dataset's hash. Position-keyed: a zeroed chunk or swapped values change it.
std::uint64_t content_hash(const void* data, dtype t, std::size_t first, std::size_t count);
/// What a dataset is, as a term of format 4's content hash: its path in the file (role and tensor
/// name), element type and shape, so that a tensor's values stored under another tensor's name
/// (two tensors of one shape swapped) no longer match the hash written for that name.
std::uint64_t identity_hash(const std::string& path, dtype t, const std::vector<std::size_t>& shape);
/// Format 2's content hash: FNV-1a (64-bit) of all the dataset's bytes.
std::uint64_t sequential_content_hash(const void* data, std::size_t bytes);
/// Reads `part` of a dataset opened by open_dataset into `out`; a failed checksum throws naming
/// `where`.
void read_elements(const handle& set, dtype t, const std::vector<std::size_t>& shape, void* out, element_range part,
                   const std::string& where);

}  // namespace kamp::detail::h5

#endif
