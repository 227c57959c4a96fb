#include <kamp/model/network/fp8_state.hpp>

#include <cmath>
#include <stdexcept>

namespace kamp {

namespace {

// Tensor i's place in the numbering fp8_scaling_state documents, for messages.
std::string fp8_tensor_name(std::size_t i, std::size_t tensors) {
  static const char* const roles[] = {"input", "weight", "output gradient"};
  const std::size_t linears = tensors / 3;
  if (linears == 0) return "tensor " + std::to_string(i);
  static const char* const kinds[] = {"attn.qkv", "attn.proj", "mlp.fc", "mlp.proj"};
  const std::size_t linear = i % linears;
  return std::string("h") + std::to_string(linear / 4) + "." + kinds[linear % 4] + "'s " + roles[i / linears % 3];
}

}  // namespace

void check_fp8_values(const fp8_scaling_state& s) {
  const auto text = [](float x) { return std::to_string(x); };
  if (s.updates < 0)
    throw std::invalid_argument("the FP8 scaling state counts " + std::to_string(s.updates) +
                                " amax history updates; the count is never negative: the file was damaged or edited");
  for (std::size_t i = 0; i < s.scales.size(); ++i)
    if (!(s.scales[i] > 0.0f) || !std::isfinite(s.scales[i]))
      throw std::invalid_argument("the FP8 scale of " + fp8_tensor_name(i, s.scales.size()) + " is " +
                                  text(s.scales[i]) +
                                  "; scales are finite and positive: the file was damaged or edited");
  const std::size_t length = s.scales.empty() ? 0 : s.history.size() / s.scales.size();
  for (std::size_t i = 0; i < s.history.size(); ++i)
    if (!(s.history[i] >= 0.0f) || !std::isfinite(s.history[i]))
      throw std::invalid_argument(
          "the FP8 amax history of " + fp8_tensor_name(length ? i / length : i, s.scales.size()) + " holds " +
          text(s.history[i]) + "; an amax is finite and non-negative: the file was damaged or edited");
}

}  // namespace kamp
