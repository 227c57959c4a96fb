#ifndef KAMP_MODEL_LR_SCHEDULE_HPP
#define KAMP_MODEL_LR_SCHEDULE_HPP

// Deprecated in kamp 0.2.0, removed in 0.3.0: the model's headers are grouped by area.
#ifndef KAMP_NO_DEPRECATION_WARNINGS
#warning \
    "<kamp/model/lr_schedule.hpp> is deprecated: include <kamp/model/training/lr_schedule.hpp> (define KAMP_NO_DEPRECATION_WARNINGS to silence)"
#endif
#include <kamp/model/training/lr_schedule.hpp>

#endif
