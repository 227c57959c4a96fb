#ifndef KAMP_MODEL_CONFIG_PRECISION_POLICY_HPP
#define KAMP_MODEL_CONFIG_PRECISION_POLICY_HPP

#include <kamp/kernels/fp8_scaling.hpp>
#include <kamp/model/config/gpt_config.hpp>
#include <kamp/numeric/dtype.hpp>

#include <string>
#include <vector>

namespace kamp {

/// \brief What is stored and computed in which precision.
///
/// - fp32:      everything fp32.
/// - amp_bf16:  fp32 master weights, a bf16 copy for the GEMMs, GEMM inputs in bf16 with fp32
///              accumulation; LayerNorm, softmax, loss, reductions and the residual stream fp32.
/// - amp_fp16:  as amp_bf16 with fp16, plus dynamic loss scaling (fp16's range is narrow).
/// - pure_bf16: weights stored only in bf16 (no master), updated with Kahan compensation or
///              stochastic rounding; GEMMs in bf16; statistics and the residual stream fp32.
/// - amp_fp8:   amp_bf16, with the blocks' Linear GEMMs in FP8 (Transformer Engine's HYBRID
///              format: inputs and weights E4M3, output gradients E5M2), per-tensor scales from
///              a delayed or current recipe, fp32 accumulation. Attention's batched GEMMs, the
///              embedding and the LM head stay bf16; --fp32-layers keeps a layer out of FP8 too.
enum class precision_mode { fp32, amp_bf16, amp_fp16, pure_bf16, amp_fp8 };

/// How pure_bf16 keeps small updates that round-to-nearest would lose.
enum class pure_bf16_update { kahan, stochastic };

/// Every precision mode, in the order help texts and messages list them.
const std::vector<precision_mode>& precision_modes();
const char* name(precision_mode m);
/// The mode `s` names (name() of one of precision_modes()); throws std::invalid_argument otherwise.
precision_mode parse_precision_mode(const std::string& s);

/// Every pure_bf16 update, in the order help texts and messages list them.
const std::vector<pure_bf16_update>& pure_bf16_updates();
const char* name(pure_bf16_update u);
/// The update `s` names (name() of one of pure_bf16_updates()); throws std::invalid_argument otherwise.
pure_bf16_update parse_pure_bf16_update(const std::string& s);

struct precision_policy {
  precision_mode mode = precision_mode::amp_bf16;
  /// Layers (gpt_config::layer_names) whose GEMMs run in fp32 whatever the mode: the
  /// equivalent of autocast(enabled=False) around a critical layer.
  std::vector<std::string> fp32_layers;
  pure_bf16_update update = pure_bf16_update::kahan;
  /// amp_fp8: how the per-tensor scales follow the data, and how many updates delayed scaling's
  /// amax history holds (Transformer Engine's defaults).
  fp8_recipe recipe = fp8_recipe::delayed;
  int amax_history = 1024;

  /// Throws std::invalid_argument for an override naming no layer of `model`, or an amax
  /// history outside [1, 2^20].
  void validate(const gpt_config& model) const;
  /// The dtype GEMMs take their inputs in: bf16/fp16 in the AMP modes and pure_bf16, fp32 in fp32.
  dtype low() const;
  /// The dtype the exact weights are kept in: bf16 for pure_bf16, fp32 otherwise.
  dtype weights() const;
  /// Whether fp32 master weights exist beside a low-precision model copy (AMP modes).
  bool has_master() const {
    return mode == precision_mode::amp_bf16 || mode == precision_mode::amp_fp16 || mode == precision_mode::amp_fp8;
  }
  /// Whether the blocks' Linear GEMMs (of layers not kept in fp32) run in FP8.
  bool fp8() const { return mode == precision_mode::amp_fp8; }
  bool loss_scaling() const { return mode == precision_mode::amp_fp16; }
  /// The compute dtype of a layer: fp32 when overridden, low() otherwise.
  dtype compute(const std::string& layer) const;
};

}  // namespace kamp

#endif
