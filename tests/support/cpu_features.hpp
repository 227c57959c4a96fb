#ifndef KAMP_TESTS_SUPPORT_CPU_FEATURES_HPP
#define KAMP_TESTS_SUPPORT_CPU_FEATURES_HPP

// What this CPU can do, read from /proc/cpuinfo and oneDNN's run-time ISA cap rather than from
// kamp, so tests can say which GEMM path this machine must take.
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

namespace kamp::test {

/// The x86 feature flags of the first CPU ("avx2", "avx512bw", ...); empty where there are none.
inline std::set<std::string> cpu_flags() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    std::set<std::string> flags;
    for (std::string w; words >> w;) flags.insert(w);
    return flags;
  }
  return {};
}

/// oneDNN's ISA cap (ONEDNN_MAX_CPU_ISA, or DNNL_MAX_CPU_ISA), upper case; empty when unset.
inline std::string onednn_isa_cap() {
  for (const char* name : {"ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA"})
    if (const char* v = std::getenv(name); v != nullptr && *v != '\0') return v;
  return {};
}

/// Whether oneDNN may use AVX-512 with bf16 dot products here: the CPU has them and no cap
/// forbids them.
inline bool onednn_may_use_avx512_bf16() {
  const auto f = cpu_flags();
  const std::string cap = onednn_isa_cap();
  const bool capped = !cap.empty() && cap != "ALL" && cap.rfind("AVX512_CORE_BF16", 0) != 0 &&
                      cap.rfind("AVX512_CORE_AMX", 0) != 0 && cap.rfind("AVX10", 0) != 0;
  return !capped && f.count("avx512_bf16") == 1;
}

/// Whether oneDNN may use AMX tiles for bf16 here: the CPU has them and no cap forbids them.
inline bool onednn_may_use_amx_bf16() {
  const std::string cap = onednn_isa_cap();
  const bool capped =
      !cap.empty() && cap != "ALL" && cap.rfind("AVX512_CORE_AMX", 0) != 0 && cap.rfind("AVX10", 0) != 0;
  return !capped && cpu_flags().count("amx_bf16") == 1;
}

/// Whether oneDNN is limited to AVX2 or less here: no AVX-512 in the CPU, or a cap below it.
inline bool onednn_below_avx512() {
  const auto f = cpu_flags();
  const std::string cap = onednn_isa_cap();
  const bool capped = cap == "SSE41" || cap == "AVX" || cap.rfind("AVX2", 0) == 0;
  return capped || f.count("avx512bw") == 0;
}

}  // namespace kamp::test

#endif
