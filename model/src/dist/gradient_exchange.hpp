#ifndef KAMP_MODEL_SRC_DIST_GRADIENT_EXCHANGE_HPP
#define KAMP_MODEL_SRC_DIST_GRADIENT_EXCHANGE_HPP

// How a step's gradients reach the optimizer and its updated weights reach the model, chosen once
// per trainer (as ArborX composes its distributed tree from the local one): the step reads the
// same in one process and at every ZeRO level, with no mode flag in it.
#include <kamp/kernels/gradient_check.hpp>
#include <kamp/model/config/precision_policy.hpp>
#include <kamp/model/dist/parallel_options.hpp>
#include <kamp/model/network/gpt.hpp>
#include <kamp/model/network/weight_binding.hpp>

#include <Kokkos_Core.hpp>

#include <functional>
#include <memory>
#include <vector>

namespace kamp::detail {

class gradient_exchange {
 public:
  using memory_space = gpt<float>::memory_space;
  using gradients_view = Kokkos::View<float*, memory_space>;
  /// Sees this rank's own gradients (loss-scaled, not yet summed), or with sharded gradients its
  /// shard of the sums: trainer::on_gradients.
  using gradient_hook = std::function<void(const gradients_view&)>;

  virtual ~gradient_exchange() = default;
  /// Before the step's first backward pass: zeroes what the passes accumulate into.
  virtual void start_step() = 0;
  /// After its last: the gradients this rank updates from, its shard of the sums over the ranks
  /// (in one process: all of them). `hook`, when set, sees them first (see gradient_hook).
  virtual gradients_view finish_backward(const gradient_hook& hook) = 0;
  /// Makes every rank's check of its gradients the global one: inf/NaN anywhere, the norm of all.
  virtual void agree(const Kokkos::View<gradient_check, memory_space>& check) = 0;
  /// After the optimizer: the updated shards go to every rank, unless the agreed check skipped
  /// the step.
  virtual void share_updated_weights() = 0;
  /// The shards changed outside a step (a restore): every rank reads them anew.
  virtual void share_weights() = 0;
  /// Seconds this rank waited for collectives since the last call (communication not hidden).
  virtual double take_wait_seconds() = 0;
};

/// The exchange `parallel` asks for, with `model` bound to the weights it reads: local (one
/// process), reduce-scatter (ZeRO-1: whole gradients summed into shards, weights all-gathered) or
/// sharded units (ZeRO-2 and ZeRO-3: each unit's gradients reduce-scattered as its backward pass
/// ends; at ZeRO-3 its weights gathered as it starts). `exact` and `copy` are the optimizer's
/// weights (this rank's shard of them where it keeps only its shard); `shards` every rank's.
std::unique_ptr<gradient_exchange> make_gradient_exchange(gpt<float>& model, const precision_policy& policy,
                                                          const parallel_options& parallel,
                                                          const std::vector<element_range>& shards, weights_ref exact,
                                                          weights_ref copy);

}  // namespace kamp::detail

#endif
