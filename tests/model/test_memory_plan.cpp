// The memory planner: the seeds' arithmetic, the bytes per parameter of each mode, sharding,
// and agreement with what kamp actually allocates (measured through Kokkos' tool callbacks).
#include <kamp/model/precision/memory_plan.hpp>
#include <kamp/model/precision/memory_tracker.hpp>
#include <kamp/model/training/trainer.hpp>

#include "../support/catch.hpp"

#include "../support/fixtures.hpp"
#include "../support/gpt_shapes.hpp"

using kamp::test::policy;

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

TEST_CASE("the plan matches what a trainer allocates, measured through Kokkos' allocation callbacks", "[model][plan]") {
  const auto p = GENERATE(from_range(kamp::test::every_policy()));
  INFO(kamp::name(p.mode) << " " << kamp::name(p.update));
  const kamp::gpt_config config = kamp::test::tiny_model();
  const kamp::token_dataset& data = kamp::test::corpus(config);
  const kamp::train_options o = kamp::test::run_options(4);
  const kamp::memory_tracker memory;
  kamp::trainer t(config, p, o, data);
  t.step();
  const kamp::memory_plan measured = memory.peak(), planned = kamp::plan_memory(config, p, o.batch);
  CHECK(measured.parameters == Approx(planned.parameters).epsilon(0.05));
  CHECK(measured.gradients == Approx(planned.gradients).epsilon(0.05));
  CHECK(measured.master == Approx(planned.master).epsilon(0.05));
  CHECK(measured.optimizer == Approx(planned.optimizer).epsilon(0.05));
  CHECK(measured.activations == Approx(planned.activations).epsilon(0.05));
  CHECK(measured.parameters > 0);
  CHECK(measured.activations > 0);
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
