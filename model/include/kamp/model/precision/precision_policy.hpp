#ifndef KAMP_MODEL_PRECISION_PRECISION_POLICY_HPP
#define KAMP_MODEL_PRECISION_PRECISION_POLICY_HPP

// Deprecated in kamp 0.3.0, removed in 0.4.0: the model's headers are grouped in one-way layers,
// and private kernel code lives in detail/ folders.
#ifndef KAMP_NO_DEPRECATION_WARNINGS
#warning \
    "<kamp/model/precision/precision_policy.hpp> is deprecated: include <kamp/model/config/precision_policy.hpp> (define KAMP_NO_DEPRECATION_WARNINGS to silence)"
#endif
#include <kamp/model/config/precision_policy.hpp>

#endif
