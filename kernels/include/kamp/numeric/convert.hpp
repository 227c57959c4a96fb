#ifndef KAMP_NUMERIC_CONVERT_HPP
#define KAMP_NUMERIC_CONVERT_HPP

#include <kamp/numeric/detail/bit_cast.hpp>
#include <kamp/numeric/detail/fp8_rounding.hpp>
#include <kamp/numeric/detail/rounding.hpp>
#include <kamp/numeric/format.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <type_traits>

namespace kamp {

/// \brief Exact widening to fp32 (identity for float).
KOKKOS_INLINE_FUNCTION float to_float(float x) { return x; }
template <int E>
KOKKOS_INLINE_FUNCTION float to_float(float16<E> x) {
  return detail::bits_to_float(detail::widen_bits<float16<E>>(x.bits));
}
template <int E, fp8_encoding Enc>
KOKKOS_INLINE_FUNCTION float to_float(float8<E, Enc> x) {
  return detail::bits_to_float(detail::widen_fp8_bits<float8<E, Enc>>(x.bits));
}

/// \brief fp32 -> T with round-to-nearest-even; overflow gives ±inf, NaN a quiet NaN of the
/// same sign, subnormals are kept. For the FP8 formats without infinities (E4M3 and the fnuz
/// pair) overflow and infinities give NaN, as in PyTorch and ml_dtypes; training casts saturate
/// instead (from_float_saturated). fnuz formats have no -0: negative values that round to zero
/// give +0.
template <class T>
KOKKOS_INLINE_FUNCTION T from_float(float x) {
  if constexpr (std::is_same_v<T, float>) {
    return x;
  } else if constexpr (is_float8_v<T>) {
    return T::from_bits(detail::narrow_fp8_bits<T>(x, detail::fp8_overflow::nan_or_infinity));
  } else {
    return T::from_bits(detail::narrow_bits<T>(x, detail::rounding_mode::nearest_even, 0));
  }
}

/// \brief fp32 -> FP8 with round-to-nearest-even, saturating: values beyond the largest finite
/// value (infinities included) give it with their sign; NaN stays NaN. CUDA's __NV_SATFINITE and
/// Transformer Engine's casts. Because infinities vanish here, overflow checks read the data
/// before the cast.
template <class T>
KOKKOS_INLINE_FUNCTION T from_float_saturated(float x) {
  static_assert(is_float8_v<T>, "kamp::from_float_saturated: for the FP8 formats");
  return T::from_bits(detail::narrow_fp8_bits<T>(x, detail::fp8_overflow::saturate));
}

/// \brief fp32 -> T with stochastic rounding: the result is one of the two neighbours of `x`,
/// the farther one with probability equal to its relative distance (so E[result] = x).
/// \param random a uniformly distributed 32-bit word (e.g. from kamp::counter_random); the same
/// word always gives the same result, so runs are reproducible.
template <class T>
KOKKOS_INLINE_FUNCTION T from_float_stochastic(float x, std::uint32_t random) {
  static_assert(!is_float8_v<T>, "kamp::from_float_stochastic: for fp32, bf16 and fp16");
  if constexpr (std::is_same_v<T, float>) {
    return x;
  } else {
    return T::from_bits(detail::narrow_bits<T>(x, detail::rounding_mode::stochastic, random));
  }
}

/// \brief Classification helpers that read the bits, so they are exact under fast-math flags.
template <int E>
KOKKOS_INLINE_FUNCTION bool is_nan(float16<E> x) {
  using traits = format_traits<float16<E>>;
  return (x.bits & 0x7fffu) > traits::infinity_bits;
}
template <int E>
KOKKOS_INLINE_FUNCTION bool is_finite(float16<E> x) {
  using traits = format_traits<float16<E>>;
  return (x.bits & 0x7fffu) < traits::infinity_bits;
}
KOKKOS_INLINE_FUNCTION bool is_finite(float x) { return (detail::float_to_bits(x) & 0x7f800000u) != 0x7f800000u; }
KOKKOS_INLINE_FUNCTION bool is_nan(float x) { return (detail::float_to_bits(x) & 0x7fffffffu) > 0x7f800000u; }
template <int E, fp8_encoding Enc>
KOKKOS_INLINE_FUNCTION bool is_nan(float8<E, Enc> x) {
  return is_nan(detail::bits_to_float(detail::widen_fp8_bits<float8<E, Enc>>(x.bits)));
}
template <int E, fp8_encoding Enc>
KOKKOS_INLINE_FUNCTION bool is_finite(float8<E, Enc> x) {
  return is_finite(detail::bits_to_float(detail::widen_fp8_bits<float8<E, Enc>>(x.bits)));
}

}  // namespace kamp

#endif
