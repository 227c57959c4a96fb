#ifndef KAMP_NUMERIC_DETAIL_ROUNDING_HPP
#define KAMP_NUMERIC_DETAIL_ROUNDING_HPP

#include <kamp/numeric/detail/bit_cast.hpp>
#include <kamp/numeric/format.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>

// Bit-level fp32 <-> 16-bit conversions, written once for any (exponent, mantissa) split.
// Integer operations, plus (fp16 subnormals only) one fp32 addition of normal numbers that
// round-to-nearest-even determines exactly, so every backend produces the same bits whatever its
// flush-to-zero or fast-math settings (a changed FPU rounding mode, fesetround, would matter).
namespace kamp::detail {

enum class rounding_mode { nearest_even, stochastic };

/// fp32 -> 16-bit with stochastic rounding, for any (exponent, mantissa) split. The result
/// rounds away from zero iff the discarded fraction of an ulp, scaled to 32 bits, exceeds
/// `random`: probability equal to that fraction, so the rounding is unbiased.
template <class Format>
KOKKOS_INLINE_FUNCTION std::uint16_t narrow_stochastic_generic(float x, std::uint32_t random) {
  using traits = format_traits<Format>;
  constexpr int mb = traits::mantissa_bits;
  constexpr int bias = traits::exponent_bias;

  const std::uint32_t u = float_to_bits(x);
  const auto sign = std::uint16_t((u >> 16) & 0x8000u);
  const std::uint32_t magnitude = u & 0x7fffffffu;
  if (magnitude > 0x7f800000u) {
    // NaN: keep the sign and the top payload bits, force the quiet bit.
    const auto payload = (magnitude >> (23 - mb)) & ((1u << mb) - 1);
    return std::uint16_t(sign | traits::infinity_bits | traits::quiet_bit | payload);
  }
  const int biased = int(magnitude >> 23);
  const int exponent = (biased == 0 ? 1 : biased) - 127;
  if (exponent > bias) return std::uint16_t(sign | traits::infinity_bits);  // also fp32 infinity

  const std::uint64_t significand = (magnitude & 0x7fffffu) | (biased == 0 ? 0u : 0x800000u);
  // Below the target's normal range the result is a subnormal with a fixed exponent.
  const int target_exponent = exponent < 1 - bias ? 1 - bias : exponent;
  const int shift = 23 - mb + (target_exponent - exponent);  // >= 23 - mb > 0

  std::uint64_t kept = shift < 64 ? significand >> shift : 0;
  const std::uint64_t discarded = shift < 64 ? significand & ((std::uint64_t(1) << shift) - 1) : significand;
  const std::uint64_t fraction32 =
      shift <= 32 ? discarded << (32 - shift) : (shift - 32 < 64 ? discarded >> (shift - 32) : 0);
  kept += fraction32 > random ? 1u : 0u;
  // For normals `kept` carries the implicit bit, which lands in the exponent field and makes
  // the encoding (exponent - 1) << mb + kept; for subnormals that exponent term is zero.
  // A carry out of the mantissa moves to the next binade, or to infinity past the maximum.
  const std::uint64_t encoded = (std::uint64_t(target_exponent + bias - 1) << mb) + kept;
  return std::uint16_t(sign | encoded);
}

// The fast paths below are branch-free (selects only), so host compilers vectorize them; the
// exhaustive tests check every fp32 input against independent oracles.

/// bf16 is the top half of an fp32: round on the low 16 bits. Carries reach the exponent and,
/// past the maximum, infinity; subnormals need nothing special.
KOKKOS_INLINE_FUNCTION std::uint16_t bf16_nearest(std::uint32_t u) {
  const std::uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const bool nan = (u & 0x7fffffffu) > 0x7f800000u;
  return std::uint16_t(nan ? ((u >> 16) | 0x40u) : rounded);
}

/// Stochastic bf16: up iff low16 * 2^16 > random, i.e. low16 > random >> 16; the same rule as
/// narrow_stochastic_generic.
KOKKOS_INLINE_FUNCTION std::uint16_t bf16_stochastic(std::uint32_t u, std::uint32_t random) {
  const std::uint32_t rounded = (u >> 16) + ((u & 0xffffu) > (random >> 16) ? 1u : 0u);
  const bool nan = (u & 0x7fffffffu) > 0x7f800000u;
  return std::uint16_t(nan ? ((u >> 16) | 0x40u) : rounded);
}

/// fp16, round to nearest even. Normals round on the low 13 bits after rebiasing. Below
/// fp16's normal range, adding 2^-1 (as a float) aligns the value so that the FPU's own
/// round-to-nearest-even drops exactly the bits fp16 cannot hold: both operands and the sum
/// are normal fp32 numbers, so flush-to-zero modes cannot change the result (an fp32
/// subnormal input is far below fp16's half-ulp and gives zero either way).
KOKKOS_INLINE_FUNCTION std::uint16_t fp16_nearest(float x) {
  const std::uint32_t u = float_to_bits(x);
  const std::uint32_t sign = (u >> 16) & 0x8000u;
  const std::uint32_t a = u & 0x7fffffffu;
  constexpr std::uint32_t half_bits = 126u << 23;  // 0.5f: its ulp is fp16's subnormal ulp 2^-24
  const std::uint32_t normal = (a - (112u << 23) + 0xfffu + ((a >> 13) & 1u)) >> 13;
  const std::uint32_t subnormal = float_to_bits(bits_to_float(a) + bits_to_float(half_bits)) - half_bits;
  std::uint32_t r = a < (113u << 23) ? subnormal : normal;  // 113 << 23: fp16's smallest normal, 2^-14
  r = a >= (143u << 23) ? 0x7c00u : r;                      // 2^16 and beyond: infinity
  r = a > 0x7f800000u ? (0x7e00u | ((a >> 13) & 0x3ffu)) : r;
  return std::uint16_t(sign | r);
}

/// fp32 -> 16-bit, round to nearest even or stochastic.
template <class Format>
KOKKOS_INLINE_FUNCTION std::uint16_t narrow_bits(float x, rounding_mode mode, std::uint32_t random) {
  constexpr int e = format_traits<Format>::exponent_bits;
  static_assert(e == 5 || e == 8, "kamp: conversions are provided for fp16 and bf16");
  if constexpr (e == 8) {
    const std::uint32_t u = float_to_bits(x);
    return mode == rounding_mode::nearest_even ? bf16_nearest(u) : bf16_stochastic(u, random);
  } else {
    return mode == rounding_mode::nearest_even ? fp16_nearest(x) : narrow_stochastic_generic<Format>(x, random);
  }
}

/// 16-bit -> fp32, exact. fp16 NaNs are quieted with their payload kept (IEEE convertFormat,
/// as the F16C instruction does); bf16 is the top half of an fp32, so it widens by a shift.
template <class Format>
KOKKOS_INLINE_FUNCTION std::uint32_t widen_bits(std::uint16_t h) {
  constexpr int e = format_traits<Format>::exponent_bits;
  static_assert(e == 5 || e == 8, "kamp: conversions are provided for fp16 and bf16");
  if constexpr (e == 8) {
    return std::uint32_t(h) << 16;
  } else {
    const std::uint32_t shifted = std::uint32_t(h & 0x7fffu) << 13;  // exponent and mantissa in fp32 position
    const std::uint32_t exponent = shifted & (0x1fu << 23);
    const std::uint32_t normal = shifted + (112u << 23);  // rebias 15 -> 127
    const std::uint32_t quiet = (shifted & 0x7fffffu) != 0 ? 0x400000u : 0u;
    const std::uint32_t special = (shifted + (224u << 23)) | quiet;  // exponent 31 -> 255
    // Subnormal m * 2^-24: give it the exponent of 2^-14 as if normal, then subtract the
    // implicit 2^-14; operands and result are normal fp32, so the subtraction is exact.
    constexpr std::uint32_t two_pow_minus14 = 113u << 23;
    const std::uint32_t subnormal =
        float_to_bits(bits_to_float(shifted + two_pow_minus14) - bits_to_float(two_pow_minus14));
    const std::uint32_t r = exponent == 0 ? subnormal : (exponent == (0x1fu << 23) ? special : normal);
    return r | (std::uint32_t(h & 0x8000u) << 16);
  }
}

}  // namespace kamp::detail

#endif
