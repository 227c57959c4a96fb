// The GPT's parameter table against counts made by hand, and the facts other code derives from
// the model's shape without building the table: the memory planner's parameter estimate, its
// per-category bytes of the padded flat buffers, and the number of tensors a checkpoint holds.
#include <kamp/model/config/gpt_config.hpp>
#include <kamp/model/diagnostics/memory_plan.hpp>
#include <kamp/model/network/gpt_parameters.hpp>

#include "../support/catch.hpp"

#include "../support/fixtures.hpp"
#include "../support/gpt_shapes.hpp"

#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

namespace {

using kamp::test::policy;

kamp::gpt_config shape(int vocab, int context, int layers, int heads, int head_size, int mlp) {
  kamp::gpt_config c = kamp::test::gpt_shape(context, layers, heads, heads * head_size, mlp);
  c.vocab = vocab;
  return c;
}

// Shapes that reach every term of a count: the smallest valid sizes (1 wherever allowed, the
// 256 bytes of the vocabulary), odd sizes that leave each tensor off the 64-element alignment,
// and GPT-2's vocabulary and context. `wide` also takes heads x head sizes up to 12 x 64.
std::vector<kamp::gpt_config> shapes(bool wide) {
  std::vector<kamp::gpt_config> out;
  const std::vector<int> head_sizes = wide ? std::vector<int>{1, 5, 16, 64} : std::vector<int>{1, 5};
  const std::vector<int> head_counts = wide ? std::vector<int>{1, 3, 12} : std::vector<int>{1, 3};
  for (const int vocab : {256, 257, 1000, 50257})
    for (const int context : {1, 7, 1024})
      for (const int layers : {1, 2, 5})
        for (const int heads : head_counts)
          for (const int head_size : head_sizes)
            for (const int mlp : {1, 3, 4 * heads * head_size, 1000})
              out.push_back(shape(vocab, context, layers, heads, head_size, mlp));
  return out;
}

std::string described(const kamp::gpt_config& c) {
  return "vocab " + std::to_string(c.vocab) + ", context " + std::to_string(c.context) + ", layers " +
         std::to_string(c.layers) + ", heads " + std::to_string(c.heads) + ", d_model " + std::to_string(c.d_model) +
         ", mlp " + std::to_string(c.mlp);
}

// The flat buffer's length worked out by hand: GPT-2's tensors in order (wte, wpe; per block
// ln1, qkv, attn.proj, ln2, mlp.fc, mlp.proj, each weight then bias; lnf), each starting on a
// multiple of 64 elements, tensor_table's alignment.
std::size_t padded_size(const kamp::gpt_config& config) {
  // wte's rows: the vocabulary rounded up to a multiple of 128 (llm.c's padding).
  const std::size_t v = (config.vocab + 127) / 128 * 128, t = config.context, c = config.d_model, m = config.mlp;
  std::vector<std::size_t> sizes{v * c, t * c};
  for (int l = 0; l < config.layers; ++l)
    sizes.insert(sizes.end(), {c, c, 3 * c * c, 3 * c, c * c, c, c, c, m * c, m, c * m, c});
  sizes.insert(sizes.end(), {c, c});
  std::size_t end = 0;
  for (const std::size_t s : sizes) end = (end + 63) / 64 * 64 + s;
  return end;
}

}  // namespace

TEST_CASE("the parameter table holds GPT-2's parameter counts", "[model][parameters]") {
  // GPT-2 small and medium as Hugging Face counts them (embedding tied to the LM head), and as
  // llm.c's file holds them: wte padded from 50257 to 50304 rows (train_gpt2.c's 124475904).
  const auto small = kamp::gpt_parameters(shape(50257, 1024, 12, 12, 64, 3072)).table.parameter_count();
  CHECK(small == 124475904);
  CHECK(small - (50304 - 50257) * 768 == 124439808);
  const auto medium = kamp::gpt_parameters(shape(50257, 1024, 24, 16, 64, 4096)).table.parameter_count();
  CHECK(medium - (50304 - 50257) * 1024 == 354823168);
  for (const auto& preset : kamp::gpt_presets()) CHECK(preset.config.padded_vocab() == 50304);
  CHECK(parameter_table(kamp::find_gpt_preset("gpt2-124m").config).parameter_count() == small);
  CHECK_THROWS_WITH(kamp::find_gpt_preset("gpt2-1.5b"),
                    kamp::test::contains("unknown model preset 'gpt2-1.5b'") && kamp::test::contains("gpt2-774m"));
  // kamp's reference model (gpt_config's defaults, "≈ 3.26M parameters").
  CHECK(kamp::gpt_parameters(kamp::gpt_config{}).table.parameter_count() == 3257856);
  // Everything 1 but the vocabulary, counted tensor by tensor: wte 256, wpe 1; the block's two
  // LayerNorms 2 + 2, qkv 3 + 3, attn.proj 1 + 1, mlp.fc 1 + 1, mlp.proj 1 + 1; lnf 2.
  CHECK(kamp::gpt_parameters(shape(256, 1, 1, 1, 1, 1)).table.parameter_count() == 256 + 1 + 4 + 6 + 2 + 2 + 2 + 2);
}

TEST_CASE("the memory planner's parameter estimate is the parameter table's count for every shape",
          "[model][plan][parameters]") {
  // parameter_estimate is a closed formula, so that a shape claiming 10^8 layers is judged
  // without building its table; it must count what the table holds, to the parameter. The
  // published counts pin both to an outside figure.
  CHECK(kamp::parameter_estimate(shape(50257, 1024, 12, 12, 64, 3072)) == 124439808 + (50304 - 50257) * 768);
  CHECK(kamp::parameter_estimate(kamp::gpt_config{}) == 3257856);
  for (const kamp::gpt_config& c : shapes(true)) {
    INFO(described(c));
    const kamp::gpt_parameters p(c);
    REQUIRE(kamp::parameter_estimate(c) == double(p.table.parameter_count()));
  }
}

TEST_CASE("the flat buffers are the parameters with each tensor aligned to 64 elements", "[model][parameters]") {
  for (const kamp::gpt_config& c : shapes(true)) {
    INFO(described(c));
    const kamp::gpt_parameters p(c);
    REQUIRE(p.table.flat_size() == padded_size(c));
    for (const auto& e : p.table.entries()) REQUIRE(e.offset % 64 == 0);
  }
}

TEST_CASE("the planner's persistent bytes are the padded flat buffers times each mode's element sizes",
          "[model][plan][parameters]") {
  // Bytes per element of the model copy, fp32 master weights, and optimizer state (AdamW's two
  // moments; pure_bf16 keeps them in bf16, with a bf16 Kahan compensation buffer or without).
  // Gradients are fp32 in every mode.
  struct per_element {
    kamp::precision_policy policy;
    double model, master, optimizer;
  };
  const std::vector<per_element> modes{
      {policy(kamp::precision_mode::fp32), 4, 0, 4 + 4},
      {policy(kamp::precision_mode::amp_bf16), 2, 4, 4 + 4},
      {policy(kamp::precision_mode::amp_fp16), 2, 4, 4 + 4},
      {policy(kamp::precision_mode::pure_bf16, kamp::pure_bf16_update::kahan), 2, 0, 2 + 2 + 2},
      {policy(kamp::precision_mode::pure_bf16, kamp::pure_bf16_update::stochastic), 2, 0, 2 + 2},
  };
  for (const kamp::gpt_config& c : shapes(false)) {
    const double padded = double(padded_size(c));
    for (const per_element& m : modes) {
      INFO(described(c) << ", " << kamp::name(m.policy.mode) << " " << kamp::name(m.policy.update));
      const kamp::memory_plan plan = kamp::plan_memory(c, m.policy, 1);
      // One View per role, each allocated by Kokkos in whole 8-byte units; the moments (and
      // Kahan buffers) are Views of the model copy's type in pure_bf16, of fp32 otherwise.
      const auto view = [&](double bytes) { return std::ceil(bytes * padded / 8) * 8; };
      const double moment = m.policy.mode == kamp::precision_mode::pure_bf16 ? 2 : 4;
      REQUIRE(plan.parameters == view(m.model));
      REQUIRE(plan.gradients == view(4));
      REQUIRE(plan.master == (m.master > 0 ? view(m.master) : 0.0));
      REQUIRE(plan.optimizer == m.optimizer / moment * view(moment));
      // The refusal from the shape alone (check_memory_fits, before the table is built) never
      // asks for more than the full plan's persistent state: the estimate leaves out padding.
      const kamp::memory_plan early = kamp::plan_state(kamp::parameter_estimate(c), m.policy);
      REQUIRE(early.total() <= plan.parameters + plan.gradients + plan.master + plan.optimizer);
    }
  }
}

TEST_CASE("the parameter table has the tensor count a checkpoint's /model group is checked against",
          "[model][parameters][checkpoint]") {
  // wte, wpe, lnf.weight, lnf.bias, and per block two LayerNorms and four Linears, each a weight
  // and a bias. read_checkpoint refuses a file whose /model link count differs from
  // gpt_parameters::tensor_count(layers) before it builds the table: the count must be the
  // table's (4 + 12 x layers, counted by hand), or valid checkpoints would be refused.
  for (const int layers : {1, 2, 3, 7, 12, 48}) {
    INFO(layers << " layers");
    const kamp::gpt_parameters p(kamp::test::small_model(layers));
    CHECK(p.table.count() == std::size_t(4 + 12 * layers));
    CHECK(kamp::gpt_parameters::tensor_count(layers) == 4 + 12 * layers);
  }
}
