#ifndef KAMP_MODEL_TRAINING_STATE_HPP
#define KAMP_MODEL_TRAINING_STATE_HPP

// Deprecated in kamp 0.2.0, removed in 0.3.0: the model's headers are grouped by area.
#ifndef KAMP_NO_DEPRECATION_WARNINGS
#warning \
    "<kamp/model/training_state.hpp> is deprecated: include <kamp/model/state/training_state.hpp> (define KAMP_NO_DEPRECATION_WARNINGS to silence)"
#endif
#include <kamp/model/state/training_state.hpp>

#endif
