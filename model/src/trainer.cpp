#include <kamp/kernels/fused_optimizer.hpp>
#include <kamp/kernels/unscale_and_check.hpp>
#include <kamp/model/trainer.hpp>
#include <kamp/numeric/counter_random.hpp>

#include <chrono>
#include <cmath>
#include <stdexcept>

namespace kamp {

using memory_space = gpt<float>::memory_space;
using execution_space = gpt<float>::execution_space;

void train_options::validate() const {
  const auto require = [](bool ok, const std::string& what) {
    if (!ok) throw std::invalid_argument("training options: " + what);
  };
  require(batch >= 1, "batch must be >= 1, got " + std::to_string(batch));
  require(micro_batches >= 1, "micro_batches must be >= 1, got " + std::to_string(micro_batches));
  require(steps >= 0, "steps must be >= 0, got " + std::to_string(steps));
  require(lr > 0.0f && std::isfinite(lr), "lr must be finite and > 0, got " + std::to_string(lr));
  require(warmup >= 0, "warmup must be >= 0, got " + std::to_string(warmup));
  require(min_lr_ratio >= 0.0f && min_lr_ratio <= 1.0f, "min_lr_ratio must lie in [0, 1]");
  require(grad_clip >= 0.0f && std::isfinite(grad_clip), "grad_clip must be finite and >= 0 (0 turns clipping off)");
  adamw_rule::validate(adamw);
  scaler.validate();
}

std::vector<float> gpt2_initial_weights(const gpt_config& config, std::uint64_t seed) {
  const tensor_table table = config.parameter_table();
  std::vector<float> w(table.flat_size(), 0.0f);
  const double residual_std = 0.02 / std::sqrt(2.0 * config.layers);
  const auto ends_with = [](const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  for (const auto& e : table.entries()) {
    if (ends_with(e.name, ".bias")) continue;
    if (e.name.find("ln") != std::string::npos) {
      std::fill(w.begin() + e.offset, w.begin() + e.offset + e.size, 1.0f);
      continue;
    }
    const double sd = ends_with(e.name, "proj.weight") ? residual_std : 0.02;
    for (std::size_t i = 0; i < e.size; ++i) {
      // Box-Muller on two counter-based uniforms in (0, 1].
      const std::uint64_t k = 2 * (e.offset + i);
      const double u1 = (counter_random(seed, k) + 1.0) / 4294967296.0, u2 = counter_random(seed, k + 1) / 4294967296.0;
      w[e.offset + i] = float(sd * std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
    }
  }
  return w;
}

namespace detail {

/// The fused AdamW optimizer of one precision mode behind a uniform face: the trainer needs
/// its weights (exact and model copy) and its step, not its element types.
struct optimizer_slot {
  virtual ~optimizer_slot() = default;
  virtual weights_ref exact() const = 0;
  virtual weights_ref copy() const = 0;
  virtual void step(const Kokkos::View<const float*, memory_space>& grads, const gradient_control<memory_space>& c,
                    float lr) = 0;
  virtual std::vector<float> exact_weights() const = 0;
  virtual std::vector<std::uint32_t> copy_bits() const = 0;
};

template <class Model, class Moment>
struct adamw_slot final : optimizer_slot {
  fused_optimizer<adamw_rule, Model, float, Moment, memory_space> opt;
  Kokkos::View<Model*, memory_space> model;

  adamw_slot(const std::vector<float>& initial, const adamw_options& hyper, weight_update update,
             rounding_options rounding)
      : opt(initial.size(), hyper, update, rounding), model("kamp::trainer::model_copy", initial.size()) {
    Kokkos::View<float*, memory_space> w("kamp::trainer::initial", initial.size());
    Kokkos::deep_copy(w, Kokkos::View<const float*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(initial.data(),
                                                                                                  initial.size()));
    opt.initialize(execution_space(), w, model);
  }
  weights_ref exact() const override {
    return opt.master().extent(0) > 0 ? weights_ref{dtype::fp32, opt.master().data()}
                                      : weights_ref{dtype_of<Model>(), model.data()};
  }
  weights_ref copy() const override { return {dtype_of<Model>(), model.data()}; }
  void step(const Kokkos::View<const float*, memory_space>& grads, const gradient_control<memory_space>& c,
            float lr) override {
    opt.step(execution_space(), model, grads, c, lr);
  }
  std::vector<float> exact_weights() const override {
    std::vector<float> out(model.extent(0));
    if (opt.master().extent(0) > 0) {
      Kokkos::deep_copy(Kokkos::View<float*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(out.data(), out.size()),
                        opt.master());
    } else {
      const auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), model);
      for (std::size_t i = 0; i < out.size(); ++i) out[i] = load_float(h.data() + i);
    }
    return out;
  }
  std::vector<std::uint32_t> copy_bits() const override {
    const auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), model);
    std::vector<std::uint32_t> out(h.extent(0));
    for (std::size_t i = 0; i < out.size(); ++i) {
      if constexpr (std::is_same_v<Model, float>) {
        out[i] = detail::float_to_bits(h(i));
      } else {
        out[i] = h(i).bits;
      }
    }
    return out;
  }
};

std::unique_ptr<optimizer_slot> make_optimizer(const precision_policy& policy, const train_options& o,
                                               const std::vector<float>& initial) {
  rounding_options sr;
  sr.mode = rounding::stochastic;
  sr.seed = o.seed;
  switch (policy.mode) {
    case precision_mode::fp32:
      return std::make_unique<adamw_slot<float, float>>(initial, o.adamw, weight_update::nearest, rounding_options{});
    case precision_mode::amp_bf16:
      return std::make_unique<adamw_slot<bf16, float>>(initial, o.adamw, weight_update::master, rounding_options{});
    case precision_mode::amp_fp16:
      return std::make_unique<adamw_slot<fp16, float>>(initial, o.adamw, weight_update::master, rounding_options{});
    case precision_mode::pure_bf16:
      // Moments in bf16 too, as llama-recipes' AnyPrecisionAdamW does for pure bf16.
      return policy.update == pure_bf16_update::kahan
                 ? std::make_unique<adamw_slot<bf16, bf16>>(initial, o.adamw, weight_update::kahan, rounding_options{})
                 : std::make_unique<adamw_slot<bf16, bf16>>(initial, o.adamw, weight_update::stochastic, sr);
  }
  throw std::logic_error("unknown precision mode");
}

loss_scaler_options scaler_options(const precision_policy& policy, const train_options& o) {
  if (policy.loss_scaling()) return o.scaler;
  // Modes without loss scaling keep a static scale of 1: the same skip-on-inf/NaN bookkeeping.
  loss_scaler_options unit;
  unit.init_scale = 1.0f;
  unit.dynamic = false;
  return unit;
}

}  // namespace detail

trainer::trainer(const gpt_config& config, const precision_policy& policy, const train_options& options,
                 const token_dataset& data)
    : config_(config),
      policy_(policy),
      options_(options),
      data_(data),
      scaler_((options.validate(), config.validate(), policy.validate(config),
               detail::scaler_options(policy, options))),
      check_("kamp::trainer::check") {
  if (data.context() != config.context)
    throw std::invalid_argument("trainer: the data was cut into windows of " + std::to_string(data.context()) +
                                " tokens but the model's context is " + std::to_string(config.context));
  model_ = std::make_unique<gpt<float>>(config, policy, options.batch);
  optimizer_ = detail::make_optimizer(policy, options, gpt2_initial_weights(config, options.seed));
  model_->bind_weights(optimizer_->exact(), optimizer_->copy());
  tokens_.resize(std::size_t(options.batch) * config.context);
  targets_.resize(tokens_.size());
}

trainer::~trainer() = default;

float trainer::learning_rate(std::int64_t step) const {
  const double peak = options_.lr, floor = peak * options_.min_lr_ratio;
  if (step < options_.warmup) return float(peak * double(step + 1) / double(options_.warmup));
  const std::int64_t decay = std::max<std::int64_t>(1, options_.steps - options_.warmup);
  const double progress = std::min(1.0, double(step - options_.warmup) / double(decay));
  return float(floor + 0.5 * (peak - floor) * (1.0 + std::cos(3.141592653589793 * progress)));
}

step_report trainer::step() {
  const auto start = std::chrono::steady_clock::now();
  const execution_space ex;
  const float lr = learning_rate(steps_taken_);
  const float scale = scaler_.host_state().scale;
  Kokkos::deep_copy(ex, model_->grads(), 0.0f);
  double loss = 0;
  for (int m = 0; m < options_.micro_batches; ++m) {
    data_.sample(token_dataset::split::train, options_.seed, std::uint64_t(attempts_) * options_.micro_batches + m,
                 options_.batch, tokens_.data(), targets_.data());
    loss += model_->forward_backward(tokens_.data(), targets_.data(), 1.0 / options_.micro_batches,
                                     policy_.loss_scaling() ? scaler_.state() : gpt<float>::scaler_view()) /
            options_.micro_batches;
  }
  // One pass: inf/NaN check and the norm; the optimizer applies 1/scale and the clip factor.
  unscale_and_check(ex, model_->grads(), scaler_.state(), check_, unscale_options{false, true});
  gradient_control<memory_space> control{scaler_.state(), check_, false, options_.grad_clip};
  optimizer_->step(model_->grads(), control, lr);
  scaler_.update(ex, check_);
  gradient_check result;
  Kokkos::deep_copy(result, check_);
  ++attempts_;
  if (!result.found_inf) ++steps_taken_;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return {attempts_,
          loss,
          result.found_inf != 0,
          float(std::sqrt(double(result.norm_squared))),
          scale,
          lr,
          seconds,
          std::int64_t(options_.micro_batches) * options_.batch * config_.context};
}

double trainer::validation_loss(int batches) {
  double total = 0;
  for (int b = 0; b < batches; ++b) {
    data_.sample(token_dataset::split::validation, options_.seed, std::uint64_t(b), options_.batch, tokens_.data(),
                 targets_.data());
    total += model_->evaluate(tokens_.data(), targets_.data());
  }
  return batches > 0 ? total / batches : 0.0;
}

std::vector<float> trainer::exact_weights() const { return optimizer_->exact_weights(); }
std::vector<std::uint32_t> trainer::model_copy_bits() const { return optimizer_->copy_bits(); }

}  // namespace kamp
