#ifndef KAMP_MODEL_TRAINING_TRAINER_HPP
#define KAMP_MODEL_TRAINING_TRAINER_HPP

#include <kamp/kernels/gradient_check.hpp>
#include <kamp/model/dist/parallel_options.hpp>
#include <kamp/model/network/gpt.hpp>
#include <kamp/model/network/initial_weights.hpp>
#include <kamp/model/state/training_state.hpp>
#include <kamp/model/training/data.hpp>
#include <kamp/model/training/device_batches.hpp>
#include <kamp/model/training/lr_schedule.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

namespace kamp {

/// \brief What one optimizer step did.
struct step_report {
  std::int64_t step;    ///< 1-based attempt number (skipped attempts included)
  double loss;          ///< mean training loss over the step's micro-batches (unscaled)
  bool skipped;         ///< the gradients had an inf/NaN: nothing was updated
  float grad_norm;      ///< global L2 norm of the unscaled gradients, before clipping
  float scale;          ///< the loss scale this step used (1 outside amp_fp16)
  float lr;             ///< the learning rate this step used
  double seconds;       ///< wall time of the step (of the steps read together, their mean)
  std::int64_t tokens;  ///< tokens processed
};

namespace detail {
struct optimizer_slot;
class gradient_exchange;
/// What a step leaves on the device for its report.
struct step_record {
  double loss;  ///< mean over the micro-batches of their mean loss
  float grad_norm, scale, lr;
  int skipped;
};
}  // namespace detail

/// \brief The training loop: forward → loss × scale → backward (micro-batches accumulate in
/// fp32) → one fused unscale/check/norm pass → clip → fused optimizer step or skip → scaler
/// update. Skipped steps do not advance the LR schedule. A run is deterministic for a given
/// seed, backend and thread count.
///
/// One process never waits for the device inside a step: the batch is cut on the device, the
/// loss, the skip decision, the learning rate and the loss scale stay there, and each step
/// leaves its report in a device buffer that reports() reads (one wait for many steps). With
/// several ranks the gradient check is agreed on the host (MPI), one wait per step.
class trainer {
 public:
  /// With several ranks, constructing, step(), advance(), reports(), validation_loss(), state(),
  /// restore() and exact_weights() are collective: every rank calls them in the same order.
  trainer(const gpt_config& config, const precision_policy& policy, const train_options& options,
          const token_dataset& data, const parallel_options& parallel = {});
  ~trainer();

  /// Steps whose reports the device keeps; advancing past them reads them early (one wait).
  static constexpr std::int64_t report_capacity = 1024;

  /// Launches one optimizer step and returns without waiting for it.
  void advance();
  /// The reports of the steps advanced since the last call, in order: one wait for all of them.
  std::vector<step_report> reports();
  /// advance(), then its report (waits).
  step_report step();
  /// Mean loss over `batches` fixed validation batches (the same ones every call; on N ranks
  /// of batch B the same windows as one process's batches of N x B).
  double validation_loss(int batches);

  gpt<float>& model() { return *model_; }
  const train_options& options() const { return options_; }
  const precision_policy& policy() const { return policy_; }
  const parallel_options& parallel() const { return parallel_; }
  /// The elements of the flat buffers whose optimizer state this rank owns.
  element_range shard() const { return shards_[parallel_.ranks.rank()]; }
  /// Called on each rank with its own gradients (loss-scaled, not yet summed over the ranks)
  /// after every backward pass of a step: gradient noise, fault injection in tests. With sharded
  /// gradients (level gradients or parameters) no rank holds its own whole gradient: the hook
  /// gets its shard of the sums.
  void on_gradients(std::function<void(const Kokkos::View<float*, gpt<float>::memory_space>&)> hook) {
    gradient_hook_ = std::move(hook);
  }
  /// Optimizer steps taken so far (skipped attempts excluded): the LR schedule's position.
  /// Read from the device (waits for the steps under way).
  std::int64_t steps_taken() const;
  std::int64_t attempts() const { return attempts_; }
  /// The learning rate of the step after `taken` optimizer steps.
  float learning_rate(std::int64_t taken) const { return schedule_(taken); }
  loss_scaler<gpt<float>::memory_space>& scaler() { return scaler_; }
  /// The exact weights (fp32 master, fp32 weights, or pure bf16 widened) on the host; with
  /// several ranks gathered on every rank (for tests and inspection, not for checkpoints).
  std::vector<float> exact_weights() const;
  /// The raw bits of the low-precision model copy the GEMMs read, on the host (gathered like
  /// exact_weights()).
  std::vector<std::uint32_t> model_copy_bits() const;
  /// Seconds this rank waited for the gradients' and weights' collectives since the last call:
  /// at level optimizer the blocking collectives whole, at the sharded levels the waits for
  /// non-blocking ones (the communication compute did not hide).
  double communication_wait_seconds();

  /// Everything the run needs to continue bit-exactly, copied to the host (a checkpoint's
  /// content). With several ranks, each rank's shard of every tensor (`slice`): no rank holds
  /// the whole state; write_checkpoint() with the communicator writes the slices into one file.
  training_state state() const;
  /// Continue from `s`. Checks it completely first (model shape, precision mode, tensor roles,
  /// types and sizes, finite values, counters, scaler state) and throws std::invalid_argument
  /// naming what does not fit; the trainer is then unchanged, never half-restored. The training
  /// options stay this trainer's own (compare them with `option_differences`).
  /// Each rank of a sharded run takes its shard of a complete state, or a state whose slice is
  /// exactly its shard (read_checkpoint(path, ranks, shard()): whatever number of ranks wrote
  /// the file); when it does not fit on any rank, every rank throws.
  void restore(const training_state& s);

 private:
  /// Throws std::invalid_argument naming what in `s` does not fit this trainer.
  void check_restorable(const training_state& s) const;

  gpt_config config_;
  precision_policy policy_;
  train_options options_;
  parallel_options parallel_;
  std::vector<element_range> shards_;  ///< every rank's shard
  std::function<void(const Kokkos::View<float*, gpt<float>::memory_space>&)> gradient_hook_;
  std::unique_ptr<gpt<float>> model_;
  std::unique_ptr<detail::optimizer_slot> optimizer_;
  std::unique_ptr<detail::gradient_exchange> exchange_;  ///< local, ZeRO-1, or sharded units: chosen once
  lr_schedule schedule_;
  loss_scaler<gpt<float>::memory_space> scaler_;
  Kokkos::View<gradient_check, gpt<float>::memory_space> check_;
  device_batches<> batches_;
  /// Per micro-batch loss sums of the step under way, and the reports of unread steps.
  Kokkos::View<double*, gpt<float>::memory_space> micro_losses_;
  Kokkos::View<detail::step_record*, gpt<float>::memory_space> records_;
  std::int64_t unread_ = 0;                             ///< steps in records_ not yet read
  std::vector<step_report> drained_;                    ///< read early, when records_ was full
  std::chrono::steady_clock::time_point unread_since_;  ///< when the first unread step was launched
  std::int64_t attempts_ = 0;
};

}  // namespace kamp

#endif
