#ifndef KAMP_APPS_BENCH_GEMM_HPP
#define KAMP_APPS_BENCH_GEMM_HPP

#include "report.hpp"

namespace kamp::bench {

/// GFLOP/s of kamp::gemm (portable and vendor paths) at the transformer's shapes and at
/// 1024^3 / 2048^3, each timed in alternation with OpenBLAS sgemm and oneDNN's bf16 matmul
/// called directly, and given as ratios to them; then attention's GEMMs on heads in place
/// against the same GEMMs on contiguous heads.
void gemm_kernels(report& out, int repeat, bool large);

}  // namespace kamp::bench

#endif
