#ifndef KAMP_MODEL_GPT_PARAMETERS_HPP
#define KAMP_MODEL_GPT_PARAMETERS_HPP

// Deprecated in kamp 0.2.0, removed in 0.3.0: the model's headers are grouped by area.
#ifndef KAMP_NO_DEPRECATION_WARNINGS
#warning \
    "<kamp/model/gpt_parameters.hpp> is deprecated: include <kamp/model/network/gpt_parameters.hpp> (define KAMP_NO_DEPRECATION_WARNINGS to silence)"
#endif
#include <kamp/model/network/gpt_parameters.hpp>

#endif
