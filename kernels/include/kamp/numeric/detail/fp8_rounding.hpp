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
template <class Format>
KOKKOS_INLINE_FUNCTION std::uint8_t narrow_fp8_bits(float x, fp8_overflow overflow) {
  using traits = format_traits<Format>;
  constexpr int mb = traits::mantissa_bits;
  constexpr int bias = traits::exponent_bias;

  const std::uint32_t u = float_to_bits(x);
  const std::uint32_t sign = (u >> 24) & 0x80u;
  const std::uint32_t magnitude = u & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return std::uint8_t(traits::fnuz ? traits::nan_bits : sign | traits::nan_bits);

  const int biased = int(magnitude >> 23);
  // fp32 subnormals lie far below half the smallest FP8 subnormal; treating them as 2^-126 x 0.m
  // rounds them to zero like any value that small.
  const int exponent = (biased == 0 ? 1 : biased) - 127;
  const std::uint32_t significand = (magnitude & 0x7fffffu) | (biased == 0 ? 0u : 0x800000u);
  const int target_exponent = exponent < 1 - bias ? 1 - bias : exponent;  // subnormals share the lowest binade's ulp
  int shift = 23 - mb + (target_exponent - exponent);
  shift = shift > 25 ? 25 : shift;  // from 25 on, everything is below half an ulp: zero
  const std::uint32_t kept = significand >> shift;
  const std::uint32_t discarded = significand & ((1u << shift) - 1u);
  const std::uint32_t half = 1u << (shift - 1);
  const std::uint32_t rounded = kept + ((discarded > half || (discarded == half && (kept & 1u))) ? 1u : 0u);
  // For normals `rounded` carries the implicit bit into the exponent field, so the encoding is
  // (exponent + bias - 1) << mb plus it; for subnormals that first term is zero. A carry out of
  // the mantissa moves to the next binade. Infinite inputs land far beyond max_bits.
  const std::uint32_t encoded = (std::uint32_t(target_exponent + bias - 1) << mb) + rounded;
  if (encoded > traits::max_bits) {
    if (overflow == fp8_overflow::saturate) return std::uint8_t(sign | traits::max_bits);
    if constexpr (traits::has_infinity) return std::uint8_t(sign | traits::infinity_bits);
    return std::uint8_t(traits::fnuz ? traits::nan_bits : sign | traits::nan_bits);
  }
  if (traits::fnuz && encoded == 0) return 0;  // no -0: 0x80 is the NaN
  return std::uint8_t(sign | encoded);
}

/// FP8 -> fp32, exact. NaN widens to fp32's quiet NaN (with the sign for OCP formats).
template <class Format>
KOKKOS_INLINE_FUNCTION std::uint32_t widen_fp8_bits(std::uint8_t b) {
  using traits = format_traits<Format>;
  constexpr int mb = traits::mantissa_bits;
  constexpr int bias = traits::exponent_bias;
  const std::uint32_t sign = std::uint32_t(b & 0x80u) << 24;
  const std::uint32_t magnitude = b & 0x7fu;
  const std::uint32_t field = magnitude >> mb;
  const std::uint32_t mantissa = magnitude & ((1u << mb) - 1u);

  bool nan = false;
  if constexpr (traits::fnuz) {
    nan = b == 0x80u;
  } else if constexpr (traits::has_infinity) {
    nan = magnitude > traits::infinity_bits;
    if (magnitude == traits::infinity_bits) return sign | 0x7f800000u;
  } else {
    nan = magnitude == traits::nan_bits;
  }
  if (nan) return (traits::fnuz ? 0u : sign) | 0x7fc00000u;
  if (field == 0) {
    // m x 2^(1 - bias - mb): an integer below 8 times a power of two, exact in fp32 and normal.
    constexpr float ulp = float(pow2(1 - bias - mb));
    return sign | float_to_bits(float(mantissa) * ulp);
  }
  return sign | ((field + 127u - bias) << 23) | (mantissa << (23 - mb));
}

}  // namespace kamp::detail

#endif
