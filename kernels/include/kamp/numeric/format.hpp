#ifndef KAMP_NUMERIC_FORMAT_HPP
#define KAMP_NUMERIC_FORMAT_HPP

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace kamp {

/// \brief A 16-bit IEEE-style binary float stored as its raw bit pattern.
///
/// \tparam ExponentBits 5 gives IEEE binary16 (`fp16`), 8 gives bfloat16 (`bf16`); the
/// remaining bits after the sign are the stored mantissa.
///
/// It is a plain 2-byte struct, so `Kokkos::View<bf16*>` works on every backend and
/// its bits are the same everywhere. It deliberately has no arithmetic: kernels load it,
/// compute in float (`kamp::to_float`) and round once at the store (`kamp::from_float`).
template <int ExponentBits>
struct float16 {
  static_assert(ExponentBits > 1 && ExponentBits < 15, "kamp::float16: exponent must leave a mantissa");
  std::uint16_t bits;

  static KOKKOS_INLINE_FUNCTION float16 from_bits(std::uint16_t b) {
    float16 x;
    x.bits = b;
    return x;
  }
};

/// IEEE 754 binary16: 1 sign, 5 exponent, 10 mantissa bits.
using fp16 = float16<5>;
/// bfloat16: 1 sign, 8 exponent, 7 mantissa bits (the top half of an fp32).
using bf16 = float16<8>;

static_assert(sizeof(fp16) == 2 && sizeof(bf16) == 2, "16-bit formats must occupy 2 bytes");

/// \brief Properties of a floating-point format, as exact values.
///
/// `digits10` follows std::numeric_limits: decimal digits that survive a round trip
/// (fp32 6, fp16 3, bf16 2).
template <class T>
struct format_traits;

template <int ExponentBits>
struct format_traits<float16<ExponentBits>> {
  static constexpr int bits = 16;
  static constexpr int exponent_bits = ExponentBits;
  static constexpr int mantissa_bits = 15 - ExponentBits;
  static constexpr int exponent_bias = (1 << (ExponentBits - 1)) - 1;
  static constexpr int digits10 = mantissa_bits * 30103 / 100000;
  static constexpr std::uint16_t infinity_bits = std::uint16_t(((1u << ExponentBits) - 1) << mantissa_bits);
  static constexpr std::uint16_t max_bits = infinity_bits - 1;
  static constexpr std::uint16_t min_normal_bits = std::uint16_t(1u << mantissa_bits);
  static constexpr std::uint16_t min_subnormal_bits = 1;
  static constexpr std::uint16_t quiet_bit = std::uint16_t(1u << (mantissa_bits - 1));
  static constexpr const char* name = ExponentBits == 5 ? "fp16" : ExponentBits == 8 ? "bf16" : "float16";

  static constexpr double pow2(int e) {
    double r = 1.0;
    for (int i = 0; i < (e < 0 ? -e : e); ++i) r *= 2.0;
    return e < 0 ? 1.0 / r : r;
  }
  static constexpr double max() { return (2.0 - pow2(-mantissa_bits)) * pow2(exponent_bias); }
  static constexpr double min_normal() { return pow2(1 - exponent_bias); }
  static constexpr double min_subnormal() { return pow2(1 - exponent_bias - mantissa_bits); }
  /// Distance from 1 to the next representable value.
  static constexpr double epsilon() { return pow2(-mantissa_bits); }
};

template <>
struct format_traits<float> {
  static constexpr int bits = 32;
  static constexpr int exponent_bits = 8;
  static constexpr int mantissa_bits = 23;
  static constexpr int exponent_bias = 127;
  static constexpr int digits10 = 6;
  static constexpr const char* name = "fp32";
  static constexpr double max() { return 3.4028234663852886e38; }
  static constexpr double min_normal() { return 1.1754943508222875e-38; }
  static constexpr double min_subnormal() { return 1.4012984643248171e-45; }
  static constexpr double epsilon() { return 1.1920928955078125e-07; }
};

}  // namespace kamp

#endif
