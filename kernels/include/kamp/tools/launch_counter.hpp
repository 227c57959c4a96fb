#ifndef KAMP_TOOLS_LAUNCH_COUNTER_HPP
#define KAMP_TOOLS_LAUNCH_COUNTER_HPP

// Counts what a piece of work asks of the device, through Kokkos Tools callbacks: kernel
// launches, fences (host waits) and deep copies. The same counters run on every backend, so a
// CPU build shows the structure a GPU run pays for. Not thread-safe; it takes over the launch,
// fence, deep-copy and region callbacks while it counts (the allocation ones stay free).
#include <kamp/kernels/detail/fence.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace kamp {

/// \brief What `count_launches` saw.
struct launch_tally {
  int launches = 0;  ///< parallel_for, parallel_reduce and parallel_scan calls
  /// Fences that wait for an execution space, other than the host-only ones below: kamp's own
  /// on every Kokkos (kamp::detail::fence), and from 3.5 on also those Kokkos makes itself
  /// (in deep copies, allocations, reductions into host scalars), which 3.4 does not report.
  int fences = 0;
  /// Fences of host spaces that a run on a GPU does not have: kamp's before and after a host
  /// vendor library (oneDNN, a BLAS: they run on threads of their own), labelled so by
  /// kamp::detail::fence only where the space is a host space, and Kokkos 4's before a host
  /// memset of a zero fill ("HostSpace fence", there for HPX).
  int host_fences = 0;
  int tool_fences = 0;  ///< fences Kokkos (>= 4) adds around callbacks while a tool listens
  int copies = 0;       ///< deep copies between views (fills of a scalar excluded)
  std::vector<std::string> fence_names, copy_names;
  /// Launches inside kamp::gemm[...] regions (a bias prologue, widening copies, an epilogue
  /// pass): what the GEMM path adds, which differs between machines running one binary.
  int gemm_launches = 0;
  std::vector<std::string> kernels;  ///< the label of each launch outside GEMM regions, in order
  std::vector<std::string> gemms;    ///< kamp::gemm[...] and kamp::gemm_fp8[...] regions entered, in order (outermost)
};

namespace detail {

struct launch_counting {
  launch_tally tally;
  std::vector<std::string> regions;  ///< open regions, outermost first

  static launch_counting& instance() {
    static launch_counting c;
    return c;
  }
  bool in_gemm() const {
    for (const auto& r : regions)
      if (r.rfind("kamp::gemm[", 0) == 0 || r.rfind("kamp::gemm_fp8[", 0) == 0) return true;
    return false;
  }
  static void launch(const char* name, std::uint32_t, std::uint64_t*) {
    launch_counting& c = instance();
    ++c.tally.launches;
    if (c.in_gemm())
      ++c.tally.gemm_launches;
    else
      c.tally.kernels.emplace_back(name);
  }
  static void end(std::uint64_t) {}
  static void fence(const char* name, std::uint32_t, std::uint64_t*) {
    launch_counting& c = instance();
    // Kokkos 4 and 5 fence before each kernel callback of a tool that has not declared it needs
    // none (tools declare that at Kokkos::initialize): the counting's own cost, not the program's.
    if (std::strcmp(name, "Kokkos::Tools::invoke_kokkosp_callback: Kokkos Profile Tool Fence") == 0) {
      ++c.tally.tool_fences;
      return;
    }
    if (std::strncmp(name, host_library_fence_label, std::strlen(host_library_fence_label)) == 0 ||
        std::strcmp(name, "HostSpace fence") == 0) {
      ++c.tally.host_fences;
      return;
    }
    ++c.tally.fences;
    c.tally.fence_names.emplace_back(name);
  }
  static void observe_kamp_fence(const char* label) { fence(label, 0, nullptr); }
  static void copy(Kokkos::Tools::SpaceHandle, const char* dst, const void*, Kokkos::Tools::SpaceHandle,
                   const char* src, const void*, std::uint64_t) {
    // deep_copy(view, scalar) reports the scalar as its source: "Scalar" (Kokkos 4, 5) or
    // "(none)" (3.4). Fills never cross to the host.
    if (std::strcmp(src, "Scalar") == 0 || std::strcmp(src, "(none)") == 0) return;
    ++instance().tally.copies;
    instance().tally.copy_names.push_back(std::string(dst) + " <- " + src);
  }
  static void push(const char* name) {
    launch_counting& c = instance();
    // The outermost GEMM regions: an FP8 GEMM's bf16 GEMM inside it is part of it.
    const bool gemm = std::strncmp(name, "kamp::gemm[", 11) == 0 || std::strncmp(name, "kamp::gemm_fp8[", 15) == 0;
    if (gemm && !c.in_gemm()) c.tally.gemms.emplace_back(name);
    c.regions.emplace_back(name);
  }
  static void pop() {
    if (!instance().regions.empty()) instance().regions.pop_back();
  }

  static void install(bool on) {
    namespace tools = Kokkos::Tools::Experimental;
    tools::set_begin_parallel_for_callback(on ? launch : nullptr);
    tools::set_end_parallel_for_callback(on ? end : nullptr);
    tools::set_begin_parallel_reduce_callback(on ? launch : nullptr);
    tools::set_end_parallel_reduce_callback(on ? end : nullptr);
    tools::set_begin_parallel_scan_callback(on ? launch : nullptr);
    tools::set_end_parallel_scan_callback(on ? end : nullptr);
    tools::set_begin_fence_callback(on ? fence : nullptr);
    if (!kokkos_reports_fences) fence_observer() = on ? observe_kamp_fence : nullptr;
    tools::set_end_fence_callback(on ? end : nullptr);
    tools::set_begin_deep_copy_callback(on ? copy : nullptr);
    tools::set_push_region_callback(on ? push : nullptr);
    tools::set_pop_region_callback(on ? pop : nullptr);
  }
};

}  // namespace detail

/// \brief Runs `work` and returns what it launched, fenced and copied.
template <class F>
launch_tally count_launches(F&& work) {
  detail::launch_counting& c = detail::launch_counting::instance();
  c = detail::launch_counting();
  detail::launch_counting::install(true);
  try {
    work();
  } catch (...) {
    detail::launch_counting::install(false);
    throw;
  }
  detail::launch_counting::install(false);
  return c.tally;
}

}  // namespace kamp

#endif
