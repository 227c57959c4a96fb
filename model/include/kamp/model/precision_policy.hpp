#ifndef KAMP_MODEL_PRECISION_POLICY_HPP
#define KAMP_MODEL_PRECISION_POLICY_HPP

// Deprecated in kamp 0.2.0, removed in 0.3.0: the model's headers are grouped by area.
#ifndef KAMP_NO_DEPRECATION_WARNINGS
#warning \
    "<kamp/model/precision_policy.hpp> is deprecated: include <kamp/model/precision/precision_policy.hpp> (define KAMP_NO_DEPRECATION_WARNINGS to silence)"
#endif
#include <kamp/model/precision/precision_policy.hpp>

#endif
