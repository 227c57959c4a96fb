#ifndef KAMP_MODEL_NETWORK_ACTIVATION_LAYOUT_HPP
#define KAMP_MODEL_NETWORK_ACTIVATION_LAYOUT_HPP

#include <kamp/model/config/activation_recompute.hpp>
#include <kamp/model/config/gpt_config.hpp>
#include <kamp/model/config/precision_policy.hpp>
#include <kamp/numeric/dtype.hpp>

#include <array>
#include <cstddef>
#include <string>
#include <vector>

namespace kamp {

/// The GPT's activation buffers. The first group has one buffer per LayerNorm (2L + 1), the
/// second one per layer, the rest one for the model (backward scratch is shared by all layers).
enum class activation : int {
  residual,
  ln_mean,
  ln_rstd,
  ln_out,  // per LayerNorm
  qkv_rows,
  probs,
  probs_low,
  attn_out,
  fc_pre,
  fc_act,  // per layer
  logits,
  losses,
  tokens,
  targets,  // forward, once
  dresid,
  dresid_low,
  dln,
  dfc_act,
  dfc_pre,
  dattn_out,  // backward, once
  dprobs,
  dscores,
  dqkv_rows,
  bias,
  count
};

/// The copy of activation `a` that LayerNorm or layer `index` (as the model numbers them) uses.
/// Without recomputation each its own. With blocks: one copy of every per-layer buffer for all
/// layers; the residual stream's copies are the block inputs (even indices) and one scratch for
/// the stream within a block; ln_out's are one scratch for the attention LayerNorms, one for the
/// MLP's and the head's own; the LayerNorm statistics stay one per LayerNorm.
std::size_t activation_copy(activation a, std::size_t index, int layers, activation_recompute recompute);

/// The one scalar the model keeps beside its activation buffers: the loss sum of the host-array
/// API (a double, "kamp::gpt::loss").
inline constexpr std::size_t gpt_loss_sum_bytes = sizeof(double);

/// \brief One activation buffer: its allocation label and the bytes of each of its copies.
struct activation_buffer {
  const char* label;               ///< kamp::gpt::<name>, what memory tools see
  std::vector<std::size_t> bytes;  ///< one entry per copy (per LayerNorm, per layer, or one)
};

/// \brief What each layer of a model computes in, resolved from the policy once.
struct layer_dtypes {
  std::vector<dtype> attn, mlp;  ///< per layer
  dtype head;                    ///< lm_head
  dtype widest;                  ///< the widest of them: shared backward scratch takes it
  /// The compute dtype of the layer LayerNorm i feeds: h<i/2>.attn (even i), h<i/2>.mlp (odd
  /// i), or the head (the last).
  dtype norm_consumer(int i) const;
  layer_dtypes(const gpt_config& config, const precision_policy& policy, dtype fp32_as);
};

/// \brief The activation buffers of a GPT training on micro-batches of `batch` sequences: the
/// one table the model allocates from and the memory planner sums. `real` is the type of the
/// exact activations (residual stream, statistics, probabilities; logits take the head's compute
/// type): fp32, or fp64 for the reference model, which then also computes its "fp32" layers in fp64.
/// A copy shared by several layers (activation_copy) has the bytes of the largest of them.
std::array<activation_buffer, std::size_t(activation::count)> activation_layout(
    const gpt_config& config, const precision_policy& policy, int batch, dtype real = dtype::fp32,
    activation_recompute recompute = activation_recompute::none);

}  // namespace kamp

#endif
