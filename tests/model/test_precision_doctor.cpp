// The precision doctor: each diagnosis is triggered by a scenario built for it, and its
// recommendation is checked to name the remedy (and, for the layer override, to work).
#include <kamp/model/diagnostics/doctor.hpp>
#include <kamp/model/network/gpt_parameters.hpp>
#include <kamp/numeric/convert.hpp>

#include "../support/catch.hpp"

#include "../support/fixtures.hpp"
#include "../support/gpt_shapes.hpp"
#include "../support/training_states.hpp"

#include <algorithm>
#include <cstring>

namespace {

using kamp::test::corpus;
using kamp::test::policy;

const kamp::gpt_config two_layers = kamp::test::small_model(2);

// The runs of this file: batch 4, 10 steps, peak learning rate `lr` from the first step, seed 3.
kamp::train_options options(float lr = 2e-3f) { return kamp::test::run_options(4, 10, lr, 0, 3); }

// Multiplies the exact weights of `tensor` by `factor` and rounds the model copy from them, as
// a run whose weights grew would hold them.
kamp::training_state scaled(kamp::training_state s, const std::string& tensor, float factor) {
  const kamp::tensor_table table = parameter_table(s.model);  // kept: e refers into it
  const auto& e = table[table.index_of(tensor)];
  kamp::state_tensor* exact = nullptr;
  kamp::state_tensor* copy = nullptr;
  for (auto& t : s.tensors) {
    if (t.role == "master") exact = &t;
    if (t.role == "model") copy = &t;
  }
  if (exact == nullptr) exact = copy;
  for (std::size_t i = e.offset; i < e.offset + e.size; ++i) {
    const float w = float(kamp::element(*exact, i)) * factor;
    if (exact->type == kamp::dtype::fp32) std::memcpy(exact->bytes.data() + 4 * i, &w, 4);
    if (copy != exact) {
      const auto rounded =
          copy->type == kamp::dtype::fp16 ? kamp::from_float<kamp::fp16>(w).bits : kamp::from_float<kamp::bf16>(w).bits;
      std::memcpy(copy->bytes.data() + 2 * i, &rounded, 2);
    }
  }
  return s;
}

bool mentions(const std::vector<std::string>& lines, const std::string& text) {
  return std::any_of(lines.begin(), lines.end(),
                     [&](const std::string& l) { return l.find(text) != std::string::npos; });
}

}  // namespace

TEST_CASE("a healthy step has no finding, and diagnosing leaves the run unchanged", "[model][doctor]") {
  const auto mode = GENERATE(from_range(kamp::precision_modes()));
  kamp::trainer t(two_layers, policy(mode), options(), corpus(two_layers));
  t.step();
  const kamp::training_state before = t.state();
  const kamp::diagnosis d = kamp::diagnose(t);
  kamp::test::require_same_state(t.state(), before);
  INFO(kamp::report(d));
  CHECK(d.findings == std::vector<std::string>{"no precision problem in this step"});
  CHECK(d.recommendations.empty());
  CHECK_FALSE(d.first_non_finite);
  // Every op of both passes was observed: per block 9 forward and 8 backward, 3 + 3 for the head.
  CHECK(d.ops.size() == 2 * (9 + 8) + 3 + 3);
  // The next step after diagnosing is the step that would have come anyway.
  kamp::trainer twin(two_layers, policy(mode), options(), corpus(two_layers));
  twin.step();
  CHECK(t.step().loss == twin.step().loss);
}

TEST_CASE("one layer beyond fp16 in amp_fp16: the doctor names it, and overriding it to fp32 cures it",
          "[model][doctor]") {
  kamp::trainer t(two_layers, policy(kamp::precision_mode::amp_fp16), options(), corpus(two_layers));
  // Weights x 4e5 still fit fp16 (|w| < 4e4); the layer's pre-activations (~1.7e5) do not.
  const kamp::training_state grown = scaled(t.state(), "h0.mlp.fc.weight", 4e5f);
  t.restore(grown);
  const kamp::diagnosis d = kamp::diagnose(t);
  INFO(kamp::report(d));
  REQUIRE(d.first_non_finite);
  CHECK(d.first_non_finite->op == "h0.mlp.gelu");
  CHECK_FALSE(d.first_non_finite->backward);
  CHECK(d.first_non_finite->stored == kamp::dtype::fp16);
  REQUIRE_FALSE(d.beyond_fp16.empty());
  CHECK(d.beyond_fp16.front().op == "h0.mlp.fc");
  CHECK(d.beyond_fp16.front().range.max_abs > 65504);
  CHECK(mentions(d.recommendations, "--fp32-layers h0.mlp"));

  kamp::precision_policy cure = policy(kamp::precision_mode::amp_fp16);
  cure.fp32_layers = {"h0.mlp"};
  kamp::trainer cured(two_layers, cure, options(), corpus(two_layers));
  cured.restore(grown);
  const kamp::diagnosis after = kamp::diagnose(cured);
  INFO(kamp::report(after));
  // The forward pass is finite now (large gradients may still overflow at the initial loss
  // scale: that is the dynamic scaler's job).
  CHECK((!after.first_non_finite || after.first_non_finite->backward));
}

TEST_CASE("several layers beyond fp16: the doctor recommends bf16, and the residual stream LayerNorm in fp32",
          "[model][doctor]") {
  kamp::trainer t(two_layers, policy(kamp::precision_mode::amp_bf16), options(), corpus(two_layers));
  // Also the MLP's output projection: the residual stream itself then leaves fp16's range.
  t.restore(scaled(scaled(scaled(t.state(), "h0.mlp.fc.weight", 4e5f), "h1.attn.qkv.weight", 4e5f),
                   "h0.mlp.proj.weight", 100.0f));
  const kamp::diagnosis d = kamp::diagnose(t);
  INFO(kamp::report(d));
  CHECK_FALSE(d.first_non_finite);  // bf16 has fp32's range
  CHECK(mentions(d.findings, "forward values beyond fp16's 65504"));
  CHECK(mentions(d.findings, "h1.attn.qkv"));
  CHECK(mentions(d.recommendations, "stay with bf16 or fp32"));
  CHECK(mentions(d.recommendations, "LayerNorm"));

  kamp::trainer fp16(two_layers, policy(kamp::precision_mode::amp_fp16), options(), corpus(two_layers));
  fp16.restore(scaled(scaled(fp16.state(), "h0.mlp.fc.weight", 4e5f), "h1.attn.qkv.weight", 4e5f));
  const kamp::diagnosis f = kamp::diagnose(fp16);
  INFO(kamp::report(f));
  CHECK(mentions(f.recommendations, "--mode amp_bf16"));
}

TEST_CASE("gradients below fp16's range at a small loss scale: the doctor says to raise the scale", "[model][doctor]") {
  auto o = options();
  o.scaler.init_scale = 1.0f / 65536;
  o.scaler.dynamic = false;
  kamp::trainer t(two_layers, policy(kamp::precision_mode::amp_fp16), o, corpus(two_layers));
  const kamp::diagnosis d = kamp::diagnose(t);
  INFO(kamp::report(d));
  CHECK(d.gradient_underflow_fp16 > 0.01);
  CHECK(mentions(d.recommendations, "raise the loss scale"));
}

TEST_CASE("updates below half a bf16 ulp: the doctor says to keep master weights or Kahan", "[model][doctor]") {
  kamp::trainer t(two_layers, policy(kamp::precision_mode::amp_bf16), options(1e-7f), corpus(two_layers));
  const kamp::diagnosis d = kamp::diagnose(t);
  INFO(kamp::report(d));
  REQUIRE(d.swallowed_updates_bf16);
  CHECK(*d.swallowed_updates_bf16 > 0.9);
  CHECK(mentions(d.recommendations, "keep FP32 master weights"));

  kamp::trainer pure(two_layers, policy(kamp::precision_mode::pure_bf16), options(1e-7f), corpus(two_layers));
  const kamp::diagnosis p = kamp::diagnose(pure);
  INFO(kamp::report(p));
  REQUIRE(p.swallowed_updates_bf16);
  CHECK(mentions(p.recommendations, "Kahan"));
}

TEST_CASE("a value that overflows even fp32: the doctor names the first op and says the run diverged",
          "[model][doctor]") {
  kamp::trainer t(two_layers, policy(kamp::precision_mode::fp32), options(), corpus(two_layers));
  // LayerNorm gains x 1e30 and weights x 1e10: the product overflows fp32 in the GEMM.
  t.restore(scaled(scaled(t.state(), "h1.ln2.weight", 1e30f), "h1.mlp.fc.weight", 1e10f));
  const kamp::diagnosis d = kamp::diagnose(t);
  INFO(kamp::report(d));
  REQUIRE(d.first_non_finite);
  CHECK(d.first_non_finite->op == "h1.mlp.fc");
  CHECK_FALSE(d.first_non_finite->backward);
  CHECK(d.step_skipped);
  CHECK(mentions(d.recommendations, "diverged"));
}

TEST_CASE("amp_fp8: weights that jump past delayed scaling's scale saturate, and the doctor names the tensor",
          "[model][doctor][fp8]") {
  for (const auto recipe : {kamp::fp8_recipe::delayed, kamp::fp8_recipe::current}) {
    kamp::precision_policy p = policy(kamp::precision_mode::amp_fp8);
    p.recipe = recipe;
    kamp::trainer t(two_layers, p, options(), corpus(two_layers));
    for (int i = 0; i < 3; ++i) t.step();
    // 300x the weight: its amax leaves the window the delayed scale was computed from.
    t.restore(scaled(t.state(), "h1.mlp.fc.weight", 300.0f));
    const kamp::diagnosis d = kamp::diagnose(t);
    INFO(kamp::name(recipe) << "\n" << kamp::report(d));
    const auto fc_weight = std::find_if(d.fp8.begin(), d.fp8.end(), [](const kamp::fp8_tensor_report& r) {
      return r.linear == "h1.mlp.fc" && r.role == "weight";
    });
    REQUIRE(fc_weight != d.fp8.end());
    CHECK(d.fp8.size() == 3 * 4 * 2);  // input, weight and grad of 4 Linears in 2 blocks
    if (recipe == kamp::fp8_recipe::delayed) {
      CHECK(fc_weight->saturated > fc_weight->elements / 2);
      CHECK(mentions(d.findings, "FP8 casts saturated"));
      CHECK(mentions(d.findings, "h1.mlp.fc weight"));
      CHECK(mentions(d.recommendations, "--fp8-recipe current"));
    } else {
      // Current scaling takes this step's amax: nothing saturates.
      CHECK(fc_weight->saturated == 0);
      CHECK_FALSE(mentions(d.findings, "FP8 casts saturated"));
    }
  }
}

TEST_CASE("amp_fp8: weights that shrink far below their delayed scale underflow: scale collapse",
          "[model][doctor][fp8]") {
  kamp::trainer t(two_layers, policy(kamp::precision_mode::amp_fp8), options(), corpus(two_layers));
  for (int i = 0; i < 3; ++i) t.step();
  t.restore(scaled(t.state(), "h0.attn.qkv.weight", 1e-6f));
  const kamp::diagnosis d = kamp::diagnose(t);
  INFO(kamp::report(d));
  CHECK(mentions(d.findings, "FP8 scale collapse"));
  CHECK(mentions(d.findings, "h0.attn.qkv weight"));
  CHECK(mentions(d.recommendations, "--fp8-amax-history"));
}
