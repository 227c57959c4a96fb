#ifndef KAMP_MODEL_DIAGNOSTICS_DOCTOR_HPP
#define KAMP_MODEL_DIAGNOSTICS_DOCTOR_HPP

#include <kamp/model/training/trainer.hpp>

#include <optional>
#include <string>
#include <vector>

namespace kamp {

/// \brief What one observed training step says about the run's precision.
struct diagnosis {
  precision_mode mode;
  float scale;  ///< the loss scale of the observed step
  /// Every op's output range, forward then backward, in execution order.
  std::vector<op_observation> ops;
  /// The first op whose output held an inf or NaN (forward before backward).
  std::optional<op_observation> first_non_finite;
  /// Forward outputs whose largest finite |value| exceeds fp16's 65504 (amp_fp16 would overflow).
  std::vector<op_observation> beyond_fp16;
  /// Of the gradient values (as scaled for the step), the fraction below fp16's smallest
  /// subnormal 2^-24, zeros included (they are zero in fp16) and the fraction below its smallest
  /// normal 2^-14 (they lose precision).
  double gradient_underflow_fp16 = 0, gradient_subnormal_fp16 = 0;
  /// Of the weights the step changed, the fraction whose change is smaller than half a bf16 ulp
  /// of the weight: updates a bf16 weight with round-to-nearest would swallow. nullopt where it
  /// cannot be observed (pure_bf16 with stochastic rounding).
  std::optional<double> swallowed_updates_bf16;
  /// amp_fp8: every FP8 tensor's cast in the observed step (its amax, scale, and the values that
  /// saturated at the format's largest value or underflowed to zero).
  std::vector<fp8_tensor_report> fp8;
  bool step_skipped = false;
  double loss = 0;
  /// Each finding states the evidence; each recommendation names what to change.
  std::vector<std::string> findings, recommendations;
};

/// \brief The precision doctor: runs one observed training step from the trainer's current
/// state (the next batch), measures what fits which format, then restores the trainer exactly:
/// diagnosing does not change the run. Thresholds: an underflow fraction above 1%, swallowed
/// updates above 10%; FP8 saturation above 1% of a tensor's values, underflow to zero (a
/// scale collapsed below what the data needs) above 1%.
diagnosis diagnose(trainer& t);

/// The diagnosis as text: the per-op table, findings and recommendations.
std::string report(const diagnosis& d);

}  // namespace kamp

#endif
