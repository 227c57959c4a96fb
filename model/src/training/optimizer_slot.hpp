#ifndef KAMP_MODEL_SRC_TRAINING_OPTIMIZER_SLOT_HPP
#define KAMP_MODEL_SRC_TRAINING_OPTIMIZER_SLOT_HPP

#include <kamp/kernels/fused_optimizer.hpp>
#include <kamp/model/training/trainer.hpp>

#include <memory>
#include <utility>
#include <vector>

namespace kamp::detail {

using memory_space = gpt<float>::memory_space;
using execution_space = gpt<float>::execution_space;

/// The fused AdamW optimizer of one precision mode behind a uniform face: the trainer needs
/// its weights (exact and model copy) and its step, not its element types.
struct optimizer_slot {
  virtual ~optimizer_slot() = default;
  virtual weights_ref exact() const = 0;
  virtual weights_ref copy() const = 0;
  virtual void step(const Kokkos::View<const float*, memory_space>& grads, const gradient_control<memory_space>& c,
                    const lr_schedule& lr) = 0;
  /// Optimizer steps taken (skipped ones excluded), on the device.
  virtual Kokkos::View<const std::int64_t, memory_space> step_count() const = 0;
  /// The master shard, or (no master) the model copy it holds, widened.
  virtual std::vector<float> exact_weights() const = 0;
  virtual std::vector<std::uint32_t> copy_bits() const = 0;
  /// The optimizer's tensors in state_layout's order, this rank's shard of each.
  virtual std::vector<state_tensor> state() const = 0;
  /// Loads tensors sized like state()'s, this rank's shard (checked by the trainer), and the
  /// optimizer's step count. A slot holding the whole model copy then needs it all-gathered.
  virtual void restore(const std::vector<state_tensor>& tensors, std::int64_t steps) = 0;
};

/// The optimizer of `policy`'s mode for this rank's shard of the flat buffers, its weights set
/// from `initial`, which holds the elements of the model copy the rank keeps: all of them when
/// `whole_copy` (every rank reads the whole copy), else its shard's (ZeRO-3).
std::unique_ptr<optimizer_slot> make_optimizer(const precision_policy& policy, const train_options& o,
                                               const std::vector<float>& initial, element_range shard, bool whole_copy);

/// The loss scaler of a mode: amp_fp16's options, or a static scale of 1.
loss_scaler_options scaler_options(const precision_policy& policy, const train_options& o);

}  // namespace kamp::detail

#endif
