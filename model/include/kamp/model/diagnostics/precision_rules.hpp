#ifndef KAMP_MODEL_DIAGNOSTICS_PRECISION_RULES_HPP
#define KAMP_MODEL_DIAGNOSTICS_PRECISION_RULES_HPP

#include <kamp/model/config/precision_policy.hpp>
#include <kamp/model/config/run_request.hpp>
#include <kamp/model/diagnostics/hardware_probe.hpp>

#include <string>
#include <vector>

namespace kamp {

/// \brief One conclusion of the rules: an error stops the run before anything is allocated.
struct precision_finding {
  enum class level { note, warning, error };
  level severity;
  std::string rule;     ///< stable name, e.g. "pure-bf16-with-quantization"
  std::string message;  ///< what is wrong or decided, why, and what to do
};

/// The rules (docs/precision.md): the llama-recipes guard for bf16 parameters (pure_bf16
/// requested and no quantization; with sharding, accepted and explained), quantization refused,
/// amp_fp16 without loss scaling refused unless forced, bf16 on hardware without native bf16
/// noted with what it costs and saves there.
std::vector<precision_finding> check_precision(const precision_policy& policy, const run_request& request,
                                               const hardware_report& hardware);

}  // namespace kamp

#endif
