#ifndef KAMP_NUMERIC_DETAIL_BIT_CAST_HPP
#define KAMP_NUMERIC_DETAIL_BIT_CAST_HPP

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <cstring>

namespace kamp::detail {

// Kokkos 3.4 has no bit_cast; device compilers get their intrinsic, hosts the memcpy idiom that
// compilers turn into a register move.
KOKKOS_INLINE_FUNCTION std::uint32_t float_to_bits(float x) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return __float_as_uint(x);
#else
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
#endif
}

KOKKOS_INLINE_FUNCTION float bits_to_float(std::uint32_t u) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return __uint_as_float(u);
#else
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
#endif
}

}  // namespace kamp::detail

#endif
