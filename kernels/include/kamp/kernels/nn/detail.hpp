#ifndef KAMP_KERNELS_NN_DETAIL_HPP
#define KAMP_KERNELS_NN_DETAIL_HPP

// Deprecated in kamp 0.3.0, removed in 0.4.0: the model's headers are grouped in one-way layers,
// and private kernel code lives in detail/ folders.
#ifndef KAMP_NO_DEPRECATION_WARNINGS
#warning \
    "<kamp/kernels/nn/detail.hpp> is deprecated: include <kamp/kernels/nn/detail/nn_common.hpp> (define KAMP_NO_DEPRECATION_WARNINGS to silence)"
#endif
#include <kamp/kernels/nn/detail/nn_common.hpp>

#endif
