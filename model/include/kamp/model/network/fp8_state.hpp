#ifndef KAMP_MODEL_NETWORK_FP8_STATE_HPP
#define KAMP_MODEL_NETWORK_FP8_STATE_HPP

#include <kamp/numeric/dtype.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace kamp {

/// \brief What amp_fp8's scaling keeps between steps, copied to the host (checkpoints). Tensors
/// are numbered per block Linear i (block l's qkv, attn.proj, mlp.fc, mlp.proj are 4l .. 4l + 3)
/// of n = 4 x layers: its input i, its weight n + i, its output gradient 2n + i.
struct fp8_scaling_state {
  std::vector<float> scales;   ///< 3n
  std::vector<float> history;  ///< 3n x amax_history, row by row (delayed scaling; empty for current)
  std::int64_t updates = 0;    ///< history updates so far: the next one writes slot updates % amax_history
};

/// Throws std::invalid_argument naming the first value no trainer could have kept: a scale that
/// is not finite and positive, an amax history entry that is not finite and non-negative, a
/// negative update count. The one check of a checkpoint's FP8 state (kamp-inspect's verdict and
/// a resume's). Sizes are the reader's and the model's to check.
void check_fp8_values(const fp8_scaling_state& s);

/// \brief One FP8 tensor's last cast, for the precision doctor and the metrics.
struct fp8_tensor_report {
  std::string linear;  ///< h<l>.attn.qkv, h<l>.attn.proj, h<l>.mlp.fc, h<l>.mlp.proj
  std::string role;    ///< input, weight, grad
  dtype format;        ///< fp8_e4m3 or fp8_e5m2
  std::size_t elements = 0;
  float amax = 0, scale = 0;      ///< of the last cast: its input's amax and the scale it used
  std::uint32_t saturated = 0;    ///< clamped to the format's largest value
  std::uint32_t underflowed = 0;  ///< non-zero values that became zero
};

}  // namespace kamp

#endif
