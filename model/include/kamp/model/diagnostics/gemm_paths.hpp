#ifndef KAMP_MODEL_DIAGNOSTICS_GEMM_PATHS_HPP
#define KAMP_MODEL_DIAGNOSTICS_GEMM_PATHS_HPP

#include <kamp/model/config/precision_policy.hpp>

#include <string>
#include <vector>

namespace kamp {

/// \brief The GEMM path for each (A, B, C) type combination a run in this policy multiplies
/// with, and why, on this machine's default execution space: one line each, e.g.
/// "bf16 x bf16 -> fp32: widened (dnnl declines: oneDNN 2.6.3 has no bf16 x bf16 -> fp32 matmul
/// on this CPU (oneDNN's ISA: avx2); widened: ...)".
std::vector<std::string> gemm_paths(const precision_policy& policy);

}  // namespace kamp

#endif
