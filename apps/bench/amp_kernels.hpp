#ifndef KAMP_APPS_BENCH_AMP_KERNELS_HPP
#define KAMP_APPS_BENCH_AMP_KERNELS_HPP

#include "report.hpp"

#include <cstddef>

namespace kamp::bench {

/// STREAM triad (a = b + s*c, fp32) on the default execution space: the bandwidth reference.
double triad_gbs(std::size_t n, int repeat);

/// cast, unscale_and_check, fused optimizers and the unfused sequence over a flat buffer of
/// about `n` parameters in 100 tensors; each as GB/s and ratio to `reference_gbs`.
void amp_kernels(report& out, std::size_t n, int repeat, double reference_gbs);

}  // namespace kamp::bench

#endif
