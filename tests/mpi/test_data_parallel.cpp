// Data-parallel training on the ranks of mpirun: equivalence with one process, identical model
// copies, agreement on skipped steps, resharding checkpoints, per-rank memory.
#include <kamp/model/checkpoint.hpp>
#include <kamp/model/memory_plan.hpp>
#include <kamp/model/memory_tracker.hpp>
#include <kamp/model/trainer.hpp>

#include "../support/catch.hpp"

#include "../support/gpt_shapes.hpp"
#include "world.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>

namespace {

using kamp::test::world;

kamp::gpt_config tiny_model() { return kamp::test::gpt_shape(32, 2, 2, 64, 256); }

// Per-rank batch 4: one process takes batch 4 x ranks.
kamp::train_options run_options(int batch, int steps) {
  kamp::train_options o;
  o.batch = batch;
  o.steps = steps;
  o.lr = 2e-3f;
  o.warmup = 5;
  o.seed = 11;
  return o;
}

const kamp::token_dataset& corpus() {
  static const kamp::token_dataset data(kamp::default_corpus(1 << 18), 0.1, tiny_model().context, "test corpus");
  return data;
}

kamp::precision_policy policy(kamp::precision_mode mode,
                              kamp::pure_bf16_update update = kamp::pure_bf16_update::kahan) {
  kamp::precision_policy p;
  p.mode = mode;
  p.update = update;
  return p;
}

std::vector<unsigned char> as_bytes(const std::vector<std::uint32_t>& v) {
  std::vector<unsigned char> b(v.size() * sizeof(std::uint32_t));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// True on every rank when every rank holds the same bytes as rank 0.
bool same_on_all_ranks(const std::vector<unsigned char>& mine) {
  std::vector<unsigned char> root = mine;
  world().broadcast(root, 0);
  return world().all(root == mine);
}

bool same_state(const kamp::training_state& a, const kamp::training_state& b) {
  if (a.steps_taken != b.steps_taken || a.attempts != b.attempts ||
      std::memcmp(&a.scaler, &b.scaler, sizeof a.scaler) != 0 || a.tensors.size() != b.tensors.size())
    return false;
  for (std::size_t i = 0; i < a.tensors.size(); ++i)
    if (a.tensors[i].role != b.tensors[i].role || a.tensors[i].type != b.tensors[i].type ||
        a.tensors[i].bytes != b.tensors[i].bytes)
      return false;
  return true;
}

// Rank 0 holds the gathered state; the verdict is shared so that every rank asserts the same.
bool root_state_is(const kamp::trainer& t, const kamp::training_state& expected) {
  const kamp::training_state s = t.state();
  return world().all(world().rank() != 0 || same_state(s, expected));
}

double relative(double a, double b) { return std::abs(a - b) / std::max(std::abs(b), 1e-30); }

double max_relative_weight_difference(const std::vector<float>& a, const std::vector<float>& b) {
  double scale = 0, worst = 0;
  for (const float x : b) scale = std::max(scale, double(std::abs(x)));
  for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(double(a[i]) - double(b[i])));
  return worst / scale;
}

}  // namespace

TEST_CASE("N ranks with batch B take the steps of one process with batch N x B", "[mpi][equivalence]") {
  struct variant {
    kamp::precision_policy p;
    kamp::dtype wire;
    double loss_tolerance, weight_tolerance;
  };
  // fp32: the ranks' partial sums only reorder fp32 additions. The 16-bit modes round the model
  // copy from master weights that differ in their last bits, and a bf16 wire rounds every
  // partial sum: a few of those roundings go the other way.
  // Measured on 2 ranks: fp32 1e-8 and 3e-6; amp_bf16 1e-5 and 5e-3; with a bf16 wire 3e-5 and
  // 9e-3; pure_bf16 1e-5 and 3e-3.
  const variant v = GENERATE(variant{policy(kamp::precision_mode::fp32), kamp::dtype::fp32, 1e-6, 2e-5},
                             variant{policy(kamp::precision_mode::amp_bf16), kamp::dtype::fp32, 5e-4, 2e-2},
                             variant{policy(kamp::precision_mode::amp_bf16), kamp::dtype::bf16, 2e-3, 3e-2},
                             variant{policy(kamp::precision_mode::pure_bf16), kamp::dtype::fp32, 5e-4, 2e-2});
  const int ranks = world().size(), steps = 24, batch = 4;
  INFO(kamp::name(v.p.mode) << ", gradients reduced in " << kamp::name(v.wire) << ", " << ranks << " ranks");
  kamp::trainer parallel(tiny_model(), v.p, run_options(batch, steps), corpus(), {world(), v.wire});
  kamp::trainer one(tiny_model(), v.p, run_options(batch * ranks, steps), corpus());
  double worst_loss = 0;
  for (int s = 0; s < steps; ++s) {
    const auto a = parallel.step(), b = one.step();
    REQUIRE(a.skipped == b.skipped);
    REQUIRE(a.tokens == b.tokens);
    worst_loss = std::max(worst_loss, relative(a.loss, b.loss));
    // Every rank computes with bitwise the same model copy after every step.
    REQUIRE(same_on_all_ranks(as_bytes(parallel.model_copy_bits())));
  }
  const double worst_weight = max_relative_weight_difference(parallel.exact_weights(), one.exact_weights());
  if (world().rank() == 0)
    std::printf("%s, %s reduction, %d ranks x batch %d vs 1 x batch %d over %d steps: max relative loss difference "
                "%.2e, max weight difference %.2e of max |w|\n",
                kamp::name(v.p.mode), kamp::name(v.wire), ranks, batch, batch * ranks, steps, worst_loss,
                worst_weight);
  CHECK(worst_loss <= v.loss_tolerance);
  CHECK(worst_weight <= v.weight_tolerance);
  // The ranks' validation batches are rows of one process's: the same windows.
  CHECK(relative(parallel.validation_loss(4), one.validation_loss(4)) <= v.loss_tolerance);
}

TEST_CASE("an overflow on one rank makes every rank skip the step", "[mpi][overflow]") {
  const int ranks = world().size(), last = ranks - 1;
  kamp::trainer t(tiny_model(), policy(kamp::precision_mode::amp_fp16), run_options(4, 8), corpus(), {world()});
  int step = 0;
  // inf on the last rank in element 0 (rank 0's shard), NaN on rank 0 in the last element (the
  // last rank's shard): the reduce-scatter carries each to another rank's check.
  t.on_gradients([&](const Kokkos::View<float*, kamp::gpt<float>::memory_space>& g) {
    const float bad = step == 3 && world().rank() == last   ? std::numeric_limits<float>::infinity()
                      : step == 5 && world().rank() == 0     ? std::numeric_limits<float>::quiet_NaN()
                                                             : 0.0f;
    if (bad == 0.0f) return;
    const std::size_t i = step == 3 ? 0 : g.extent(0) - 1;
    Kokkos::deep_copy(Kokkos::subview(g, i), bad);
  });
  for (step = 1; step <= 7; ++step) {
    INFO("step " << step);
    const auto before = as_bytes(t.model_copy_bits());
    const float scale = t.scaler().host_state().scale;
    const auto r = t.step();
    const bool injected = step == 3 || step == 5;
    // Every rank reports the same verdict; a skipped step leaves the copy bitwise unchanged.
    REQUIRE(world().all(r.skipped == injected));
    REQUIRE(world().all(!injected || as_bytes(t.model_copy_bits()) == before));
    const kamp::loss_scale_state s = t.scaler().host_state();
    REQUIRE(world().all(!injected || s.scale == scale / 2));
    std::vector<unsigned char> scaler(sizeof s);
    std::memcpy(scaler.data(), &s, sizeof s);
    REQUIRE(same_on_all_ranks(scaler));
    REQUIRE(same_on_all_ranks(as_bytes(t.model_copy_bits())));
  }
  REQUIRE(t.steps_taken() == 5);
  REQUIRE(t.scaler().host_state().skipped_steps == 2);
}

TEST_CASE("a checkpoint written by N ranks resumes on one process, and one written by one process on N ranks",
          "[mpi][checkpoint]") {
  const auto p = GENERATE(policy(kamp::precision_mode::amp_bf16),
                          policy(kamp::precision_mode::pure_bf16, kamp::pure_bf16_update::stochastic));
  const int ranks = world().size(), batch = 4, half = 6;
  INFO(kamp::name(p.mode) << ", " << ranks << " ranks");
  const std::string file = "mpi_resume_" + std::to_string(ranks) + ".h5";
  const auto write = [&](const kamp::training_state& s) {
    if (world().rank() == 0) kamp::write_checkpoint(file, s);
    REQUIRE(world().all(true));  // the file is complete before any rank reads it
  };
  const auto options = run_options(batch, 2 * half), one_options = run_options(batch * ranks, 2 * half);

  SECTION("N ranks -> N ranks bit-exactly, and -> one process") {
    kamp::trainer parallel(tiny_model(), p, options, corpus(), {world()});
    for (int s = 0; s < half; ++s) parallel.step();
    write(parallel.state());
    std::vector<double> losses;
    for (int s = 0; s < half; ++s) losses.push_back(parallel.step().loss);
    const kamp::training_state end = parallel.state();

    kamp::trainer resumed(tiny_model(), p, options, corpus(), {world()});
    resumed.restore(kamp::read_checkpoint(file));
    for (int s = 0; s < half; ++s) REQUIRE(resumed.step().loss == losses[s]);
    REQUIRE(root_state_is(resumed, end));

    // One process takes the whole state; it continues the same run within the N-rank tolerance.
    kamp::trainer one(tiny_model(), p, one_options, corpus());
    const kamp::training_state saved = kamp::read_checkpoint(file);
    one.restore(saved);
    REQUIRE(same_state(one.state(), saved));
    for (int s = 0; s < half; ++s) CHECK(relative(one.step().loss, losses[s]) < 2e-3);
  }
  SECTION("one process -> N ranks") {
    kamp::trainer one(tiny_model(), p, one_options, corpus());
    for (int s = 0; s < half; ++s) one.step();
    const kamp::training_state saved = one.state();
    write(saved);
    kamp::trainer parallel(tiny_model(), p, options, corpus(), {world()});
    parallel.restore(kamp::read_checkpoint(file));
    // Gathering the N shards gives back the one process's state bitwise.
    REQUIRE(root_state_is(parallel, saved));
    REQUIRE(same_on_all_ranks(as_bytes(parallel.model_copy_bits())));
    for (int s = 0; s < half; ++s) CHECK(relative(parallel.step().loss, one.step().loss) < 2e-3);
  }
  SECTION("a state that does not fit on one rank is refused on every rank") {
    kamp::trainer parallel(tiny_model(), p, options, corpus(), {world()});
    parallel.step();
    const auto before = parallel.model_copy_bits();
    kamp::trainer one(tiny_model(), p, one_options, corpus());
    one.step();
    kamp::training_state s = one.state();
    if (world().rank() == world().size() - 1) s.steps_taken = -1;
    bool refused = false;
    try {
      parallel.restore(s);
    } catch (const std::invalid_argument&) {
      refused = true;
    }
    REQUIRE(world().all(refused));
    REQUIRE(world().all(parallel.model_copy_bits() == before));
    REQUIRE(parallel.attempts() == 1);
  }
  if (world().rank() == 0) std::remove(file.c_str());
}

TEST_CASE("each rank keeps 1/N of the master weights and optimizer moments", "[mpi][memory]") {
  const auto p = GENERATE(policy(kamp::precision_mode::fp32), policy(kamp::precision_mode::amp_bf16),
                          policy(kamp::precision_mode::pure_bf16));
  const int ranks = world().size();
  INFO(kamp::name(p.mode) << ", " << ranks << " ranks");
  kamp::memory_plan measured;
  {
    kamp::memory_tracker tracker;
    kamp::trainer t(tiny_model(), p, run_options(4, 2), corpus(), {world()});
    t.step();
    measured = tracker.peak();
  }
  const kamp::memory_plan planned = kamp::plan_memory(tiny_model(), p, 4, ranks, kamp::sharding::optimizer);
  const kamp::memory_plan one = kamp::plan_memory(tiny_model(), p, 4);
  const auto near = [](double a, double b) { return std::abs(a - b) <= 0.05 * b + 1024; };
  CHECK(near(measured.parameters, planned.parameters));
  CHECK(near(measured.gradients, planned.gradients));
  CHECK(near(measured.master, planned.master));
  CHECK(near(measured.optimizer, planned.optimizer));
  // Moments (and Kahan buffers) fall as 1/N exactly up to one alignment block per shard.
  CHECK(std::abs(measured.optimizer * ranks - one.optimizer) <= 64.0 * 8 * ranks);
  if (world().rank() == 0)
    std::printf("%s on %d ranks, per rank (MB): parameters %.3f, gradients %.3f, master %.3f, optimizer %.3f; "
                "one process: %.3f, %.3f, %.3f, %.3f\n",
                kamp::name(p.mode), ranks, measured.parameters / 1e6, measured.gradients / 1e6, measured.master / 1e6,
                measured.optimizer / 1e6, one.parameters / 1e6, one.gradients / 1e6, one.master / 1e6,
                one.optimizer / 1e6);
}
