#ifndef KAMP_APPS_BENCH_ROOFLINE_HPP
#define KAMP_APPS_BENCH_ROOFLINE_HPP

#include <kamp/tools/traffic.hpp>

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace kamp::bench {

/// What the kernels of some work (one training step) reported: bytes by Kokkos label, and
/// every GEMM problem with its path.
class step_traffic : public traffic_listener {
 public:
  void kernel(const char* label, double bytes, const kernel_arithmetic& work) override {
    bytes_[label] += bytes;
    work_[label] += work;
  }
  void gemm(const gemm_record& record) override { gemms_.push_back(record); }
  const std::map<std::string, double>& bytes() const { return bytes_; }
  const std::map<std::string, kernel_arithmetic>& work() const { return work_; }
  const std::vector<gemm_record>& gemms() const { return gemms_; }

 private:
  std::map<std::string, double> bytes_;
  std::map<std::string, kernel_arithmetic> work_;
  std::vector<gemm_record> gemms_;
};

/// The profile region of a GEMM record's call, "kamp::gemm[path,A,B,C]" (FP8 records name
/// kamp::gemm_fp8's wrapper, whose region is not a kamp::gemm one).
std::string region_of(const gemm_record& r);

/// Operands as a GEMM's bound is timed: contiguous, or at the step's own strides.
enum class gemm_layout { dense, own };

/// One GEMM call's times alone: the vendor on dense operands (its bound) and the same call at
/// the step's own strides, so a call whose strides push it off the vendor's fast kernel shows.
struct gemm_bound {
  double dense_ms = 0, own_ms = 0;
};

/// Element operations per second on all cores, one rate per kind of kernel_arithmetic, measured
/// with kamp's own functions (exp_of, ...) on data in cache: the arithmetic side of a kernel's
/// bound.
struct core_rates {
  double simple = 0, exp = 0, divide = 0, sqrt = 0, log = 0;
  static core_rates measure();
  /// The seconds `work` takes at these rates.
  double seconds(const kernel_arithmetic& work) const;
};

/// The time the work cannot beat on this machine: each GEMM at the rate its vendor library
/// reaches for that shape and types when called alone (timed here, median of `repeat`; for a
/// widened GEMM the fp32-C vendor problem it hands over, without the widening passes; the
/// portable kernel's own rate where no vendor serves it), plus each kernel at the larger of its
/// bytes at the STREAM triad's rate and its arithmetic at the cores' rates. Per label: GEMM
/// regions `kamp::gemm[...]` and kernel labels.
struct roofline {
  double gemm_ms = 0, kernel_ms = 0;
  std::map<std::string, double> bound_ms;               ///< per label
  std::vector<std::string> unmeasured;                  ///< GEMM type combinations without a timing here
  std::vector<gemm_bound> calls;                        ///< per GEMM record of the traffic, in its order
  std::map<std::string, double> memory_ms, compute_ms;  ///< per kernel label, the two sides of its bound
  double total_ms() const { return gemm_ms + kernel_ms; }
};
roofline step_roofline(const step_traffic& traffic, double triad_gb_per_s, const core_rates& rates, int repeat);

/// Times one GEMM record alone; sets `measured` false where it has no timing for its types.
using gemm_timer = std::function<gemm_bound(const gemm_record&, bool& measured)>;
/// The roofline of `traffic` from GEMM times `time` gives (each distinct problem asked once, its
/// dense time counted at every call), the triad's rate and the cores' rates: step_roofline's
/// arithmetic.
roofline combine_roofline(const step_traffic& traffic, double triad_gb_per_s, const core_rates& rates,
                          const gemm_timer& time);

}  // namespace kamp::bench

#endif
