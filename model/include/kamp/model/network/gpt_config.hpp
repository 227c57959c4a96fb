#ifndef KAMP_MODEL_NETWORK_GPT_CONFIG_HPP
#define KAMP_MODEL_NETWORK_GPT_CONFIG_HPP

#include <kamp/kernels/flat_tensors.hpp>

#include <string>

namespace kamp {

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
