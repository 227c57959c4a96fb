#ifndef KAMP_NUMERIC_DETAIL_ROUNDING_HPP
#define KAMP_NUMERIC_DETAIL_ROUNDING_HPP

#include <kamp/numeric/detail/bit_cast.hpp>
#include <kamp/numeric/format.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>

// Bit-level fp32 <-> 16-bit conversions, written once for any (exponent, mantissa) split.
// Only integer operations are used, so every backend produces the same bits whatever its
// floating-point modes (flush-to-zero, fast math) are.
namespace kamp::detail {

enum class rounding_mode { nearest_even, stochastic };

/// fp32 -> 16-bit. `random` is used only by stochastic rounding: the result rounds away from
/// zero iff the discarded fraction, scaled to 32 bits, exceeds `random` — probability equal to
/// that fraction, so the rounding is unbiased.
template <class Format>
KOKKOS_INLINE_FUNCTION std::uint16_t narrow_bits(float x, rounding_mode mode, std::uint32_t random) {
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
  bool up;
  if (mode == rounding_mode::nearest_even) {
    // discarded < 2^24 <= half whenever shift > 25, so the comparison is exact for every shift.
    const std::uint64_t half = shift <= 25 ? std::uint64_t(1) << (shift - 1) : std::uint64_t(1) << 24;
    up = discarded > half || (discarded == half && (kept & 1u));
  } else {
    const std::uint64_t fraction32 = shift <= 32 ? discarded << (32 - shift) : (shift - 32 < 64 ? discarded >> (shift - 32) : 0);
    up = fraction32 > random;
  }
  kept += up ? 1u : 0u;
  // For normals `kept` carries the implicit bit, which lands in the exponent field and makes
  // the encoding (exponent - 1) << mb + kept; for subnormals that exponent term is zero.
  // A carry out of the mantissa moves to the next binade, or to infinity past the maximum.
  const std::uint64_t encoded = (std::uint64_t(target_exponent + bias - 1) << mb) + kept;
  return std::uint16_t(sign | encoded);
}

/// 16-bit -> fp32, exact. fp16 NaNs are quieted with their payload kept (IEEE convertFormat,
/// as the F16C instruction does); bf16 is the top half of an fp32, so it widens by a shift.
template <class Format>
KOKKOS_INLINE_FUNCTION std::uint32_t widen_bits(std::uint16_t h) {
  using traits = format_traits<Format>;
  constexpr int mb = traits::mantissa_bits;
  constexpr int bias = traits::exponent_bias;
  if constexpr (bias == 127) return std::uint32_t(h) << 16;

  const std::uint32_t sign = std::uint32_t(h & 0x8000u) << 16;
  const std::uint32_t biased = (h & 0x7fffu) >> mb;
  std::uint32_t mantissa = h & ((1u << mb) - 1);
  if (biased == (1u << traits::exponent_bits) - 1) {
    const std::uint32_t quiet = mantissa != 0 ? 0x400000u : 0u;
    return sign | 0x7f800000u | quiet | (mantissa << (23 - mb));
  }
  if (biased == 0) {
    if (mantissa == 0) return sign;
    int exponent = 1 - bias;
    while ((mantissa & (1u << mb)) == 0) {
      mantissa <<= 1;
      --exponent;
    }
    mantissa &= (1u << mb) - 1;
    return sign | (std::uint32_t(exponent + 127) << 23) | (mantissa << (23 - mb));
  }
  return sign | ((biased - bias + 127) << 23) | (mantissa << (23 - mb));
}

}  // namespace kamp::detail

#endif
