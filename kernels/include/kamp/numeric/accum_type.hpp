#ifndef KAMP_NUMERIC_ACCUM_TYPE_HPP
#define KAMP_NUMERIC_ACCUM_TYPE_HPP

#include <kamp/numeric/format.hpp>

#include <type_traits>

namespace kamp {

/// \brief The type reductions and GEMMs over T accumulate in: fp32 for fp32, bf16 and fp16;
/// fp64 for fp64.
template <class T>
struct accum_type {
  using type = float;
};
template <>
struct accum_type<double> {
  using type = double;
};
template <class T>
using accum_type_t = typename accum_type<T>::type;

/// \brief The type an operation over several operand types accumulates in: fp64 if any operand
/// is fp64 (reference and gradient-check builds), else fp32.
template <class... T>
using common_accum_t = std::conditional_t<(std::is_same_v<T, double> || ...), double, float>;

}  // namespace kamp

#endif
