#ifndef KAMP_KERNELS_FUSED_OPTIMIZER_HPP
#define KAMP_KERNELS_FUSED_OPTIMIZER_HPP

#include <kamp/kernels/cast.hpp>
#include <kamp/kernels/detail/chunked_range.hpp>
#include <kamp/kernels/detail/fused_update.hpp>
#include <kamp/kernels/gradient_check.hpp>
#include <kamp/kernels/loss_scaler.hpp>
#include <kamp/kernels/rounding_options.hpp>
#include <kamp/numeric/convert.hpp>
#include <kamp/numeric/counter_random.hpp>
#include <kamp/numeric/element_access.hpp>
#include <kamp/tools/traffic.hpp>

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace kamp {

/// \brief Where the exact weights live and how the model copy is written.
enum class weight_update {
  master,      ///< fp32 master weights; the model copy is rounded from them (rounding_options.mode)
  nearest,     ///< no master: weights updated in their own precision, round-to-nearest-even
  stochastic,  ///< no master: stochastic rounding keeps small updates in expectation
  kahan        ///< no master: a compensation buffer (model precision) carries what rounding lost
};

/// \brief How this step's gradients are turned into the optimizer's input, all read on the device.
template <class MemorySpace>
struct gradient_control {
  Kokkos::View<const loss_scale_state, MemorySpace> scaler;  ///< empty: the gradients are not loss-scaled
  Kokkos::View<const gradient_check, MemorySpace> check;     ///< empty: never skip, no clipping
  bool grads_unscaled = false;  ///< true when unscale_and_check already unscaled the gradients in place
  float max_norm = 0.0f;        ///< > 0: scale the gradients so their global L2 norm is at most this
};

/// \brief A fused optimizer over flat buffers: every step is one small device task (step count,
/// bias corrections, skip and clip decisions) and one kernel over the flat range that reads the
/// gradients once and writes each state array once.
///
/// \tparam Rule   the update rule (kamp::adamw_rule, kamp::sgd_rule)
/// \tparam Model  element type of the weights the model computes with (fp32, bf16, fp16)
/// \tparam Grad   element type of the gradients
/// \tparam Moment element type of the optimizer moments (fp32, or bf16 for pure-bf16 training)
///
/// When the step's gradient check found an inf/NaN the step does nothing at all: weights,
/// moments and the step count stay bitwise unchanged. The optimizer owns its state (master,
/// moments, compensation, step), sized to the range it updates: for a sharded run that is the
/// rank's shard of the flat buffers.
template <class Rule, class Model, class Grad, class Moment = float,
          class MemorySpace = typename Kokkos::DefaultExecutionSpace::memory_space>
class fused_optimizer {
 public:
  using hyperparameters = typename Rule::hyperparameters;
  using scalars_view = Kokkos::View<detail::step_scalars<Rule>, MemorySpace>;

  fused_optimizer(std::size_t n, const hyperparameters& hyper, weight_update update = weight_update::master,
                  rounding_options rounding = {})
      : n_(n),
        hyper_(hyper),
        update_(update),
        rounding_(rounding),
        step_("kamp::optimizer::step"),
        scalars_("kamp::optimizer::scalars") {
    Rule::validate(hyper_);
    if (update == weight_update::master) master_ = Kokkos::View<float*, MemorySpace>("kamp::optimizer::master", n);
    if (update == weight_update::kahan) {
      if (std::is_same_v<Model, float>)
        throw std::invalid_argument(
            "kamp::fused_optimizer: Kahan compensation is for 16-bit weights; fp32 weights need none");
      compensation_ = Kokkos::View<Model*, MemorySpace>("kamp::optimizer::compensation", n);
    }
    moment1_ = Kokkos::View<Moment*, MemorySpace>("kamp::optimizer::moment1", n);
    if (Rule::moments > 1) moment2_ = Kokkos::View<Moment*, MemorySpace>("kamp::optimizer::moment2", n);
  }

  /// Sets the weights: the master (if any) to `weights` exactly, the model copy rounded from them.
  template <class ExecutionSpace, class WeightsView, class ModelView>
  void initialize(const ExecutionSpace& space, const WeightsView& weights, const ModelView& model) const {
    static_assert(std::is_same_v<typename WeightsView::non_const_value_type, float> && WeightsView::rank == 1,
                  "kamp::fused_optimizer::initialize: weights are an fp32 vector");
    check_size("initialize: weights", weights.extent(0));
    check_size("initialize: model", model.extent(0));
    if (master_.extent(0) > 0) Kokkos::deep_copy(space, master_, weights);
    cast(space, model, weights);
  }

  /// One optimizer step. `lr` is the learning rate (a float), or a schedule evaluated on the
  /// device from the steps taken so far (a device-callable `float operator()(std::int64_t)`,
  /// such as kamp::lr_schedule): then no step needs the host to know which steps were skipped.
  /// Labels `kamp::<rule>::prepare`, `kamp::<rule>::update`.
  /// `model` and `grads` are rank-1 views of n elements in any layout (a strided view is
  /// updated where it lies).
  template <class ExecutionSpace, class ModelView, class GradView, class LearningRate>
  void step(const ExecutionSpace& space, const ModelView& model, const GradView& grads,
            const gradient_control<MemorySpace>& control, LearningRate lr) const;

  std::size_t size() const { return n_; }
  weight_update update_kind() const { return update_; }
  const hyperparameters& hyper() const { return hyper_; }
  Kokkos::View<float*, MemorySpace> master() const { return master_; }
  Kokkos::View<Moment*, MemorySpace> moment1() const { return moment1_; }
  Kokkos::View<Moment*, MemorySpace> moment2() const { return moment2_; }
  Kokkos::View<Model*, MemorySpace> compensation() const { return compensation_; }
  Kokkos::View<std::int64_t, MemorySpace> step_count() const { return step_; }
  /// Steps taken (skipped ones excluded); waits for the device.
  std::int64_t host_step_count() const {
    std::int64_t s;
    Kokkos::deep_copy(s, step_);
    return s;
  }
  /// The global gradient norm the last step saw (before clipping); waits for the device.
  float host_last_grad_norm() const {
    detail::step_scalars<Rule> s;
    Kokkos::deep_copy(s, scalars_);
    return s.grad_norm;
  }

 private:
  void check_size(const char* what, std::size_t got) const {
    if (got != n_)
      throw std::invalid_argument(std::string("kamp::fused_optimizer::") + what + " has " + std::to_string(got) +
                                  " elements, the optimizer was made for " + std::to_string(n_));
  }

  std::size_t n_;
  hyperparameters hyper_;
  weight_update update_;
  rounding_options rounding_;
  Kokkos::View<float*, MemorySpace> master_;
  Kokkos::View<Moment*, MemorySpace> moment1_, moment2_;
  Kokkos::View<Model*, MemorySpace> compensation_;
  Kokkos::View<std::int64_t, MemorySpace> step_;
  scalars_view scalars_;
};

template <class Rule, class Model, class Grad, class Moment, class MemorySpace>
template <class ExecutionSpace, class ModelView, class GradView, class LearningRate>
void fused_optimizer<Rule, Model, Grad, Moment, MemorySpace>::step(const ExecutionSpace& space, const ModelView& model,
                                                                   const GradView& grads,
                                                                   const gradient_control<MemorySpace>& control,
                                                                   LearningRate lr) const {
  static_assert(ModelView::rank == 1 && GradView::rank == 1, "kamp::fused_optimizer::step: model and grads are rank-1");
  static_assert(std::is_same_v<typename ModelView::value_type, Model>,
                "kamp::fused_optimizer::step: the model view's type must be the optimizer's Model (writable)");
  static_assert(std::is_same_v<typename GradView::non_const_value_type, Grad>,
                "kamp::fused_optimizer::step: the gradients' type must be the optimizer's Grad");
  static_assert(Kokkos::SpaceAccessibility<ExecutionSpace, typename ModelView::memory_space>::accessible &&
                    Kokkos::SpaceAccessibility<ExecutionSpace, typename GradView::memory_space>::accessible,
                "kamp::fused_optimizer::step: model and grads must be accessible from the execution space");
  check_size("step: model", model.extent(0));
  check_size("step: grads", grads.extent(0));
  if (control.max_norm > 0.0f && control.check.data() == nullptr)
    throw std::invalid_argument(
        "kamp::fused_optimizer::step: clipping (max_norm > 0) needs a gradient check with the norm");
  if constexpr (std::is_arithmetic_v<LearningRate>) {
    if (!(lr >= 0.0f) || !is_finite(float(lr)))
      throw std::invalid_argument("kamp::fused_optimizer::step: learning rate must be finite and >= 0, got " +
                                  std::to_string(lr));
  }

  // 1. One device task: decide skip, the gradient factor and the rule's step scalars.
  const auto scalars = scalars_;
  const auto step = step_;
  const auto hyper = hyper_;
  const auto scaler = control.scaler;
  const auto check = control.check;
  const bool unscaled = control.grads_unscaled;
  const float max_norm = control.max_norm;
  detail::single_task(
      Rule::prepare_label, space, KOKKOS_LAMBDA() {
        detail::step_scalars<Rule> s;
        s.skip = check.data() != nullptr && check().found_inf != 0;
        s.grad_norm =
            check.data() != nullptr ? static_cast<float>(sqrt(static_cast<double>(check().norm_squared))) : 0.0f;
        const float inv_scale = (scaler.data() != nullptr && !unscaled)
                                    ? static_cast<float>(1.0 / static_cast<double>(scaler().scale))
                                    : 1.0f;
        // torch.nn.utils.clip_grad_norm_: coefficient max_norm / (norm + 1e-6), capped at 1.
        const float clip = (max_norm > 0.0f && s.grad_norm > max_norm) ? max_norm / (s.grad_norm + 1e-6f) : 1.0f;
        s.grad_factor = inv_scale * clip;
        s.t = step() + 1;
        s.rule = Rule::prepare(hyper, detail::learning_rate_at(lr, step()), s.t);
        scalars() = s;
        if (!s.skip) step() = s.t;
      });

  // 2. One kernel over the flat range, instantiated per storage scheme so that its inner
  // loop has no branches.
  using detail::store_scheme;
  const bool sr = rounding_.mode == rounding::stochastic;
  const store_scheme scheme = update_ == weight_update::master
                                  ? (sr ? store_scheme::master_stochastic : store_scheme::master_nearest)
                              : update_ == weight_update::kahan      ? store_scheme::kahan
                              : update_ == weight_update::stochastic ? store_scheme::stochastic
                                                                     : store_scheme::nearest;
  detail::with_access(
      [&](auto model_at, auto grads_at) {
        const detail::optimizer_arrays<decltype(model_at), decltype(grads_at), Moment> arrays{
            model_at, grads_at, master_.data(), moment1_.data(), moment2_.data(), compensation_.data()};
        switch (scheme) {
          case store_scheme::master_nearest:
            return detail::fused_update<Rule, store_scheme::master_nearest>(space, arrays, scalars_, n_, rounding_);
          case store_scheme::master_stochastic:
            return detail::fused_update<Rule, store_scheme::master_stochastic>(space, arrays, scalars_, n_, rounding_);
          case store_scheme::nearest:
            return detail::fused_update<Rule, store_scheme::nearest>(space, arrays, scalars_, n_, rounding_);
          case store_scheme::stochastic:
            return detail::fused_update<Rule, store_scheme::stochastic>(space, arrays, scalars_, n_, rounding_);
          case store_scheme::kahan:
            return detail::fused_update<Rule, store_scheme::kahan>(space, arrays, scalars_, n_, rounding_);
        }
      },
      model, grads);
}

}  // namespace kamp

#endif
