#ifndef KAMP_MODEL_CONFIG_SHARDING_HPP
#define KAMP_MODEL_CONFIG_SHARDING_HPP

#include <string>
#include <vector>

namespace kamp {

/// What data-parallel ranks split (the ZeRO stages; stage 3 is FSDP's full shard, llama-recipes'
/// "per GPU" arithmetic).
enum class sharding {
  none,        ///< every rank holds everything
  optimizer,   ///< ZeRO-1: master weights and optimizer moments
  gradients,   ///< ZeRO-2: also the gradients
  parameters,  ///< ZeRO-3 / FSDP full shard: also the model copy
};
/// Every sharding level, from none to parameters: the order help texts and messages list them.
const std::vector<sharding>& sharding_levels();
const char* name(sharding s);
/// The level `s` names (name() of one of sharding_levels()); throws std::invalid_argument otherwise.
sharding parse_sharding(const std::string& s);

}  // namespace kamp

#endif
