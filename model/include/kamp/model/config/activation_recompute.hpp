#ifndef KAMP_MODEL_CONFIG_ACTIVATION_RECOMPUTE_HPP
#define KAMP_MODEL_CONFIG_ACTIVATION_RECOMPUTE_HPP

#include <string>
#include <vector>

namespace kamp {

/// \brief Which activations the forward pass keeps for the backward pass.
enum class activation_recompute {
  none,   ///< every layer's: the fastest step
  blocks  ///< each block's input only; the backward pass runs each block's forward again from it
          ///< (torch.utils.checkpoint around every block): the same gradients, bit for bit
};
const char* name(activation_recompute r);
activation_recompute parse_activation_recompute(const std::string& s);
std::vector<activation_recompute> activation_recomputes();

}  // namespace kamp

#endif
