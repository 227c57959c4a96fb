#ifndef KAMP_NUMERIC_DTYPE_HPP
#define KAMP_NUMERIC_DTYPE_HPP

#include <kamp/numeric/format.hpp>

#include <cstddef>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace kamp {

/// \brief An element type chosen at run time (a precision policy, a checkpoint's dataset).
/// The FP8 formats are GEMM operands only: no computation or checkpoint dataset uses them.
enum class dtype { fp32, bf16, fp16, fp64, fp8_e4m3, fp8_e5m2, fp8_e4m3fnuz, fp8_e5m2fnuz };

inline const char* name(dtype t) {
  switch (t) {
    case dtype::fp32:
      return "fp32";
    case dtype::bf16:
      return "bf16";
    case dtype::fp16:
      return "fp16";
    case dtype::fp64:
      return "fp64";
    case dtype::fp8_e4m3:
      return "fp8_e4m3";
    case dtype::fp8_e5m2:
      return "fp8_e5m2";
    case dtype::fp8_e4m3fnuz:
      return "fp8_e4m3fnuz";
    case dtype::fp8_e5m2fnuz:
      return "fp8_e5m2fnuz";
  }
  return "?";
}

inline bool is_fp8(dtype t) {
  return t == dtype::fp8_e4m3 || t == dtype::fp8_e5m2 || t == dtype::fp8_e4m3fnuz || t == dtype::fp8_e5m2fnuz;
}

inline std::size_t size_of(dtype t) { return t == dtype::fp64 ? 8 : t == dtype::fp32 ? 4 : is_fp8(t) ? 1 : 2; }

inline dtype parse_dtype(const std::string& s) {
  for (dtype t : {dtype::fp32, dtype::bf16, dtype::fp16, dtype::fp64, dtype::fp8_e4m3, dtype::fp8_e5m2,
                  dtype::fp8_e4m3fnuz, dtype::fp8_e5m2fnuz})
    if (s == name(t)) return t;
  throw std::invalid_argument("unknown dtype '" + s +
                              "': expected fp32, bf16, fp16, fp64, fp8_e4m3, fp8_e5m2, fp8_e4m3fnuz or fp8_e5m2fnuz");
}

template <class T>
constexpr dtype dtype_of() {
  if constexpr (std::is_same_v<T, double>)
    return dtype::fp64;
  else if constexpr (std::is_same_v<T, float>)
    return dtype::fp32;
  else if constexpr (std::is_same_v<T, bf16>)
    return dtype::bf16;
  else if constexpr (std::is_same_v<T, fp16>)
    return dtype::fp16;
  else if constexpr (std::is_same_v<T, fp8_e4m3>)
    return dtype::fp8_e4m3;
  else if constexpr (std::is_same_v<T, fp8_e5m2>)
    return dtype::fp8_e5m2;
  else if constexpr (std::is_same_v<T, fp8_e4m3fnuz>)
    return dtype::fp8_e4m3fnuz;
  else {
    static_assert(std::is_same_v<T, fp8_e5m2fnuz>, "kamp::dtype_of: not a kamp element type");
    return dtype::fp8_e5m2fnuz;
  }
}

/// \brief Calls f(T{}) with the element type named by `t`. Code whose compute type is Real only
/// instantiates types that make sense with it: fp64 alone for Real = double (reference builds),
/// fp32/bf16/fp16 for Real = float.
template <class Real, class F>
decltype(auto) visit_dtype(dtype t, F&& f) {
  if constexpr (std::is_same_v<Real, double>) {
    if (t != dtype::fp64)
      throw std::invalid_argument(std::string("a fp64 computation cannot use ") + name(t) + " data");
    return f(double{});
  } else {
    switch (t) {
      case dtype::bf16:
        return f(bf16{});
      case dtype::fp16:
        return f(fp16{});
      case dtype::fp32:
        return f(float{});
      case dtype::fp64:
        throw std::invalid_argument("a fp32 computation cannot use fp64 data");
      default:
        break;
    }
    throw std::invalid_argument(std::string("no computation runs on ") + name(t) +
                                " data: FP8 tensors are GEMM operands (kamp::gemm_fp8)");
  }
}

}  // namespace kamp

#endif
