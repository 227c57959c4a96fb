// The memory planner: the seeds' arithmetic, the bytes per parameter of each mode, sharding,
// agreement with what kamp actually allocates (measured through Kokkos' tool callbacks), and
// the plan from the shape alone against the one summed over the tables the model builds.
#include <kamp/kernels/nn/embedding.hpp>
#include <kamp/model/diagnostics/memory_plan.hpp>
#include <kamp/model/diagnostics/memory_tracker.hpp>
#include <kamp/model/network/activation_layout.hpp>
#include <kamp/model/network/gpt_parameters.hpp>
#include <kamp/model/network/weight_binding.hpp>
#include <kamp/model/training/trainer.hpp>

#include "../support/catch.hpp"

#include "../support/fixtures.hpp"
#include "../support/gpt_shapes.hpp"

#include <algorithm>
#include <string>
#include <vector>

using kamp::test::policy;

namespace {

// The plan summed over the tables a model builds (its parameter table, exactly_read_parameters
// and activation_layout), the way plan_memory worked before it planned from the shape: the
// independent reference its figures must equal to the byte.
kamp::memory_plan table_built_plan(const kamp::gpt_config& model, const kamp::precision_policy& policy, int batch,
                                   int shards, kamp::sharding split, bool reshard_after_forward,
                                   kamp::activation_recompute recompute) {
  model.validate();
  policy.validate(model);
  const kamp::gpt_parameters parameters(model);
  kamp::memory_plan p = kamp::plan_state(double(parameters.table.flat_size()), policy, shards, split);
  if (shards > 1) {
    const kamp::tensor_table exact = kamp::exactly_read_parameters(model, policy);
    if (policy.has_master() && split != kamp::sharding::parameters) p.master += double(exact.parameter_count()) * 4;
    if (split == kamp::sharding::gradients || split == kamp::sharding::parameters) {
      const auto unit_size = [&](std::size_t u, bool exact_only) {
        double n = 0;
        for (const std::size_t t : parameters.units[u])
          if (!exact_only || exact.contains(parameters.table[t].name)) n += double(parameters.table[t].size);
        return n;
      };
      const int blocks = model.layers, gathered = reshard_after_forward ? std::min(blocks, 2) : blocks;
      p.gradients += 4 * (unit_size(0, false) + std::min(blocks, 2) * unit_size(1, false));
      if (split == kamp::sharding::parameters) {
        p.parameters += double(kamp::size_of(policy.low())) * (unit_size(0, false) + gathered * unit_size(1, false));
        if (policy.has_master()) p.master += 4 * (unit_size(0, true) + gathered * unit_size(1, true));
      }
    }
  }
  // Kokkos allocates each View in whole 8-byte units.
  for (const auto& buffer : kamp::activation_layout(model, policy, batch, kamp::dtype::fp32, recompute))
    for (const std::size_t bytes : buffer.bytes) p.activations += double((bytes + 7) / 8 * 8);
  p.activations += double(kamp::gpt_loss_sum_bytes);
  p.activations +=
      double(kamp::token_rows<Kokkos::HostSpace>::bytes(std::size_t(batch) * model.context, model.padded_vocab()));
  return p;
}

// Shapes that leave tensors off the 64-element alignment and reach each term: widths of 1, odd
// widths, several heads, one to five blocks, a context of 1.
std::vector<kamp::gpt_config> plan_shapes() {
  std::vector<kamp::gpt_config> out;
  for (const int context : {1, 7, 32})
    for (const int layers : {1, 2, 5})
      for (const auto& [heads, head_size] : std::vector<std::pair<int, int>>{{1, 1}, {3, 5}, {2, 32}})
        for (const int mlp : {1, 3, 4 * heads * head_size, 1000}) {
          kamp::gpt_config c = kamp::test::gpt_shape(context, layers, heads, heads * head_size, mlp);
          if (context == 7 && mlp == 3) c.vocab = 1000;
          out.push_back(c);
        }
  return out;
}

// The fp32 overrides a policy may carry for `model`: none, one attention, an MLP and the head, a
// name twice, every layer.
std::vector<std::vector<std::string>> overrides(const kamp::gpt_config& model) {
  const int last = model.layers - 1;
  return {{},
          {"h0.attn"},
          {kamp::layer_name(last, kamp::layer_part::mlp), "lm_head"},
          {"h0.mlp", kamp::layer_name(last, kamp::layer_part::attention), "h0.mlp"},
          model.layer_names()};
}

}  // namespace

TEST_CASE("the seeds' arithmetic: 70B parameters are 280 GB in fp32, 140 GB in bf16, 8.75 GB over 16 shards",
          "[model][plan]") {
  CHECK(kamp::plan_state(70e9, policy(kamp::precision_mode::fp32)).parameters == 280e9);
  CHECK(kamp::plan_state(70e9, policy(kamp::precision_mode::pure_bf16)).parameters == 140e9);
  CHECK(kamp::plan_state(70e9, policy(kamp::precision_mode::pure_bf16), 16, kamp::sharding::parameters).parameters ==
        8.75e9);
  // What those figures leave out: AMP keeps fp32 master and moments beside the bf16 copy.
  const auto amp = kamp::bytes_per_parameter(policy(kamp::precision_mode::amp_bf16));
  CHECK(amp.parameters == 2);
  CHECK(amp.gradients == 4);
  CHECK(amp.master == 4);
  CHECK(amp.optimizer == 8);
  CHECK(amp.total() == 18);
  CHECK(kamp::bytes_per_parameter(policy(kamp::precision_mode::fp32)).total() == 16);
  CHECK(kamp::bytes_per_parameter(policy(kamp::precision_mode::pure_bf16)).total() == 12);
  CHECK(
      kamp::bytes_per_parameter(policy(kamp::precision_mode::pure_bf16, kamp::pure_bf16_update::stochastic)).total() ==
      10);
}

TEST_CASE("sharding divides what each ZeRO stage splits by the number of ranks", "[model][plan]") {
  const auto p = policy(kamp::precision_mode::amp_bf16);
  const auto one = kamp::plan_state(1e9, p);
  for (const int shards : {2, 4, 8}) {
    const auto z1 = kamp::plan_state(1e9, p, shards, kamp::sharding::optimizer);
    CHECK(z1.master == one.master / shards);
    CHECK(z1.optimizer == one.optimizer / shards);
    CHECK(z1.gradients == one.gradients);
    CHECK(z1.parameters == one.parameters);
    const auto z2 = kamp::plan_state(1e9, p, shards, kamp::sharding::gradients);
    CHECK(z2.gradients == one.gradients / shards);
    CHECK(z2.parameters == one.parameters);
    CHECK(kamp::plan_state(1e9, p, shards, kamp::sharding::parameters).parameters == one.parameters / shards);
    CHECK(kamp::plan_state(1e9, p, shards, kamp::sharding::none).total() == one.total());
  }
}

TEST_CASE("the plan is what a trainer allocates to the byte, measured through Kokkos' allocation callbacks",
          "[model][plan]") {
  // The tiny model in every mode, and a shape whose buffers are not whole 8-byte units (context 7,
  // width 15 in 3 heads, MLP 33, batch 3), which Kokkos rounds up one by one, in every mode but
  // amp_fp8: the plan does not round its FP8 buffers yet (a few bytes each; docs/precision.md).
  std::vector<std::pair<kamp::precision_policy, bool>> cases;
  for (const kamp::precision_policy& policy : kamp::test::every_policy())
    for (const bool odd_shape : {false, true})
      if (!(odd_shape && policy.fp8())) cases.emplace_back(policy, odd_shape);
  const auto [p, odd] = GENERATE_COPY(from_range(cases));
  const auto recompute = GENERATE(from_range(kamp::activation_recomputes()));
  INFO(kamp::name(p.mode) << " " << kamp::name(p.update) << ", recompute " << kamp::name(recompute)
                          << (odd ? ", odd shape" : ""));
  const kamp::gpt_config config = odd ? kamp::test::gpt_shape(7, 2, 3, 15, 33) : kamp::test::tiny_model();
  const kamp::token_dataset& data = kamp::test::corpus(config);
  kamp::train_options o = kamp::test::run_options(odd ? 3 : 4);
  o.recompute = recompute;
  const kamp::memory_tracker memory;
  kamp::trainer t(config, p, o, data);
  t.step();
  const kamp::memory_plan measured = memory.peak(),
                          planned =
                              kamp::plan_memory(config, p, o.batch, 1, kamp::sharding::optimizer, true, recompute);
  CHECK(measured.parameters == planned.parameters);
  CHECK(measured.gradients == planned.gradients);
  CHECK(measured.master == planned.master);
  CHECK(measured.optimizer == planned.optimizer);
  CHECK(measured.activations == planned.activations);
  CHECK(measured.fp8 == planned.fp8);
  CHECK(measured.parameters > 0);
  CHECK(measured.activations > 0);
  CHECK((measured.fp8 > 0) == p.fp8());
}

TEST_CASE("amp_fp8's buffers as planned, to the byte, with a layer kept out of FP8 and either recipe",
          "[model][plan][fp8]") {
  const kamp::gpt_config config = kamp::test::gpt_shape(16, 2, 2, 32, 96);
  const kamp::token_dataset& data = kamp::test::corpus(config);
  for (const auto recipe : {kamp::fp8_recipe::delayed, kamp::fp8_recipe::current}) {
    for (const std::vector<std::string>& fp32_layers :
         std::vector<std::vector<std::string>>{{}, {"h1.mlp"}, {"h0.attn", "h1.attn"}}) {
      kamp::precision_policy p = policy(kamp::precision_mode::amp_fp8);
      p.recipe = recipe;
      p.amax_history = 7;
      p.fp32_layers = fp32_layers;
      INFO(kamp::name(recipe) << ", " << fp32_layers.size() << " fp32 layers");
      const kamp::train_options o = kamp::test::run_options(3);
      const kamp::memory_tracker memory;
      kamp::trainer t(config, p, o, data);
      t.step();
      CHECK(memory.peak().fp8 == kamp::plan_memory(config, p, o.batch).fp8);
    }
  }
}

TEST_CASE("16-bit layers halve their activation buffers; an fp32 override keeps its layer's", "[model][plan]") {
  const kamp::gpt_config config = kamp::test::gpt_shape(64, 2, 2, 64, 256);
  const double fp32 = kamp::plan_memory(config, policy(kamp::precision_mode::fp32), 8).activations;
  const double bf16 = kamp::plan_memory(config, policy(kamp::precision_mode::amp_bf16), 8).activations;
  auto overridden = policy(kamp::precision_mode::amp_bf16);
  overridden.fp32_layers = {"h1.mlp"};
  const double mixed = kamp::plan_memory(config, overridden, 8).activations;
  CHECK(bf16 < 0.8 * fp32);
  CHECK(mixed > bf16);
  CHECK(mixed < fp32);
}

TEST_CASE("the plan from the shape is the table-built plan to the byte, for every mode, override and sharding",
          "[model][plan]") {
  for (const kamp::gpt_config& model : plan_shapes()) {
    for (const std::vector<std::string>& fp32_layers : overrides(model))
      for (kamp::precision_policy p : kamp::test::every_policy()) {
        p.fp32_layers = fp32_layers;
        for (const auto& [batch, shards] : std::vector<std::pair<int, int>>{{1, 1}, {3, 2}, {2, 3}})
          for (const kamp::sharding split : kamp::sharding_levels())
            for (const bool reshard : {true, false})
              for (const auto recompute : kamp::activation_recomputes()) {
                if (shards == 1 && (split != kamp::sharding::optimizer || !reshard)) continue;
                INFO("context " << model.context << ", layers " << model.layers << ", heads " << model.heads
                                << ", d_model " << model.d_model << ", mlp " << model.mlp << ", vocab " << model.vocab
                                << "; " << kamp::name(p.mode) << " " << kamp::name(p.update) << ", "
                                << p.fp32_layers.size() << " fp32 layers; batch " << batch << ", " << shards
                                << " shards, " << kamp::name(split) << (reshard ? "" : ", kept gathered")
                                << ", recompute " << kamp::name(recompute));
                const kamp::memory_plan planned = kamp::plan_memory(model, p, batch, shards, split, reshard, recompute);
                const kamp::memory_plan built = table_built_plan(model, p, batch, shards, split, reshard, recompute);
                REQUIRE(planned.parameters == built.parameters);
                REQUIRE(planned.gradients == built.gradients);
                REQUIRE(planned.master == built.master);
                REQUIRE(planned.optimizer == built.optimizer);
                REQUIRE(planned.activations == built.activations);
              }
      }
  }
}

TEST_CASE("a shape of 10^8 blocks is planned from its shape, each block adding what the fourth adds", "[model][plan]") {
  // Building its tables would take gigabytes; the plan takes what a plan of 4 blocks takes.
  const int huge = 100000000;
  for (const kamp::precision_policy& p : kamp::test::every_policy()) {
    INFO(kamp::name(p.mode) << " " << kamp::name(p.update));
    const auto plan = [&](int layers) {
      return kamp::plan_memory(kamp::test::gpt_shape(128, layers, 4, 256, 1024), p, 16, 8, kamp::sharding::gradients);
    };
    const kamp::memory_plan three = plan(3), four = plan(4), many = plan(huge);
    const double more = huge - 3;
    CHECK(many.parameters == three.parameters + more * (four.parameters - three.parameters));
    CHECK(many.gradients == three.gradients + more * (four.gradients - three.gradients));
    CHECK(many.fp8 == three.fp8 + more * (four.fp8 - three.fp8));
    CHECK(many.master == three.master + more * (four.master - three.master));
    CHECK(many.optimizer == three.optimizer + more * (four.optimizer - three.optimizer));
    CHECK(many.activations == three.activations + more * (four.activations - three.activations));
  }
  auto last = policy(kamp::precision_mode::amp_bf16);
  last.fp32_layers = {kamp::layer_name(huge - 1, kamp::layer_part::mlp)};
  CHECK(kamp::plan_memory(kamp::test::gpt_shape(128, huge, 4, 256, 1024), last, 16).activations >
        kamp::plan_memory(kamp::test::gpt_shape(128, huge, 4, 256, 1024), policy(kamp::precision_mode::amp_bf16), 16)
            .activations);
}

TEST_CASE("an fp32 override naming no layer is refused in the policy's own words", "[model][plan]") {
  const kamp::gpt_config model = kamp::test::small_model(2);
  for (const std::string name :
       {"h2.attn", "h01.attn", "h0.attention", "h0", "lm_head2", "h-1.mlp", "", "attn", "h99999999999999999999.mlp"}) {
    INFO("'" << name << "'");
    auto p = policy(kamp::precision_mode::amp_bf16);
    p.fp32_layers = {"h1.mlp", name};
    std::string policy_says;
    try {
      p.validate(model);
    } catch (const std::invalid_argument& e) {
      policy_says = e.what();
    }
    REQUIRE_FALSE(policy_says.empty());
    CHECK_THROWS_WITH(kamp::plan_memory(model, p, 4), policy_says);
  }
}
