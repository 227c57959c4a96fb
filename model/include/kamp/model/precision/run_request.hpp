#ifndef KAMP_MODEL_PRECISION_RUN_REQUEST_HPP
#define KAMP_MODEL_PRECISION_RUN_REQUEST_HPP

#include <kamp/model/training/train_options.hpp>

#include <string>

namespace kamp {

/// \brief What a run asks for beyond its shape, precision policy and training options: the
/// settings the precision rules judge.
struct run_request {
  std::string quantization = "none";     ///< kamp trains no quantized models: anything else is refused
  bool enable_fsdp = false;              ///< shard the run across MPI ranks (llama-recipes' enable_fsdp)
  std::string loss_scaling = "dynamic";  ///< amp_fp16: dynamic, static (--loss-scale fixed) or off
  bool force_unscaled_fp16 = false;      ///< accept amp_fp16 with loss_scaling off
};

/// Sets the loss scaler of `options` as `request.loss_scaling` asks (static: fixed at
/// --loss-scale; off: fixed at 1).
void apply_loss_scaling(const run_request& request, train_options& options);

}  // namespace kamp

#endif
