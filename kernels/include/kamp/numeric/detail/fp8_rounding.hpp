#ifndef KAMP_NUMERIC_DETAIL_FP8_ROUNDING_HPP
#define KAMP_NUMERIC_DETAIL_FP8_ROUNDING_HPP

#include <kamp/numeric/detail/bit_cast.hpp>
#include <kamp/numeric/format.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>

// Bit-level fp32 <-> 8-bit conversions for the four FP8 formats, in integer operations only
// (and one exact multiplication by a power of two when widening subnormals), so every backend
// gives the same bits whatever its flush-to-zero or fast-math settings.
namespace kamp::detail {

/// What a finite value beyond the format's range becomes.
/// - nan_or_infinity: IEEE-like (PyTorch's and ml_dtypes' default casts): infinity where the
///   format has one (OCP E5M2), NaN otherwise; an infinite input likewise.
/// - saturate: the largest finite value of the same sign, for infinite inputs too (CUDA's
///   __NV_SATFINITE, what Transformer Engine's casts use). NaN stays NaN either way.
enum class fp8_overflow { nan_or_infinity, saturate };

/// fp32 -> FP8 with round-to-nearest-even. The rounding is done as if the exponent range were
/// unbounded above; a result beyond the largest finite encoding is an overflow. So E4M3's
/// 464 (a tie between 448 and the missing 480) rounds to 448, whose mantissa is even.
// Both directions are branch-free (selects only), so host compilers vectorize the casts; the
// exhaustive tests check every fp32 input and every FP8 pattern.
template <class Format>
KOKKOS_INLINE_FUNCTION std::uint8_t narrow_fp8_bits(float x, fp8_overflow overflow) {
  using traits = format_traits<Format>;
  constexpr int mb = traits::mantissa_bits;
  constexpr int bias = traits::exponent_bias;

  const std::uint32_t u = float_to_bits(x);
  const std::uint32_t sign = (u >> 24) & 0x80u;
  const std::uint32_t magnitude = u & 0x7fffffffu;
  const int biased = int(magnitude >> 23);
  // fp32 subnormals lie far below half the smallest FP8 subnormal; treating them as 2^-126 x 0.m
  // rounds them to zero like any value that small.
  const int exponent = (biased == 0 ? 1 : biased) - 127;
  const std::uint32_t significand = (magnitude & 0x7fffffu) | (biased == 0 ? 0u : 0x800000u);
  const int target_exponent = exponent < 1 - bias ? 1 - bias : exponent;  // subnormals share the lowest binade's ulp
  int shift = 23 - mb + (target_exponent - exponent);                     // at least 20
  shift = shift > 25 ? 25 : shift;  // from 25 on, everything is below half an ulp: zero
  const std::uint32_t kept = significand >> shift;
  const std::uint32_t discarded = significand & ((1u << shift) - 1u);
  const std::uint32_t half = 1u << (shift - 1);
  const std::uint32_t rounded = kept + ((discarded > half || (discarded == half && (kept & 1u))) ? 1u : 0u);
  // For normals `rounded` carries the implicit bit into the exponent field, so the encoding is
  // (exponent + bias - 1) << mb plus it; for subnormals that first term is zero. A carry out of
  // the mantissa moves to the next binade. Infinite inputs land far beyond max_bits.
  const std::uint32_t encoded = (std::uint32_t(target_exponent + bias - 1) << mb) + rounded;

  const std::uint32_t nan = traits::fnuz ? traits::nan_bits : sign | traits::nan_bits;
  const std::uint32_t beyond = overflow == fp8_overflow::saturate ? sign | traits::max_bits
                               : traits::has_infinity             ? sign | traits::infinity_bits
                                                                  : nan;
  std::uint32_t r = encoded > traits::max_bits ? beyond : sign | encoded;
  if constexpr (traits::fnuz) r = encoded == 0 ? 0u : r;  // no -0: 0x80 is the NaN
  r = magnitude > 0x7f800000u ? nan : r;
  return std::uint8_t(r);
}

/// FP8 -> fp32, exact. NaN widens to fp32's quiet NaN (with the sign for OCP formats).
template <class Format>
KOKKOS_INLINE_FUNCTION std::uint32_t widen_fp8_bits(std::uint8_t b) {
  using traits = format_traits<Format>;
  constexpr int mb = traits::mantissa_bits;
  constexpr int bias = traits::exponent_bias;
  const std::uint32_t sign = std::uint32_t(b & 0x80u) << 24;
  const std::uint32_t magnitude = b & 0x7fu;
  const std::uint32_t mantissa = magnitude & ((1u << mb) - 1u);
  // Normal: the fields move to fp32's positions and the exponent is rebiased. Subnormal (and
  // zero): m x 2^(1 - bias - mb), an integer below 8 times a power of two, exact in fp32 and normal.
  constexpr float ulp = float(pow2(1 - bias - mb));
  const std::uint32_t normal = (magnitude << (23 - mb)) + (std::uint32_t(127 - bias) << 23);
  const std::uint32_t subnormal = float_to_bits(float(int(mantissa)) * ulp);
  std::uint32_t r = sign | ((magnitude >> mb) == 0 ? subnormal : normal);
  if constexpr (traits::fnuz) {
    r = b == 0x80u ? 0x7fc00000u : r;
  } else if constexpr (traits::has_infinity) {
    r = magnitude == traits::infinity_bits ? (sign | 0x7f800000u) : r;
    r = magnitude > traits::infinity_bits ? (sign | 0x7fc00000u) : r;
  } else {
    r = magnitude == traits::nan_bits ? (sign | 0x7fc00000u) : r;
  }
  return r;
}

}  // namespace kamp::detail

#endif
