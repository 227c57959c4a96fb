// Activation recomputation (--recompute blocks): the backward pass runs each block's forward
// again from its kept input, so the gradients must be the bits of the run that kept everything,
// in every mode and with layers overridden to fp32 (blocks of two compute types share one copy).
#include <kamp/model/diagnostics/memory_plan.hpp>
#include <kamp/model/network/gpt.hpp>
#include <kamp/model/network/initial_weights.hpp>
#include <kamp/model/training/trainer.hpp>

#include "../support/catch.hpp"

#include "../support/fixtures.hpp"
#include "../support/gpt_shapes.hpp"

#include <string>
#include <vector>

namespace {

std::vector<kamp::precision_policy> policies() {
  std::vector<kamp::precision_policy> all = kamp::test::every_policy();
  kamp::precision_policy mixed = kamp::test::policy(kamp::precision_mode::amp_bf16);
  mixed.fp32_layers = {"h1.attn", "h0.mlp"};
  all.push_back(mixed);
  return all;
}

}  // namespace

TEST_CASE("recomputing blocks gives the gradients and observations of keeping every activation, bit for bit",
          "[model][recompute]") {
  const kamp::gpt_config config = kamp::test::gpt_shape(16, 3, 2, 32, 128);
  const kamp::token_dataset& data = kamp::test::corpus(config);
  for (const kamp::precision_policy& p : policies()) {
    INFO(kamp::name(p.mode) << " " << kamp::name(p.update) << ", " << p.fp32_layers.size() << " fp32 layers");
    kamp::train_options o = kamp::test::run_options(3, 4);
    kamp::trainer kept(config, p, o, data);
    o.recompute = kamp::activation_recompute::blocks;
    kamp::trainer recomputed(config, p, o, data);
    for (int s = 0; s < o.steps; ++s) {
      const auto a = kept.step(), b = recomputed.step();
      CHECK(a.loss == b.loss);
    }
    CHECK(kept.exact_weights() == recomputed.exact_weights());
    CHECK(kept.model_copy_bits() == recomputed.model_copy_bits());
    // The precision doctor's view: every op once, with the same ranges (the recomputed forward
    // is not observed a second time).
    std::vector<kamp::op_observation> seen_kept, seen_recomputed;
    std::vector<int> tokens(std::size_t(o.batch) * config.context), targets(tokens.size());
    data.sample(kamp::token_dataset::split::validation, 1, 0, o.batch, tokens.data(), targets.data());
    kept.model().observe(&seen_kept);
    recomputed.model().observe(&seen_recomputed);
    kept.model().forward_backward(tokens.data(), targets.data(), 1.0);
    recomputed.model().forward_backward(tokens.data(), targets.data(), 1.0);
    kept.model().observe(nullptr);
    recomputed.model().observe(nullptr);
    REQUIRE(seen_kept.size() == seen_recomputed.size());
    int differ = 0;
    for (std::size_t i = 0; i < seen_kept.size(); ++i)
      differ += seen_kept[i].op != seen_recomputed[i].op || seen_kept[i].backward != seen_recomputed[i].backward ||
                seen_kept[i].range.max_abs != seen_recomputed[i].range.max_abs;
    CHECK(differ == 0);
    CHECK_THROWS_AS(recomputed.model().gemm_input("h0.attn"), std::logic_error);
  }
}

TEST_CASE("recomputing blocks keeps one block's activations: GPT-2 124M's fall from 6.15 GB to under 1.5 GB",
          "[model][recompute][plan]") {
  const kamp::gpt_config gpt2 = kamp::find_gpt_preset("gpt2-124m").config;
  const auto p = kamp::test::policy(kamp::precision_mode::amp_bf16);
  const double kept = kamp::plan_memory(gpt2, p, 4).activations;
  const double recomputed =
      kamp::plan_memory(gpt2, p, 4, 1, kamp::sharding::optimizer, true, kamp::activation_recompute::blocks).activations;
  CHECK(kept == Approx(6.154e9).epsilon(1e-3));
  CHECK(recomputed < 1.5e9);
}
