#ifndef KAMP_MODEL_PRECISION_RUN_REQUEST_HPP
#define KAMP_MODEL_PRECISION_RUN_REQUEST_HPP

// Deprecated in kamp 0.3.0, removed in 0.4.0: the model's headers are grouped in one-way layers,
// and private kernel code lives in detail/ folders.
#ifndef KAMP_NO_DEPRECATION_WARNINGS
#warning \
    "<kamp/model/precision/run_request.hpp> is deprecated: include <kamp/model/config/run_request.hpp> (define KAMP_NO_DEPRECATION_WARNINGS to silence)"
#endif
#include <kamp/model/config/run_request.hpp>

#endif
