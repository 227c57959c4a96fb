#ifndef KAMP_KERNELS_DETAIL_FENCE_HPP
#define KAMP_KERNELS_DETAIL_FENCE_HPP

// Every fence in kamp's own code goes through `kamp::detail::fence` (tests/fences checks the
// sources), for two reasons. Kokkos reports fences to its Tools callbacks only from 3.5 on, so on
// 3.4 `kamp::count_launches` learns of kamp's fences from here. And the label says which fences
// only host spaces pay: a host vendor library (oneDNN, a BLAS) runs on threads of its own, so the
// Kokkos work before it must have finished; on a device space the same call is a real wait.
#include <Kokkos_Core.hpp>

#include <string>
#include <type_traits>

namespace kamp::detail {

/// How the labels of fences a host space pays for a host vendor library begin
/// (launch_tally::host_fences).
inline constexpr const char* host_library_fence_label = "kamp::fence[host library: ";

/// Called for each kamp fence where Kokkos does not report fences itself (3.4): set while
/// `kamp::count_launches` counts.
using fence_observer_function = void (*)(const char* label);
inline fence_observer_function& fence_observer() {
  static fence_observer_function observer = nullptr;
  return observer;
}

/// Whether this Kokkos calls the Tools fence callbacks (from 3.5 on).
inline constexpr bool kokkos_reports_fences = KOKKOS_VERSION >= 30500;

template <class ExecutionSpace>
void labelled_fence(const ExecutionSpace& space, const std::string& label) {
#if KOKKOS_VERSION >= 30500
  space.fence(label);
#else
  if (fence_observer_function observe = fence_observer()) observe(label.c_str());
  space.fence();
#endif
}

/// Waits for the work submitted to `space`, because of `why` (in the fence's label).
template <class ExecutionSpace>
void fence(const ExecutionSpace& space, const char* why) {
  labelled_fence(space, std::string("kamp::fence[") + why + "]");
}

/// The fence before or after a host vendor `library` works on data Kokkos kernels wrote or read:
/// counted apart (host_fences) where the space is a host space, a plain fence elsewhere.
template <class ExecutionSpace>
void fence_for_host_library(const ExecutionSpace& space, const char* library) {
  constexpr bool host = std::is_same_v<typename ExecutionSpace::memory_space, Kokkos::HostSpace>;
  labelled_fence(space, (host ? host_library_fence_label : "kamp::fence[") + std::string(library) + "]");
}

}  // namespace kamp::detail

#endif
