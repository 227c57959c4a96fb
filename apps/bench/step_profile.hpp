#ifndef KAMP_APPS_BENCH_STEP_PROFILE_HPP
#define KAMP_APPS_BENCH_STEP_PROFILE_HPP

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace kamp::bench {

/// Where a training step's time goes, from Kokkos Tools callbacks: each outermost
/// `kamp::gemm[...]` region (vendor calls run inside them and launch no Kokkos kernel), and each
/// kernel label outside those regions. Host backends run kernels synchronously, so begin/end
/// times are the kernels' own; on a GPU they would be launch times. One profile at a time.
class step_profile {
 public:
  step_profile();
  ~step_profile();
  step_profile(const step_profile&) = delete;
  step_profile& operator=(const step_profile&) = delete;
  /// Seconds per label since construction.
  const std::map<std::string, double>& seconds() const;
  /// Each outermost GEMM region in call order since construction: its label and seconds.
  const std::vector<std::pair<std::string, double>>& gemm_calls() const;
};

}  // namespace kamp::bench

#endif
