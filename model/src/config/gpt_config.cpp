#include <kamp/model/config/gpt_config.hpp>

#include <algorithm>
#include <charconv>
#include <stdexcept>

namespace kamp {

void gpt_config::validate() const {
  const auto require = [](bool ok, const std::string& what) {
    if (!ok) throw std::invalid_argument("model config: " + what);
  };
  require(vocab >= 2 && vocab <= max_vocab, "vocab is " + std::to_string(vocab) + "; it must lie in [2, " +
                                                std::to_string(max_vocab) + "] (256 for byte-level text)");
  require(context >= 1, "context is " + std::to_string(context) + "; it must be at least 1");
  require(layers >= 1, "layers is " + std::to_string(layers) + "; it must be at least 1");
  require(heads >= 1, "heads is " + std::to_string(heads) + "; it must be at least 1");
  require(d_model >= 1 && d_model % heads == 0, "d_model " + std::to_string(d_model) +
                                                    " is not a positive multiple of heads " + std::to_string(heads) +
                                                    "; choose d_model = heads x head size");
  require(mlp >= 1, "mlp is " + std::to_string(mlp) + "; it must be at least 1 (GPT-2 uses 4 x d_model)");
}

const std::vector<gpt_preset>& gpt_presets() {
  // GPT-2's published shapes (Radford et al. 2019, Table 2; the Hugging Face configs' n_layer,
  // n_head, n_embd): the MLP is 4 x d_model.
  static const std::vector<gpt_preset> presets = {
      {"gpt2-124m", "GPT-2 small: 12 layers, 12 heads, d_model 768", {50257, 1024, 12, 12, 768, 3072}},
      {"gpt2-350m", "GPT-2 medium: 24 layers, 16 heads, d_model 1024", {50257, 1024, 24, 16, 1024, 4096}},
      {"gpt2-774m", "GPT-2 large: 36 layers, 20 heads, d_model 1280", {50257, 1024, 36, 20, 1280, 5120}},
  };
  return presets;
}

const gpt_preset& find_gpt_preset(const std::string& name) {
  std::string names;
  for (const gpt_preset& p : gpt_presets()) {
    if (name == p.name) return p;
    names += (names.empty() ? "" : ", ") + std::string(p.name);
  }
  throw std::invalid_argument("unknown model preset '" + name + "': expected one of " + names);
}

std::string block_name(int block) { return "h" + std::to_string(block); }

std::string layer_name(int block, layer_part part) {
  switch (part) {
    case layer_part::attention:
      return block_name(block) + ".attn";
    case layer_part::mlp:
      return block_name(block) + ".mlp";
    case layer_part::head:
      break;
  }
  return "lm_head";
}

std::optional<std::pair<int, layer_part>> find_layer(const std::string& name, int layers) {
  if (name == layer_name(0, layer_part::head)) return std::pair{0, layer_part::head};
  // The name is spelled back through layer_name(), so only its exact spellings match.
  const auto digit = std::find_if(name.begin(), name.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
  int block = 0;
  const char *first = name.data() + (digit - name.begin()), *last = name.data() + name.size();
  if (std::from_chars(first, last, block).ec != std::errc() || block >= layers) return std::nullopt;
  for (const layer_part part : {layer_part::attention, layer_part::mlp})
    if (layer_name(block, part) == name) return std::pair{block, part};
  return std::nullopt;
}

std::vector<std::string> gpt_config::layer_names() const {
  std::vector<std::string> names;
  for (int l = 0; l < layers; ++l) {
    names.push_back(layer_name(l, layer_part::attention));
    names.push_back(layer_name(l, layer_part::mlp));
  }
  names.push_back(layer_name(0, layer_part::head));
  return names;
}

}  // namespace kamp
