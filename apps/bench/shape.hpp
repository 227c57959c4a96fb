#ifndef KAMP_APPS_BENCH_SHAPE_HPP
#define KAMP_APPS_BENCH_SHAPE_HPP

#include "report.hpp"

#include <kamp/model/config/gpt_config.hpp>
#include <kamp/model/config/precision_policy.hpp>
#include <kamp/model/config/train_options.hpp>
#include <kamp/model/training/data.hpp>

#include <vector>

namespace kamp::bench {

/// Model FLOPs of one trained token (forward and backward) of `config`: 6 per parameter met by
/// a token (the tied wte once, as the LM head's GEMM: the embedding lookup costs none) plus
/// 12 x layers x d_model x context for the attention scores and values (the PaLM paper's
/// appendix B, llm.c's estimate_mfu). The same formula is tools/bench-scaling.sh's for PyTorch.
double model_flops_per_token(const gpt_config& config);

/// The built-in corpus, whose byte tokens fit every vocabulary, with at least two windows of
/// context + 1 bytes in each of its training and validation parts, however long the context.
token_dataset benchmark_data(const gpt_config& config);

/// Training throughput of `config` with micro-batches of `batch` sequences in each of `modes`:
/// median tokens/s over `steps` steps after two warm-up steps, model FLOP/s, and the peak of
/// kamp's allocations (Kokkos' callbacks). JSON `shape.<mode>`. Data: the built-in corpus,
/// whose byte tokens fit every vocabulary; recompute as `recompute` says.
void shape_throughput(report& out, const gpt_config& config, int batch, int steps,
                      const std::vector<precision_mode>& modes, activation_recompute recompute);

}  // namespace kamp::bench

#endif
