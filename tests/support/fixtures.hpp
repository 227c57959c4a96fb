#ifndef KAMP_TESTS_SUPPORT_FIXTURES_HPP
#define KAMP_TESTS_SUPPORT_FIXTURES_HPP

// What the model tests train with: data, precision policies and run options, defined once for
// every test binary. The numbers tests choose differently (corpus size, batch, schedule, seed)
// are arguments, so each test states its own.
#include <kamp/model/config/gpt_config.hpp>
#include <kamp/model/config/precision_policy.hpp>
#include <kamp/model/config/train_options.hpp>
#include <kamp/model/training/data.hpp>

#include "gpt_shapes.hpp"

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <utility>
#include <vector>

namespace kamp::test {

/// The first `bytes` bytes of kamp's default corpus, a tenth of them for validation, in windows
/// of `model`'s context. Built once per (bytes, context) and kept for the program's life, so
/// that the many trainers of a test binary do not each generate it.
inline const token_dataset& corpus(const gpt_config& model, std::size_t bytes = std::size_t(1) << 16) {
  static std::map<std::pair<std::size_t, int>, std::unique_ptr<const token_dataset>> built;
  auto& data = built[{bytes, model.context}];
  if (!data) data = std::make_unique<const token_dataset>(default_corpus(bytes), 0.1, model.context, "test corpus");
  return *data;
}

/// What the tiny model trains on where its loss is watched: 256 KiB of the corpus, so that the
/// longest such run (300 steps of 8 windows of 32 tokens) draws a third of the training part.
inline const token_dataset& tiny_corpus() { return corpus(tiny_model(), std::size_t(1) << 18); }

/// A policy of `mode`, with `update` for pure_bf16 and no fp32 override.
inline precision_policy policy(precision_mode mode, pure_bf16_update update = pure_bf16_update::kahan) {
  precision_policy p;
  p.mode = mode;
  p.update = update;
  return p;
}

/// Every policy a trainer tells apart: one per precision mode, in precision_modes() order, and
/// pure_bf16 once per update (no fp32 override).
inline std::vector<precision_policy> every_policy() {
  std::vector<precision_policy> all;
  for (const precision_mode mode : precision_modes()) {
    if (mode != precision_mode::pure_bf16) {
      all.push_back(policy(mode));
      continue;
    }
    for (const pure_bf16_update update : pure_bf16_updates()) all.push_back(policy(mode, update));
  }
  return all;
}

/// Options of a run of `steps` optimizer steps on micro-batches of `batch` sequences, peak
/// learning rate `lr` after `warmup` steps, from `seed`; what is not given is kamp's default.
inline train_options run_options(int batch, int steps = train_options{}.steps, float lr = train_options{}.lr,
                                 int warmup = train_options{}.warmup, std::uint64_t seed = train_options{}.seed) {
  train_options o;
  o.batch = batch;
  o.steps = steps;
  o.lr = lr;
  o.warmup = warmup;
  o.seed = seed;
  return o;
}

}  // namespace kamp::test

#endif
