#ifndef KAMP_KERNELS_LOSS_SCALER_HPP
#define KAMP_KERNELS_LOSS_SCALER_HPP

#include <kamp/kernels/detail/chunked_range.hpp>
#include <kamp/kernels/gradient_check.hpp>
#include <kamp/numeric/convert.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

namespace kamp {

/// \brief The dynamic loss scaler's state. It lives on the device and is updated there, so a
/// training step never waits for the host; copy it out for logs and checkpoints.
struct loss_scale_state {
  float scale;
  std::int32_t growth_tracker;     ///< consecutive clean steps since the last growth or overflow
  std::int32_t hysteresis_left;    ///< overflows still tolerated before the next back-off
  std::int32_t last_step_skipped;  ///< 1 if the most recent step had inf/NaN gradients
  std::int64_t steps;              ///< updates seen
  std::int64_t skipped_steps;      ///< updates with inf/NaN gradients (optimizer did nothing)
};

/// \brief Loss-scaler settings. The defaults are PyTorch's GradScaler exactly; `hysteresis`
/// and `consecutive_hysteresis` give DeepSpeed's DynamicLossScaler; min/max clamp the scale
/// (Apex caps it at 2^24).
struct loss_scaler_options {
  float init_scale = 65536.0f;
  float growth_factor = 2.0f;
  float backoff_factor = 0.5f;
  std::int32_t growth_interval = 2000;
  std::int32_t hysteresis = 1;          ///< overflows tolerated before backing off (1: none)
  bool consecutive_hysteresis = false;  ///< refill hysteresis after every clean step, not only on growth
  float min_scale = 0.0f;               ///< 0: no minimum (PyTorch)
  float max_scale = std::numeric_limits<float>::infinity();
  bool dynamic = true;  ///< false: the scale stays at init_scale

  /// Throws std::invalid_argument naming the first bad field.
  void validate() const {
    const auto fail = [](const std::string& what) {
      throw std::invalid_argument("kamp::loss_scaler_options: " + what);
    };
    if (!(init_scale > 0.0f) || !is_finite(init_scale)) fail("init_scale must be finite and > 0 (PyTorch uses 65536)");
    if (!(growth_factor > 1.0f)) fail("growth_factor must be > 1 (PyTorch uses 2)");
    if (!(backoff_factor > 0.0f && backoff_factor < 1.0f)) fail("backoff_factor must be in (0, 1) (PyTorch uses 0.5)");
    if (growth_interval < 1) fail("growth_interval must be >= 1 (PyTorch uses 2000)");
    if (hysteresis < 1) fail("hysteresis must be >= 1 (1 means back off on every overflow)");
    if (!(min_scale >= 0.0f) || !(max_scale >= min_scale)) fail("need 0 <= min_scale <= max_scale");
    if (init_scale < min_scale || init_scale > max_scale) fail("init_scale must lie in [min_scale, max_scale]");
  }
};

namespace detail {

/// One scaler update, given whether the step's gradients had an inf/NaN. The documented
/// PyTorch algorithm (torch/amp/grad_scaler.py, _amp_update_scale_): on overflow the scale is
/// multiplied by backoff and the tracker resets; otherwise the tracker counts up and, on
/// reaching growth_interval, the scale grows if the product stays finite and the tracker
/// resets. DeepSpeed's hysteresis lets the first overflows only consume a counter.
KOKKOS_INLINE_FUNCTION void update_loss_scale(loss_scale_state& s, const loss_scaler_options& o, bool found_inf) {
  s.steps += 1;
  s.last_step_skipped = found_inf ? 1 : 0;
  if (found_inf) {
    s.skipped_steps += 1;
    s.growth_tracker = 0;
    if (!o.dynamic) return;
    if (s.hysteresis_left > 1) {
      s.hysteresis_left -= 1;
    } else {
      const float backed_off = s.scale * o.backoff_factor;
      s.scale = backed_off < o.min_scale ? o.min_scale : backed_off;
    }
    return;
  }
  if (o.consecutive_hysteresis) s.hysteresis_left = o.hysteresis;
  if (!o.dynamic) return;
  const std::int32_t tracker = s.growth_tracker + 1;
  if (tracker >= o.growth_interval) {
    const float grown = s.scale * o.growth_factor;
    if (is_finite(grown)) s.scale = grown < o.max_scale ? grown : o.max_scale;
    s.hysteresis_left = o.hysteresis;
    s.growth_tracker = 0;
  } else {
    s.growth_tracker = tracker;
  }
}

}  // namespace detail

/// \brief Dynamic loss scaling with its state on the device of `MemorySpace`.
///
/// Each step: scale the loss by state().scale (read on the device), run backward,
/// unscale_and_check, let the optimizer skip on found_inf, then update() — one device task,
/// no host synchronization. `host_state()` copies the state out (it waits for the device).
template <class MemorySpace>
class loss_scaler {
 public:
  using state_view = Kokkos::View<loss_scale_state, MemorySpace>;

  explicit loss_scaler(const loss_scaler_options& options = {})
      : options_(options), state_("kamp::loss_scaler::state") {
    options_.validate();
    loss_scale_state s{};
    s.scale = options_.init_scale;
    s.hysteresis_left = options_.hysteresis;
    restore(s);
  }

  const loss_scaler_options& options() const { return options_; }
  /// The device state, for kernels that read the scale (unscale, optimizers, loss scaling).
  Kokkos::View<const loss_scale_state, MemorySpace> state() const { return state_; }

  /// Update from the step's check result. Label `kamp::loss_scaler::update`.
  template <class ExecutionSpace>
  void update(const ExecutionSpace& space, const Kokkos::View<const gradient_check, MemorySpace>& check) const {
    const auto state = state_;
    const auto options = options_;
    detail::single_task(
        "kamp::loss_scaler::update", space,
        KOKKOS_LAMBDA() { detail::update_loss_scale(state(), options, check().found_inf != 0); });
  }

  loss_scale_state host_state() const {
    loss_scale_state s;
    Kokkos::deep_copy(s, state_);
    return s;
  }
  /// Restore a saved state (checkpoint resume). Rejects states the options could not produce.
  void restore(const loss_scale_state& s) {
    if (!(s.scale > 0.0f) || !is_finite(s.scale) || s.growth_tracker < 0 ||
        s.growth_tracker >= options_.growth_interval || s.hysteresis_left < 1 ||
        s.hysteresis_left > options_.hysteresis || s.steps < 0 || s.skipped_steps < 0 || s.skipped_steps > s.steps)
      throw std::invalid_argument(
          "kamp::loss_scaler::restore: the saved scaler state is inconsistent with these options "
          "(scale " +
          std::to_string(s.scale) + ", tracker " + std::to_string(s.growth_tracker) +
          "); was it saved with a different growth_interval or hysteresis?");
    Kokkos::deep_copy(state_, s);
  }

 private:
  loss_scaler_options options_;
  state_view state_;
};

}  // namespace kamp

#endif
