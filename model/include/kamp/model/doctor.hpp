#ifndef KAMP_MODEL_DOCTOR_HPP
#define KAMP_MODEL_DOCTOR_HPP

// Deprecated in kamp 0.2.0, removed in 0.3.0: the model's headers are grouped by area.
#ifndef KAMP_NO_DEPRECATION_WARNINGS
#warning \
    "<kamp/model/doctor.hpp> is deprecated: include <kamp/model/precision/doctor.hpp> (define KAMP_NO_DEPRECATION_WARNINGS to silence)"
#endif
#include <kamp/model/precision/doctor.hpp>

#endif
