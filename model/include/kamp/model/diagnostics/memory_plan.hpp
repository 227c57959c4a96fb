#ifndef KAMP_MODEL_DIAGNOSTICS_MEMORY_PLAN_HPP
#define KAMP_MODEL_DIAGNOSTICS_MEMORY_PLAN_HPP

#include <kamp/model/config/gpt_config.hpp>
#include <kamp/model/config/precision_policy.hpp>
#include <kamp/model/config/sharding.hpp>
#include <kamp/model/network/activation_layout.hpp>

#include <string>
#include <vector>

namespace kamp {

/// \brief Bytes by category, for one rank.
struct memory_plan {
  double parameters = 0;   ///< the model copy the GEMMs read (fp32, bf16 or fp16)
  double gradients = 0;    ///< the fp32 gradient buffer (micro-batches accumulate in fp32)
  double master = 0;       ///< fp32 master weights (AMP modes)
  double optimizer = 0;    ///< AdamW moments, and pure_bf16's Kahan compensation
  double activations = 0;  ///< activations and backward scratch of one micro-batch
  /// amp_fp8: the E4M3 copies of the FP8 Linears' inputs (kept for the backward pass) and
  /// weights, the E5M2 output-gradient buffer, and per FP8 tensor its scale, amax, cast statistics
  /// and (delayed scaling) amax history.
  double fp8 = 0;

  double total() const { return parameters + gradients + master + optimizer + activations + fp8; }
};

/// Bytes per parameter of each persistent category in a precision mode (activations 0): the
/// element types of `state_layout`, plus fp32 gradients.
memory_plan bytes_per_parameter(const precision_policy& policy);

/// The persistent state of `elements` parameters on one of `shards` ranks.
memory_plan plan_state(double elements, const precision_policy& policy, int shards = 1,
                       sharding split = sharding::optimizer);

/// Everything kamp allocates to train `model` with micro-batches of `batch` sequences: the state
/// of its flat buffers (parameter table with alignment padding) and its activation buffers,
/// each in the dtype the policy gives its layer. With `shards` > 1, what kamp's data-parallel
/// trainer holds per rank at `split` (optimizer, gradients or parameters): the shards, plus the
/// fp32 weights AMP reads exactly (gathered from the master shards) and the per-unit buffers
/// gradients are reduced from and parameters gathered into (the root and two blocks; every
/// block when `reshard_after_forward` is false). Worked out from the shape, in the same time and
/// memory for any number of layers (the figures of the tables the model builds, to the byte).
/// `recompute` blocks: the activations of activation_layout's recomputing model.
memory_plan plan_memory(const gpt_config& model, const precision_policy& policy, int batch, int shards = 1,
                        sharding split = sharding::optimizer, bool reshard_after_forward = true,
                        activation_recompute recompute = activation_recompute::none);

/// amp_fp8's FP8 buffers and scaling state for micro-batches of `batch` sequences (0 in other
/// modes): memory_plan::fp8, the sizes the model allocates.
double fp8_bytes(const gpt_config& model, const precision_policy& policy, int batch);

/// Parameters of `model` counted from its shape, without building its parameter table (so a
/// configuration claiming 10^8 layers costs nothing to judge).
double parameter_estimate(const gpt_config& model);

/// Bytes the default execution space's memory can still give: MemAvailable of /proc/meminfo on
/// a host backend, the device's free memory on CUDA/HIP; 0 where it cannot be told.
double free_memory_bytes();

/// Throws std::invalid_argument, with both figures and what to change, when the plan for this
/// run is larger than `free_memory_bytes()`; before anything is allocated.
void check_memory_fits(const gpt_config& model, const precision_policy& policy, int batch, int shards,
                       activation_recompute recompute = activation_recompute::none);

}  // namespace kamp

#endif
