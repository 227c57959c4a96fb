#ifndef KAMP_MODEL_GPT_HPP
#define KAMP_MODEL_GPT_HPP

// Deprecated in kamp 0.2.0, removed in 0.3.0: the model's headers are grouped by area.
#ifndef KAMP_NO_DEPRECATION_WARNINGS
#warning \
    "<kamp/model/gpt.hpp> is deprecated: include <kamp/model/network/gpt.hpp> (define KAMP_NO_DEPRECATION_WARNINGS to silence)"
#endif
#include <kamp/model/network/gpt.hpp>

#endif
