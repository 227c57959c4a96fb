#include "state/hdf5.hpp"

#include <kamp/model/state/checkpoint.hpp>

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace kamp::detail::h5 {

namespace {

// HDF5 prints its error stack to stderr by default; kamp reports errors itself. And HDF5's
// exit-time cleanup is off: a file whose flush failed (a full disk) stays in HDF5's tables after
// its failed close, and closing it again at exit crashed in H5F__close_cb. kamp closes every
// file it opens itself, so there is nothing for that cleanup to do. (H5dont_atexit must come
// before any other HDF5 call, hence a static initializer.)
const bool quiet = [] {
  H5dont_atexit();
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  return true;
}();

herr_t collect(unsigned, const H5E_error2_t* e, void* out) {
  auto& messages = *static_cast<std::vector<std::string>*>(out);
  if (e->desc && *e->desc && std::find(messages.begin(), messages.end(), e->desc) == messages.end())
    messages.emplace_back(e->desc);
  return 0;
}

handle checked(hid_t id, herr_t (*close)(hid_t), const std::string& what) {
  if (id < 0) fail(what);
  return handle(id, close);
}

void check(herr_t status, const std::string& what) {
  if (status < 0) fail(what);
}

// IEEE binary16 and bfloat16 as HDF5 float types derived from binary32 in the given byte order.
handle sixteen_bit_float(hid_t binary32, std::size_t exponent_bits, std::size_t mantissa_bits, std::size_t bias) {
  handle t = checked(H5Tcopy(binary32), H5Tclose, "copying the binary32 type");
  check(H5Tset_fields(t.get(), 15, mantissa_bits, exponent_bits, 0, mantissa_bits), "setting 16-bit float fields");
  check(H5Tset_offset(t.get(), 0), "setting the 16-bit float offset");
  check(H5Tset_precision(t.get(), 16), "setting the 16-bit float precision");
  check(H5Tset_size(t.get(), 2), "setting the 16-bit float size");
  check(H5Tset_ebias(t.get(), bias), "setting the 16-bit float exponent bias");
  return t;
}

handle float_type(dtype t, hid_t binary32, hid_t binary64) {
  switch (t) {
    case dtype::fp32:
      return checked(H5Tcopy(binary32), H5Tclose, "copying the fp32 type");
    case dtype::fp64:
      return checked(H5Tcopy(binary64), H5Tclose, "copying the fp64 type");
    case dtype::bf16:
      return sixteen_bit_float(binary32, 8, 7, 127);
    case dtype::fp16:
      return sixteen_bit_float(binary32, 5, 10, 15);
    default:
      break;
  }
  throw checkpoint_error(std::string("no checkpoint dataset is stored as ") + name(t) +
                         ": FP8 copies are made again from the master weights");
}

handle attribute_space() { return checked(H5Screate(H5S_SCALAR), H5Sclose, "creating a scalar dataspace"); }

handle open_attribute(hid_t object, const std::string& name, H5T_class_t expected, const char* kind,
                      const std::string& where) {
  const htri_t exists = H5Aexists(object, name.c_str());
  if (exists <= 0)
    throw checkpoint_error(where + ": attribute '" + name + "' is missing (expected " + kind +
                           "); the file was not written by this kamp checkpoint format");
  handle a =
      checked(H5Aopen(object, name.c_str(), H5P_DEFAULT), H5Aclose, where + ": opening attribute '" + name + "'");
  handle type = checked(H5Aget_type(a.get()), H5Tclose, where + ": type of attribute '" + name + "'");
  handle space = checked(H5Aget_space(a.get()), H5Sclose, where + ": dataspace of attribute '" + name + "'");
  if (H5Tget_class(type.get()) != expected || H5Sget_simple_extent_npoints(space.get()) != 1)
    throw checkpoint_error(where + ": attribute '" + name + "' is " + describe_type(type.get()) + ", expected one " +
                           kind);
  return a;
}

}  // namespace

handle& handle::operator=(handle&& o) noexcept {
  if (this != &o) {
    reset();
    id_ = o.id_;
    close_ = o.close_;
    o.id_ = H5I_INVALID_HID;
  }
  return *this;
}

void handle::reset() {
  if (id_ >= 0 && close_) close_(id_);
  id_ = H5I_INVALID_HID;
}

void handle::close(const std::string& what) {
  const hid_t id = id_;
  id_ = H5I_INVALID_HID;
  if (id >= 0 && close_(id) < 0) fail(what);
}

namespace {
void (*failure_handler)(const std::string&, const void*) = nullptr;
const void* failure_context = nullptr;
}  // namespace

collective_failures::collective_failures(void (*handler)(const std::string&, const void*), const void* context) {
  failure_handler = handler;
  failure_context = context;
}

collective_failures::~collective_failures() {
  failure_handler = nullptr;
  failure_context = nullptr;
}

void fail(const std::string& what) {
  std::vector<std::string> messages;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, collect, &messages);
  H5Eclear2(H5E_DEFAULT);
  std::string detail;
  // The innermost messages say what actually went wrong ("truncated file", "checksum failed").
  const std::size_t from = messages.size() > 2 ? messages.size() - 2 : 0;
  for (std::size_t i = from; i < messages.size(); ++i) detail += (detail.empty() ? "" : "; ") + messages[i];
  const std::string message = detail.empty() ? what : what + " (HDF5: " + detail + ")";
  if (failure_handler != nullptr) failure_handler(message, failure_context);
  throw checkpoint_error(message);
}

handle file_type(dtype t) { return float_type(t, H5T_IEEE_F32LE, H5T_IEEE_F64LE); }
handle memory_type(dtype t) { return float_type(t, H5T_NATIVE_FLOAT, H5T_NATIVE_DOUBLE); }

std::string describe_type(hid_t type) {
  const std::string bits = std::to_string(8 * H5Tget_size(type)) + "-bit ";
  switch (H5Tget_class(type)) {
    case H5T_INTEGER:
      return bits + "integer";
    case H5T_STRING:
      return "a string";
    case H5T_FLOAT:
      for (const dtype t : {dtype::fp32, dtype::fp64, dtype::bf16, dtype::fp16})
        if (H5Tequal(type, file_type(t).get()) > 0 || H5Tequal(type, memory_type(t).get()) > 0)
          return bits + "float (" + name(t) + ")";
      return bits + "float of a layout kamp does not use";
    default:
      return "a non-numeric type";
  }
}

handle create_file(const std::string& path) {
  handle fapl = checked(H5Pcreate(H5P_FILE_ACCESS), H5Pclose, "creating file access properties");
  // The 1.10 format checksums all metadata (superblock, object headers, chunk indices).
  check(H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_LATEST, H5F_LIBVER_LATEST), "choosing the HDF5 1.10 format");
  // The file is built in memory and written out whole at the flush (HDF5's core driver with a
  // backing store): a full disk then fails that write and HDF5 reports it. Written chunk by chunk,
  // HDF5 2.2 either returned success for a failed write or aborted on an assertion when closing.
  check(H5Pset_fapl_core(fapl.get(), std::size_t(1) << 20, 1), "choosing HDF5's in-memory driver");
  return checked(H5Fcreate(path.c_str(), H5F_ACC_EXCL, H5P_DEFAULT, fapl.get()), H5Fclose,
                 "cannot create '" + path + "'");
}

#ifdef KAMP_HAVE_PARALLEL_HDF5
handle create_parallel_file(const std::string& path, MPI_Comm comm) {
  handle fapl = checked(H5Pcreate(H5P_FILE_ACCESS), H5Pclose, "creating file access properties");
  check(H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_LATEST, H5F_LIBVER_LATEST), "choosing the HDF5 1.10 format");
  check(H5Pset_fapl_mpio(fapl.get(), comm, MPI_INFO_NULL), "choosing HDF5's MPI-IO driver");
  // Every rank creates the same objects; HDF5 then writes the metadata once, collectively.
  check(H5Pset_all_coll_metadata_ops(fapl.get(), 1), "making metadata reads collective");
  check(H5Pset_coll_metadata_write(fapl.get(), 1), "making metadata writes collective");
  return checked(H5Fcreate(path.c_str(), H5F_ACC_EXCL, H5P_DEFAULT, fapl.get()), H5Fclose,
                 "cannot create '" + path + "' on all ranks");
}
#endif

handle open_file(const std::string& path) {
  const htri_t is_hdf5 = H5Fis_hdf5(path.c_str());
  if (is_hdf5 == 0) throw checkpoint_error("'" + path + "' is not an HDF5 file (no HDF5 signature)");
  if (is_hdf5 < 0) fail("cannot open '" + path + "'");
  return checked(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose,
                 "cannot open '" + path + "' (damaged or truncated HDF5 file)");
}

handle create_group(hid_t parent, const std::string& name) {
  return checked(H5Gcreate2(parent, name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose,
                 "creating group '" + name + "'");
}

namespace {
// kamp writes every object under one name. A second hard link makes one object two tensors (or
// two roles), whose values then agree however they were edited.
void refuse_second_names(hid_t object, const std::string& what) {
#if H5_VERSION_GE(1, 12, 0)
  H5O_info2_t info;
  check(H5Oget_info3(object, &info, H5O_INFO_BASIC), "reading the object header of " + what);
#else
  H5O_info_t info;
  check(H5Oget_info2(object, &info, H5O_INFO_BASIC), "reading the object header of " + what);
#endif
  if (info.rc != 1)
    throw checkpoint_error(what + " is one object under " + std::to_string(info.rc) +
                           " names (HDF5 hard links): kamp writes each object once, so the file was edited");
}

// A soft or external link would let one object stand in for another (`kind`: "a dataset").
void refuse_links(hid_t parent, const std::string& name, const std::string& where, const char* kind) {
  H5L_info_t link;
  check(H5Lget_info(parent, name.c_str(), &link, H5P_DEFAULT), "reading the link " + where);
  if (link.type != H5L_TYPE_HARD)
    throw checkpoint_error(where + " is a link to another object, not " + kind + " of its own: the file was edited");
}
}  // namespace

handle open_group(hid_t parent, const std::string& name, const std::string& path_for_messages) {
  if (H5Lexists(parent, name.c_str(), H5P_DEFAULT) <= 0)
    throw checkpoint_error("group " + path_for_messages + " is missing");
  refuse_links(parent, name, path_for_messages, "a group");
  handle group = checked(H5Gopen2(parent, name.c_str(), H5P_DEFAULT), H5Gclose, "opening group " + path_for_messages);
  refuse_second_names(group.get(), "group " + path_for_messages);
  return group;
}

bool has_attribute(hid_t object, const std::string& name) { return H5Aexists(object, name.c_str()) > 0; }

namespace {
void write_number(hid_t object, const std::string& name, hid_t file_type, hid_t memory_type, const void* value) {
  handle a = checked(H5Acreate2(object, name.c_str(), file_type, attribute_space().get(), H5P_DEFAULT, H5P_DEFAULT),
                     H5Aclose, "creating attribute '" + name + "'");
  check(H5Awrite(a.get(), memory_type, value), "writing attribute '" + name + "'");
}
}  // namespace

void write_attribute(hid_t object, const std::string& name, std::int64_t value) {
  write_number(object, name, H5T_STD_I64LE, H5T_NATIVE_INT64, &value);
}

void write_attribute(hid_t object, const std::string& name, std::uint64_t value) {
  write_number(object, name, H5T_STD_U64LE, H5T_NATIVE_UINT64, &value);
}

void write_attribute(hid_t object, const std::string& name, double value) {
  write_number(object, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &value);
}

void write_attribute(hid_t object, const std::string& name, const std::string& value) {
  handle type = checked(H5Tcopy(H5T_C_S1), H5Tclose, "copying the string type");
  check(H5Tset_size(type.get(), std::max<std::size_t>(1, value.size())), "sizing a string");
  check(H5Tset_strpad(type.get(), H5T_STR_NULLPAD), "padding a string");
  check(H5Tset_cset(type.get(), H5T_CSET_UTF8), "setting a string's character set");
  handle a = checked(H5Acreate2(object, name.c_str(), type.get(), attribute_space().get(), H5P_DEFAULT, H5P_DEFAULT),
                     H5Aclose, "creating attribute '" + name + "'");
  std::string padded = value;
  padded.resize(std::max<std::size_t>(1, value.size()), '\0');
  check(H5Awrite(a.get(), type.get(), padded.data()), "writing attribute '" + name + "'");
}

namespace {
void read_number(hid_t object, const std::string& name, H5T_class_t type_class, const char* kind, hid_t memory_type,
                 void* out, const std::string& where) {
  handle a = open_attribute(object, name, type_class, kind, where);
  check(H5Aread(a.get(), memory_type, out), where + ": reading attribute '" + name + "'");
}
}  // namespace

std::int64_t read_int_attribute(hid_t object, const std::string& name, const std::string& where) {
  std::int64_t v;
  read_number(object, name, H5T_INTEGER, "integer", H5T_NATIVE_INT64, &v, where);
  return v;
}

std::uint64_t read_uint_attribute(hid_t object, const std::string& name, const std::string& where) {
  std::uint64_t v;
  read_number(object, name, H5T_INTEGER, "integer", H5T_NATIVE_UINT64, &v, where);
  return v;
}

double read_float_attribute(hid_t object, const std::string& name, const std::string& where) {
  double v;
  read_number(object, name, H5T_FLOAT, "float", H5T_NATIVE_DOUBLE, &v, where);
  return v;
}

std::string read_string_attribute(hid_t object, const std::string& name, const std::string& where) {
  handle a = open_attribute(object, name, H5T_STRING, "string", where);
  handle type = checked(H5Aget_type(a.get()), H5Tclose, where + ": type of attribute '" + name + "'");
  if (H5Tis_variable_str(type.get()) > 0)
    throw checkpoint_error(where + ": attribute '" + name + "' is a variable-length string, expected fixed-length");
  std::string v(H5Tget_size(type.get()), '\0');
  check(H5Aread(a.get(), type.get(), v.data()), where + ": reading attribute '" + name + "'");
  v.erase(std::find(v.begin(), v.end(), '\0'), v.end());
  return v;
}

std::uint64_t sequential_content_hash(const void* data, std::size_t bytes) {
  // FNV-1a over 64-bit words (then the tail bytes): an all-zero chunk hashes to something else
  // than the data it replaced, which Fletcher-32 (0 for zeros) cannot tell.
  constexpr std::uint64_t prime = 0x100000001b3ull;
  std::uint64_t h = 0xcbf29ce484222325ull ^ bytes;
  const auto* p = static_cast<const unsigned char*>(data);
  std::size_t i = 0;
  for (; i + 8 <= bytes; i += 8) {
    std::uint64_t word;
    std::memcpy(&word, p + i, 8);
    h = (h ^ word) * prime;
  }
  for (; i < bytes; ++i) h = (h ^ p[i]) * prime;
  return h;
}

namespace {
// SplitMix64's finalizer: each input maps to an unrelated 64-bit word.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
}  // namespace

std::uint64_t identity_hash(const std::string& path, dtype t, const std::vector<std::size_t>& shape) {
  std::string identity = path + " " + kamp::name(t);
  for (const std::size_t d : shape) identity += " " + std::to_string(d);
  return mix(sequential_content_hash(identity.data(), identity.size()));
}

std::uint64_t content_hash(const void* data, dtype t, std::size_t first, std::size_t count) {
  const std::size_t width = size_of(t);
  if (width != 2 && width != 4)
    throw std::invalid_argument(std::string("kamp: checkpoint tensors are 16- or 32-bit, not ") + kamp::name(t));
  const auto* p = static_cast<const unsigned char*>(data);
  std::uint64_t h = 0;
  for (std::size_t i = 0; i < count; ++i) {
    std::uint32_t bits = 0;
    if (width == 2) {
      std::uint16_t half;
      std::memcpy(&half, p + i * 2, 2);
      bits = half;
    } else {
      std::memcpy(&bits, p + i * 4, 4);
    }
    h += mix((std::uint64_t(first + i) << 32) | bits);
  }
  return h;
}

namespace {

// Selects `part` of a dataset of `shape` (1-D or 2-D) in its dataspace: a flat range of a matrix
// is a partial first row, whole rows and a partial last row.
void select(hid_t space, const std::vector<std::size_t>& shape, element_range part) {
  if (part.empty()) {
    check(H5Sselect_none(space), "selecting nothing");
    return;
  }
  if (shape.size() == 1) {
    const hsize_t start = part.first, count = part.size();
    check(H5Sselect_hyperslab(space, H5S_SELECT_SET, &start, nullptr, &count, nullptr), "selecting elements");
    return;
  }
  const std::size_t cols = shape.at(1);
  H5S_seloper_t op = H5S_SELECT_SET;
  for (std::size_t at = part.first; at < part.last;) {
    hsize_t start[2] = {at / cols, at % cols}, count[2];
    if (start[1] != 0 || part.last - at < cols) {  // within one row
      count[0] = 1;
      count[1] = std::min(part.last, (at / cols + 1) * cols) - at;
    } else {  // whole rows
      count[0] = (part.last - at) / cols;
      count[1] = cols;
    }
    check(H5Sselect_hyperslab(space, op, start, nullptr, count, nullptr), "selecting elements");
    op = H5S_SELECT_OR;
    at += count[0] * count[1];
  }
}

// The dataspace of `part` in memory: its elements one after the other.
handle memory_space(element_range part) {
  const hsize_t n = std::max<hsize_t>(1, part.size());
  handle space = checked(H5Screate_simple(1, &n, nullptr), H5Sclose, "creating a memory dataspace");
  if (part.empty()) check(H5Sselect_none(space.get()), "selecting nothing");
  return space;
}

handle transfer(bool collective) {
  handle dxpl = checked(H5Pcreate(H5P_DATASET_XFER), H5Pclose, "creating transfer properties");
#ifdef KAMP_HAVE_PARALLEL_HDF5
  if (collective) check(H5Pset_dxpl_mpio(dxpl.get(), H5FD_MPIO_COLLECTIVE), "choosing collective transfers");
#else
  (void)collective;
#endif
  return dxpl;
}

}  // namespace

void write_dataset(hid_t parent, const std::string& name, dtype t, const std::vector<std::size_t>& shape,
                   const void* data, element_range part, std::uint64_t hash, bool collective) {
  std::vector<hsize_t> dims(shape.begin(), shape.end()), chunk = dims;
  // Chunks of at most 2^20 elements: a checksum per chunk, and bounded memory when reading.
  hsize_t elements = 1;
  for (const hsize_t d : dims) elements *= d;
  if (elements > (hsize_t(1) << 20)) chunk[0] = std::max<hsize_t>(1, chunk[0] * (hsize_t(1) << 20) / elements);
  handle space = checked(H5Screate_simple(int(dims.size()), dims.data(), nullptr), H5Sclose,
                         "creating the dataspace of '" + name + "'");
  handle dcpl = checked(H5Pcreate(H5P_DATASET_CREATE), H5Pclose, "creating dataset properties");
  check(H5Pset_chunk(dcpl.get(), int(chunk.size()), chunk.data()), "chunking '" + name + "'");
  check(H5Pset_fletcher32(dcpl.get()), "adding a checksum to '" + name + "'");
  handle set =
      checked(H5Dcreate2(parent, name.c_str(), file_type(t).get(), space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT),
              H5Dclose, "creating dataset '" + name + "'");
  select(space.get(), shape, part);
  check(H5Dwrite(set.get(), memory_type(t).get(), memory_space(part).get(), space.get(), transfer(collective).get(),
                 data),
        "writing dataset '" + name + "'");
  write_attribute(set.get(), "dtype", std::string(kamp::name(t)));
  write_attribute(set.get(), "content_hash", hash);
}

handle open_dataset(hid_t parent, const std::string& name, dtype t, const std::vector<std::size_t>& shape,
                    const std::string& where) {
  if (H5Lexists(parent, name.c_str(), H5P_DEFAULT) <= 0) throw checkpoint_error("dataset " + where + " is missing");
  refuse_links(parent, name, where, "a dataset");
  handle set = checked(H5Dopen2(parent, name.c_str(), H5P_DEFAULT), H5Dclose, "opening dataset " + where);
  refuse_second_names(set.get(), "dataset " + where);
  handle type = checked(H5Dget_type(set.get()), H5Tclose, where + ": reading its type");
  if (H5Tequal(type.get(), file_type(t).get()) <= 0)
    throw checkpoint_error("dataset " + where + " is " + describe_type(type.get()) + ", expected " +
                           std::to_string(8 * size_of(t)) + "-bit float (" + kamp::name(t) + ")");
  handle space = checked(H5Dget_space(set.get()), H5Sclose, where + ": reading its shape");
  const int rank = H5Sget_simple_extent_ndims(space.get());
  std::vector<hsize_t> dims(std::max(rank, 0));
  if (rank >= 0) H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
  if (rank < 0 || !std::equal(dims.begin(), dims.end(), shape.begin(), shape.end())) {
    const auto text = [](const auto& d) {
      std::string s = "(";
      for (std::size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + std::to_string(d[i]);
      return s + ")";
    };
    throw checkpoint_error("dataset " + where + " has shape " + text(dims) + ", expected " + text(shape));
  }
  // Without the checksum filter nothing would detect changed values.
  {
    handle plist = checked(H5Dget_create_plist(set.get()), H5Pclose, where + ": reading its storage properties");
    unsigned flags = 0;
    std::size_t elements = 0;
    unsigned values = 0;
    char filter_name[64];
    unsigned config = 0;
    if (H5Pget_filter_by_id2(plist.get(), H5Z_FILTER_FLETCHER32, &flags, &elements, &values, sizeof filter_name,
                             filter_name, &config) < 0) {
      H5Eclear2(H5E_DEFAULT);
      throw checkpoint_error("dataset " + where +
                             " has no Fletcher-32 checksum filter: kamp writes every tensor "
                             "with one, so the file was rewritten by another tool and cannot be verified");
    }
  }
  // kamp stores tensors uncompressed, so a dataset all of whose chunks were written takes at
  // least its raw size on disk; chunks never written take nothing and read as the fill value.
  hsize_t elements = 1;
  for (const std::size_t d : shape) elements *= d;
  if (H5Dget_storage_size(set.get()) < elements * size_of(t))
    throw checkpoint_error(
        "dataset " + where + " has chunks that were never written (" + std::to_string(H5Dget_storage_size(set.get())) +
        " of " + std::to_string(elements * size_of(t)) + " bytes stored): the file is incomplete or was edited");
  return set;
}

void read_elements(const handle& set, dtype t, const std::vector<std::size_t>& shape, void* out, element_range part,
                   const std::string& where) {
  handle space = checked(H5Dget_space(set.get()), H5Sclose, where + ": reading its shape");
  select(space.get(), shape, part);
  check(H5Dread(set.get(), memory_type(t).get(), memory_space(part).get(), space.get(), H5P_DEFAULT, out),
        "dataset " + where + " cannot be read: the file is damaged (checksum mismatch or truncated data)");
}

}  // namespace kamp::detail::h5
