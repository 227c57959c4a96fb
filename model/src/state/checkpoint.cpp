#include <kamp/model/dist/agree.hpp>
#include <kamp/model/network/gpt_parameters.hpp>
#include <kamp/model/state/checkpoint.hpp>
#include <kamp/model/state/file_rules.hpp>

#include "state/fields.hpp"
#include "state/hdf5.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <optional>

namespace kamp {

namespace fs = std::filesystem;
namespace h5 = detail::h5;

namespace {

constexpr const char* format_name = "kamp-checkpoint";

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ",") + x;
  return s;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start < s.size()) {
    const std::size_t end = std::min(s.find(',', start), s.size());
    out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// One attribute per configuration field, whatever its C++ type.
struct attribute_writer {
  hid_t object;
  void operator()(const char* name, int v) const { h5::write_attribute(object, name, std::int64_t(v)); }
  void operator()(const char* name, bool v) const { h5::write_attribute(object, name, std::int64_t(v)); }
  void operator()(const char* name, float v) const { h5::write_attribute(object, name, double(v)); }
  void operator()(const char* name, double v) const { h5::write_attribute(object, name, v); }
  void operator()(const char* name, std::uint64_t v) const { h5::write_attribute(object, name, v); }
};

struct attribute_reader {
  hid_t object;
  std::string where;
  void operator()(const char* name, int& v) const {
    const std::int64_t x = h5::read_int_attribute(object, name, where);
    if (x < std::numeric_limits<int>::min() || x > std::numeric_limits<int>::max())
      throw checkpoint_error(where + ": attribute '" + name + "' = " + std::to_string(x) + " does not fit an int");
    v = int(x);
  }
  void operator()(const char* name, bool& v) const {
    const std::int64_t x = h5::read_int_attribute(object, name, where);
    if (x != 0 && x != 1) throw checkpoint_error(where + ": attribute '" + std::string(name) + "' must be 0 or 1");
    v = x == 1;
  }
  void operator()(const char* name, float& v) const { v = float(h5::read_float_attribute(object, name, where)); }
  void operator()(const char* name, double& v) const { v = h5::read_float_attribute(object, name, where); }
  void operator()(const char* name, std::uint64_t& v) const { v = h5::read_uint_attribute(object, name, where); }
  void operator()(const char* name, std::int64_t& v) const { v = h5::read_int_attribute(object, name, where); }
};

void write_scaler(hid_t group, const loss_scale_state& s) {
  detail::for_each_scaler_field(s, [&](const char* name, const auto& v) {
    if constexpr (std::is_same_v<std::decay_t<decltype(v)>, float>) {
      h5::write_attribute(group, name, double(v));
    } else {
      h5::write_attribute(group, name, std::int64_t(v));
    }
  });
}

// amp_fp8's scaling state: /fp8/scales (3n) and, for delayed scaling, /fp8/amax_history
// (3n x length), each with format 4's content hash; /fp8's attribute `updates`. Rank 0 writes them
// (every rank holds the same state).
std::vector<std::size_t> fp8_shape(const training_state& s, bool history) {
  const std::size_t tensors = 3 * 4 * std::size_t(s.model.layers);
  if (!history) return {tensors};
  return {tensors, s.policy.recipe == fp8_recipe::delayed ? std::size_t(s.policy.amax_history) : 0};
}

void write_fp8(hid_t root, const training_state& s, const dist::communicator& ranks) {
  h5::handle group = h5::create_group(root, "fp8");
  h5::write_attribute(group.get(), "updates", s.fp8.updates);
  const auto write = [&](const char* name, const std::vector<float>& values, bool history) {
    const auto shape = fp8_shape(s, history);
    std::size_t elements = 1;
    for (const std::size_t d : shape) elements *= d;
    if (values.size() != elements)
      throw std::invalid_argument("kamp::write_checkpoint: the FP8 state has " + std::to_string(values.size()) + " " +
                                  name + ", the model and recipe need " + std::to_string(elements));
    if (elements == 0) return;
    const std::uint64_t hash = h5::content_hash(values.data(), dtype::fp32, 0, elements) +
                               h5::identity_hash(std::string("fp8/") + name, dtype::fp32, shape);
    const element_range part = ranks.rank() == 0 ? element_range{0, elements} : element_range{0, 0};
    h5::write_dataset(group.get(), name, dtype::fp32, shape, values.data(), part, hash, ranks.distributed());
  };
  write("scales", s.fp8.scales, false);
  write("amax_history", s.fp8.history, true);
}

void read_fp8(hid_t root, training_state& s) {
  if (H5Lexists(root, "fp8", H5P_DEFAULT) <= 0)
    throw checkpoint_error("group /fp8 is missing: amp_fp8 checkpoints hold the FP8 scales there");
  h5::handle group = h5::open_group(root, "fp8", "/fp8");
  s.fp8.updates = h5::read_int_attribute(group.get(), "updates", "/fp8");
  const auto read = [&](const char* name, std::vector<float>& values, bool history) {
    const auto shape = fp8_shape(s, history);
    std::size_t elements = 1;
    for (const std::size_t d : shape) elements *= d;
    values.assign(elements, 0.0f);
    if (elements == 0) return;
    const std::string where = std::string("/fp8/") + name;
    h5::handle set = h5::open_dataset(group.get(), name, dtype::fp32, shape, where);
    h5::read_elements(set, dtype::fp32, shape, values.data(), element_range{0, elements}, where);
    const std::uint64_t hash = h5::content_hash(values.data(), dtype::fp32, 0, elements) +
                               h5::identity_hash(std::string("fp8/") + name, dtype::fp32, shape);
    if (h5::read_uint_attribute(set.get(), "content_hash", where) != hash)
      throw checkpoint_error(
          "dataset " + where +
          " does not hold the values that were written (content hash mismatch: the file was edited)");
  };
  read("scales", s.fp8.scales, false);
  read("amax_history", s.fp8.history, true);
}

void read_scaler(hid_t group, loss_scale_state& s) {
  const attribute_reader read{group, "/loss_scaler"};
  detail::for_each_scaler_field(s, [&](const char* name, auto& v) {
    if constexpr (std::is_same_v<std::decay_t<decltype(v)>, std::int32_t>) {
      int x;
      read(name, x);
      v = x;
    } else {
      read(name, v);
    }
  });
}

// Format 4's digest: one hash over the file's description (every attribute a reader uses, the
// format version among them) and its table of contents (each dataset's path and content hash),
// so an edited counter, option or version, or a dataset hash moved between names, is found.
struct digest_text {
  std::string text;
  void operator()(const char* name, std::int64_t v) { text += std::string(name) + "=" + std::to_string(v) + ";"; }
  void operator()(const char* name, std::uint64_t v) { text += std::string(name) + "=" + std::to_string(v) + ";"; }
  void operator()(const char* name, int v) { (*this)(name, std::int64_t(v)); }
  void operator()(const char* name, bool v) { (*this)(name, std::int64_t(v)); }
  void operator()(const char* name, double v) {
    char exact[40];  // hexadecimal: every double once, whatever the locale
    std::snprintf(exact, sizeof exact, "%a", v);
    text += std::string(name) + "=" + exact + ";";
  }
  void operator()(const char* name, float v) { (*this)(name, double(v)); }
  void operator()(const char* name, const std::string& v) {
    text += std::string(name) + "=" + std::to_string(v.size()) + ":" + v + ";";
  }
};

// `tensors`: each dataset's path and stored content hash, in the order of the table of contents.
std::uint64_t digest(const training_state& s, std::int64_t format_version, const std::string& kamp_version,
                     const std::vector<std::pair<std::string, std::uint64_t>>& tensors) {
  digest_text d;
  d("format_version", format_version);
  d("kamp_version", kamp_version);
  d("mode", std::string(name(s.policy.mode)));
  d("pure_bf16_update", std::string(name(s.policy.update)));
  d("fp32_layers", join(s.policy.fp32_layers));
  d("step", s.steps_taken);
  d("attempts", s.attempts);
  d("run_config", s.run_config);
  detail::for_each_field(s.model, d);
  detail::for_each_option(s.options, d);
  detail::for_each_scaler_field(s.scaler, d);
  if (s.policy.fp8()) {
    d("fp8_recipe", std::string(name(s.policy.recipe)));
    d("fp8_amax_history", std::int64_t(s.policy.amax_history));
    d("fp8_updates", s.fp8.updates);
    d("fp8/scales", h5::content_hash(s.fp8.scales.data(), dtype::fp32, 0, s.fp8.scales.size()));
    d("fp8/amax_history", h5::content_hash(s.fp8.history.data(), dtype::fp32, 0, s.fp8.history.size()));
  }
  for (const auto& [path, hash] : tensors) d(path.c_str(), hash);
  return h5::sequential_content_hash(d.text.data(), d.text.size());
}

void check_tensor_sizes(const training_state& state, const tensor_table& table) {
  if (!state.slice.whole() && (state.slice.first > state.slice.last || state.slice.last > table.flat_size()))
    throw std::invalid_argument("kamp::write_checkpoint: the state's slice is not inside the parameter table");
  const std::size_t elements = state.slice.within(table.flat_size()).size();
  for (const auto& t : state.tensors)
    if (t.bytes.size() != elements * size_of(t.type))
      throw std::invalid_argument("kamp::write_checkpoint: state tensor '" + t.role + "' has " +
                                  std::to_string(t.bytes.size()) + " bytes, its slice of the model's table needs " +
                                  std::to_string(elements * size_of(t.type)));
}

// The part of tensor `e` that a state holding elements `held` of the flat buffers has, counted
// in the tensor's own elements.
element_range part_of(const tensor_table::entry& e, const element_range& held) {
  return overlap(e.range(), held).relative_to(e.offset);
}

h5::handle create(const std::string& path, const dist::communicator& ranks) {
  if (!ranks.distributed()) return h5::create_file(path);
#ifdef KAMP_HAVE_PARALLEL_HDF5
  return h5::create_parallel_file(path, ranks.mpi_comm());
#else
  // CMake refuses an MPI build without a parallel HDF5; a build without MPI has one rank.
  throw std::logic_error("kamp: several ranks without parallel HDF5");
#endif
}

// Where tensor `e`'s `part` starts in `bytes`, which hold elements `held` of the flat buffers
// in `width`-byte elements (the start of `bytes` for an empty part, which nothing reads).
template <class Byte>
Byte* start_of(Byte* bytes, const tensor_table::entry& e, const element_range& part, const element_range& held,
               std::size_t width) {
  return part.empty() ? bytes : bytes + (e.offset + part.first - held.first) * width;
}

// A rank failing inside the parallel file's collective calls ends the job (hdf5.hpp says why).
[[noreturn]] void end_the_job(const std::string& message, const void* context) {
  const auto& ranks = *static_cast<const dist::communicator*>(context);
  std::fprintf(stderr,
               "kamp: error (rank %d of %d) while the ranks write a checkpoint together: %s. Ending the job: the "
               "other ranks wait in HDF5's collective calls. The previous checkpoints are intact.\n",
               ranks.rank(), ranks.size(), message.c_str());
  std::fflush(stderr);
  ranks.abort(1);
}

void write_file(const std::string& path, const training_state& state, const dist::communicator& ranks) {
  const tensor_table table = parameter_table(state.model);
  const std::string problem =
      dist::agree<std::invalid_argument>(ranks, "kamp::write_checkpoint: another rank's state does not fit its model",
                                         [&] { check_tensor_sizes(state, table); });
  if (!problem.empty()) throw std::invalid_argument(problem);
  const element_range held = state.slice.within(table.flat_size());
  // The slices of the ranks must be the whole table, each element once.
  if (ranks.sum(double(held.size())) != double(table.flat_size()))
    throw std::invalid_argument("kamp::write_checkpoint: the ranks' slices do not add up to the " +
                                std::to_string(table.flat_size()) + " elements of the parameter table");
  // Each dataset's content hash is the sum of the ranks' parts: one reduction for all of them.
  std::vector<std::uint64_t> hashes;
  for (const auto& t : state.tensors)
    for (const auto& e : table.entries()) {
      const element_range part = part_of(e, held);
      hashes.push_back(
          h5::content_hash(start_of(t.bytes.data(), e, part, held, size_of(t.type)), t.type, part.first, part.size()));
    }
  ranks.sum(hashes);
  std::vector<std::pair<std::string, std::uint64_t>> contents;
  {
    auto hash = hashes.begin();
    for (const auto& t : state.tensors)
      for (const auto& e : table.entries()) {
        const std::string where = t.role + "/" + e.name;
        *hash += h5::identity_hash(where, t.type, e.shape);
        contents.emplace_back(where, *hash++);
      }
  }
  std::optional<h5::collective_failures> collective;
  if (ranks.distributed()) collective.emplace(&end_the_job, &ranks);
  h5::handle file = create(path, ranks);
  const hid_t root = file.get();
  h5::write_attribute(root, "format", std::string(format_name));
  h5::write_attribute(root, "format_version", checkpoint_format_version);
  h5::write_attribute(root, "kamp_version", std::string(KAMP_VERSION));
  h5::write_attribute(root, "precision_mode", std::string(name(state.policy.mode)));
  h5::write_attribute(root, "step", state.steps_taken);
  h5::write_attribute(root, "attempts", state.attempts);
  // Redundant with attempts and the options, but what a person looking for "where is the data
  // loader" wants to see: the next training window's counter.
  h5::write_attribute(root, "data_position", state.attempts * state.options.micro_batches);
  h5::write_attribute(root, "run_config", state.run_config);
  h5::write_attribute(root, "digest", digest(state, checkpoint_format_version, KAMP_VERSION, contents));
  {
    h5::handle config = h5::create_group(root, "config");
    detail::for_each_field(state.model, attribute_writer{config.get()});
    h5::write_attribute(config.get(), "mode", std::string(name(state.policy.mode)));
    h5::write_attribute(config.get(), "pure_bf16_update", std::string(name(state.policy.update)));
    h5::write_attribute(config.get(), "fp32_layers", join(state.policy.fp32_layers));
    if (state.policy.fp8()) {
      h5::write_attribute(config.get(), "fp8_recipe", std::string(name(state.policy.recipe)));
      h5::write_attribute(config.get(), "fp8_amax_history", std::int64_t(state.policy.amax_history));
    }
    detail::for_each_option(state.options, attribute_writer{config.get()});
  }
  write_scaler(h5::create_group(root, "loss_scaler").get(), state.scaler);
  if (state.policy.fp8()) write_fp8(root, state, ranks);
  auto hash = hashes.begin();
  for (const auto& t : state.tensors) {
    h5::handle group = h5::create_group(root, t.role);
    for (const auto& e : table.entries()) {
      const element_range part = part_of(e, held);
      h5::write_dataset(group.get(), e.name, t.type, e.shape, start_of(t.bytes.data(), e, part, held, size_of(t.type)),
                        part, *hash++, ranks.distributed());
    }
  }
  if (H5Fflush(root, H5F_SCOPE_GLOBAL) < 0) h5::fail("flushing '" + path + "'");
  file.close("closing '" + path + "'");
}

void fsync_path(const std::string& path, int flags) {
  const int fd = ::open(path.c_str(), flags);
  if (fd < 0) throw checkpoint_error("cannot open '" + path + "' to sync it: " + std::strerror(errno));
  const int status = ::fsync(fd);
  const int error = errno;
  ::close(fd);
  if (status != 0) throw checkpoint_error("fsync of '" + path + "' failed: " + std::strerror(error));
}

// A dataset's stored content hash and what this rank recomputes of it: its part of the
// position-keyed sum (formats 3 and 4, summed over the ranks), the identity term format 4 adds,
// and for a whole read of format 2 the sequential hash.
struct dataset_hash {
  std::string where;
  std::uint64_t stored, part, identity;
  std::optional<std::uint64_t> sequential;
};

// What a file says of itself, checked before any tensor is read.
struct file_header {
  h5::handle file;
  std::int64_t version;
};

// Opens `path` after checking that it is a kamp checkpoint of a format version this kamp reads.
file_header open_checkpoint(const std::string& path) {
  std::error_code error;
  if (fs::is_directory(path, error))
    throw checkpoint_error(
        "it is a directory, not a checkpoint file: name a step-*.h5 file inside it, or use --resume "
        "auto --checkpoint-dir " +
        path);
  if (const std::string problem = input_file_problem(path, "a checkpoint file"); !problem.empty())
    throw checkpoint_error("it " + problem);
  h5::handle file = h5::open_file(path);
  const hid_t root = file.get();
  if (h5::read_string_attribute(root, "format", "/") != format_name)
    throw checkpoint_error("it is an HDF5 file but not a kamp checkpoint (attribute /format is not '" +
                           std::string(format_name) + "')");
  const std::int64_t version = h5::read_int_attribute(root, "format_version", "/");
  if (version < 1 || version > checkpoint_format_version)
    throw checkpoint_error("it has format version " + std::to_string(version) + " (written by kamp " +
                           h5::read_string_attribute(root, "kamp_version", "/") + "); this kamp " + KAMP_VERSION +
                           " reads versions 1 to " + std::to_string(checkpoint_format_version) +
                           " only: resume with the kamp that wrote it");
  // Only format 4 has a digest: one in an older file means its version was lowered.
  if (version < 4 && h5::has_attribute(root, "digest"))
    throw checkpoint_error("its format_version attribute says " + std::to_string(version) +
                           ", but it carries format 4's /digest: the version was lowered (the file was edited)");
  return {std::move(file), version};
}

// Format 1 has no content hashes. A hash on a dataset of a file that says 1 means its version was
// lowered; a genuine one is read only when asked for, since nothing verifies its values.
void check_unhashed(hid_t set, const std::string& where, std::int64_t version, const checkpoint_read_options& options) {
  if (version != 1) return;
  if (h5::has_attribute(set, "content_hash"))
    throw checkpoint_error("its format_version attribute says 1, which has no content hashes, but dataset " + where +
                           " carries one: the version was lowered (the file was edited)");
  if (!options.accept_unhashed)
    throw checkpoint_error(
        "it is a format-1 checkpoint: its tensors have no content hashes, so a zeroed or rewritten chunk could not be "
        "found. Read it only if you trust the file: --accept-unhashed-checkpoint (kamp-train, kamp-generate, "
        "kamp-inspect; checkpoint_read_options::accept_unhashed); saving it again writes a verifiable file");
}

// Everything of the state but its tensors: the counters, the run's configuration (validated)
// and the loss scaler.
training_state read_description(hid_t root, std::int64_t version) {
  training_state s;
  s.kamp_version = h5::read_string_attribute(root, "kamp_version", "/");
  s.format_version = version;
  const attribute_reader root_reader{root, "/"};
  root_reader("step", s.steps_taken);
  root_reader("attempts", s.attempts);
  s.run_config = h5::read_string_attribute(root, "run_config", "/");
  h5::handle config = h5::open_group(root, "config", "/config");
  const attribute_reader read{config.get(), "/config"};
  detail::for_each_field(s.model, read);
  detail::for_each_option(s.options, read);
  try {
    s.model.validate();
    s.policy.mode = parse_precision_mode(h5::read_string_attribute(config.get(), "mode", "/config"));
    s.policy.update = parse_pure_bf16_update(h5::read_string_attribute(config.get(), "pure_bf16_update", "/config"));
    s.policy.fp32_layers = split(h5::read_string_attribute(config.get(), "fp32_layers", "/config"));
    if (s.policy.fp8()) {
      s.policy.recipe = parse_fp8_recipe(h5::read_string_attribute(config.get(), "fp8_recipe", "/config"));
      const std::int64_t history = h5::read_int_attribute(config.get(), "fp8_amax_history", "/config");
      if (history < 1 || history > (1 << 20))
        throw std::invalid_argument("fp8_amax_history " + std::to_string(history) + " is outside [1, 1048576]");
      s.policy.amax_history = int(history);
    }
    s.policy.validate(s.model);
    s.options.validate();
  } catch (const std::invalid_argument& e) {
    throw checkpoint_error(std::string("/config holds an invalid configuration: ") + e.what());
  }
  if (h5::read_string_attribute(root, "precision_mode", "/") != name(s.policy.mode))
    throw checkpoint_error("attribute /precision_mode disagrees with /config mode");
  read_scaler(h5::open_group(root, "loss_scaler", "/loss_scaler").get(), s.scaler);
  if (s.policy.fp8()) read_fp8(root, s);
  return s;
}

// The claimed model against what the file holds, before the claim costs anything: a /config
// of 10^6 layers in a small file is refused here, not after building its parameter table.
void check_tensor_count(hid_t root, const gpt_config& model) {
  const std::int64_t claimed = gpt_parameters::tensor_count(model.layers);
  if (H5Lexists(root, "model", H5P_DEFAULT) <= 0)
    throw checkpoint_error("group /model is missing: every checkpoint holds the model's tensors there");
  h5::handle group = h5::open_group(root, "model", "/model");
  H5G_info_t info;
  if (H5Gget_info(group.get(), &info) < 0) h5::fail("reading group /model");
  if (std::int64_t(info.nlinks) != claimed)
    throw checkpoint_error("/config claims " + std::to_string(model.layers) + " layers (" + std::to_string(claimed) +
                           " tensors), but /model holds " + std::to_string(info.nlinks) + " objects");
}

// Elements `held` of each of the state's tensors (role `role`, element type `type`); their
// content hashes are left to the caller in `hashes` (formats 2 to 4).
state_tensor read_tensor(hid_t root, const std::string& role, dtype type, const tensor_table& table,
                         const element_range& held, bool whole, std::int64_t version,
                         std::vector<dataset_hash>& hashes) {
  h5::handle group = h5::open_group(root, role, "/" + role);
  const std::size_t width = size_of(type);
  state_tensor t{role, type, std::vector<unsigned char>(held.size() * width, 0)};
  for (const auto& e : table.entries()) {
    const std::string where = "/" + role + "/" + e.name;
    h5::handle set = h5::open_dataset(group.get(), e.name, type, e.shape, where);
    const element_range part = part_of(e, held);
    unsigned char* out = start_of(t.bytes.data(), e, part, held, width);
    if (!part.empty()) h5::read_elements(set, type, e.shape, out, part, where);
    if (version == 1) continue;
    hashes.push_back(
        {where, h5::read_uint_attribute(set.get(), "content_hash", where),
         h5::content_hash(out, type, part.first, part.size()), h5::identity_hash(role + "/" + e.name, type, e.shape),
         version == 2 && whole ? std::optional(h5::sequential_content_hash(out, e.size * width)) : std::nullopt});
  }
  return t;
}

// What a read found besides the state: the datasets' hashes to check (after the ranks have
// summed their parts) and, for format 4, whether the digest matched.
struct read_result {
  training_state state;
  std::vector<dataset_hash> hashes;
  bool digest_matches = true;
};

// Reads elements `slice` of every tensor; the content hashes and the digest are left to the
// caller, which checks them after the ranks have summed their parts.
read_result read_file(const std::string& path, element_range slice, const checkpoint_read_options& options) {
  const auto [file, version] = open_checkpoint(path);
  const hid_t root = file.get();
  read_result r{read_description(root, version), {}, true};
  training_state& s = r.state;
  check_tensor_count(root, s.model);
  const tensor_table table = parameter_table(s.model);
  if (!slice.whole() && (slice.first >= slice.last || slice.last > table.flat_size()))
    throw checkpoint_error("elements [" + std::to_string(slice.first) + ", " + std::to_string(slice.last) +
                           ") were asked for, but the model's flat buffers have " + std::to_string(table.flat_size()));
  s.slice = slice;
  // Every dataset's type and shape first: a file whose /config claims a huge model is rejected
  // before its tensors are allocated.
  const auto layout = state_layout(s.policy);
  for (const auto& [role, type] : layout) {
    if (H5Lexists(root, role.c_str(), H5P_DEFAULT) <= 0)
      throw checkpoint_error("group /" + role + " is missing: " + name(s.policy.mode) + " checkpoints hold " +
                             name(type) + " " + role + " tensors");
    h5::handle group = h5::open_group(root, role, "/" + role);
    for (const auto& e : table.entries()) {
      const std::string where = "/" + role + "/" + e.name;
      check_unhashed(h5::open_dataset(group.get(), e.name, type, e.shape, where).get(), where, version, options);
    }
  }
  for (const auto& [role, type] : layout)
    s.tensors.push_back(
        read_tensor(root, role, type, table, slice.within(table.flat_size()), slice.whole(), version, r.hashes));
  if (version == 4) {
    std::vector<std::pair<std::string, std::uint64_t>> contents;
    for (const auto& h : r.hashes) contents.emplace_back(h.where.substr(1), h.stored);
    r.digest_matches = h5::read_uint_attribute(root, "digest", "/") == digest(s, version, s.kamp_version, contents);
  }
  return r;
}

// Why dataset `h` (its parts summed into `sum`) fails format `version`'s check; empty when it
// passes. A hash that is another format's, or another tensor's, says what was edited.
std::string hash_problem(const dataset_hash& h, std::uint64_t sum, std::int64_t version,
                         const std::vector<dataset_hash>& all) {
  const bool format4 = h.stored == sum + h.identity, format3 = h.stored == sum;
  const bool format2 = h.sequential && h.stored == *h.sequential;
  // Ranks reading slices cannot recompute format 2's sequential hash, but a hash of a later format
  // under a file that says 2 is still a lowered version.
  const bool unverifiable = version == 2 && !h.sequential && !format4 && !format3;
  if (unverifiable || (version == 4 && format4) || (version == 3 && format3) || (version == 2 && format2)) return {};
  const std::string said =
      "its format_version attribute says " + std::to_string(version) + ", but dataset " + h.where + " carries format ";
  if (format4) return said + "4's content hash: the version was lowered (the file was edited)";
  if (format3) return said + "3's content hash: the version was changed (the file was edited)";
  if (format2) return said + "2's content hash: the version was changed (the file was edited)";
  if (version == 4)
    for (const auto& other : all)
      if (&other != &h && h.stored == sum + other.identity)
        return "dataset " + h.where + " holds the values written as " + other.where +
               ": two tensors were swapped or renamed (the file was edited)";
  return "dataset " + h.where +
         " does not hold the values that were written (content hash mismatch: a chunk was zeroed or rewritten with "
         "a valid checksum)";
}

}  // namespace

void write_checkpoint(const std::string& path, const training_state& state) {
  if (!state.slice.whole())
    throw std::invalid_argument(
        "kamp::write_checkpoint: the state holds one rank's slice: pass the communicator "
        "of the ranks, which write their slices together");
  write_checkpoint(path, state, dist::communicator());
}

void write_checkpoint(const std::string& path, const training_state& state, const dist::communicator& ranks) {
  const std::string tmp = path + ".tmp";
  const fs::path parent = fs::path(path).parent_path();
  const std::string directory = parent.empty() ? "." : parent.string();
  const std::string problem = dist::agree<checkpoint_error>(
      ranks, "writing '" + path + "' failed on another rank (its message is in the job's standard error)", [&] {
        try {
          // HDF5 creates the file with O_EXCL (H5F_ACC_EXCL): a leftover of a killed write, or a
          // link planted there, is removed first (a link itself, never its target).
          const std::string leftover = ranks.rank() == 0 ? clear_temporary_path(tmp) : "";
          if (!ranks.all(leftover.empty()))
            throw checkpoint_error(leftover.empty() ? "rank 0 could not clear '" + tmp + "'" : leftover);
          write_file(tmp, state, ranks);
          // Written through MPI-IO chunk by chunk, a full disk may go unreported (the serial path
          // builds the file in memory for that reason): every rank reads its slices back and the
          // content hashes are compared before the file replaces anything.
          if (ranks.distributed()) read_checkpoint(tmp, ranks, state.slice);
        } catch (const checkpoint_error& e) {
          // HDF5's messages do not carry errno: the free space tells whether the disk filled up.
          std::error_code error;
          const fs::space_info space = fs::space(directory, error);
          if (error) throw;
          throw checkpoint_error(std::string(e.what()) + " (the file system of '" + directory + "' has " +
                                 std::to_string(space.available >> 10) + " KiB of space left)");
        }
        // Every rank has closed the file (closing it is collective); one rank commits it.
        if (ranks.rank() == 0) {
          fsync_path(tmp, O_RDONLY);
          if (std::rename(tmp.c_str(), path.c_str()) != 0)
            throw checkpoint_error("cannot rename '" + tmp + "' to '" + path + "': " + std::strerror(errno));
          // The rename is durable only once the directory entry is.
          fsync_path(directory, O_RDONLY | O_DIRECTORY);
        }
      });
  if (problem.empty()) return;
  if (ranks.rank() == 0) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
  }
  throw checkpoint_error(problem);
}

training_state read_checkpoint(const std::string& path, const checkpoint_read_options& options) {
  return read_checkpoint(path, dist::communicator(), {}, options);
}

training_state read_checkpoint(const std::string& path, const dist::communicator& ranks, element_range slice,
                               const checkpoint_read_options& options) {
  // Every rank reads its own slice; all of them succeed or all throw (the hashes are summed over
  // the ranks, a collective none may leave waiting).
  read_result r;
  const std::string unread = dist::agree<checkpoint_error>(
      ranks, "another rank could not read its part of it (its message is in the job's standard error)",
      [&] { r = read_file(path, slice, options); });
  if (!unread.empty()) throw checkpoint_error("checkpoint '" + path + "': " + unread);
  training_state& s = r.state;
  std::vector<std::uint64_t> sums;
  for (const auto& h : r.hashes) sums.push_back(h.part);
  // The parts add up to a dataset's hash only when the ranks' slices cover the flat buffers.
  const std::size_t flat = parameter_table(s.model).flat_size();
  const bool covered = slice.whole() || ranks.sum(double(slice.size())) == double(flat);
  if (!slice.whole()) ranks.sum(sums);
  for (std::size_t i = 0; covered && i < r.hashes.size(); ++i) {
    const std::string problem = hash_problem(r.hashes[i], sums[i], s.format_version, r.hashes);
    if (!problem.empty()) throw checkpoint_error("checkpoint '" + path + "': " + problem);
  }
  // The same verdict for kamp-inspect as for a resume: a state no trainer could have produced
  // is refused here, not only when a run restores it.
  const std::string invalid = dist::agree<std::invalid_argument>(
      ranks, "another rank's part of it is not a valid state", [&] { check_state(s, parameter_table(s.model)); });
  if (!invalid.empty()) throw checkpoint_error("checkpoint '" + path + "': " + invalid);
  // Last, so that an edit the checks above name precisely is reported by them.
  if (!r.digest_matches)
    throw checkpoint_error("checkpoint '" + path +
                           "': its /digest does not match its attributes and table of contents: an attribute "
                           "(a counter, an option, the loss scaler) or a dataset's hash was edited");
  return s;
}

std::uint64_t checkpoint_tensor_bytes(const gpt_config& model, const precision_policy& policy) {
  const std::uint64_t elements = parameter_table(model).flat_size();
  std::uint64_t bytes = 0;
  for (const auto& [role, type] : state_layout(policy)) bytes += elements * size_of(type);
  return bytes;
}

}  // namespace kamp
