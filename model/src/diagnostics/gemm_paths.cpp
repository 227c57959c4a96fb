#include <kamp/model/diagnostics/gemm_paths.hpp>

#include <kamp/kernels/gemm.hpp>

#include <Kokkos_Core.hpp>

#include <string>

namespace kamp {

namespace {

template <class T, class TC>
std::string gemm_path_line() {
  const gemm_path_info info = gemm_path_on_this_machine<Kokkos::DefaultExecutionSpace, T, T, TC>();
  return std::string(name(dtype_of<T>())) + " x " + name(dtype_of<T>()) + " -> " + name(dtype_of<TC>()) + ": " +
         info.path + " (" + info.reason + ")";
}

}  // namespace

std::vector<std::string> gemm_paths(const precision_policy& policy) {
  std::vector<std::string> lines;
  if (policy.low() == dtype::bf16) lines = {gemm_path_line<bf16, bf16>(), gemm_path_line<bf16, float>()};
  if (policy.low() == dtype::fp16) lines = {gemm_path_line<fp16, fp16>(), gemm_path_line<fp16, float>()};
  if (policy.low() == dtype::fp32 || !policy.fp32_layers.empty()) lines.push_back(gemm_path_line<float, float>());
  return lines;
}

}  // namespace kamp
