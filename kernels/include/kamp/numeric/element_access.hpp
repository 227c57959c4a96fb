#ifndef KAMP_NUMERIC_ELEMENT_ACCESS_HPP
#define KAMP_NUMERIC_ELEMENT_ACCESS_HPP

#include <kamp/numeric/detail/bit_cast.hpp>
#include <kamp/numeric/detail/fp8_rounding.hpp>
#include <kamp/numeric/detail/rounding.hpp>
#include <kamp/numeric/format.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>

// Loads and stores of array elements as fp32, for kernels' inner loops. They touch the 16-bit
// word itself rather than copying the struct, which is what lets host compilers vectorize the
// loops (gcc does not vectorize aggregate copies).
namespace kamp {

KOKKOS_INLINE_FUNCTION float load_float(const float* p) { return *p; }
template <int E>
KOKKOS_INLINE_FUNCTION float load_float(const float16<E>* p) {
  return detail::bits_to_float(detail::widen_bits<float16<E>>(p->bits));
}
template <int E, fp8_encoding Enc>
KOKKOS_INLINE_FUNCTION float load_float(const float8<E, Enc>* p) {
  return detail::bits_to_float(detail::widen_fp8_bits<float8<E, Enc>>(p->bits));
}

/// Loads an element as the compute type Acc: fp32 for the fp32 and 16-bit formats, or fp64 for
/// fp64 data (reference and gradient-check builds).
template <class Acc, class T>
KOKKOS_INLINE_FUNCTION Acc load_as(const T* p) {
  return static_cast<Acc>(load_float(p));
}
template <class Acc>
KOKKOS_INLINE_FUNCTION Acc load_as(const double* p) {
  return static_cast<Acc>(*p);
}

KOKKOS_INLINE_FUNCTION bool store_nearest(double* p, double x) {
  *p = x;
  return x - x == 0.0;
}

/// Stores x rounded to nearest even (exact for float); returns whether the stored value is finite.
KOKKOS_INLINE_FUNCTION bool store_nearest(float* p, float x) {
  *p = x;
  return (detail::float_to_bits(x) & 0x7f800000u) != 0x7f800000u;
}
template <int E>
KOKKOS_INLINE_FUNCTION bool store_nearest(float16<E>* p, float x) {
  const std::uint16_t bits = detail::narrow_bits<float16<E>>(x, detail::rounding_mode::nearest_even, 0);
  p->bits = bits;
  return (bits & 0x7fffu) < format_traits<float16<E>>::infinity_bits;
}

/// Copies one element unchanged: a 16-bit one through its bits (gcc vectorizes no copy of the
/// struct, so a layout copy of bf16 ran slower than the same copy of fp32, on half the bytes).
template <class T>
KOKKOS_INLINE_FUNCTION void copy_element(T* dst, const T* src) {
  *dst = *src;
}
template <int E>
KOKKOS_INLINE_FUNCTION void copy_element(float16<E>* dst, const float16<E>* src) {
  dst->bits = src->bits;
}

/// Stores x rounded stochastically with the random word `random` (exact for float); returns
/// whether the stored value is finite.
KOKKOS_INLINE_FUNCTION bool store_stochastic(float* p, float x, std::uint32_t) { return store_nearest(p, x); }
template <int E>
KOKKOS_INLINE_FUNCTION bool store_stochastic(float16<E>* p, float x, std::uint32_t random) {
  const std::uint16_t bits = detail::narrow_bits<float16<E>>(x, detail::rounding_mode::stochastic, random);
  p->bits = bits;
  return (bits & 0x7fffu) < format_traits<float16<E>>::infinity_bits;
}

}  // namespace kamp

#endif
