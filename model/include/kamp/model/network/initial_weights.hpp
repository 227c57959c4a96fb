#ifndef KAMP_MODEL_NETWORK_INITIAL_WEIGHTS_HPP
#define KAMP_MODEL_NETWORK_INITIAL_WEIGHTS_HPP

#include <kamp/kernels/element_range.hpp>
#include <kamp/model/config/gpt_config.hpp>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kamp {

/// GPT-2's initialization: weights N(0, 0.02), residual output projections N(0, 0.02/√(2L)),
/// biases 0, LayerNorm scales 1. Drawn from a counter-based generator: the same on every machine.
std::vector<float> gpt2_initial_weights(const gpt_config& config, std::uint64_t seed);
/// Elements `range` of the flat buffer gpt2_initial_weights() returns (a rank's shard).
std::vector<float> gpt2_initial_weights(const gpt_config& config, std::uint64_t seed, const element_range& range);

}  // namespace kamp

#endif
