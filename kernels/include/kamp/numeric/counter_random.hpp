#ifndef KAMP_NUMERIC_COUNTER_RANDOM_HPP
#define KAMP_NUMERIC_COUNTER_RANDOM_HPP

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace kamp {

/// \brief A 32-bit random word that depends only on (seed, counter).
///
/// Kernels draw the random word for element i as counter_random(seed, i), so results do not
/// depend on the backend, the thread count or the order of execution, and a resumed run
/// reproduces the same words. The mixer is SplitMix64's finalizer (Steele, Lea, Flood 2014),
/// applied to a Weyl sequence over the counter.
KOKKOS_INLINE_FUNCTION std::uint32_t counter_random(std::uint64_t seed, std::uint64_t counter) {
  std::uint64_t z = seed * 0xd1342543de82ef95ull + (counter + 1) * 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return std::uint32_t(z >> 32);
}

}  // namespace kamp

#endif
