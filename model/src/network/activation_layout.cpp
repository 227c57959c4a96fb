#include <kamp/model/network/activation_layout.hpp>

#include <algorithm>
#include <string>

namespace kamp {

layer_dtypes::layer_dtypes(const gpt_config& config, const precision_policy& policy, dtype fp32_as) {
  const auto resolve = [&](const std::string& layer) {
    const dtype t = policy.compute(layer);
    return t == dtype::fp32 ? fp32_as : t;
  };
  for (int l = 0; l < config.layers; ++l) {
    attn.push_back(resolve(layer_name(l, layer_part::attention)));
    mlp.push_back(resolve(layer_name(l, layer_part::mlp)));
  }
  head = resolve(layer_name(0, layer_part::head));
  widest = head;
  for (const auto& list : {attn, mlp})
    for (const dtype t : list)
      if (size_of(t) > size_of(widest)) widest = t;
}

dtype layer_dtypes::norm_consumer(int i) const {
  const int l = i / 2;
  if (l == int(attn.size())) return head;
  return i % 2 == 0 ? attn[l] : mlp[l];
}

std::size_t activation_copy(activation a, std::size_t index, int layers, activation_recompute recompute) {
  if (recompute == activation_recompute::none) return index;
  const std::size_t blocks = std::size_t(layers);
  switch (a) {
    case activation::residual:
      return index % 2 == 0 ? index / 2 : blocks + 1;
    case activation::ln_out:
      return index == 2 * blocks ? 2 : index % 2;
    case activation::qkv_rows:
    case activation::probs:
    case activation::probs_low:
    case activation::attn_out:
    case activation::fc_pre:
    case activation::fc_act:
      return 0;
    default:
      return index;
  }
}

std::array<activation_buffer, std::size_t(activation::count)> activation_layout(const gpt_config& config,
                                                                                const precision_policy& policy,
                                                                                int batch, dtype real,
                                                                                activation_recompute recompute) {
  const layer_dtypes types(config, policy, real);
  const std::size_t n = std::size_t(batch) * config.context, c = config.d_model, m = config.mlp,
                    v = config.padded_vocab();
  const std::size_t s = std::size_t(batch) * config.heads * config.context * config.context;  // scores per layer
  const std::size_t r = size_of(real), wide = size_of(types.widest), norms = 2 * config.layers + 1;
  std::array<activation_buffer, std::size_t(activation::count)> out;
  // Each LayerNorm's or layer's bytes, folded into the copies they use.
  const auto set = [&](activation a, const char* label, const std::vector<std::size_t>& bytes) {
    std::vector<std::size_t> copies;
    for (std::size_t i = 0; i < bytes.size(); ++i) {
      const std::size_t c = activation_copy(a, i, config.layers, recompute);
      if (c >= copies.size()) copies.resize(c + 1, 0);
      copies[c] = std::max(copies[c], bytes[i]);
    }
    out[std::size_t(a)] = {label, std::move(copies)};
  };
  const auto per_norm = [&](std::size_t elements, bool compute_type) {
    std::vector<std::size_t> b;
    for (std::size_t i = 0; i < norms; ++i)
      b.push_back(elements * (compute_type ? size_of(types.norm_consumer(int(i))) : r));
    return b;
  };
  // Per layer: elements x (the layer's compute type of `which`, or the exact type for null).
  const auto per_layer = [&](std::size_t elements, const std::vector<dtype>* which) {
    std::vector<std::size_t> b;
    for (int l = 0; l < config.layers; ++l) b.push_back(elements * (which != nullptr ? size_of((*which)[l]) : r));
    return b;
  };
  set(activation::residual, "kamp::gpt::residual", per_norm(n * c, false));
  set(activation::ln_mean, "kamp::gpt::ln_mean", per_norm(n, false));
  set(activation::ln_rstd, "kamp::gpt::ln_rstd", per_norm(n, false));
  set(activation::ln_out, "kamp::gpt::ln_out", per_norm(n * c, true));
  set(activation::probs, "kamp::gpt::probs", per_layer(s, nullptr));
  set(activation::probs_low, "kamp::gpt::probs_low", per_layer(s, &types.attn));
  set(activation::attn_out, "kamp::gpt::attn_out", per_layer(n * c, &types.attn));
  set(activation::fc_pre, "kamp::gpt::fc_pre", per_layer(n * m, nullptr));
  set(activation::fc_act, "kamp::gpt::fc_act", per_layer(n * m, &types.mlp));
  set(activation::qkv_rows, "kamp::gpt::qkv_rows", per_layer(3 * n * c, &types.attn));
  set(activation::logits, "kamp::gpt::logits", {n * v * size_of(types.head)});
  set(activation::losses, "kamp::gpt::losses", {n * r});
  set(activation::tokens, "kamp::gpt::tokens", {n * sizeof(int)});
  set(activation::targets, "kamp::gpt::targets", {n * sizeof(int)});
  set(activation::dresid, "kamp::gpt::dresid", {n * c * r});
  set(activation::dresid_low, "kamp::gpt::dresid_low", {n * c * wide});
  set(activation::dln, "kamp::gpt::dln", {n * c * r});
  set(activation::dfc_act, "kamp::gpt::dfc_act", {n * m * r});
  set(activation::dfc_pre, "kamp::gpt::dfc_pre", {n * m * wide});
  set(activation::dattn_out, "kamp::gpt::dattn_out", {n * c * wide});
  set(activation::dprobs, "kamp::gpt::dprobs", {s * r});
  set(activation::dscores, "kamp::gpt::dscores", {s * wide});
  set(activation::dqkv_rows, "kamp::gpt::dqkv_rows", {3 * n * c * wide});
  set(activation::bias, "kamp::gpt::bias", {std::max(3 * c, m) * r});
  return out;
}

}  // namespace kamp
