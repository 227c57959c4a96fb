#ifndef KAMP_MODEL_ACTIVATION_LAYOUT_HPP
#define KAMP_MODEL_ACTIVATION_LAYOUT_HPP

// Deprecated in kamp 0.2.0, removed in 0.3.0: the model's headers are grouped by area.
#ifndef KAMP_NO_DEPRECATION_WARNINGS
#warning \
    "<kamp/model/activation_layout.hpp> is deprecated: include <kamp/model/network/activation_layout.hpp> (define KAMP_NO_DEPRECATION_WARNINGS to silence)"
#endif
#include <kamp/model/network/activation_layout.hpp>

#endif
