#include <kamp/model/network/gpt_parameters.hpp>
#include <kamp/model/state/file_rules.hpp>
#include <kamp/model/state/llmc_model.hpp>
#include <kamp/numeric/convert.hpp>
#include <kamp/numeric/element_access.hpp>

#include <array>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <stdexcept>

namespace kamp {

namespace {

constexpr std::int32_t model_magic = 20240326, fp32_version = 3, bf16_version = 5;
constexpr std::size_t header_ints = 256;

// The table's tensors in llm.c's file order (fill_in_parameter_sizes): the one fact both the
// reader and the writer use.
std::vector<std::size_t> file_order(const gpt_parameters& p) {
  std::vector<std::size_t> out{p.wte, p.wpe};
  const auto each_block = [&](auto field) {
    for (const block_parameters& b : p.blocks) out.push_back(field(b));
  };
  each_block([](const block_parameters& b) { return b.ln1.gain; });
  each_block([](const block_parameters& b) { return b.ln1.bias; });
  each_block([](const block_parameters& b) { return b.qkv.weight; });
  each_block([](const block_parameters& b) { return b.qkv.bias; });
  each_block([](const block_parameters& b) { return b.attn_proj.weight; });
  each_block([](const block_parameters& b) { return b.attn_proj.bias; });
  each_block([](const block_parameters& b) { return b.ln2.gain; });
  each_block([](const block_parameters& b) { return b.ln2.bias; });
  each_block([](const block_parameters& b) { return b.fc.weight; });
  each_block([](const block_parameters& b) { return b.fc.bias; });
  each_block([](const block_parameters& b) { return b.mlp_proj.weight; });
  each_block([](const block_parameters& b) { return b.mlp_proj.bias; });
  out.push_back(p.lnf.gain);
  out.push_back(p.lnf.bias);
  return out;
}

// Elements of tensor t in the file: wte has the file's padded rows, every other tensor its own size.
std::size_t file_elements(const gpt_parameters& p, std::size_t t, std::size_t file_vocab_rows, std::size_t c) {
  return t == p.wte ? file_vocab_rows * c : p[t].size;
}

}  // namespace

llmc_model read_llmc_model(const std::string& path) {
  const auto fail = [&](const std::string& what) { throw std::runtime_error("llm.c model '" + path + "': " + what); };
  const std::unique_ptr<std::FILE, int (*)(std::FILE*)> in(
      ::fdopen(open_input_file({"llm.c model", path, "an llm.c model file"}), "rb"), &std::fclose);
  if (!in) fail(std::string("cannot read it: ") + std::strerror(errno));
  const auto read = [&](void* to, std::size_t bytes) { return std::fread(to, 1, bytes, in.get()) == bytes; };
  std::array<std::int32_t, header_ints> h{};
  if (!read(h.data(), sizeof h)) fail("shorter than llm.c's 1024-byte header");
  if (h[0] != model_magic)
    fail("its first int32 is " + std::to_string(h[0]) + ", not llm.c's model magic 20240326: not an llm.c model file");
  if (h[1] != fp32_version && h[1] != bf16_version)
    fail("version " + std::to_string(h[1]) + "; kamp reads versions 3 (fp32) and 5 (bf16) of llm.c's model file");
  llmc_model out;
  gpt_config& c = out.config;
  c.context = h[2];
  c.vocab = h[3];
  c.layers = h[4];
  c.heads = h[5];
  c.d_model = h[6];
  const std::int32_t file_rows = h[7];
  // Bounds before any size is multiplied out: a damaged header must not ask for terabytes.
  if (c.d_model < 1 || c.d_model > (1 << 16) || c.layers < 1 || c.layers > 4096 || c.context < 1 ||
      c.context > (1 << 20))
    fail("the header's shape (context " + std::to_string(c.context) + ", layers " + std::to_string(c.layers) +
         ", channels " + std::to_string(c.d_model) + ") is not a model's: the file is damaged");
  c.mlp = 4 * c.d_model;
  try {
    c.validate();
  } catch (const std::invalid_argument& e) {
    fail(std::string("the header's shape is not one kamp builds: ") + e.what());
  }
  if (file_rows < c.vocab || file_rows > gpt_config::max_vocab + gpt_config::vocab_padding)
    fail("the padded vocabulary " + std::to_string(file_rows) + " is below the vocabulary " + std::to_string(c.vocab) +
         " or implausible: the file is damaged");
  const gpt_parameters p(c);
  const std::size_t width = h[1] == fp32_version ? 4 : 2, channels = std::size_t(c.d_model);
  std::uint64_t elements = 0;
  const std::vector<std::size_t> order = file_order(p);
  for (const std::size_t t : order) elements += file_elements(p, t, std::size_t(file_rows), channels);
  std::error_code error;
  const std::uint64_t bytes = std::filesystem::file_size(path, error);
  if (error || bytes != sizeof h + elements * width)
    fail("holds " + std::to_string(bytes) + " bytes but its header describes " +
         std::to_string(sizeof h + elements * width) + " (" + std::to_string(elements) + " parameters of " +
         std::to_string(width) + " bytes): it is truncated or damaged");
  out.weights.assign(p.table.flat_size(), 0.0f);
  std::vector<unsigned char> block;
  for (const std::size_t t : order) {
    const std::size_t n = file_elements(p, t, std::size_t(file_rows), channels);
    block.resize(n * width);
    if (!read(block.data(), block.size())) fail("reading " + p[t].name + " failed");
    // wte: the vocabulary's rows; the file's padding rows (zero in llm.c) are not kamp's.
    const std::size_t keep = t == p.wte ? std::size_t(c.vocab) * channels : n;
    float* to = out.weights.data() + p[t].offset;
    for (std::size_t i = 0; i < keep; ++i) {
      if (width == 4) {
        std::memcpy(to + i, block.data() + 4 * i, 4);
      } else {
        bf16 x;
        std::memcpy(&x.bits, block.data() + 2 * i, 2);
        to[i] = load_float(&x);
      }
      // A trained model's weights are finite: a NaN or inf here is damage, not divergence.
      if (!std::isfinite(to[i]))
        fail(p[t].name + " element " + std::to_string(i) + " is " + std::to_string(to[i]) +
             ": llm.c model files hold finite weights, so the file is damaged; export or download it again");
    }
  }
  return out;
}

void write_llmc_model(const std::string& path, const llmc_model& model, llmc_precision precision,
                      const std::vector<named_path>& inputs) {
  const gpt_config& c = model.config;
  c.validate();
  if (c.mlp != 4 * c.d_model)
    throw std::invalid_argument("llm.c's model file holds GPT-2's MLP of 4 x d_model = " +
                                std::to_string(4 * c.d_model) + "; this model's is " + std::to_string(c.mlp));
  const gpt_parameters p(c);
  if (model.weights.size() != p.table.flat_size())
    throw std::invalid_argument("write_llmc_model: " + std::to_string(model.weights.size()) +
                                " weights for a parameter table of " + std::to_string(p.table.flat_size()));
  std::array<std::int32_t, header_ints> h{};
  h[0] = model_magic;
  h[1] = precision == llmc_precision::fp32 ? fp32_version : bf16_version;
  h[2] = c.context;
  h[3] = c.vocab;
  h[4] = c.layers;
  h[5] = c.heads;
  h[6] = c.d_model;
  h[7] = c.padded_vocab();
  replacement_file file({"llm.c model", path}, inputs);
  std::FILE* out = file.stream();
  // A failed write leaves the stream's error flag set: commit() reports it and keeps the target.
  std::fwrite(h.data(), sizeof h, 1, out);
  std::vector<unsigned char> block;
  for (const std::size_t t : file_order(p)) {
    const float* from = model.weights.data() + p[t].offset;
    const std::size_t n = p[t].size;
    block.resize(n * (precision == llmc_precision::fp32 ? 4 : 2));
    for (std::size_t i = 0; i < n; ++i) {
      if (precision == llmc_precision::fp32) {
        std::memcpy(block.data() + 4 * i, from + i, 4);
      } else {
        bf16 x;
        store_nearest(&x, from[i]);
        std::memcpy(block.data() + 2 * i, &x.bits, 2);
      }
    }
    std::fwrite(block.data(), 1, block.size(), out);
  }
  file.commit();
}

std::vector<float> exact_weights(const training_state& state) {
  const state_tensor* exact = nullptr;
  for (const state_tensor& t : state.tensors)
    if (t.role == (state.policy.has_master() ? "master" : "model")) exact = &t;
  const std::size_t n = parameter_table(state.model).flat_size();
  if (exact == nullptr || exact->size() != n || state.slice.within(n).size() != n)
    throw std::invalid_argument("kamp::exact_weights: the state lacks its complete exact weights");
  std::vector<float> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = float(element(*exact, i));
  return out;
}

training_state with_weights(training_state state, const std::vector<float>& weights) {
  const std::size_t n = parameter_table(state.model).flat_size();
  if (weights.size() != n)
    throw std::invalid_argument("kamp::with_weights: " + std::to_string(weights.size()) +
                                " weights for a parameter table of " + std::to_string(n));
  const element_range slice = state.slice.within(n);
  for (state_tensor& t : state.tensors) {
    if (t.role != "model" && t.role != "master") continue;
    visit_dtype<float>(t.type, [&](auto zero) {
      using T = decltype(zero);
      for (std::size_t i = 0; i < t.size(); ++i) {
        T x;
        store_nearest(&x, weights[slice.first + i]);
        std::memcpy(t.bytes.data() + i * sizeof(T), &x, sizeof(T));
      }
    });
  }
  return state;
}

}  // namespace kamp
