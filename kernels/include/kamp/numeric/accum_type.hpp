#ifndef KAMP_NUMERIC_ACCUM_TYPE_HPP
#define KAMP_NUMERIC_ACCUM_TYPE_HPP

#include <kamp/numeric/format.hpp>

namespace kamp {

/// \brief The type reductions and GEMMs over T accumulate in: fp32 for fp32, bf16 and fp16.
template <class T>
struct accum_type {
  using type = float;
};
template <class T>
using accum_type_t = typename accum_type<T>::type;

}  // namespace kamp

#endif
