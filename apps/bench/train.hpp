#ifndef KAMP_APPS_BENCH_TRAIN_HPP
#define KAMP_APPS_BENCH_TRAIN_HPP

#include "report.hpp"

#include <kamp/model/config/gpt_config.hpp>

namespace kamp::bench {

/// Tokens/s of whole training steps (forward, backward, check, optimizer) of `config` (the
/// reference GPT unless the model options say otherwise) at `batch` sequences per step (0: the
/// trainer's 16) in every precision mode, median over `steps` steps after three warm-up steps.
/// The PyTorch reference runs beside it in tools/bench-train.sh (a separate process: Debian's
/// torch). Each mode's roofline (roofline.hpp) beside the measured step, and per label its time
/// (from `steps` more profiled steps) against its bound; `profile` prints that table.
void training_steps(report& out, const gpt_config& config, int batch, int steps, bool profile);

}  // namespace kamp::bench

#endif
