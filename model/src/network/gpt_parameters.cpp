#include <kamp/model/config/gpt_config.hpp>
#include <kamp/model/network/gpt_parameters.hpp>

#include <stdexcept>
#include <string>

namespace kamp {

gpt_parameters::gpt_parameters(const gpt_config& config) {
  config.validate();
  const std::size_t v = config.padded_vocab(), t = config.context, c = config.d_model, m = config.mlp;
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
    const std::string h = block_name(l) + ".";
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
  if (std::int64_t(table.count()) != tensor_count(config.layers))
    throw std::logic_error("kamp::gpt_parameters: tensor_count() no longer counts the tensors the table holds");
  units.push_back({wte, wpe, lnf.gain, lnf.bias});
  for (const block_parameters& b : blocks)
    units.push_back({b.ln1.gain, b.ln1.bias, b.qkv.weight, b.qkv.bias, b.attn_proj.weight, b.attn_proj.bias, b.ln2.gain,
                     b.ln2.bias, b.fc.weight, b.fc.bias, b.mlp_proj.weight, b.mlp_proj.bias});
}

tensor_table parameter_table(const gpt_config& config) { return gpt_parameters(config).table; }
tensor_table gpt_config::parameter_table() const { return kamp::parameter_table(*this); }

}  // namespace kamp
