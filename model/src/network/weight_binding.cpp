#include <kamp/model/network/activation_layout.hpp>
#include <kamp/model/network/gpt_parameters.hpp>
#include <kamp/model/network/weight_binding.hpp>

#include "network/gpt_parts.hpp"

#include <stdexcept>
#include <string>

namespace kamp {

namespace {
dtype resolved(dtype t, bool fp64) { return fp64 ? dtype::fp64 : t; }
}  // namespace

namespace detail {

weight_addresses bound_addresses(const char* api, const gpt_config& config, const precision_policy& policy, bool fp64,
                                 const weight_binding& binding) {
  const weights_ref &exact = binding.exact, &copy = binding.copy;
  if (exact.data == nullptr || copy.data == nullptr)
    throw std::invalid_argument(std::string(api) + ": a weight pointer is null");
  if (resolved(exact.type, fp64) != resolved(policy.weights(), fp64) ||
      resolved(copy.type, fp64) != resolved(policy.low(), fp64))
    throw std::invalid_argument(std::string(api) + ": the policy needs " + name(resolved(policy.weights(), fp64)) +
                                " weights and a " + name(resolved(policy.low(), fp64)) + " copy, got " +
                                name(exact.type) + " and " + name(copy.type));
  const gpt_parameters p(config);
  const tensor_table needed = exactly_read_parameters(config, policy);
  const tensor_table& held = binding.exact_layout;
  weight_addresses at{std::vector<const void*>(p.table.count(), nullptr), std::vector<const void*>(p.table.count())};
  const auto* exact_bytes = static_cast<const char*>(exact.data);
  const auto* copy_bytes = static_cast<const char*>(copy.data);
  for (std::size_t i = 0; i < p.table.count(); ++i) {
    const auto& e = p.table[i];
    at.copy[i] = copy_bytes + e.offset * size_of(resolved(copy.type, fp64));
    if (held.contains(e.name) && held[held.index_of(e.name)].shape == e.shape) {
      at.exact[i] = exact_bytes + held[held.index_of(e.name)].offset * size_of(resolved(exact.type, fp64));
    } else if (needed.contains(e.name)) {
      throw std::invalid_argument(std::string(api) + ": the exact weights' layout lacks " + e.name +
                                  " (or gives it another shape); it must hold exactly_read_parameters()");
    }
  }
  return at;
}

}  // namespace detail

tensor_table exactly_read_parameters(const gpt_config& config, const precision_policy& policy) {
  const gpt_parameters p(config);
  const layer_dtypes types(config, policy, dtype::fp32);
  // GEMM weights of layers computing in 16 bits are read from the low-precision copy only.
  std::vector<bool> skip(p.table.count(), false);
  for (int l = 0; l < config.layers; ++l) {
    const block_parameters& b = p.blocks[l];
    for (const std::size_t w : {b.qkv.weight, b.attn_proj.weight}) skip[w] = types.attn[l] != dtype::fp32;
    for (const std::size_t w : {b.fc.weight, b.mlp_proj.weight}) skip[w] = types.mlp[l] != dtype::fp32;
  }
  tensor_table out;
  for (std::size_t i = 0; i < p.table.count(); ++i)
    if (!skip[i]) out.add(p.table[i].name, p.table[i].shape);
  return out;
}

}  // namespace kamp
