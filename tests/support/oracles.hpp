#ifndef KAMP_TESTS_SUPPORT_ORACLES_HPP
#define KAMP_TESTS_SUPPORT_ORACLES_HPP

// Independent references for kamp's conversions. None of them shares code with kamp::detail.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

// Device compilation passes see the host's x86 macros but cannot compile x86 intrinsics.
#if (defined(__x86_64__) || defined(__i386__)) && !defined(__HIP_DEVICE_COMPILE__) && !defined(__CUDA_ARCH__)
#include <cpuid.h>
#include <immintrin.h>
#define KAMP_TEST_HAVE_X86 1
#endif

namespace kamp::test {

inline std::uint32_t bits_of(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}
inline float float_of(std::uint32_t u) {
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}

/// True when the CPU has the F16C conversion instructions and the OS saves AVX state (they
/// are VEX-encoded), checked at run time with CPUID and XGETBV.
inline bool have_f16c() {
#ifdef KAMP_TEST_HAVE_X86
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
  const bool osxsave = c & (1u << 27), avx = c & (1u << 28), f16c = c & (1u << 29);
  if (!(osxsave && avx && f16c)) return false;
  unsigned xcr0_lo = 0, xcr0_hi = 0;
  __asm__("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
  return (xcr0_lo & 6u) == 6u;
#else
  return false;
#endif
}

#ifdef KAMP_TEST_HAVE_X86
/// fp32 -> fp16 by the CPU's VCVTPS2PH with round-to-nearest-even.
__attribute__((target("f16c"))) inline std::uint16_t f16c_narrow(float x) {
  return static_cast<std::uint16_t>(_cvtss_sh(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}
/// fp16 -> fp32 by the CPU's VCVTPH2PS.
__attribute__((target("f16c"))) inline std::uint32_t f16c_widen(std::uint16_t h) { return bits_of(_cvtsh_ss(h)); }
#endif

enum class reference_rounding { nearest_even, down, up };

/// fp32 -> a 16-bit format's value, by arithmetic in double: scale x to the ulp of its binade,
/// round the scaled value (nearbyint rounds half to even in the default mode), scale back.
/// Values beyond the format's maximum become infinities. NaN is not handled here.
/// The sign of a zero result is the sign of x.
inline double reference_round(float x, int exponent_bits, reference_rounding mode) {
  const int mantissa_bits = 15 - exponent_bits;
  const int bias = (1 << (exponent_bits - 1)) - 1;
  const double v = x;
  if (v == 0.0 || std::isinf(v)) return v;
  int e;
  std::frexp(v, &e);           // |v| = m * 2^e with m in [0.5, 1): the leading bit is 2^(e-1)
  const int min_e = 2 - bias;  // binade of the smallest normal; subnormals share its ulp
  const double ulp = std::ldexp(1.0, (e < min_e ? min_e : e) - 1 - mantissa_bits);
  const double scaled = v / ulp;
  const double q = mode == reference_rounding::nearest_even ? std::nearbyint(scaled)
                   : mode == reference_rounding::down       ? std::floor(scaled)
                                                            : std::ceil(scaled);
  const double max = std::ldexp(2.0 - std::ldexp(1.0, -mantissa_bits), bias);
  const double r = q * ulp;
  if (std::fabs(r) > max) return std::copysign(INFINITY, v);
  return r == 0.0 ? std::copysign(0.0, v) : r;
}

/// The exact value of a 16-bit pattern, decoded from its fields in double.
inline double reference_decode(std::uint16_t h, int exponent_bits) {
  const int mantissa_bits = 15 - exponent_bits;
  const int bias = (1 << (exponent_bits - 1)) - 1;
  const int biased = (h >> mantissa_bits) & ((1 << exponent_bits) - 1);
  const int mantissa = h & ((1 << mantissa_bits) - 1);
  const double sign = (h & 0x8000) ? -1.0 : 1.0;
  if (biased == (1 << exponent_bits) - 1) return mantissa ? std::nan("") : sign * INFINITY;
  if (biased == 0) return sign * std::ldexp(mantissa, 1 - bias - mantissa_bits);
  return sign * std::ldexp(mantissa + (1 << mantissa_bits), biased - bias - mantissa_bits);
}

/// An FP8 format as its definition states it (OCP 8-bit floating point spec v1.0; AMD's fnuz
/// variants as PyTorch's c10 headers describe them), independent of kamp::format_traits.
struct fp8_definition {
  int exponent_bits;  ///< 4 (E4M3) or 5 (E5M2)
  bool fnuz;          ///< bias one larger, no infinity, no -0, NaN only 0x80

  int mantissa_bits() const { return 7 - exponent_bits; }
  int bias() const { return (1 << (exponent_bits - 1)) - 1 + (fnuz ? 1 : 0); }

  /// The value of a pattern, decoded from its fields in double (NaN for NaN patterns).
  double decode(std::uint8_t b) const {
    const int mb = mantissa_bits();
    const int field = (b >> mb) & ((1 << exponent_bits) - 1);
    const int mantissa = b & ((1 << mb) - 1);
    const double sign = (b & 0x80) ? -1.0 : 1.0;
    if (fnuz && b == 0x80) return std::nan("");
    if (!fnuz && exponent_bits == 4 && field == 15 && mantissa == 7) return std::nan("");
    if (!fnuz && exponent_bits == 5 && field == 31) return mantissa ? std::nan("") : sign * INFINITY;
    if (field == 0) return sign * std::ldexp(mantissa, 1 - bias() - mb);
    return sign * std::ldexp(mantissa + (1 << mb), field - bias() - mb);
  }
};

/// fp32 -> FP8 by the definition of round-to-nearest-even: the nearest of the format's finite
/// values, a tie going to the even pattern; beyond the largest value the next one of an unbounded
/// exponent range (the largest plus its ulp) competes as "overflow", which becomes the largest
/// value when saturating, else infinity where the format has one, else NaN. Returns the expected
/// value (NaN for NaN), with -0 for negative inputs that round to zero in formats that have it.
class fp8_reference {
 public:
  explicit fp8_reference(fp8_definition f) : f_(f) {
    for (int b = 0; b < 0x80; ++b) {
      const double v = f.decode(std::uint8_t(b));
      if (std::isfinite(v)) values_.push_back(v);  // increasing with the pattern
    }
    max_ = values_.back();
    const int mb = f.mantissa_bits();
    const int max_field = (int(values_.size()) - 1) >> mb;
    overflow_ = max_ + std::ldexp(1.0, max_field - f.bias() - mb);
    overflow_even_ = (values_.size() & 1) == 0;  // the overflow pattern would be max's + 1
    has_infinity_ = !f.fnuz && f.exponent_bits == 5;
  }

  double round(float x, bool saturate) const {
    if (std::isnan(x)) return std::nan("");
    const double a = std::fabs(double(x));
    const double sign = std::signbit(x) ? -1.0 : 1.0;
    double r;
    if (std::isinf(a)) {
      r = overflow_;
    } else if (a >= overflow_) {
      r = overflow_;
    } else if (a <= values_[1] / 2) {
      r = 0.0;  // at most half the smallest subnormal: zero (a tie goes to 0, the even pattern)
    } else {
      // The neighbours lo <= a < hi; values above max compete with the overflow value.
      std::size_t i = 0, n = values_.size();
      while (n > 0) {  // first index with values_[i] > a
        const std::size_t half = n / 2;
        if (values_[i + half] <= a) {
          i += half + 1;
          n -= half + 1;
        } else {
          n = half;
        }
      }
      const double lo = values_[i - 1];
      const double hi = i < values_.size() ? values_[i] : overflow_;
      const bool hi_even = i < values_.size() ? (i & 1) == 0 : overflow_even_;
      r = (a - lo < hi - a || (a - lo == hi - a && !hi_even)) ? lo : hi;
    }
    if (r == overflow_) {
      if (saturate) return sign * max_;
      return has_infinity_ ? sign * INFINITY : std::nan("");
    }
    if (r == 0.0) return f_.fnuz ? 0.0 : sign * 0.0;
    return sign * r;
  }

 private:
  fp8_definition f_;
  std::vector<double> values_;
  double max_ = 0, overflow_ = 0;
  bool overflow_even_ = false, has_infinity_ = false;
};

}  // namespace kamp::test

#endif
