#ifndef KAMP_MODEL_PRECISION_RULES_HPP
#define KAMP_MODEL_PRECISION_RULES_HPP

#include <kamp/model/training_state.hpp>

#include <string>
#include <vector>

namespace kamp {

/// \brief What a run asks for beyond its shape, precision policy and training options: the
/// settings the precision rules judge.
struct run_request {
  std::string quantization = "none";     ///< kamp trains no quantized models: anything else is refused
  bool enable_fsdp = false;              ///< shard the run across MPI ranks (llama-recipes' enable_fsdp)
  std::string loss_scaling = "dynamic";  ///< amp_fp16: dynamic, static (--loss-scale fixed) or off
  bool force_unscaled_fp16 = false;      ///< accept amp_fp16 with loss_scaling off
};

/// \brief Whether the device that runs the model computes bf16 natively.
struct hardware_report {
  std::string device;       ///< "CPU", "CUDA device 0: NVIDIA H200 (compute capability 9.0)", ...
  bool native_bf16 = true;  ///< false: no bf16 dot products; bf16 GEMMs widen to fp32 and FMA
  std::string evidence;     ///< what was detected, for the message
  std::string bf16_gemm;    ///< the path bf16 GEMMs take here, e.g. "widened"; empty: not asked
};

/// The device of Kokkos' default execution space (call after Kokkos::initialize).
hardware_report detect_hardware();
/// bf16 support from a CPU's feature list (/proc/cpuinfo "flags" on x86: avx512_bf16 or
/// amx_bf16; "Features" on Arm: bf16).
hardware_report cpu_bf16_support(const std::string& cpu_flags);

/// \brief The GEMM path for each (A, B, C) type combination a run in this policy multiplies
/// with, and why, on this machine's default execution space: one line each, e.g.
/// "bf16 x bf16 -> fp32: widened (dnnl declines: oneDNN 2.6.3 has no bf16 x bf16 -> fp32 matmul
/// on this CPU (oneDNN's ISA: avx2); widened: ...)".
std::vector<std::string> gemm_paths(const precision_policy& policy);

/// \brief One conclusion of the rules: an error stops the run before anything is allocated.
struct precision_finding {
  enum class level { note, warning, error };
  level severity;
  std::string rule;     ///< stable name, e.g. "pure-bf16-with-quantization"
  std::string message;  ///< what is wrong or decided, why, and what to do
};

/// The rules (docs/precision.md): the llama-recipes guard for bf16 parameters (pure_bf16
/// requested and no quantization; with sharding, accepted and explained), quantization refused,
/// amp_fp16 without loss scaling refused unless forced, bf16 on hardware without native bf16
/// noted with what it costs and saves there.
std::vector<precision_finding> check_precision(const precision_policy& policy, const run_request& request,
                                               const hardware_report& hardware);

/// Sets the loss scaler of `options` as `request.loss_scaling` asks (static: fixed at
/// --loss-scale; off: fixed at 1).
void apply_loss_scaling(const run_request& request, train_options& options);

}  // namespace kamp

#endif
