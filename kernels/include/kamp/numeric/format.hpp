#ifndef KAMP_NUMERIC_FORMAT_HPP
#define KAMP_NUMERIC_FORMAT_HPP

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <type_traits>

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

/// How an 8-bit format spends its special encodings.
/// - ocp:  the OCP 8-bit floating point specification (NVIDIA Hopper/Blackwell, AMD MI350+, Intel):
///         E4M3 has no infinity and one NaN per sign (S.1111.111); E5M2 follows IEEE (infinities,
///         NaNs, -0). Exponent bias 2^(E-1) - 1.
/// - fnuz: AMD MI300 (gfx942): finite, no -0, one NaN (0x80); exponent bias one larger.
enum class fp8_encoding { ocp, fnuz };

/// \brief An 8-bit float stored as its raw bit pattern: 1 sign, ExponentBits exponent and
/// 7 - ExponentBits mantissa bits. Like float16 it has no arithmetic: kernels widen it
/// (`kamp::to_float`, exact) and narrow once (`kamp::from_float`, `kamp::from_float_saturated`).
template <int ExponentBits, fp8_encoding Encoding>
struct float8 {
  static_assert(ExponentBits == 4 || ExponentBits == 5, "kamp::float8: E4M3 and E5M2 are the 8-bit formats");
  std::uint8_t bits;

  static KOKKOS_INLINE_FUNCTION float8 from_bits(std::uint8_t b) {
    float8 x;
    x.bits = b;
    return x;
  }
};

/// OCP E4M3 (max 448, no infinity): forward-pass tensors in FP8 training.
using fp8_e4m3 = float8<4, fp8_encoding::ocp>;
/// OCP E5M2 (max 57344, IEEE specials): gradients in FP8 training.
using fp8_e5m2 = float8<5, fp8_encoding::ocp>;
/// AMD MI300's E4M3 (bias 8, max 240).
using fp8_e4m3fnuz = float8<4, fp8_encoding::fnuz>;
/// AMD MI300's E5M2 (bias 16, max 57344).
using fp8_e5m2fnuz = float8<5, fp8_encoding::fnuz>;

static_assert(sizeof(fp8_e4m3) == 1 && sizeof(fp8_e5m2fnuz) == 1, "8-bit formats must occupy 1 byte");

template <class T>
struct is_float8 : std::false_type {};
template <int E, fp8_encoding Enc>
struct is_float8<float8<E, Enc>> : std::true_type {};
template <class T>
inline constexpr bool is_float8_v = is_float8<T>::value;

namespace detail {
// Device code evaluates it in constant expressions (FP8 widening), so it is a device function too.
KOKKOS_INLINE_FUNCTION constexpr double pow2(int e) {
  double r = 1.0;
  for (int i = 0; i < (e < 0 ? -e : e); ++i) r *= 2.0;
  return e < 0 ? 1.0 / r : r;
}
}  // namespace detail

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

  static constexpr double max() { return (2.0 - detail::pow2(-mantissa_bits)) * detail::pow2(exponent_bias); }
  static constexpr double min_normal() { return detail::pow2(1 - exponent_bias); }
  static constexpr double min_subnormal() { return detail::pow2(1 - exponent_bias - mantissa_bits); }
  /// Distance from 1 to the next representable value.
  static constexpr double epsilon() { return detail::pow2(-mantissa_bits); }
};

/// The 8-bit formats. Bit patterns are given for the magnitude (sign bit clear); an encoding a
/// format lacks is 0 with its `has_` flag false.
template <int ExponentBits, fp8_encoding Encoding>
struct format_traits<float8<ExponentBits, Encoding>> {
  static constexpr int bits = 8;
  static constexpr int exponent_bits = ExponentBits;
  static constexpr int mantissa_bits = 7 - ExponentBits;
  static constexpr bool fnuz = Encoding == fp8_encoding::fnuz;
  static constexpr int exponent_bias = (1 << (ExponentBits - 1)) - 1 + (fnuz ? 1 : 0);
  static constexpr int digits10 = mantissa_bits * 30103 / 100000;
  static constexpr bool has_infinity = !fnuz && ExponentBits == 5;
  static constexpr bool has_negative_zero = !fnuz;
  static constexpr std::uint8_t infinity_bits = has_infinity ? 0x7c : 0;
  /// The NaN the conversions produce (OCP: with the input's sign; fnuz: the one NaN, 0x80).
  static constexpr std::uint8_t nan_bits = fnuz ? 0x80 : 0x7f;
  static constexpr std::uint8_t max_bits = fnuz ? 0x7f : ExponentBits == 4 ? 0x7e : 0x7b;
  static constexpr std::uint8_t min_normal_bits = std::uint8_t(1u << mantissa_bits);
  static constexpr std::uint8_t min_subnormal_bits = 1;
  static constexpr const char* name =
      ExponentBits == 4 ? (fnuz ? "fp8_e4m3fnuz" : "fp8_e4m3") : (fnuz ? "fp8_e5m2fnuz" : "fp8_e5m2");

  KOKKOS_INLINE_FUNCTION static constexpr double max() {
    return (1.0 + (max_bits & ((1 << mantissa_bits) - 1)) * detail::pow2(-mantissa_bits)) *
           detail::pow2((max_bits >> mantissa_bits) - exponent_bias);
  }
  KOKKOS_INLINE_FUNCTION static constexpr double min_normal() { return detail::pow2(1 - exponent_bias); }
  KOKKOS_INLINE_FUNCTION static constexpr double min_subnormal() {
    return detail::pow2(1 - exponent_bias - mantissa_bits);
  }
  KOKKOS_INLINE_FUNCTION static constexpr double epsilon() { return detail::pow2(-mantissa_bits); }
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
