#ifndef KAMP_KERNELS_GRADIENT_CHECK_HPP
#define KAMP_KERNELS_GRADIENT_CHECK_HPP

namespace kamp {

/// \brief What one pass over the gradients found; lives on the device.
struct gradient_check {
  int found_inf;        ///< 1 if any gradient (before or after unscaling) was inf or NaN
  double norm_squared;  ///< sum of squares of the unscaled gradients (0 unless requested), summed in
                        ///< fp64 (fp32 lost ~1e-6 of the norm and the clip factor over 3M terms)
};

}  // namespace kamp

#endif
