#include <kamp/model/config/precision_policy.hpp>

#include "config/spellings.hpp"

#include <algorithm>
#include <stdexcept>

namespace kamp {

const std::vector<precision_mode>& precision_modes() {
  static const std::vector<precision_mode> all{precision_mode::fp32, precision_mode::amp_bf16, precision_mode::amp_fp16,
                                               precision_mode::pure_bf16, precision_mode::amp_fp8};
  return all;
}

const char* name(precision_mode m) {
  switch (m) {
    case precision_mode::fp32:
      return "fp32";
    case precision_mode::amp_bf16:
      return "amp_bf16";
    case precision_mode::amp_fp16:
      return "amp_fp16";
    case precision_mode::pure_bf16:
      return "pure_bf16";
    case precision_mode::amp_fp8:
      return "amp_fp8";
  }
  return "?";
}

precision_mode parse_precision_mode(const std::string& s) {
  return detail::parse_spelling(s, precision_modes(), "precision mode");
}

const std::vector<pure_bf16_update>& pure_bf16_updates() {
  static const std::vector<pure_bf16_update> all{pure_bf16_update::kahan, pure_bf16_update::stochastic};
  return all;
}

const char* name(pure_bf16_update u) {
  switch (u) {
    case pure_bf16_update::kahan:
      return "kahan";
    case pure_bf16_update::stochastic:
      return "stochastic";
  }
  return "?";
}

pure_bf16_update parse_pure_bf16_update(const std::string& s) {
  return detail::parse_spelling(s, pure_bf16_updates(), "pure_bf16 update");
}

void precision_policy::validate(const gpt_config& model) const {
  if (amax_history < 1 || amax_history > (1 << 20))
    throw std::invalid_argument("precision policy: the FP8 amax history holds " + std::to_string(amax_history) +
                                " steps; give 1 to 1048576 (--fp8-amax-history; Transformer Engine's default is 1024)");
  for (const auto& layer : fp32_layers)
    if (!find_layer(layer, model.layers))
      throw std::invalid_argument("precision policy: fp32 override '" + layer + "' names no layer; this model has " +
                                  layer_name(0, layer_part::attention) + " ... " + layer_name(0, layer_part::head) +
                                  " (h<l>.attn, h<l>.mlp for l < " + std::to_string(model.layers) + ", lm_head)");
}

dtype precision_policy::low() const {
  switch (mode) {
    case precision_mode::fp32:
      return dtype::fp32;
    case precision_mode::amp_fp16:
      return dtype::fp16;
    default:
      return dtype::bf16;
  }
}

dtype precision_policy::weights() const { return mode == precision_mode::pure_bf16 ? dtype::bf16 : dtype::fp32; }

dtype precision_policy::compute(const std::string& layer) const {
  return std::find(fp32_layers.begin(), fp32_layers.end(), layer) != fp32_layers.end() ? dtype::fp32 : low();
}

}  // namespace kamp
