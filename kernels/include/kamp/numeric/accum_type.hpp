#ifndef KAMP_NUMERIC_ACCUM_TYPE_HPP
#define KAMP_NUMERIC_ACCUM_TYPE_HPP

#include <kamp/numeric/format.hpp>

namespace kamp {

/// \brief The type every reduction and GEMM over T accumulates in: fp32 for all of kamp's formats.
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

}  // namespace kamp

#endif
