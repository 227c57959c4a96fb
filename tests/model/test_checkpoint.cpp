// Checkpoints: bit-exact resume in every precision mode, atomic directory handling, and the
// errors hostile files get (each generated here from a valid checkpoint).
#include <kamp/model/network/gpt_parameters.hpp>
#include <kamp/model/state/checkpoint.hpp>
#include <kamp/model/state/checkpoint_directory.hpp>
#include <kamp/model/training/trainer.hpp>

#include "../support/catch.hpp"

#include <hdf5.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <random>

#include <unistd.h>

#include "../support/fixtures.hpp"
#include "../support/gpt_shapes.hpp"
#include "../support/training_states.hpp"

namespace fs = std::filesystem;
using kamp::test::require_same_state;

namespace {

using kamp::test::corpus;
using kamp::test::policy;
using kamp::test::small_model;

// The runs of this file: batch 4, peak learning rate 2e-3 after 3 warm-up steps, seed 11, and
// a loss scale that overflows at first, then a short growth interval: the scaler's state and
// the attempt counter differ from the step counter at the save point.
kamp::train_options short_run(int steps) {
  kamp::train_options o = kamp::test::run_options(4, steps, 2e-3f, 3, 11);
  o.scaler.init_scale = 1e36f;
  o.scaler.growth_interval = 2;
  return o;
}

// A fresh directory under the system's temporary directory, removed with its content.
struct scratch_dir {
  fs::path path;
  explicit scratch_dir(const std::string& name)
      : path(fs::temp_directory_path() / ("kamp-test-" + name + "-" + std::to_string(::getpid()))) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~scratch_dir() { fs::remove_all(path); }
  std::string operator/(const std::string& file) const { return (path / file).string(); }
};

std::vector<double> train_until(kamp::trainer& t, std::int64_t steps) {
  std::vector<double> losses;
  while (t.steps_taken() < steps) losses.push_back(t.step().loss);
  return losses;
}

}  // namespace

TEST_CASE("N steps equal N/2 steps, save, load into a new trainer, N/2 steps, bitwise, in every mode",
          "[model][checkpoint]") {
  const auto p = GENERATE(from_range(kamp::test::every_policy()));
  INFO("mode " << kamp::name(p.mode) << " " << kamp::name(p.update));
  const int n = 10;
  const scratch_dir dir("resume");

  kamp::trainer straight(small_model(), p, short_run(n), corpus(small_model()));
  const std::vector<double> straight_losses = train_until(straight, n);

  kamp::trainer first_half(small_model(), p, short_run(n), corpus(small_model()));
  std::vector<double> losses = train_until(first_half, n / 2);
  const kamp::training_state saved = first_half.state();
  kamp::write_checkpoint(dir / "half.h5", saved);
  const kamp::training_state loaded = kamp::read_checkpoint(dir / "half.h5");
  require_same_state(saved, loaded);
  if (p.mode == kamp::precision_mode::amp_fp16) REQUIRE(loaded.attempts > loaded.steps_taken);

  kamp::trainer second_half(small_model(), p, short_run(n), corpus(small_model()));
  second_half.restore(loaded);
  const std::vector<double> rest = train_until(second_half, n);
  losses.insert(losses.end(), rest.begin(), rest.end());

  REQUIRE(losses == straight_losses);
  require_same_state(second_half.state(), straight.state());
  REQUIRE(second_half.model_copy_bits() == straight.model_copy_bits());
}

TEST_CASE("the state layout names what each mode's trainer keeps", "[model][checkpoint]") {
  const auto p = GENERATE(from_range(kamp::test::every_policy()));
  const kamp::trainer t(small_model(), p, short_run(1), corpus(small_model()));
  const auto state = t.state();
  const auto layout = kamp::state_layout(p);
  REQUIRE(state.tensors.size() == layout.size());
  for (std::size_t i = 0; i < layout.size(); ++i) {
    REQUIRE(state.tensors[i].role == layout[i].first);
    REQUIRE(state.tensors[i].type == layout[i].second);
  }
}

TEST_CASE("a checkpoint directory keeps the newest K and removes leftovers of killed writes", "[model][checkpoint]") {
  const scratch_dir dir("directory");
  const kamp::checkpoint_directory checkpoints((dir.path / "sub" / "dir").string(), 2);
  REQUIRE(checkpoints.list().empty());
  kamp::trainer t(small_model(), policy(kamp::precision_mode::amp_bf16), short_run(4), corpus(small_model()));
  std::ofstream(checkpoints.path() + "/step-00000099.h5.tmp") << "half written";
  std::ofstream(checkpoints.path() + "/notes.txt") << "not a checkpoint";
  for (int step = 1; step <= 4; ++step) {
    train_until(t, step);
    checkpoints.save(t.state());
  }
  const auto files = checkpoints.list();
  REQUIRE(files.size() == 2);
  CHECK(fs::path(files[0]).filename() == "step-00000004.h5");
  CHECK(fs::path(files[1]).filename() == "step-00000003.h5");
  CHECK_FALSE(fs::exists(checkpoints.path() + "/step-00000099.h5.tmp"));
  CHECK(fs::exists(checkpoints.path() + "/notes.txt"));
  REQUIRE(kamp::read_checkpoint(files[0]).steps_taken == 4);
  CHECK_THROWS_WITH(kamp::checkpoint_directory(checkpoints.path() + "/notes.txt", 1),
                    kamp::test::contains("cannot create checkpoint directory"));
  CHECK_THROWS_WITH(kamp::checkpoint_directory(dir / "x", 0), kamp::test::contains("keep must be >= 1"));
}

namespace {

// Edits of a valid checkpoint through HDF5's C API, as a buggy tool or a person might make them.
struct h5_file {
  hid_t id;
  explicit h5_file(const std::string& path) : id(H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT)) { REQUIRE(id >= 0); }
  ~h5_file() { H5Fclose(id); }
};

void remove_object(const std::string& path, const std::string& object) {
  h5_file f(path);
  REQUIRE(H5Ldelete(f.id, object.c_str(), H5P_DEFAULT) >= 0);
}

void set_attribute(const std::string& path, const std::string& object, const std::string& name, hid_t type,
                   const void* value) {
  h5_file f(path);
  const hid_t o = H5Oopen(f.id, object.c_str(), H5P_DEFAULT);
  REQUIRE(o >= 0);
  H5Adelete(o, name.c_str());
  const hid_t space = H5Screate(H5S_SCALAR);
  const hid_t a = H5Acreate2(o, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT);
  REQUIRE(H5Awrite(a, type, value) >= 0);
  H5Aclose(a);
  H5Sclose(space);
  H5Oclose(o);
}

void set_int(const std::string& path, const std::string& object, const std::string& name, std::int64_t v) {
  set_attribute(path, object, name, H5T_NATIVE_INT64, &v);
}

void set_attribute_double(const std::string& path, const std::string& object, const std::string& name, double v) {
  set_attribute(path, object, name, H5T_NATIVE_DOUBLE, &v);
}

void set_string(const std::string& path, const std::string& object, const std::string& name, const std::string& v) {
  const hid_t type = H5Tcopy(H5T_C_S1);
  H5Tset_size(type, v.size());
  set_attribute(path, object, name, type, v.data());
  H5Tclose(type);
}

// Replaces a dataset by one of `type` and `dims`, filled with `fill`.
void replace_dataset(const std::string& path, const std::string& name, hid_t type, std::vector<hsize_t> dims,
                     double fill) {
  h5_file f(path);
  REQUIRE(H5Ldelete(f.id, name.c_str(), H5P_DEFAULT) >= 0);
  const hid_t space = H5Screate_simple(int(dims.size()), dims.data(), nullptr);
  const hid_t set = H5Dcreate2(f.id, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  hsize_t n = 1;
  for (const auto d : dims) n *= d;
  const std::vector<double> values(n, fill);
  REQUIRE(H5Dwrite(set, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()) >= 0);
  H5Dclose(set);
  H5Sclose(space);
}

// Replaces a dataset by a chunked one with the checksum filter whose chunks are never written.
void replace_with_unwritten(const std::string& path, const std::string& name, std::vector<hsize_t> dims) {
  h5_file f(path);
  REQUIRE(H5Ldelete(f.id, name.c_str(), H5P_DEFAULT) >= 0);
  const hid_t space = H5Screate_simple(int(dims.size()), dims.data(), nullptr);
  const hid_t plist = H5Pcreate(H5P_DATASET_CREATE);
  REQUIRE(H5Pset_chunk(plist, int(dims.size()), dims.data()) >= 0);
  REQUIRE(H5Pset_fletcher32(plist) >= 0);
  const hid_t set = H5Dcreate2(f.id, name.c_str(), H5T_IEEE_F32LE, space, H5P_DEFAULT, plist, H5P_DEFAULT);
  REQUIRE(set >= 0);
  H5Dclose(set);
  H5Pclose(plist);
  H5Sclose(space);
}

// The roles an amp_bf16 checkpoint holds its tensors under.
const std::vector<std::string> amp_roles{"model", "master", "moment1", "moment2"};

// Swaps two datasets' names in every role: the values stay, each under the other's name.
void swap_in_every_role(const std::string& path, const std::string& a, const std::string& b) {
  h5_file f(path);
  for (const auto& role : amp_roles) {
    const std::string x = "/" + role + "/" + a, y = "/" + role + "/" + b, z = "/" + role + "/swapping";
    REQUIRE(H5Lmove(f.id, x.c_str(), f.id, z.c_str(), H5P_DEFAULT, H5P_DEFAULT) >= 0);
    REQUIRE(H5Lmove(f.id, y.c_str(), f.id, x.c_str(), H5P_DEFAULT, H5P_DEFAULT) >= 0);
    REQUIRE(H5Lmove(f.id, z.c_str(), f.id, y.c_str(), H5P_DEFAULT, H5P_DEFAULT) >= 0);
  }
}

// What a format-1 file is: format 4's without its digest and content hashes.
void make_format_1(const std::string& path) {
  h5_file f(path);
  REQUIRE(H5Adelete(f.id, "digest") >= 0);
  for (const auto& role : amp_roles) {
    H5G_info_t info;
    REQUIRE(H5Gget_info_by_name(f.id, role.c_str(), &info, H5P_DEFAULT) >= 0);
    for (hsize_t i = 0; i < info.nlinks; ++i) {
      char tensor[256];
      REQUIRE(H5Lget_name_by_idx(f.id, role.c_str(), H5_INDEX_NAME, H5_ITER_INC, i, tensor, sizeof tensor,
                                 H5P_DEFAULT) > 0);
      const std::string dataset = role + "/" + tensor;
      REQUIRE(H5Adelete_by_name(f.id, dataset.c_str(), "content_hash", H5P_DEFAULT) >= 0);
    }
  }
}

std::vector<char> bytes_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const std::string& path, const std::vector<char>& bytes) {
  std::ofstream(path, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
}

// The file offset and stored size (values and checksum) of the first chunk of a dataset.
std::pair<haddr_t, hsize_t> first_chunk(const std::string& path, const std::string& name) {
  h5_file f(path);
  const hid_t set = H5Dopen2(f.id, name.c_str(), H5P_DEFAULT);
  const hid_t space = H5Dget_space(set);
  haddr_t address = HADDR_UNDEF;
  hsize_t size = 0;
  REQUIRE(H5Dget_chunk_info(set, space, 0, nullptr, nullptr, &address, &size) >= 0);
  H5Sclose(space);
  H5Dclose(set);
  return {address, size};
}
haddr_t data_offset(const std::string& path, const std::string& name) { return first_chunk(path, name).first; }

struct hostile_case {
  std::string name;
  std::function<void(const std::string& file)> damage;
  std::string expected;  // part of the error message
};

// Reads and restores as kamp-train does; returns the error message, or "" when both succeed.
std::string load_error(const std::string& file, kamp::trainer& t) {
  try {
    t.restore(kamp::read_checkpoint(file));
  } catch (const kamp::checkpoint_error& e) {
    return e.what();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("hostile checkpoint files get an error naming what is wrong, and the trainer stays as it was",
          "[model][checkpoint]") {
  const scratch_dir dir("hostile");
  const auto p = policy(kamp::precision_mode::amp_bf16);
  kamp::trainer source(small_model(), p, short_run(6), corpus(small_model()));
  train_until(source, 2);
  const std::string valid = dir / "valid.h5";
  kamp::write_checkpoint(valid, source.state());
  const std::vector<char> valid_bytes = bytes_of(valid);

  // Valid checkpoints of another model size and another mode.
  kamp::gpt_config wider_model = small_model();
  wider_model.d_model = 64;
  kamp::trainer wider(wider_model, p, short_run(6), corpus(wider_model));
  kamp::write_checkpoint(dir / "wider.h5", wider.state());
  kamp::trainer fp16(small_model(), policy(kamp::precision_mode::amp_fp16), short_run(6), corpus(small_model()));
  kamp::write_checkpoint(dir / "fp16.h5", fp16.state());
  kamp::trainer kahan(small_model(), policy(kamp::precision_mode::pure_bf16), short_run(6), corpus(small_model()));
  kamp::write_checkpoint(dir / "kahan.h5", kahan.state());

  const auto truncate_to = [&](double fraction) {
    return [&, fraction](const std::string& f) {
      write_bytes(f, std::vector<char>(valid_bytes.begin(),
                                       valid_bytes.begin() + std::ptrdiff_t(fraction * double(valid_bytes.size()))));
    };
  };
  const auto copy_of = [&](const std::string& other) {
    return [&, other](const std::string& f) { fs::copy_file(dir / other, f, fs::copy_options::overwrite_existing); };
  };
  const auto with_nan = [&](const std::string& role, std::size_t element) {
    return [&, role, element](const std::string& f) {
      kamp::training_state s = source.state();
      for (auto& t : s.tensors)
        if (t.role == role) {
          const float nan = std::nanf("");
          if (t.type == kamp::dtype::fp32) std::memcpy(t.bytes.data() + 4 * element, &nan, 4);
          if (t.type != kamp::dtype::fp32) t.bytes[2 * element + 1] = char(0x7f), t.bytes[2 * element] = char(0xc1);
        }
      kamp::write_checkpoint(f, s);
    };
  };
  const auto edited = [&](const std::string& role, std::size_t element, float value) {
    return [&, role, element, value](const std::string& f) {
      kamp::training_state s = source.state();
      for (auto& t : s.tensors)
        if (t.role == role) std::memcpy(t.bytes.data() + 4 * element, &value, 4);
      kamp::write_checkpoint(f, s);
    };
  };
  // The first chunk of a dataset zeroed, values and checksum (Fletcher-32 of zeros is 0).
  const auto zeroed_chunk = [&](const std::string& dataset) {
    return [&, dataset](const std::string& f) {
      const auto [at, size] = first_chunk(valid, dataset);
      std::vector<char> b = valid_bytes;
      std::fill(b.begin() + std::ptrdiff_t(at), b.begin() + std::ptrdiff_t(at + size), char(0));
      write_bytes(f, b);
    };
  };
  const std::vector<hostile_case> cases{
      {"empty file", [](const std::string& f) { std::ofstream{f}; }, "is not an HDF5 file"},
      {"text file", [](const std::string& f) { std::ofstream(f) << "step = 5\n"; }, "is not an HDF5 file"},
      {"random bytes",
       [](const std::string& f) {
         std::mt19937 g(7);
         std::vector<char> b(8192);
         for (auto& c : b) c = char(g());
         write_bytes(f, b);
       },
       "is not an HDF5 file"},
      {"truncated to 1 KiB",
       [&](const std::string& f) {
         write_bytes(f, {valid_bytes.begin(), valid_bytes.begin() + 1024});
       },
       "truncated"},
      {"truncated to 10%", truncate_to(0.10), "truncated"},
      {"truncated to 50%", truncate_to(0.50), "truncated"},
      {"truncated to 90%", truncate_to(0.90), "truncated"},
      {"last byte missing",
       [&](const std::string& f) {
         write_bytes(f, {valid_bytes.begin(), valid_bytes.end() - 1});
       },
       "truncated"},
      {"newer format version", [](const std::string& f) { set_int(f, "/", "format_version", 5); }, "format version 5"},
      // A verified file cannot be downgraded to a format that checks less.
      {"version lowered to 3", [](const std::string& f) { set_int(f, "/", "format_version", 3); },
       "format_version attribute says 3, but it carries format 4's /digest"},
      {"version lowered to 3, digest deleted",
       [](const std::string& f) {
         set_int(f, "/", "format_version", 3);
         H5Adelete(h5_file(f).id, "digest");
       },
       "says 3, but dataset /model/wte carries format 4's content hash: the version was lowered"},
      {"version lowered to 2, digest deleted",
       [](const std::string& f) {
         set_int(f, "/", "format_version", 2);
         H5Adelete(h5_file(f).id, "digest");
       },
       "says 2, but dataset /model/wte carries format 4's content hash"},
      {"version lowered to 1, digest deleted",
       [](const std::string& f) {
         set_int(f, "/", "format_version", 1);
         H5Adelete(h5_file(f).id, "digest");
       },
       "says 1, which has no content hashes, but dataset /model/wte carries one"},
      {"hashes deleted and the version lowered to 1",
       [](const std::string& f) {
         make_format_1(f);
         set_int(f, "/", "format_version", 1);
       },
       "it is a format-1 checkpoint: its tensors have no content hashes"},
      // One object under two names: a moment's values standing in for the other moment's.
      {"a hard link where a dataset belongs",
       [](const std::string& f) {
         h5_file h(f);
         REQUIRE(H5Ldelete(h.id, "/moment2/wte", H5P_DEFAULT) >= 0);
         REQUIRE(H5Lcreate_hard(h.id, "/moment1/wte", h.id, "/moment2/wte", H5P_DEFAULT, H5P_DEFAULT) >= 0);
       },
       "dataset /moment1/wte is one object under 2 names"},
      {"a hard link where a group belongs",
       [](const std::string& f) {
         h5_file h(f);
         REQUIRE(H5Ldelete(h.id, "/moment2", H5P_DEFAULT) >= 0);
         REQUIRE(H5Lcreate_hard(h.id, "/moment1", h.id, "/moment2", H5P_DEFAULT, H5P_DEFAULT) >= 0);
       },
       "group /moment1 is one object under 2 names"},
      {"a LayerNorm's weight and bias swapped in all four roles",
       [](const std::string& f) { swap_in_every_role(f, "h0.ln1.weight", "h0.ln1.bias"); },
       "dataset /model/h0.ln1.weight holds the values written as /model/h0.ln1.bias: two tensors were swapped"},
      {"an option edited", [](const std::string& f) { set_attribute_double(f, "/config", "lr", 1e-2); },
       "its /digest does not match its attributes"},
      {"the loss scale edited", [](const std::string& f) { set_attribute_double(f, "/loss_scaler", "scale", 2.0); },
       "its /digest does not match its attributes"},
      {"not a kamp checkpoint", [](const std::string& f) { set_string(f, "/", "format", "my-trainer"); },
       "not a kamp checkpoint"},
      {"missing dataset", [](const std::string& f) { remove_object(f, "/master/h0.attn.qkv.weight"); },
       "dataset /master/h0.attn.qkv.weight is missing"},
      {"missing group", [](const std::string& f) { remove_object(f, "/moment2"); }, "group /moment2 is missing"},
      {"missing config group", [](const std::string& f) { remove_object(f, "/config"); }, "group /config is missing"},
      {"missing config attribute",
       [](const std::string& f) { H5Adelete_by_name(h5_file(f).id, "/config", "d_model", H5P_DEFAULT); },
       "/config: attribute 'd_model' is missing"},
      {"missing step", [](const std::string& f) { H5Adelete(h5_file(f).id, "step"); }, "attribute 'step' is missing"},
      {"wrong shape",
       [](const std::string& f) {
         replace_dataset(f, "/master/wpe", H5T_IEEE_F32LE, {32, 16}, 0.0);
       },
       "dataset /master/wpe has shape (32, 16), expected (16, 32)"},
      {"wrong dtype: fp64 for fp32",
       [](const std::string& f) {
         replace_dataset(f, "/master/wte", H5T_IEEE_F64LE, {256, 32}, 0.0);
       },
       "dataset /master/wte is 64-bit float (fp64), expected 32-bit float (fp32)"},
      {"wrong dtype: fp32 for bf16",
       [](const std::string& f) {
         replace_dataset(f, "/model/wte", H5T_IEEE_F32LE, {256, 32}, 0.0);
       },
       "dataset /model/wte is 32-bit float (fp32), expected 16-bit float (bf16)"},
      {"wrong dtype: integers",
       [](const std::string& f) { replace_dataset(f, "/moment1/lnf.bias", H5T_STD_I32LE, {32}, 0.0); },
       "dataset /moment1/lnf.bias is 32-bit integer, expected 32-bit float (fp32)"},
      {"attribute of the wrong type", [](const std::string& f) { set_string(f, "/config", "layers", "one"); },
       "/config: attribute 'layers' is a string, expected one integer"},
      {"invalid config", [](const std::string& f) { set_int(f, "/config", "heads", 3); },
       "/config holds an invalid configuration"},
      {"unknown precision mode", [](const std::string& f) { set_string(f, "/config", "mode", "fp8"); },
       "/config holds an invalid configuration"},
      {"config claiming a huge model",
       [](const std::string& f) {
         set_int(f, "/config", "d_model", 65536);
         set_int(f, "/config", "layers", 1000);
       },
       "/config claims 1000 layers (12004 tensors), but /model holds"},
      {"config claiming a million layers", [](const std::string& f) { set_int(f, "/config", "layers", 1000000); },
       "/config claims 1000000 layers"},
      {"config claiming a huge d_model", [](const std::string& f) { set_int(f, "/config", "d_model", 65536); },
       "dataset /model/wte has shape (256, 32), expected (256, 65536)"},
      {"another model size", copy_of("wider.h5"), "d_model 64, this run's has 32"},
      {"another precision mode", copy_of("fp16.h5"), "precision mode amp_fp16, this run uses amp_bf16"},
      {"pure bf16 state", copy_of("kahan.h5"), "precision mode pure_bf16"},
      {"NaN in the master weights", with_nan("master", 40), "master/wte has 1 non-finite values"},
      {"NaN in the bf16 model copy", with_nan("model", 8300), "model/wpe has 1 non-finite values"},
      {"counters that disagree", [](const std::string& f) { set_int(f, "/", "attempts", 1); }, "inconsistent counters"},
      {"impossible scaler state", [](const std::string& f) { set_int(f, "/loss_scaler", "hysteresis_left", 0); },
       "impossible loss scaler state"},
      {"a step count of 2^62",
       [](const std::string& f) {
         set_int(f, "/", "step", std::int64_t(1) << 62);
         set_int(f, "/", "attempts", std::int64_t(1) << 62);
       },
       "inconsistent counters"},
      {"a negative second moment", edited("moment2", 300, -1.0f), "moment2/wte holds a negative second moment"},
      {"master zeroed under an unchanged model copy", edited("master", 5, 0.0f), "model/wte element 5 is"},
      {"a chunk zeroed, values and checksum (Fletcher-32 of zeros is 0)", zeroed_chunk("/master/h0.mlp.fc.weight"),
       "dataset /master/h0.mlp.fc.weight does not hold the values that were written"},
      {"a moment chunk zeroed, values and checksum (no copy to compare with)",
       zeroed_chunk("/moment1/h0.mlp.fc.weight"),
       "dataset /moment1/h0.mlp.fc.weight does not hold the values that were written"},
      {"rewritten without the checksum filter",
       [](const std::string& f) {
         replace_dataset(f, "/moment1/wpe", H5T_IEEE_F32LE, {16, 32}, 0.5);
       },
       "dataset /moment1/wpe has no Fletcher-32 checksum filter"},
      {"a soft link where a dataset belongs",
       [](const std::string& f) {
         h5_file h(f);
         REQUIRE(H5Ldelete(h.id, "/master/wte", H5P_DEFAULT) >= 0);
         REQUIRE(H5Lcreate_soft("/moment1/wte", h.id, "/master/wte", H5P_DEFAULT, H5P_DEFAULT) >= 0);
       },
       "/master/wte is a link to another object"},
      {"a soft link where a group belongs",
       [](const std::string& f) {
         h5_file h(f);
         REQUIRE(H5Ldelete(h.id, "/moment2", H5P_DEFAULT) >= 0);
         REQUIRE(H5Lcreate_soft("/moment1", h.id, "/moment2", H5P_DEFAULT, H5P_DEFAULT) >= 0);
       },
       "/moment2 is a link to another object, not a group of its own"},
      {"chunks never written",
       [](const std::string& f) {
         replace_with_unwritten(f, "/moment2/wpe", {16, 32});
       },
       "dataset /moment2/wpe has chunks that were never written"},
      {"a flipped bit in a dataset",
       [&](const std::string& f) {
         const haddr_t at = data_offset(valid, "/master/h0.mlp.fc.weight");
         std::vector<char> b = valid_bytes;
         b[at + 100] ^= 0x10;
         write_bytes(f, b);
       },
       "dataset /master/h0.mlp.fc.weight cannot be read: the file is damaged"},
  };
  REQUIRE(cases.size() >= 20);

  kamp::trainer target(small_model(), p, short_run(6), corpus(small_model()));
  train_until(target, 1);
  const kamp::training_state before = target.state();
  for (const auto& c : cases) {
    INFO("case: " << c.name);
    const std::string file = dir / "hostile.h5";
    write_bytes(file, valid_bytes);
    c.damage(file);
    const std::string error = load_error(file, target);
    CHECK_THAT(error, kamp::test::contains(c.expected));
    require_same_state(target.state(), before);
  }
  // A genuine version-1 file (no content hashes) is read when asked for, checked without them.
  {
    const std::string file = dir / "version1.h5";
    write_bytes(file, valid_bytes);
    make_format_1(file);
    set_int(file, "/", "format_version", 1);
    kamp::checkpoint_read_options unhashed;
    unhashed.accept_unhashed = true;
    const kamp::training_state loaded = kamp::read_checkpoint(file, unhashed);
    CHECK(loaded.format_version == 1);
    require_same_state(loaded, source.state());
  }
  // The undamaged file loads, so every error above came from its damage.
  REQUIRE(load_error(valid, target).empty());
  require_same_state(target.state(), source.state());
}

TEST_CASE("any flipped byte is detected or harmless: the checkpoint fails to load or loads identically",
          "[model][checkpoint]") {
  const scratch_dir dir("flips");
  kamp::trainer source(small_model(), policy(kamp::precision_mode::amp_fp16), short_run(4), corpus(small_model()));
  train_until(source, 2);
  const kamp::training_state saved = source.state();
  const std::string valid = dir / "valid.h5";
  kamp::write_checkpoint(valid, saved);
  const std::vector<char> bytes = bytes_of(valid);
  std::mt19937_64 g(2026);
  int detected = 0;
  const int trials = 60;
  for (int trial = 0; trial < trials; ++trial) {
    std::vector<char> damaged = bytes;
    const std::size_t at = g() % damaged.size();
    damaged[at] = char(damaged[at] ^ char(1 + g() % 255));
    const std::string file = dir / "flipped.h5";
    write_bytes(file, damaged);
    try {
      const kamp::training_state loaded = kamp::read_checkpoint(file);
      INFO("byte " << at << " was changed and the file still loads: it must be unused padding");
      require_same_state(loaded, saved);
    } catch (const kamp::checkpoint_error& e) {
      CHECK_THAT(e.what(), kamp::test::contains("flipped.h5"));
      ++detected;
    }
  }
  // Nearly all of the file is checksummed data and metadata.
  CHECK(detected > trials * 3 / 4);
}

TEST_CASE("a checkpoint read in slices gives each slice of the whole, whatever the boundaries", "[model][checkpoint]") {
  // What ranks do when they reshard a checkpoint: each reads a flat range of every tensor, which
  // for a matrix is a partial row, whole rows and a partial row.
  const scratch_dir dir("slices");
  kamp::trainer source(small_model(), policy(kamp::precision_mode::amp_bf16), short_run(4), corpus(small_model()));
  train_until(source, 2);
  const std::string file = dir / "whole.h5";
  kamp::write_checkpoint(file, source.state());
  const kamp::training_state whole = kamp::read_checkpoint(file);
  const std::size_t flat = parameter_table(small_model()).flat_size();
  std::mt19937_64 g(17);
  for (int trial = 0; trial < 6; ++trial) {
    std::vector<std::size_t> cuts{0, flat};
    for (int c = 0; c < 1 + trial; ++c) cuts.push_back(1 + g() % (flat - 1));
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    for (std::size_t k = 0; k + 1 < cuts.size(); ++k) {
      INFO("elements [" << cuts[k] << ", " << cuts[k + 1] << ") of " << flat);
      const kamp::training_state part = kamp::read_checkpoint(file, kamp::dist::communicator(), {cuts[k], cuts[k + 1]});
      REQUIRE(part.slice == kamp::element_range{cuts[k], cuts[k + 1]});
      REQUIRE(part.tensors.size() == whole.tensors.size());
      for (std::size_t t = 0; t < whole.tensors.size(); ++t) {
        const std::size_t width = kamp::size_of(whole.tensors[t].type);
        REQUIRE(part.tensors[t].bytes ==
                std::vector<unsigned char>(whole.tensors[t].bytes.begin() + cuts[k] * width,
                                           whole.tensors[t].bytes.begin() + cuts[k + 1] * width));
      }
    }
  }
  // A slice outside the table is refused with the table's size.
  CHECK_THROWS_WITH(kamp::read_checkpoint(file, kamp::dist::communicator(), {flat - 4, flat + 4}),
                    kamp::test::contains("the model's flat buffers have " + std::to_string(flat)));
}

TEST_CASE("a checkpoint's /model group holds one dataset per tensor of the parameter table", "[model][checkpoint]") {
  // What read_checkpoint checks a file's /model group against before it builds the table.
  const scratch_dir dir("model-group");
  for (const int layers : {1, 2}) {
    INFO(layers << " layers");
    const kamp::gpt_config model = small_model(layers);
    const kamp::trainer t(model, policy(kamp::precision_mode::amp_bf16), short_run(1), corpus(model));
    const std::string file = dir / "model.h5";
    kamp::write_checkpoint(file, t.state());
    const h5_file f(file);
    const hid_t group = H5Gopen2(f.id, "/model", H5P_DEFAULT);
    REQUIRE(group >= 0);
    H5G_info_t info;
    REQUIRE(H5Gget_info(group, &info) >= 0);
    const kamp::tensor_table table = parameter_table(model);
    CHECK(info.nlinks == table.count());
    for (const auto& e : table.entries()) CHECK(H5Lexists(group, e.name.c_str(), H5P_DEFAULT) > 0);
    H5Gclose(group);
  }
}

// A forged FP8 state whose file is otherwise valid (the hashes are those of the forged values):
// kamp-inspect's read and a resume give the same verdict, naming the value.
TEST_CASE("forged FP8 scaling states are refused by the read as by a resume, naming the value", "[model][checkpoint]") {
  const scratch_dir dir("fp8-forged");
  kamp::precision_policy p = policy(kamp::precision_mode::amp_fp8);
  p.amax_history = 4;
  kamp::trainer t(small_model(), p, short_run(4), corpus(small_model()));
  train_until(t, 2);
  const kamp::training_state valid = t.state();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<std::pair<std::function<void(kamp::fp8_scaling_state&)>, std::string>> forgeries = {
      {[&](kamp::fp8_scaling_state& s) { s.scales[3] = nan; }, "FP8 scale of h0.mlp.proj's input is nan"},
      {[](kamp::fp8_scaling_state& s) { s.scales[0] = 0.0f; }, "FP8 scale of h0.attn.qkv's input is 0.000000"},
      {[](kamp::fp8_scaling_state& s) { s.scales.back() = -2.0f; }, "output gradient is -2.000000"},
      {[&](kamp::fp8_scaling_state& s) { s.history[5] = nan; }, "amax history of h0.attn.proj's input holds nan"},
      {[](kamp::fp8_scaling_state& s) { s.history[0] = -1.0f; }, "amax history of h0.attn.qkv's input holds -1.0"},
      {[](kamp::fp8_scaling_state& s) { s.updates = -3; }, "counts -3 amax history updates"},
  };
  for (const auto& [forge, message] : forgeries) {
    CAPTURE(message);
    kamp::training_state forged = valid;
    forge(forged.fp8);
    const std::string path = dir / "forged.h5";
    kamp::write_checkpoint(path, forged);
    CHECK_THROWS_WITH(kamp::read_checkpoint(path), kamp::test::contains(message));
    kamp::trainer resumed(small_model(), p, short_run(4), corpus(small_model()));
    CHECK_THROWS_WITH(resumed.restore(forged), kamp::test::contains(message));
  }
  // The unforged state still reads back.
  kamp::write_checkpoint(dir / "valid.h5", valid);
  CHECK_NOTHROW(kamp::read_checkpoint(dir / "valid.h5"));
}
