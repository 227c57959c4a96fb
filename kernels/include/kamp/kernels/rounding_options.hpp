#ifndef KAMP_KERNELS_ROUNDING_OPTIONS_HPP
#define KAMP_KERNELS_ROUNDING_OPTIONS_HPP

#include <cstdint>

namespace kamp {

/// How a kernel rounds fp32 results into a 16-bit output.
enum class rounding { nearest_even, stochastic };

/// Rounding for a kernel's 16-bit output. Stochastic rounding draws element i's random word as
/// counter_random(seed, stream_offset + i), so a caller that advances stream_offset (say by the
/// buffer size every step) never reuses a word.
struct rounding_options {
  rounding mode = rounding::nearest_even;
  std::uint64_t seed = 0;
  std::uint64_t stream_offset = 0;
};

}  // namespace kamp

#endif
