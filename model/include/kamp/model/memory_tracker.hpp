#ifndef KAMP_MODEL_MEMORY_TRACKER_HPP
#define KAMP_MODEL_MEMORY_TRACKER_HPP

// Deprecated in kamp 0.2.0, removed in 0.3.0: the model's headers are grouped by area.
#ifndef KAMP_NO_DEPRECATION_WARNINGS
#warning \
    "<kamp/model/memory_tracker.hpp> is deprecated: include <kamp/model/precision/memory_tracker.hpp> (define KAMP_NO_DEPRECATION_WARNINGS to silence)"
#endif
#include <kamp/model/precision/memory_tracker.hpp>

#endif
