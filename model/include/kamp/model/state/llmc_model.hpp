#ifndef KAMP_MODEL_STATE_LLMC_MODEL_HPP
#define KAMP_MODEL_STATE_LLMC_MODEL_HPP

#include <kamp/model/config/gpt_config.hpp>
#include <kamp/model/state/file_rules.hpp>
#include <kamp/model/state/training_state.hpp>

#include <string>
#include <vector>

namespace kamp {

/// \brief A GPT-2 in llm.c's model file format (train_gpt2.c / train_gpt2.cu,
/// gpt2_build_from_checkpoint): a header of 256 int32 (magic 20240326; version 3, fp32
/// parameters, or 5, bf16; max sequence length, vocabulary, layers, heads, channels, padded
/// vocabulary), then the parameters back to back: wte (Vp x C), wpe, and for each kind of block
/// tensor all L layers' of it stacked (ln1 weight, ln1 bias, qkv weight, qkv bias, attention
/// projection weight and bias, ln2 weight and bias, fc weight and bias, MLP projection weight
/// and bias), then the final LayerNorm's weight and bias. Each tensor has kamp's shape; the MLP
/// is 4 x C. Values are little-endian.
struct llmc_model {
  gpt_config config;
  std::vector<float> weights;  ///< kamp's flat parameter table (gpt_parameters(config)), fp32
};

enum class llmc_precision { fp32, bf16 };

/// Reads an llm.c model file. Throws std::runtime_error naming the file and what is wrong: a
/// path that breaks the input rule (file_rules.hpp), another magic or version, a shape kamp
/// cannot build, a size that is not the header's, a weight that is not finite.
llmc_model read_llmc_model(const std::string& path);
/// Writes `model` to `path` as llm.c does (version 3 for fp32, 5 for bf16: each value rounded to
/// nearest even), through a temporary file renamed into place (kamp::replacement_file): an
/// existing file is replaced whole or not at all, and never when it is one of `inputs`. Throws
/// std::invalid_argument for a shape llm.c cannot hold (an MLP other than 4 x d_model),
/// file_rule_error for a refused path and std::runtime_error for I/O errors.
void write_llmc_model(const std::string& path, const llmc_model& model, llmc_precision precision,
                      const std::vector<named_path>& inputs = {});

/// The exact weights of `state` (the fp32 master, or the weights of an fp32 or pure_bf16 run,
/// widened) as kamp's flat fp32 table: what an export writes. `state` holds all elements.
std::vector<float> exact_weights(const training_state& state);

/// `state` (a trainer's state at step 0, whole or a rank's slice) with its weights replaced by
/// `weights` (the whole flat fp32 table): the exact ones equal to them, the model copy equal to
/// them rounded to nearest in its type, as a trainer keeps them. What an import restores.
training_state with_weights(training_state state, const std::vector<float>& weights);

}  // namespace kamp

#endif
