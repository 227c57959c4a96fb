#ifndef KAMP_MODEL_STATE_TRAINING_STATE_HPP
#define KAMP_MODEL_STATE_TRAINING_STATE_HPP

#include <kamp/kernels/element_range.hpp>
#include <kamp/kernels/flat_tensors.hpp>
#include <kamp/kernels/loss_scaler.hpp>
#include <kamp/model/config/gpt_config.hpp>
#include <kamp/model/config/precision_policy.hpp>
#include <kamp/model/config/train_options.hpp>
#include <kamp/model/network/fp8_state.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace kamp {

/// \brief One of the trainer's flat buffers, copied to the host: its role, element type and
/// raw element bits in the parameter table's layout (alignment padding included, always zero).
struct state_tensor {
  std::string role;  ///< model (the copy the GEMMs read), master, moment1, moment2, compensation
  dtype type;
  std::vector<unsigned char> bytes;  ///< host byte order

  std::size_t size() const { return bytes.size() / size_of(type); }
};

/// \brief Everything a run needs to continue bit-exactly. The random streams are counter-based
/// (initial weights, data windows and stochastic rounding are functions of the seed and a
/// counter), so the seed and the counters `steps_taken` and `attempts` are the complete RNG
/// state: the data position is attempts x micro_batches, the stochastic-rounding stream is
/// indexed by the optimizer step (= steps_taken), the LR schedule by steps_taken.
struct training_state {
  gpt_config model;
  precision_policy policy;
  train_options options;
  std::int64_t steps_taken = 0;  ///< optimizer steps taken (skipped attempts excluded)
  std::int64_t attempts = 0;     ///< optimizer steps attempted (skipped ones included)
  loss_scale_state scaler{};
  fp8_scaling_state fp8;  ///< amp_fp8's per-tensor scales and amax histories (empty in other modes)
  std::vector<state_tensor> tensors;
  /// The elements of the flat buffers `tensors` hold: all of them, or in a data-parallel run
  /// one rank's shard (no rank holds the whole state; checkpoints are written and read in slices).
  element_range slice;
  std::string run_config;           ///< the application's own settings (kamp-train: all its options, TOML)
  std::string kamp_version;         ///< set by read_checkpoint: the kamp that wrote the file
  std::int64_t format_version = 0;  ///< set by read_checkpoint: the file's checkpoint format version
};

/// The tensors a trainer in this precision mode keeps (role and element type), in the order
/// `trainer::state()` lists them: fp32 model + 2 fp32 moments; AMP: low-precision model, fp32
/// master, 2 fp32 moments; pure_bf16: bf16 model, 2 bf16 moments (+ bf16 Kahan compensation).
std::vector<std::pair<std::string, dtype>> state_layout(const precision_policy& policy);

/// \brief Throws std::invalid_argument, naming the tensor or counter, unless `s` is a state a
/// trainer could have produced, whatever run it is for: finite tensors, second moments >= 0,
/// the AMP model copy equal to its fp32 master rounded to nearest, counters consistent with
/// each other and below 2^40, a finite positive loss scale. (Whether it fits a particular run,
/// its model shape and mode, is trainer::restore's question.) `table` is the model's; a state
/// holding a slice is checked on its elements.
void check_state(const training_state& s, const tensor_table& table);

/// Elements `range` of every tensor of `whole` (a state holding all elements): what the rank
/// owning that shard holds.
training_state slice_of(const training_state& whole, element_range range);

/// "lr 0.0003 -> 0.001" for each training option that differs between `saved` and `now`
/// (a resumed run continues bit-exactly only when there are none).
std::vector<std::string> option_differences(const train_options& saved, const train_options& now);

/// Element i of `t`, decoded exactly from its bits.
double element(const state_tensor& t, std::size_t i);

/// \brief Summary of some elements of a tensor; min, max and mean are over the finite values.
struct tensor_statistics {
  double min = 0, max = 0, mean = 0;
  std::size_t count = 0, non_finite = 0;
};
/// Statistics of `t`'s elements [offset, offset + count), decoded exactly from their bits.
tensor_statistics statistics(const state_tensor& t, std::size_t offset, std::size_t count);

}  // namespace kamp

#endif
