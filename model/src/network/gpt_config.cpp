#include <kamp/model/network/gpt_config.hpp>
#include <kamp/model/network/gpt_parameters.hpp>

#include <algorithm>
#include <charconv>
#include <stdexcept>

namespace kamp {

void gpt_config::validate() const {
  const auto require = [](bool ok, const std::string& what) {
    if (!ok) throw std::invalid_argument("model config: " + what);
  };
  require(vocab >= 256, "vocab is " + std::to_string(vocab) + "; byte-level tokens need at least 256");
  require(context >= 1, "context is " + std::to_string(context) + "; it must be at least 1");
  require(layers >= 1, "layers is " + std::to_string(layers) + "; it must be at least 1");
  require(heads >= 1, "heads is " + std::to_string(heads) + "; it must be at least 1");
  require(d_model >= 1 && d_model % heads == 0, "d_model " + std::to_string(d_model) +
                                                    " is not a positive multiple of heads " + std::to_string(heads) +
                                                    "; choose d_model = heads x head size");
  require(mlp >= 1, "mlp is " + std::to_string(mlp) + "; it must be at least 1 (GPT-2 uses 4 x d_model)");
}

tensor_table gpt_config::parameter_table() const { return gpt_parameters(*this).table; }

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
