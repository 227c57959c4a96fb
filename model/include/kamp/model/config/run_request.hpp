#ifndef KAMP_MODEL_CONFIG_RUN_REQUEST_HPP
#define KAMP_MODEL_CONFIG_RUN_REQUEST_HPP

#include <kamp/model/config/train_options.hpp>

#include <string>
#include <vector>

namespace kamp {

/// \brief How amp_fp16 scales its loss (--loss-scaling).
///
/// - dynamic: PyTorch's GradScaler (the scale halves on inf/NaN and grows after clean steps).
/// - fixed:   a static scale, --loss-scale; spelled "static" (name()), a keyword in C++.
/// - off:     a fixed scale of 1.
enum class loss_scaling { dynamic, fixed, off };

/// Every loss scaling, in the order help texts and messages list them.
const std::vector<loss_scaling>& loss_scaling_modes();
const char* name(loss_scaling s);
/// The loss scaling `s` names (name() of one of loss_scaling_modes()); throws
/// std::invalid_argument otherwise.
loss_scaling parse_loss_scaling(const std::string& s);

/// \brief What a run asks for beyond its shape, precision policy and training options: the
/// settings the precision rules judge.
struct run_request {
  std::string quantization = "none";  ///< kamp trains no quantized models: anything else is refused
  bool enable_fsdp = false;           ///< shard the run across MPI ranks (llama-recipes' enable_fsdp)
  /// amp_fp16's loss scaling (the other modes need none).
  kamp::loss_scaling loss_scaling = kamp::loss_scaling::dynamic;
  bool force_unscaled_fp16 = false;  ///< accept amp_fp16 with loss_scaling off
  /// FP8 scaling settings were given (--fp8-recipe, --fp8-amax-history): FP8 is asked for,
  /// whatever the mode.
  bool fp8_settings = false;
};

/// Sets the loss scaler of `options` as `request.loss_scaling` asks (static: fixed at
/// --loss-scale; off: fixed at 1).
void apply_loss_scaling(const run_request& request, train_options& options);

}  // namespace kamp

#endif
