#include <kamp/model/diagnostics/hardware_probe.hpp>

#include <kamp/kernels/gemm.hpp>

#include <kamp/kernels/detail/kokkos_compat.hpp>

#include <Kokkos_Core.hpp>

#include <fstream>
#include <sstream>
#include <string>

namespace kamp {

namespace {

bool has_word(const std::string& list, const std::string& word) {
  std::istringstream in(list);
  std::string w;
  while (in >> w)
    if (w == word) return true;
  return false;
}

std::string cpu_flags() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("flags", 0) == 0 || line.rfind("Features", 0) == 0) return line.substr(line.find(':') + 1);
  return "";
}

}  // namespace

hardware_report cpu_bf16_support(const std::string& flags) {
  hardware_report h;
  h.device = "CPU";
  for (const char* flag : {"avx512_bf16", "amx_bf16", "bf16"})
    if (has_word(flags, flag)) {
      h.evidence = std::string("CPU flag ") + flag;
      return h;
    }
  h.native_bf16 = false;
  h.evidence = flags.empty() ? "no CPU feature list found (/proc/cpuinfo)"
                             : "no avx512_bf16, amx_bf16 (x86) or bf16 (Arm) among the CPU's flags";
  return h;
}

hardware_report detect_hardware() {
#if defined(KOKKOS_ENABLE_CUDA)
  if (std::is_same_v<Kokkos::DefaultExecutionSpace, Kokkos::Cuda>) {
    cudaDeviceProp p;
    int device = 0;
    cudaGetDevice(&device);
    cudaGetDeviceProperties(&p, device);
    hardware_report h;
    h.device = "CUDA device " + std::to_string(device) + ": " + p.name;
    h.native_bf16 = p.major >= 8;
    // cuBLASLt's FP8 matmuls: 9.0 from CUDA 11.8, 8.9 from CUDA 12.1 (tpls/gemm_cublaslt_fp8.hpp).
    h.native_fp8 = p.major * 10 + p.minor >= (CUDART_VERSION >= 12010 ? 89 : 90);
    h.evidence = "compute capability " + std::to_string(p.major) + "." + std::to_string(p.minor) +
                 (h.native_bf16 ? " (bf16 tensor cores from 8.0" : " (bf16 tensor cores need 8.0 or newer") +
                 (h.native_fp8    ? ", FP8 from 8.9)"
                  : h.native_bf16 ? "; FP8 needs 8.9)"
                                  : ")");
    return h;
  }
#endif
#if defined(KOKKOS_ENABLE_HIP)
  if (std::is_same_v<Kokkos::DefaultExecutionSpace, kamp::detail::hip_space>) {
    hardware_report h;
    h.device = "HIP device";
    h.evidence = "AMD GPUs from MI100 (gfx908) compute bf16 in their matrix cores";
    return h;
  }
#endif
  hardware_report h = cpu_bf16_support(cpu_flags());
  h.bf16_gemm = gemm_path_on_this_machine<Kokkos::DefaultExecutionSpace, bf16, bf16, float>().path;
  return h;
}

}  // namespace kamp
