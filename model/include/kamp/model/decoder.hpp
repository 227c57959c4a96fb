#ifndef KAMP_MODEL_DECODER_HPP
#define KAMP_MODEL_DECODER_HPP

// Deprecated in kamp 0.2.0, removed in 0.3.0: the model's headers are grouped by area.
#ifndef KAMP_NO_DEPRECATION_WARNINGS
#warning \
    "<kamp/model/decoder.hpp> is deprecated: include <kamp/model/network/{decoder,generate,sampling}.hpp> or <kamp/model/state/state_weights.hpp> (define KAMP_NO_DEPRECATION_WARNINGS to silence)"
#endif
#include <kamp/model/network/decoder.hpp>
#include <kamp/model/network/generate.hpp>
#include <kamp/model/network/sampling.hpp>
#include <kamp/model/state/state_weights.hpp>

#endif
