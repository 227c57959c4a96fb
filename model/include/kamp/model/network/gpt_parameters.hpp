#ifndef KAMP_MODEL_NETWORK_GPT_PARAMETERS_HPP
#define KAMP_MODEL_NETWORK_GPT_PARAMETERS_HPP

#include <kamp/kernels/flat_tensors.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kamp {

struct gpt_config;

/// What a parameter tensor is, for the code that treats kinds differently (initialization, which
/// values the model reads exactly), so that no one parses names.
enum class parameter_kind {
  embedding,      ///< wte (also the LM head's weight), wpe
  linear_weight,  ///< a Linear's (out, in) matrix
  linear_bias,
  norm_gain,  ///< a LayerNorm's scale
  norm_bias   ///< a LayerNorm's shift
};

/// Indices into the parameter table (positions, not offsets): each Linear's tensors...
struct linear_parameters {
  std::size_t weight, bias;
};
/// ...and each LayerNorm's.
struct norm_parameters {
  std::size_t gain, bias;
};

/// One transformer block's parameters, in GPT-2's order.
struct block_parameters {
  norm_parameters ln1;
  linear_parameters qkv, attn_proj;
  norm_parameters ln2;
  linear_parameters fc, mlp_proj;
};

/// \brief The GPT's parameters: the flat table (GPT-2's names, for checkpoints and tools) and the
/// same tensors as named fields, built once, which is how the model and the trainer find them.
struct gpt_parameters {
  tensor_table table;
  std::vector<parameter_kind> kinds;  ///< one per table entry
  std::size_t wte, wpe;
  std::vector<block_parameters> blocks;
  norm_parameters lnf;
  /// The units sharded data parallelism gathers and reduces together (FSDP's wrapped modules),
  /// as table indices: units[0] the root (wte, wpe, lnf), units[1 + l] block l.
  std::vector<std::vector<std::size_t>> units;

  explicit gpt_parameters(const gpt_config& config);
  /// Tensors of each block (its fields' indices) and of the root (wte, wpe, the final LayerNorm).
  static constexpr std::size_t block_tensors = sizeof(block_parameters) / sizeof(std::size_t);
  static constexpr std::size_t root_tensors = 2 + sizeof(norm_parameters) / sizeof(std::size_t);
  /// Tensors in the table of a model of `layers` blocks, known without building it (so that a
  /// checkpoint's claimed shape is checked before it costs anything).
  static std::int64_t tensor_count(std::int64_t layers) {
    return std::int64_t(root_tensors) + std::int64_t(block_tensors) * layers;
  }
  parameter_kind kind(std::size_t tensor) const { return kinds.at(tensor); }
  const tensor_table::entry& operator[](std::size_t tensor) const { return table[tensor]; }
};

/// The GPT's parameters in GPT-2's order and names (wte, wpe, h<l>.ln1.weight, ..., lnf.bias).
tensor_table parameter_table(const gpt_config& config);

}  // namespace kamp

#endif
