#ifndef KAMP_KERNELS_DETAIL_KOKKOS_COMPAT_HPP
#define KAMP_KERNELS_DETAIL_KOKKOS_COMPAT_HPP

// What differs between the Kokkos versions kamp supports (3.4 to 5.x), in one place, so that no
// other file tests KOKKOS_VERSION. Kokkos' Tools callbacks (Kokkos::Tools::Experimental::set_*)
// and TeamPolicy's limits (team_size_max, scratch_size_max) kept their API over that range.
#include <Kokkos_Core.hpp>

#include <cstddef>
#include <stdexcept>
#include <string>

namespace kamp::detail {

#ifdef KOKKOS_ENABLE_HIP
/// AMD GPUs' execution space: Kokkos::Experimental::HIP until 4.0, Kokkos::HIP since (the old
/// name is deprecated in 4.x and gone in 5).
#if KOKKOS_VERSION >= 40000
using hip_space = Kokkos::HIP;
#else
using hip_space = Kokkos::Experimental::HIP;
#endif
#endif

/// The team scratch level that holds `bytes` per team: 0 (on GPUs, shared memory) where it fits,
/// else 1 (global memory; on CPUs the same memory as level 0). Kokkos 5.1 aborts a launch that
/// asks a level for more than scratch_size_max; 3.4 allowed it silently.
template <class ExecutionSpace>
int team_scratch_level(std::size_t bytes, const char* kernel) {
  using policy = Kokkos::TeamPolicy<ExecutionSpace>;
  for (int level = 0; level < 2; ++level)
    if (bytes <= static_cast<std::size_t>(policy::scratch_size_max(level))) return level;
  throw std::length_error(std::string(kernel) + ": needs " + std::to_string(bytes) +
                          " bytes of team scratch, more than this Kokkos allows on either level (" +
                          std::to_string(policy::scratch_size_max(1)) + " bytes on level 1)");
}

/// A team policy of `league` teams of at most `wanted` threads, each with `bytes` of scratch on
/// the level that holds it: the team size is capped by what Kokkos allows for this functor and
/// scratch (on GPUs, registers and shared memory bound it). The functor must accept any team size.
template <class ExecutionSpace, class Functor>
Kokkos::TeamPolicy<ExecutionSpace> bounded_team_policy(const ExecutionSpace& space, int league, int wanted,
                                                       int scratch_level, std::size_t bytes, const Functor& functor) {
  using policy = Kokkos::TeamPolicy<ExecutionSpace>;
  const auto with = [&](int team_size) {
    return policy(space, league, team_size).set_scratch_size(scratch_level, Kokkos::PerTeam(bytes));
  };
  const int allowed = with(1).team_size_max(functor, Kokkos::ParallelForTag());
  return with(wanted < allowed ? wanted : allowed);
}

}  // namespace kamp::detail

#endif
