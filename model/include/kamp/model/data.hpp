#ifndef KAMP_MODEL_DATA_HPP
#define KAMP_MODEL_DATA_HPP

// Deprecated in kamp 0.2.0, removed in 0.3.0: the model's headers are grouped by area.
#ifndef KAMP_NO_DEPRECATION_WARNINGS
#warning \
    "<kamp/model/data.hpp> is deprecated: include <kamp/model/training/data.hpp> (define KAMP_NO_DEPRECATION_WARNINGS to silence)"
#endif
#include <kamp/model/training/data.hpp>

#endif
