#ifndef KAMP_MODEL_DEVICE_BATCHES_HPP
#define KAMP_MODEL_DEVICE_BATCHES_HPP

// Deprecated in kamp 0.2.0, removed in 0.3.0: the model's headers are grouped by area.
#ifndef KAMP_NO_DEPRECATION_WARNINGS
#warning \
    "<kamp/model/device_batches.hpp> is deprecated: include <kamp/model/training/device_batches.hpp> (define KAMP_NO_DEPRECATION_WARNINGS to silence)"
#endif
#include <kamp/model/training/device_batches.hpp>

#endif
