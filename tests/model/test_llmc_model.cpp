// llm.c's model file (train_gpt2.c: gpt2_build_from_checkpoint, fill_in_parameter_sizes): a
// file written here from that layout, independently of kamp's writer, read back tensor by
// tensor; round trips; refusals; and the loss of an imported model.
#include <kamp/model/network/gpt_parameters.hpp>
#include <kamp/model/network/initial_weights.hpp>
#include <kamp/model/state/llmc_model.hpp>
#include <kamp/model/training/trainer.hpp>

#include "../support/catch.hpp"

#include "../support/fixtures.hpp"
#include "../support/gpt_shapes.hpp"
#include "../support/scratch_dir.hpp"
#include "../support/views.hpp"

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

using kamp::test::scratch_dir;

std::vector<unsigned char> file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// llm.c's 16 parameter arrays, named as train_gpt2.c names them, with their element counts for
// V, Vp, T, L, C (the MLP 4C); each block array is L layers' tensors back to back.
struct llmc_array {
  const char* name;
  std::size_t size;
};
std::vector<llmc_array> llmc_arrays(std::size_t vp, std::size_t t, std::size_t l, std::size_t c) {
  return {{"wte", vp * c},
          {"wpe", t * c},
          {"ln1w", l * c},
          {"ln1b", l * c},
          {"qkvw", l * 3 * c * c},
          {"qkvb", l * 3 * c},
          {"attprojw", l * c * c},
          {"attprojb", l * c},
          {"ln2w", l * c},
          {"ln2b", l * c},
          {"fcw", l * 4 * c * c},
          {"fcb", l * 4 * c},
          {"fcprojw", l * c * 4 * c},
          {"fcprojb", l * c},
          {"lnfw", c},
          {"lnfb", c}};
}

// kamp's tensor for llm.c array `a`, layer `layer`.
std::string kamp_name(const std::string& a, int layer) {
  const std::string h = "h" + std::to_string(layer) + ".";
  if (a == "wte" || a == "wpe") return a;
  if (a == "lnfw") return "lnf.weight";
  if (a == "lnfb") return "lnf.bias";
  const std::string suffix = a.back() == 'w' ? "weight" : "bias";
  const std::string stem = a.substr(0, a.size() - 1);
  if (stem == "ln1" || stem == "ln2") return h + stem + "." + suffix;
  if (stem == "qkv") return h + "attn.qkv." + suffix;
  if (stem == "attproj") return h + "attn.proj." + suffix;
  if (stem == "fc") return h + "mlp.fc." + suffix;
  return h + "mlp.proj." + suffix;
}

kamp::gpt_config small_shape() {
  kamp::gpt_config c = kamp::test::gpt_shape(8, 2, 2, 16, 64);
  c.vocab = 300;  // padded to 384
  return c;
}

}  // namespace

TEST_CASE("an llm.c model file written from llm.c's layout reads back tensor by tensor", "[model][llmc]") {
  // Version 3 holds fp32 values, version 5 bf16 ones (train_gpt2.cu); both are written here byte
  // by byte from llm.c's layout, not by kamp's writer.
  const int version = GENERATE(3, 5);
  INFO("version " << version);
  const scratch_dir dir("kamp_llmc");
  const kamp::gpt_config c = small_shape();
  const std::size_t vp = 384, t = 8, l = 2, ch = 16;
  // Element k of the file: the value k (version 3), or bf16 bits spread over the whole range
  // but for inf and NaN (version 5); what it reads as in fp32.
  const auto bf16_bits = [](std::size_t k) {
    std::uint16_t b = std::uint16_t((std::uint32_t(k) * 2654435761u) >> 16);
    if (((b >> 7) & 0xffu) == 0xffu) b ^= 0x0080u;  // an exponent of all ones is inf or NaN
    return b;
  };
  const auto value = [&](std::size_t k) {
    if (version == 3) return float(k);
    const std::uint32_t widened = std::uint32_t(bf16_bits(k)) << 16;
    float f;
    std::memcpy(&f, &widened, 4);
    return f;
  };
  // Header: magic, version, maxT, V, L, NH, C, Vp.
  std::vector<std::int32_t> header(256, 0);
  const std::int32_t fields[] = {20240326, version, 8, 300, 2, 2, 16, 384};
  std::copy(std::begin(fields), std::end(fields), header.begin());
  std::ofstream out(dir / "model.bin", std::ios::binary);
  out.write(reinterpret_cast<const char*>(header.data()), 1024);
  std::size_t k = 0;
  for (const llmc_array& a : llmc_arrays(vp, t, l, ch))
    for (std::size_t i = 0; i < a.size; ++i, ++k) {
      if (version == 3) {
        const float v = value(k);
        out.write(reinterpret_cast<const char*>(&v), 4);
      } else {
        const std::uint16_t b = bf16_bits(k);
        const unsigned char little_endian[2] = {static_cast<unsigned char>(b & 0xffu),
                                                static_cast<unsigned char>(b >> 8)};
        out.write(reinterpret_cast<const char*>(little_endian), 2);
      }
    }
  out.close();
  const kamp::llmc_model m = kamp::read_llmc_model(dir / "model.bin");
  CHECK(m.config.vocab == 300);
  CHECK(m.config.context == 8);
  CHECK(m.config.layers == 2);
  CHECK(m.config.heads == 2);
  CHECK(m.config.d_model == 16);
  CHECK(m.config.mlp == 64);
  const kamp::gpt_parameters p(c);
  int wrong = 0, tensors = 0;
  std::size_t first = 0;  // the array's first element in the file
  for (const llmc_array& a : llmc_arrays(vp, t, l, ch)) {
    const std::string name = a.name;
    const bool per_layer = name != "wte" && name != "wpe" && name != "lnfw" && name != "lnfb";
    for (int layer = 0; layer < (per_layer ? int(l) : 1); ++layer) {
      const auto& e = p.table[p.table.index_of(kamp_name(a.name, layer))];
      const std::size_t each = per_layer ? a.size / l : a.size;
      ++tensors;
      for (std::size_t i = 0; i < e.size; ++i) {
        // wte's rows past the vocabulary are kamp's padding: zero, whatever the file holds there.
        const bool padding = name == "wte" && i >= 300 * ch;
        const float want = padding ? 0.0f : value(first + std::size_t(layer) * each + i);
        wrong += kamp::test::raw_bits(m.weights[e.offset + i]) != kamp::test::raw_bits(want);
      }
    }
    first += a.size;
  }
  CHECK(tensors == int(p.table.count()));
  CHECK(wrong == 0);
}

TEST_CASE("llm.c model files round-trip kamp's weights bit for bit", "[model][llmc]") {
  const scratch_dir dir("kamp_llmc");
  const kamp::gpt_config c = small_shape();
  const std::vector<float> w = kamp::gpt2_initial_weights(c, 5);
  kamp::write_llmc_model(dir / "fp32.bin", {c, w}, kamp::llmc_precision::fp32);
  CHECK(fs::file_size(dir / "fp32.bin") == 1024 + 4 * kamp::gpt_parameters(c).table.parameter_count());
  const kamp::llmc_model back = kamp::read_llmc_model(dir / "fp32.bin");
  int differ = 0;
  for (std::size_t i = 0; i < w.size(); ++i)
    differ += kamp::test::raw_bits(back.weights[i]) != kamp::test::raw_bits(w[i]);
  CHECK(differ == 0);
  // bf16 (version 5): each value rounded to nearest even once; writing what was read gives the
  // same file again.
  kamp::write_llmc_model(dir / "bf16.bin", {c, w}, kamp::llmc_precision::bf16);
  const kamp::llmc_model narrow = kamp::read_llmc_model(dir / "bf16.bin");
  int not_rounded = 0;
  for (std::size_t i = 0; i < w.size(); ++i) {
    kamp::bf16 x;
    kamp::store_nearest(&x, w[i]);
    not_rounded += kamp::test::raw_bits(narrow.weights[i]) != kamp::test::raw_bits(kamp::to_float(x));
  }
  CHECK(not_rounded == 0);
  kamp::write_llmc_model(dir / "again.bin", narrow, kamp::llmc_precision::bf16);
  CHECK(file_bytes(dir / "again.bin") == file_bytes(dir / "bf16.bin"));
  CHECK_FALSE(fs::exists(dir / "bf16.bin.tmp"));
}

TEST_CASE("damaged llm.c model files and shapes llm.c cannot hold are refused", "[model][llmc]") {
  const scratch_dir dir("kamp_llmc");
  const kamp::gpt_config c = small_shape();
  kamp::write_llmc_model(dir / "good.bin", {c, kamp::gpt2_initial_weights(c, 1)}, kamp::llmc_precision::fp32);
  const auto good = file_bytes(dir / "good.bin");
  const auto write = [&](const std::string& name, std::vector<unsigned char> bytes) {
    std::ofstream(dir / name, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    return dir / name;
  };
  auto truncated = good;
  truncated.resize(good.size() - 4);
  CHECK_THROWS_WITH(kamp::read_llmc_model(write("truncated.bin", truncated)),
                    kamp::test::contains("it is truncated or damaged"));
  auto magic = good;
  magic[0] ^= 1;
  CHECK_THROWS_WITH(kamp::read_llmc_model(write("magic.bin", magic)), kamp::test::contains("not llm.c's model magic"));
  auto version = good;
  version[4] = 4;
  CHECK_THROWS_WITH(kamp::read_llmc_model(write("version.bin", version)),
                    kamp::test::contains("version 4; kamp reads versions 3 (fp32) and 5 (bf16)"));
  auto heads = good;
  heads[20] = 3;  // 16 channels over 3 heads
  CHECK_THROWS_WITH(kamp::read_llmc_model(write("heads.bin", heads)),
                    kamp::test::contains("not a positive multiple of heads"));
  auto layers = good;
  layers[16] = layers[17] = layers[18] = 0x7f;  // 2^31 - ... layers
  CHECK_THROWS_WITH(kamp::read_llmc_model(write("layers.bin", layers)), kamp::test::contains("the file is damaged"));
  CHECK_THROWS_WITH(kamp::read_llmc_model(dir / "missing.bin"), kamp::test::contains("missing.bin' does not exist"));
  kamp::gpt_config wide_mlp = c;
  wide_mlp.mlp = 48;
  CHECK_THROWS_WITH(kamp::write_llmc_model(dir / "mlp.bin", {wide_mlp, kamp::gpt2_initial_weights(wide_mlp, 1)},
                                           kamp::llmc_precision::fp32),
                    kamp::test::contains("4 x d_model = 64; this model's is 48"));
  CHECK_FALSE(fs::exists(dir / "mlp.bin"));
}

TEST_CASE("a model exported to llm.c's file and imported has the loss of the weights it came from", "[model][llmc]") {
  const scratch_dir dir("kamp_llmc");
  const kamp::gpt_config c = small_shape();
  const auto& data = kamp::test::corpus(c, 1 << 13);
  for (const auto mode : {kamp::precision_mode::fp32, kamp::precision_mode::amp_bf16}) {
    CAPTURE(kamp::name(mode));
    const kamp::precision_policy policy = kamp::test::policy(mode);
    kamp::train_options o = kamp::test::run_options(2, 3, 3e-3f);
    kamp::trainer trained(c, policy, o, data);
    for (int i = 0; i < o.steps; ++i) trained.step();
    kamp::write_llmc_model(dir / "model.bin", {c, kamp::exact_weights(trained.state())}, kamp::llmc_precision::fp32);
    o.seed = 99;  // other initial weights, which the import replaces
    kamp::trainer imported(c, policy, o, data);
    imported.restore(kamp::with_weights(imported.state(), kamp::read_llmc_model(dir / "model.bin").weights));
    CHECK(imported.exact_weights() == trained.exact_weights());
    CHECK(imported.model_copy_bits() == trained.model_copy_bits());
    std::vector<int> tokens(std::size_t(o.batch) * c.context), targets(tokens.size());
    data.sample(kamp::token_dataset::split::validation, 3, 0, o.batch, tokens.data(), targets.data());
    const double want = trained.model().evaluate(tokens.data(), targets.data());
    CHECK(imported.model().evaluate(tokens.data(), targets.data()) == want);
  }
}
