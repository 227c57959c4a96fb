#ifndef KAMP_MODEL_TRAINING_LR_SCHEDULE_HPP
#define KAMP_MODEL_TRAINING_LR_SCHEDULE_HPP

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstdint>

namespace kamp {

/// \brief Linear warm-up to `peak`, then cosine decay to peak · min_ratio at `steps`: the
/// learning rate of the step after `taken` optimizer steps. Evaluated on the device by the
/// fused optimizer (skipped steps do not advance it, and the host need not know which were
/// skipped), and on the host for reports; both in fp64, rounded once to fp32.
struct lr_schedule {
  double peak;
  double min_ratio;
  std::int64_t warmup;
  std::int64_t steps;

  KOKKOS_INLINE_FUNCTION float operator()(std::int64_t taken) const {
    const double floor = peak * min_ratio;
    if (taken < warmup) return static_cast<float>(peak * static_cast<double>(taken + 1) / static_cast<double>(warmup));
    const std::int64_t decay = steps - warmup > 1 ? steps - warmup : 1;
    const double elapsed = static_cast<double>(taken - warmup) / static_cast<double>(decay);
    const double progress = elapsed < 1.0 ? elapsed : 1.0;
    return static_cast<float>(floor + 0.5 * (peak - floor) * (1.0 + cos(3.141592653589793 * progress)));
  }
};

}  // namespace kamp

#endif
