#ifndef KAMP_MODEL_TRAINER_HPP
#define KAMP_MODEL_TRAINER_HPP

#include <kamp/kernels/adamw.hpp>
#include <kamp/kernels/gradient_check.hpp>
#include <kamp/kernels/loss_scaler.hpp>
#include <kamp/model/data.hpp>
#include <kamp/model/gpt.hpp>

#include <cstdint>
#include <memory>
#include <vector>

namespace kamp {

/// \brief Everything about a training run that is not the model's shape or the precision.
struct train_options {
  int batch = 16;                ///< sequences per micro-batch
  int micro_batches = 1;         ///< gradient accumulation: micro-batches per optimizer step
  int steps = 200;               ///< optimizer steps that are taken (skipped ones do not count)
  float lr = 3e-4f;              ///< peak learning rate
  int warmup = 20;               ///< linear warm-up steps
  float min_lr_ratio = 0.1f;     ///< cosine decay ends at lr x this
  adamw_options adamw{};         ///< betas, eps, weight decay (PyTorch's AdamW defaults)
  float grad_clip = 1.0f;        ///< max global gradient L2 norm; 0 turns clipping off
  std::uint64_t seed = 1337;     ///< initial weights, data order, stochastic rounding
  loss_scaler_options scaler{};  ///< amp_fp16's dynamic loss scaling (PyTorch's defaults)

  /// Throws std::invalid_argument naming the first bad field and its allowed range.
  void validate() const;
};

/// \brief What one optimizer step did.
struct step_report {
  std::int64_t step;    ///< 1-based attempt number (skipped attempts included)
  double loss;          ///< mean training loss over the step's micro-batches (unscaled)
  bool skipped;         ///< the gradients had an inf/NaN: nothing was updated
  float grad_norm;      ///< global L2 norm of the unscaled gradients, before clipping
  float scale;          ///< the loss scale this step used (1 outside amp_fp16)
  float lr;             ///< the learning rate this step used
  double seconds;       ///< wall time of the step
  std::int64_t tokens;  ///< tokens processed
};

namespace detail {
struct optimizer_slot;
}

/// \brief The training loop: forward → loss × scale → backward (micro-batches accumulate in
/// fp32) → one fused unscale/check/norm pass → clip → fused optimizer step or skip → scaler
/// update. Skipped steps do not advance the LR schedule. A run is deterministic for a given
/// seed, backend and thread count.
class trainer {
 public:
  trainer(const gpt_config& config, const precision_policy& policy, const train_options& options,
          const token_dataset& data);
  ~trainer();

  step_report step();
  /// Mean loss over `batches` fixed validation batches (the same ones every call).
  double validation_loss(int batches);

  gpt<float>& model() { return *model_; }
  const train_options& options() const { return options_; }
  /// Optimizer steps taken so far (skipped attempts excluded): the LR schedule's position.
  std::int64_t steps_taken() const { return steps_taken_; }
  std::int64_t attempts() const { return attempts_; }
  float learning_rate(std::int64_t step) const;
  loss_scaler<gpt<float>::memory_space>& scaler() { return scaler_; }
  /// The exact weights (fp32 master, fp32 weights, or pure bf16 widened) on the host.
  std::vector<float> exact_weights() const;
  /// The raw bits of the low-precision model copy the GEMMs read, on the host.
  std::vector<std::uint32_t> model_copy_bits() const;

 private:
  gpt_config config_;
  precision_policy policy_;
  train_options options_;
  const token_dataset& data_;
  std::unique_ptr<gpt<float>> model_;
  std::unique_ptr<detail::optimizer_slot> optimizer_;
  loss_scaler<gpt<float>::memory_space> scaler_;
  Kokkos::View<gradient_check, gpt<float>::memory_space> check_;
  std::vector<int> tokens_, targets_;
  std::int64_t steps_taken_ = 0, attempts_ = 0;
};

/// GPT-2's initialization: weights N(0, 0.02), residual output projections N(0, 0.02/√(2L)),
/// biases 0, LayerNorm scales 1. Drawn from a counter-based generator: the same on every machine.
std::vector<float> gpt2_initial_weights(const gpt_config& config, std::uint64_t seed);

}  // namespace kamp

#endif
