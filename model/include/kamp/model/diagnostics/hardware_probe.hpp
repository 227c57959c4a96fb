#ifndef KAMP_MODEL_DIAGNOSTICS_HARDWARE_PROBE_HPP
#define KAMP_MODEL_DIAGNOSTICS_HARDWARE_PROBE_HPP

#include <string>

namespace kamp {

/// \brief Whether the device that runs the model computes bf16 natively.
struct hardware_report {
  std::string device;       ///< "CPU", "CUDA device 0: NVIDIA H200 (compute capability 9.0)", ...
  bool native_bf16 = true;  ///< false: no bf16 dot products; bf16 GEMMs widen to fp32 and FMA
  std::string evidence;     ///< what was detected, for the message
  std::string bf16_gemm;    ///< the path bf16 GEMMs take here, e.g. "widened"; empty: not asked
  /// FP8 dot products (CUDA compute capability 8.9 and newer; AMD MI300 and newer); CPUs have
  /// none, and their FP8 GEMMs widen to bf16.
  bool native_fp8 = false;
};

/// The device of Kokkos' default execution space (call after Kokkos::initialize).
hardware_report detect_hardware();
/// bf16 support from a CPU's feature list (/proc/cpuinfo "flags" on x86: avx512_bf16 or
/// amx_bf16; "Features" on Arm: bf16).
hardware_report cpu_bf16_support(const std::string& cpu_flags);

}  // namespace kamp

#endif
