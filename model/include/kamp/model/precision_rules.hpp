#ifndef KAMP_MODEL_PRECISION_RULES_HPP
#define KAMP_MODEL_PRECISION_RULES_HPP

// Deprecated in kamp 0.2.0, removed in 0.3.0: the model's headers are grouped by area.
#ifndef KAMP_NO_DEPRECATION_WARNINGS
#warning \
    "<kamp/model/precision_rules.hpp> is deprecated: include <kamp/model/precision/precision_rules.hpp> (define KAMP_NO_DEPRECATION_WARNINGS to silence)"
#endif
#include <kamp/model/precision/gemm_paths.hpp>
#include <kamp/model/precision/precision_rules.hpp>

#endif
