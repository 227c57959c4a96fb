#include <kamp/model/gpt_config.hpp>
#include <kamp/model/gpt_parameters.hpp>

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
  require(d_model >= 1 && d_model % heads == 0,
          "d_model " + std::to_string(d_model) + " is not a positive multiple of heads " + std::to_string(heads) +
              "; choose d_model = heads x head size");
  require(mlp >= 1, "mlp is " + std::to_string(mlp) + "; it must be at least 1 (GPT-2 uses 4 x d_model)");
}

gpt_parameters::gpt_parameters(const gpt_config& config) {
  config.validate();
  const std::size_t v = config.vocab, t = config.context, c = config.d_model, m = config.mlp;
  const auto add = [&](const std::string& name, std::vector<std::size_t> shape, parameter_kind kind) {
    kinds.push_back(kind);
    return table.add(name, std::move(shape));
  };
  const auto linear = [&](const std::string& name, std::size_t out, std::size_t in) {
    const std::size_t w = add(name + ".weight", {out, in}, parameter_kind::linear_weight);
    return linear_parameters{w, add(name + ".bias", {out}, parameter_kind::linear_bias)};
  };
  const auto norm = [&](const std::string& name) {
    const std::size_t g = add(name + ".weight", {c}, parameter_kind::norm_gain);
    return norm_parameters{g, add(name + ".bias", {c}, parameter_kind::norm_bias)};
  };
  wte = add("wte", {v, c}, parameter_kind::embedding);
  wpe = add("wpe", {t, c}, parameter_kind::embedding);
  for (int l = 0; l < config.layers; ++l) {
    const std::string h = "h" + std::to_string(l) + ".";
    block_parameters b;
    b.ln1 = norm(h + "ln1");
    b.qkv = linear(h + "attn.qkv", 3 * c, c);
    b.attn_proj = linear(h + "attn.proj", c, c);
    b.ln2 = norm(h + "ln2");
    b.fc = linear(h + "mlp.fc", m, c);
    b.mlp_proj = linear(h + "mlp.proj", c, m);
    blocks.push_back(b);
  }
  lnf = norm("lnf");
  units.push_back({wte, wpe, lnf.gain, lnf.bias});
  for (const block_parameters& b : blocks)
    units.push_back({b.ln1.gain, b.ln1.bias, b.qkv.weight, b.qkv.bias, b.attn_proj.weight, b.attn_proj.bias,
                     b.ln2.gain, b.ln2.bias, b.fc.weight, b.fc.bias, b.mlp_proj.weight, b.mlp_proj.bias});
}

tensor_table gpt_config::parameter_table() const { return gpt_parameters(*this).table; }

std::vector<std::string> gpt_config::layer_names() const {
  std::vector<std::string> names;
  for (int l = 0; l < layers; ++l) {
    names.push_back("h" + std::to_string(l) + ".attn");
    names.push_back("h" + std::to_string(l) + ".mlp");
  }
  names.push_back("lm_head");
  return names;
}

}  // namespace kamp
