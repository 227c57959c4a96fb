#ifndef KAMP_MODEL_CONFIG_TRAIN_OPTIONS_HPP
#define KAMP_MODEL_CONFIG_TRAIN_OPTIONS_HPP

#include <kamp/kernels/adamw.hpp>
#include <kamp/kernels/loss_scaler.hpp>
#include <kamp/model/config/activation_recompute.hpp>

#include <cstdint>

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
  /// Memory against time only: the gradients are the same bits either way, so it is not a
  /// checkpointed option and a resumed run may change it.
  activation_recompute recompute = activation_recompute::none;

  /// Throws std::invalid_argument naming the first bad field and its allowed range.
  void validate() const;
};

}  // namespace kamp

#endif
