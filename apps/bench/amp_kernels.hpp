#ifndef KAMP_APPS_BENCH_AMP_KERNELS_HPP
#define KAMP_APPS_BENCH_AMP_KERNELS_HPP

#include "report.hpp"

#include <Kokkos_Core.hpp>

#include <cstddef>

namespace kamp::bench {

/// STREAM triad (a = b + s*c, fp32) on the default execution space: the bandwidth reference.
/// Counted as STREAM does: 12 bytes per element (write-allocate traffic not counted).
class stream_triad {
 public:
  explicit stream_triad(std::size_t n);
  void operator()() const;
  double bytes() const { return 12.0 * a_.extent(0); }

 private:
  Kokkos::View<float*> a_, b_, c_;
};

/// cast, unscale_and_check, fused optimizers and the unfused sequence over a flat buffer of
/// about `n` parameters in 100 tensors; each timed in alternation with `triad`.
void amp_kernels(report& out, std::size_t n, int repeat, const stream_triad& triad);

}  // namespace kamp::bench

#endif
