#ifndef KAMP_MODEL_PRECISION_MEMORY_PLAN_HPP
#define KAMP_MODEL_PRECISION_MEMORY_PLAN_HPP

// Deprecated in kamp 0.3.0, removed in 0.4.0: the model's headers are grouped in one-way layers,
// and private kernel code lives in detail/ folders.
#ifndef KAMP_NO_DEPRECATION_WARNINGS
#warning \
    "<kamp/model/precision/memory_plan.hpp> is deprecated: include <kamp/model/diagnostics/memory_plan.hpp> (define KAMP_NO_DEPRECATION_WARNINGS to silence)"
#endif
#include <kamp/model/diagnostics/memory_plan.hpp>

#endif
