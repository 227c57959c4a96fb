#ifndef KAMP_MODEL_NETWORK_GPT_CONFIG_HPP
#define KAMP_MODEL_NETWORK_GPT_CONFIG_HPP

#include <kamp/kernels/flat_tensors.hpp>

#include <optional>
#include <string>
#include <utility>

namespace kamp {

/// The parts of a GPT whose compute precision a policy sets: each block's attention and MLP,
/// and the LM head (with the final LayerNorm and the loss).
enum class layer_part { attention, mlp, head };

/// Block `block`'s name, the prefix of its parameters and layers: h<block>.
std::string block_name(int block);
/// A layer's name as policies, --fp32-layers and the precision doctor spell it: h<block>.attn,
/// h<block>.mlp, lm_head (`block` is ignored for the head).
std::string layer_name(int block, layer_part part);

/// A layer of this model: block and part. The inverse of layer_name(), in time independent of
/// the number of blocks; none when `name` spells no layer of a model with `layers` blocks.
std::optional<std::pair<int, layer_part>> find_layer(const std::string& name, int layers);

/// \brief The shape of a decoder-only GPT. Defaults are the reference model (≈ 3.26M parameters).
struct gpt_config {
  int vocab = 256;    ///< byte-level tokens
  int context = 128;  ///< maximum sequence length (learned position embeddings)
  int layers = 4;
  int heads = 4;
  int d_model = 256;
  int mlp = 1024;  ///< hidden width of the MLP (4 × d_model in GPT-2)

  /// Throws std::invalid_argument naming the first bad field and what it must satisfy.
  void validate() const;
  /// The parameters in GPT-2's order and names (wte, wpe, h<l>.ln1.weight, ..., lnf.bias).
  tensor_table parameter_table() const;
  /// The layers whose compute precision a policy may override: h<l>.attn, h<l>.mlp, lm_head.
  std::vector<std::string> layer_names() const;
};

}  // namespace kamp

#endif
