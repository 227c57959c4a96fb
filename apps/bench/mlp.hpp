#ifndef KAMP_APPS_BENCH_MLP_HPP
#define KAMP_APPS_BENCH_MLP_HPP

#include "report.hpp"

#include <string>

namespace kamp::bench {

/// Samples/s of a training session's steps on two surrogate MLPs (4 -> 3 x 512 -> 4 at batch
/// 4096, and 4 -> 2 x 64 -> 4 at batch 256) in each precision mode, against PyTorch running the
/// same network, loss and AdamW step (apps/bench/pytorch_mlp.py through Debian's python3, each
/// with and without GOMP_SPINCOUNT=0, the better one the reference), alternating kamp and PyTorch
/// `rounds` times; medians. Also LayoutLeft inputs against LayoutRight. `scripts`: the folder
/// holding pytorch_mlp.py.
void mlp_sessions(report& out, int steps, int rounds, const std::string& scripts);

}  // namespace kamp::bench

#endif
