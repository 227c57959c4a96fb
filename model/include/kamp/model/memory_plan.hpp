#ifndef KAMP_MODEL_MEMORY_PLAN_HPP
#define KAMP_MODEL_MEMORY_PLAN_HPP

// Deprecated in kamp 0.2.0, removed in 0.3.0: the model's headers are grouped by area.
#ifndef KAMP_NO_DEPRECATION_WARNINGS
#warning \
    "<kamp/model/memory_plan.hpp> is deprecated: include <kamp/model/precision/memory_plan.hpp> (define KAMP_NO_DEPRECATION_WARNINGS to silence)"
#endif
#include <kamp/model/precision/memory_plan.hpp>

#endif
