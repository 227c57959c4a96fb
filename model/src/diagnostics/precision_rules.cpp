#include <kamp/model/diagnostics/precision_rules.hpp>

#include <string>

namespace kamp {

namespace {

bool uses_bf16(const precision_policy& p) {
  return p.mode == precision_mode::amp_bf16 || p.mode == precision_mode::pure_bf16 || p.mode == precision_mode::amp_fp8;
}

}  // namespace

std::vector<precision_finding> check_precision(const precision_policy& policy, const run_request& request,
                                               const hardware_report& hardware) {
  using level = precision_finding::level;
  std::vector<precision_finding> out;
  const bool quantized = request.quantization != "none";
  if (quantized && policy.fp8())
    out.push_back({level::error, "fp8-with-quantization",
                   "amp_fp8 casts each weight to FP8 at every step from its fp32 master weight, with a scale "
                   "from that weight's amax; quantized weights have no fp32 master to cast from, and kamp trains "
                   "no quantized models. Drop --quantization"});
  else if (quantized && policy.mode == precision_mode::pure_bf16)
    out.push_back({level::error, "pure-bf16-with-quantization",
                   "pure_bf16 stores the parameters themselves in bf16, and quantized weights cannot be cast to bf16: "
                   "llama-recipes casts the model to bf16 only when pure_bf16 is asked for and quantization is off. "
                   "Drop --quantization, or use --mode amp_bf16"});
  else if (quantized)
    out.push_back({level::error, "quantization-unsupported",
                   "--quantization " + request.quantization +
                       ": kamp trains full- and mixed-precision models only, not quantized ones. Remove the option"});
  if (policy.mode == precision_mode::pure_bf16 && !quantized)
    out.push_back({level::note, "bf16-parameters",
                   std::string("parameters are stored in bf16 without fp32 master weights: pure_bf16 is requested "
                               "and no quantization is configured (the llama-recipes condition)") +
                       (request.enable_fsdp ? "; with sharding, each rank keeps its shard in bf16 (llama-recipes "
                                              "casts before sharding and turns FSDP's mixed precision off)"
                                            : "")});
  if (request.enable_fsdp)
    out.push_back({level::note, "sharding-single-process",
                   "enable_fsdp: kamp shards the model copy, gradients and optimizer state over the ranks of a run "
                   "started with mpirun or srun (--sharding parameters, FSDP's full shard); a run in one process "
                   "shards nothing"});
  if (request.fp8_settings && policy.mode == precision_mode::pure_bf16)
    out.push_back({level::error, "fp8-needs-master-weights",
                   "FP8 settings with pure_bf16: FP8 training keeps fp32 master weights and casts them to FP8 at "
                   "every step (Transformer Engine's recipes; an FP8 weight updated in place would lose every "
                   "update below half its 2^-3 ulp), and pure_bf16 has no master. Use --mode amp_fp8"});
  else if (request.fp8_settings && !policy.fp8())
    out.push_back({level::note, "fp8-settings-unused",
                   "--fp8-recipe and --fp8-amax-history apply to amp_fp8 only; " + std::string(name(policy.mode)) +
                       " runs no FP8 GEMM"});
  if (policy.fp8() && !hardware.native_fp8)
    out.push_back({level::note, "fp8-emulated",
                   hardware.device + " has no FP8 dot products: amp_fp8's GEMMs widen their FP8 operands to bf16 "
                                     "(exactly; on hosts with a bf16 GEMM) or run kamp's portable kernel, so they "
                                     "take no less time than amp_bf16's, and the casts with their amax add passes "
                                     "over the data. The casts, scales and results are those a GPU with FP8 "
                                     "computes, to its summation order"});
  if (policy.mode == precision_mode::amp_fp16 && request.loss_scaling == loss_scaling::off)
    out.push_back({request.force_unscaled_fp16 ? level::warning : level::error, "fp16-needs-loss-scaling",
                   std::string("amp_fp16 without loss scaling: gradient values below 6e-8 (fp16's smallest "
                               "subnormal) become zero and those weights stop learning, silently") +
                       (request.force_unscaled_fp16 ? " (forced with --force-unscaled-fp16)"
                                                    : ". Use --loss-scaling dynamic (the default) or static, or "
                                                      "--force-unscaled-fp16 if you know the gradients stay in "
                                                      "range")});
  if (policy.mode != precision_mode::amp_fp16 && request.loss_scaling != loss_scaling::dynamic)
    out.push_back({level::note, "loss-scaling-fp16-only",
                   "--loss-scaling applies to amp_fp16 only; " + std::string(name(policy.mode)) +
                       " needs none (bf16 and fp32 share fp32's exponent range)"});
  // Measured on a 2-core AVX2 host (tools/bench-train.sh; README): amp_bf16 0.86-0.97x fp32.
  if (uses_bf16(policy) && !hardware.native_bf16)
    out.push_back(
        {level::note, "bf16-emulated",
         std::string(name(policy.mode)) + " computes in bf16, but " + hardware.device + " has no bf16 dot products (" +
             hardware.evidence + "): bf16 GEMMs widen to fp32 and run " +
             (hardware.bf16_gemm.empty() ? std::string("fp32 FMAs") : "on the '" + hardware.bf16_gemm + "' path") +
             ", the same arithmetic as fp32 on half the operand bytes, so a step takes about as long as "
             "in fp32 (0.86-0.97x fp32's tokens/s measured on an AVX2 host). The model copy and the "
             "activations the GEMMs read still take half the memory"});
  return out;
}

}  // namespace kamp
