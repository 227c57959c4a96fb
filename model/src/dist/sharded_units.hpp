#ifndef KAMP_MODEL_SRC_DIST_SHARDED_UNITS_HPP
#define KAMP_MODEL_SRC_DIST_SHARDED_UNITS_HPP

// Sharded gradients (ZeRO-2) and parameters (ZeRO-3 / FSDP full shard) for the trainer: the
// model's unit hooks gather each unit's weights from the ranks' shards just before it runs and
// reduce-scatter its gradients as soon as its backward pass is done, with non-blocking
// collectives, so that the next unit's compute runs while they travel.
#include <kamp/model/dist/communicator.hpp>
#include <kamp/model/network/gpt.hpp>

#include "dist/packing.hpp"

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <vector>

namespace kamp::detail {

/// \brief The unit hooks of a sharded data-parallel run. With `gather_weights` false (ZeRO-2)
/// the model reads whole weights bound as usual and only its gradients go to per-unit buffers;
/// with true (ZeRO-3) each rank keeps only its shard of the model copy (and, in AMP, of the
/// master) and units are gathered into buffers that live while they are needed: the root for
/// the whole pass, blocks in two alternating buffers (or one each with `keep_gathered`, FSDP's
/// SHARD_GRAD_OP: gathered once in the forward pass and kept for the backward pass).
class sharded_units final : public unit_hooks {
 public:
  struct weights_source {
    weights_ref copy;    ///< this rank's shard of the low-precision copy (ZeRO-3)
    weights_ref master;  ///< this rank's fp32 master shard, null without master weights
  };
  sharded_units(gpt<float>& model, const dist::communicator& ranks, const std::vector<element_range>& shards,
                dtype gradient_wire, bool gather_weights, bool keep_gathered, weights_source source);
  ~sharded_units() override;

  void before_forward(int unit) override;
  void before_backward(int unit) override;
  void after_backward(int unit) override;

  /// This rank's shard of the summed gradients (the optimizer's input).
  Kokkos::View<float*, gpt<float>::memory_space> gradients() const { return shard_grads_; }
  /// Zeroes the gradient shard: a step's first micro-batch.
  void start_step();
  /// Waits for every reduce-scatter of the step and adds it to the gradient shard.
  void finish_backward();
  /// The weights changed (an optimizer step, a restore): gathered units are stale.
  void weights_changed();
  /// Seconds spent waiting for collectives since the last call (communication not hidden).
  double take_wait_seconds();

 private:
  struct unit_buffers;
  void gather(int unit);
  void wait_gather(int unit);
  void bind_unit(int unit);
  int weight_slot(int unit) const;
  int gradient_slot(int unit) const;
  void reduce_done(int slot);

  gpt<float>& model_;
  const dist::communicator& ranks_;
  dtype wire_;
  bool gather_weights_, keep_gathered_;
  weights_source source_;
  std::vector<packing> params_, exact_;  ///< per unit: all its tensors; those read exactly (AMP)
  /// Per tensor (table index), found once: where it is in its unit's packed weights and
  /// gradients, and in its packed exact values (npos: not read exactly, or no master).
  std::vector<std::size_t> packed_at_, exact_at_;
  std::vector<unit_buffers> weight_slots_, gradient_slots_;
  Kokkos::View<float*, gpt<float>::memory_space> shard_grads_;
  double waited_ = 0;
};

}  // namespace kamp::detail

#endif
