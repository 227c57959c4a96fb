#ifndef KAMP_KERNELS_GRADIENT_CHECK_HPP
#define KAMP_KERNELS_GRADIENT_CHECK_HPP

namespace kamp {

/// \brief What one pass over the gradients found; lives on the device.
struct gradient_check {
  int found_inf;       ///< 1 if any gradient (before or after unscaling) was inf or NaN
  float norm_squared;  ///< sum of squares of the unscaled gradients (0 unless requested)
};

}  // namespace kamp

#endif
