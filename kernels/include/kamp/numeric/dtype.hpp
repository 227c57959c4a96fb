#ifndef KAMP_NUMERIC_DTYPE_HPP
#define KAMP_NUMERIC_DTYPE_HPP

#include <kamp/numeric/format.hpp>

#include <cstddef>
#include <stdexcept>
#include <string>

namespace kamp {

/// \brief An element type chosen at run time (a precision policy, a checkpoint's dataset).
enum class dtype { fp32, bf16, fp16, fp64 };

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
  }
  return "?";
}

inline std::size_t size_of(dtype t) { return t == dtype::fp64 ? 8 : t == dtype::fp32 ? 4 : 2; }

inline dtype parse_dtype(const std::string& s) {
  for (dtype t : {dtype::fp32, dtype::bf16, dtype::fp16, dtype::fp64})
    if (s == name(t)) return t;
  throw std::invalid_argument("unknown dtype '" + s + "': expected fp32, bf16, fp16 or fp64");
}

template <class T>
constexpr dtype dtype_of() {
  if constexpr (std::is_same_v<T, double>)
    return dtype::fp64;
  else if constexpr (std::is_same_v<T, float>)
    return dtype::fp32;
  else if constexpr (std::is_same_v<T, bf16>)
    return dtype::bf16;
  else
    return dtype::fp16;
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
        break;
    }
    throw std::invalid_argument("a fp32 computation cannot use fp64 data");
  }
}

}  // namespace kamp

#endif
