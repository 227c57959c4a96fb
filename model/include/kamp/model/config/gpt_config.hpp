#ifndef KAMP_MODEL_CONFIG_GPT_CONFIG_HPP
#define KAMP_MODEL_CONFIG_GPT_CONFIG_HPP

#include <kamp/kernels/flat_tensors.hpp>

#include <optional>
#include <string>
#include <utility>
#include <vector>

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
  int vocab = 256;    ///< tokens (256: byte-level)
  int context = 128;  ///< maximum sequence length (learned position embeddings)
  int layers = 4;
  int heads = 4;
  int d_model = 256;
  int mlp = 1024;  ///< hidden width of the MLP (4 × d_model in GPT-2)

  /// The rows of wte and the columns of the logits: vocab rounded up to a multiple of 128, as
  /// llm.c pads GPT-2's 50257 to 50304 so that the head's GEMMs work on whole tiles. The padded
  /// rows start at zero, the loss and sampling ignore their columns, so their gradient is zero
  /// and they stay zero.
  int padded_vocab() const { return (vocab + vocab_padding - 1) / vocab_padding * vocab_padding; }
  static constexpr int vocab_padding = 128;
  /// The most tokens a vocabulary may have: token files hold 16-bit ids.
  static constexpr int max_vocab = 1 << 16;

  /// Throws std::invalid_argument naming the first bad field and what it must satisfy.
  void validate() const;
  /// Deprecated in 0.3.0, removed in 0.4.0: the table is the network's (network/gpt_parameters.hpp).
  [[deprecated("kamp 0.3: use kamp::parameter_table(config)")]] tensor_table parameter_table() const;
  /// The layers whose compute precision a policy may override: h<l>.attn, h<l>.mlp, lm_head.
  std::vector<std::string> layer_names() const;
};

/// A published model shape that --preset names.
struct gpt_preset {
  const char* name;
  const char* description;
  gpt_config config;
};
/// GPT-2 small, medium and large (vocabulary 50257, context 1024): gpt2-124m, gpt2-350m, gpt2-774m.
const std::vector<gpt_preset>& gpt_presets();
/// The preset named `name`; std::invalid_argument naming the presets otherwise.
const gpt_preset& find_gpt_preset(const std::string& name);

}  // namespace kamp

#endif
