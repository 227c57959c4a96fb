#include <kamp/model/precision_policy.hpp>

#include <algorithm>
#include <stdexcept>

namespace kamp {

const char* name(precision_mode m) {
  switch (m) {
    case precision_mode::fp32: return "fp32";
    case precision_mode::amp_bf16: return "amp_bf16";
    case precision_mode::amp_fp16: return "amp_fp16";
    case precision_mode::pure_bf16: return "pure_bf16";
  }
  return "?";
}

precision_mode parse_precision_mode(const std::string& s) {
  for (auto m : {precision_mode::fp32, precision_mode::amp_bf16, precision_mode::amp_fp16, precision_mode::pure_bf16})
    if (s == name(m)) return m;
  throw std::invalid_argument("unknown precision mode '" + s + "': expected fp32, amp_bf16, amp_fp16 or pure_bf16");
}

const char* name(pure_bf16_update u) { return u == pure_bf16_update::kahan ? "kahan" : "stochastic"; }

pure_bf16_update parse_pure_bf16_update(const std::string& s) {
  if (s == "kahan") return pure_bf16_update::kahan;
  if (s == "stochastic") return pure_bf16_update::stochastic;
  throw std::invalid_argument("unknown pure_bf16 update '" + s + "': expected kahan or stochastic");
}

void precision_policy::validate(const gpt_config& model) const {
  const auto names = model.layer_names();
  for (const auto& layer : fp32_layers)
    if (std::find(names.begin(), names.end(), layer) == names.end())
      throw std::invalid_argument("precision policy: fp32 override '" + layer + "' names no layer; this model has " +
                                  names.front() + " ... " + names.back() + " (h<l>.attn, h<l>.mlp for l < " +
                                  std::to_string(model.layers) + ", lm_head)");
}

dtype precision_policy::low() const {
  switch (mode) {
    case precision_mode::fp32: return dtype::fp32;
    case precision_mode::amp_fp16: return dtype::fp16;
    default: return dtype::bf16;
  }
}

dtype precision_policy::weights() const { return mode == precision_mode::pure_bf16 ? dtype::bf16 : dtype::fp32; }

dtype precision_policy::compute(const std::string& layer) const {
  return std::find(fp32_layers.begin(), fp32_layers.end(), layer) != fp32_layers.end() ? dtype::fp32 : low();
}

}  // namespace kamp
