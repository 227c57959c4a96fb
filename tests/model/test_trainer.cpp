// Training behaviour of the whole loop in every precision mode, on a tiny model.
#include <kamp/model/training/trainer.hpp>

#include "../support/catch.hpp"

#include "../support/fixtures.hpp"
#include "../support/gpt_shapes.hpp"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include <sys/stat.h>
#include <unistd.h>

namespace {

using kamp::test::policy;
using kamp::test::tiny_corpus;
using kamp::test::tiny_model;

// The runs of this file: batch 8, peak learning rate 2e-3 after 10 warm-up steps, seed 5.
kamp::train_options tiny_run(int steps) { return kamp::test::run_options(8, steps, 2e-3f, 10, 5); }

// Trains until `steps` optimizer steps are taken; returns the mean loss of the last 10.
double train(kamp::trainer& t) {
  std::vector<double> losses;
  while (t.steps_taken() < t.options().steps) {
    const auto r = t.step();
    if (!r.skipped) losses.push_back(r.loss);
  }
  double tail = 0;
  for (std::size_t i = losses.size() - 10; i < losses.size(); ++i) tail += losses[i] / 10;
  return tail;
}

}  // namespace

TEST_CASE("the loss of a tiny model falls in every precision mode", "[model][train]") {
  const auto p = GENERATE(from_range(kamp::test::every_policy()));
  INFO(kamp::name(p.mode) << " " << kamp::name(p.update));
  kamp::trainer t(tiny_model(), p, tiny_run(150), tiny_corpus());
  const double initial = t.validation_loss(4);
  CHECK(initial == Approx(std::log(256.0)).epsilon(0.05));  // an untrained model is nearly uniform
  const double final_loss = train(t);
  INFO("train loss " << final_loss);
  CHECK(final_loss < 2.6);  // uniform is 5.55; the corpus' sentences are learnable
  CHECK(t.validation_loss(4) < 2.7);
}

TEST_CASE("amp_bf16 and amp_fp16 end within 1% of fp32 on the default data", "[model][train]") {
  // The final loss on the same 16 validation batches for every mode (a step's training loss
  // alone varies by a few percent from batch to batch), at the end of a schedule that reaches a
  // plateau: in the middle of a steep descent the modes' curves are shifted by a few steps,
  // which shows as a few percent of loss without meaning the end result differs.
  const auto final_loss = [](kamp::precision_mode mode) {
    auto options = tiny_run(300);
    options.lr = 1e-3f;
    kamp::trainer t(tiny_model(), policy(mode), options, tiny_corpus());
    train(t);
    return t.validation_loss(16);
  };
  const double fp32 = final_loss(kamp::precision_mode::fp32);
  const double bf16 = final_loss(kamp::precision_mode::amp_bf16);
  const double fp16 = final_loss(kamp::precision_mode::amp_fp16);
  INFO("fp32 " << fp32 << ", amp_bf16 " << bf16 << ", amp_fp16 " << fp16);
  CHECK(std::abs(bf16 - fp32) < 0.01 * fp32);
  CHECK(std::abs(fp16 - fp32) < 0.01 * fp32);
}

TEST_CASE("an overflowing step is skipped: weights bitwise unchanged, scale backed off, schedule held",
          "[model][train]") {
  kamp::trainer t(tiny_model(), policy(kamp::precision_mode::amp_fp16), tiny_run(10), tiny_corpus());
  for (int i = 0; i < 3; ++i) REQUIRE_FALSE(t.step().skipped);
  const auto weights = t.exact_weights();
  const auto copy = t.model_copy_bits();
  const std::int64_t taken = t.steps_taken();
  // A loss scale near fp32's maximum: the fp16 gradients overflow for real in the backward pass.
  auto state = t.scaler().host_state();
  state.scale = 3.0e38f;
  t.scaler().restore(state);
  const auto r = t.step();
  CHECK(r.skipped);
  CHECK(t.steps_taken() == taken);
  CHECK(t.scaler().host_state().scale == 1.5e38f);
  CHECK(t.scaler().host_state().skipped_steps == 1);
  const auto after = t.exact_weights();
  CHECK(std::memcmp(after.data(), weights.data(), weights.size() * sizeof(float)) == 0);
  CHECK(t.model_copy_bits() == copy);
  // The learning rate of the retried step is the one the skipped step would have used.
  CHECK(t.learning_rate(t.steps_taken()) == r.lr);
}

TEST_CASE("a layer overridden to fp32 really computes in fp32", "[model][precision]") {
  auto p = policy(kamp::precision_mode::amp_bf16);
  p.fp32_layers = {"h1.mlp"};
  kamp::trainer t(tiny_model(), p, tiny_run(5), tiny_corpus());
  t.step();
  t.step();
  CHECK(t.model().activation_dtype("h1.mlp") == kamp::dtype::fp32);
  CHECK(t.model().activation_dtype("h0.mlp") == kamp::dtype::bf16);
  // The overridden GEMM reads fp32 activations (most are not bf16 values); the others bf16.
  const auto representable = [](const std::vector<double>& x) {
    std::size_t n = 0;
    for (double v : x) {
      const float f = float(v);
      std::uint32_t bits;
      std::memcpy(&bits, &f, 4);
      n += (bits & 0xffffu) == 0;
    }
    return double(n) / double(x.size());
  };
  CHECK(representable(t.model().gemm_input("h1.mlp")) < 0.01);
  CHECK(representable(t.model().gemm_input("h0.mlp")) == 1.0);

  // With every layer overridden, amp_bf16 computes exactly what fp32 computes.
  auto all = policy(kamp::precision_mode::amp_bf16);
  all.fp32_layers = tiny_model().layer_names();
  kamp::trainer amp(tiny_model(), all, tiny_run(3), tiny_corpus());
  kamp::trainer fp32(tiny_model(), policy(kamp::precision_mode::fp32), tiny_run(3), tiny_corpus());
  for (int i = 0; i < 3; ++i) CHECK(amp.step().loss == fp32.step().loss);

  auto bad = policy(kamp::precision_mode::amp_bf16);
  bad.fp32_layers = {"h7.mlp"};
  CHECK_THROWS_WITH(kamp::trainer(tiny_model(), bad, tiny_run(3), tiny_corpus()),
                    kamp::test::contains("fp32 override 'h7.mlp' names no layer"));
}

TEST_CASE("training is deterministic for a seed", "[model][train]") {
  const auto losses = [](std::uint64_t seed) {
    auto o = tiny_run(5);
    o.seed = seed;
    kamp::trainer t(tiny_model(), policy(kamp::precision_mode::pure_bf16), o, tiny_corpus());
    std::vector<double> out;
    for (int i = 0; i < 5; ++i) out.push_back(t.step().loss);
    out.push_back(t.validation_loss(2));
    return out;
  };
  CHECK(losses(9) == losses(9));
  CHECK(losses(9) != losses(10));
}

TEST_CASE("bad configurations are rejected before anything is allocated", "[model]") {
  auto c = tiny_model();
  c.d_model = 63;
  CHECK_THROWS_WITH(kamp::trainer(c, policy(kamp::precision_mode::fp32), tiny_run(1), tiny_corpus()),
                    kamp::test::contains("d_model 63 is not a positive multiple of heads 2"));
  auto o = tiny_run(1);
  o.lr = -1;
  CHECK_THROWS_WITH(kamp::trainer(tiny_model(), policy(kamp::precision_mode::fp32), o, tiny_corpus()),
                    kamp::test::contains("lr must be finite and > 0"));
  CHECK_THROWS_WITH(kamp::token_dataset("short text", 0.1, 32, "inline"),
                    kamp::test::contains("each part needs at least"));
  CHECK_THROWS_WITH(kamp::token_dataset::from_path("/nonexistent/corpus.txt", 0.1, 32),
                    kamp::test::contains("'/nonexistent/corpus.txt' does not exist"));
}

TEST_CASE("a data directory gives its text files in path order and skips binary ones", "[model][data]") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("kamp_data_dir_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "b");
  const auto write = [](const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; };
  const std::string first(40, 'x'), second(30, 'y');
  write(dir / "b" / "two.txt", second);
  write(dir / "a.txt", first);
  write(dir / "a.dat", std::string("index\0\1", 7));
  fs::create_symlink(dir / "a.txt", dir / "c_link.txt");  // read once, as its target
  const auto data = kamp::token_dataset::from_path(dir.string(), 0.25, 8);
  std::string seen;
  for (const auto part : {kamp::token_dataset::split::train, kamp::token_dataset::split::validation})
    for (const kamp::token_segment& s : data.segments(part)) seen.append(s.tokens, s.tokens + s.size);
  CHECK(seen == first + second);
  REQUIRE(data.skipped().size() == 1);
  CHECK(fs::path(data.skipped()[0]).filename() == "a.dat");
  CHECK_THAT(data.source(), kamp::test::contains("2 files"));
  fs::remove(dir / "a.txt");
  fs::remove_all(dir / "b");
  CHECK_THROWS_WITH(kamp::token_dataset::from_path(dir.string(), 0.25, 8), kamp::test::contains("holds no text file"));
  fs::remove_all(dir);
}

TEST_CASE("a data file named alone is a regular text file, its kind checked before it is opened", "[model][data]") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("kamp_data_file_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  // Opening a FIFO would wait for a writer forever: the check must come first.
  const std::string fifo = (dir / "fifo").string();
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK(kamp::special_file_kind(fifo) == "a FIFO (named pipe)");
  CHECK_THROWS_WITH(kamp::token_dataset::from_path(fifo, 0.25, 8),
                    kamp::test::contains("is a FIFO (named pipe), not a text file"));
  CHECK_THROWS_WITH(kamp::token_dataset::from_path("/dev/zero", 0.25, 8),
                    kamp::test::contains("'/dev/zero' is a character device, not a text file"));
  // Binary content past the first block is found too.
  std::ofstream(dir / "binary.dat", std::ios::binary) << std::string((1 << 20) + 100, 'x') << '\0';
  CHECK_THROWS_WITH(kamp::token_dataset::from_path((dir / "binary.dat").string(), 0.25, 8),
                    kamp::test::contains("holds NUL bytes: it is a binary file"));
  CHECK(kamp::special_file_kind((dir / "binary.dat").string()).empty());
  CHECK(kamp::special_file_kind(dir.string()).empty());
  fs::remove_all(dir);
}

TEST_CASE("a run that diverges is told so, not sent to an earlier checkpoint", "[model][train]") {
  auto o = tiny_run(3);
  o.lr = 1e30f;
  kamp::trainer t(tiny_model(), policy(kamp::precision_mode::amp_fp16), o, tiny_corpus());
  t.step();
  const kamp::training_state diverged = t.state();
  t.step();
  // Restoring its own earlier state (as the precision doctor does): the run itself diverged.
  CHECK_THROWS_WITH(t.restore(diverged), kamp::test::contains("turned non-finite in this run, by step 1") &&
                                             kamp::test::contains("smaller --lr (this run's peak is 1e+30)"));
  // A trainer whose weights are finite: the state came diverged from elsewhere, a checkpoint.
  kamp::trainer fresh(tiny_model(), policy(kamp::precision_mode::amp_fp16), o, tiny_corpus());
  CHECK_THROWS_WITH(fresh.restore(diverged), kamp::test::contains("resume from an earlier checkpoint"));
}

TEST_CASE("the device-side schedule gives each step warm-up then cosine decay", "[model][schedule]") {
  auto o = tiny_run(9);
  o.warmup = 3;
  o.min_lr_ratio = 0.25f;
  kamp::trainer t(tiny_model(), policy(kamp::precision_mode::amp_bf16), o, tiny_corpus());
  // The reference in fp64: (s + 1)/warmup · peak, then floor + (peak − floor)(1 + cos(π p))/2.
  const double peak = o.lr, floor = peak * o.min_lr_ratio;
  for (int s = 0; s < o.steps; ++s) {
    const double want = s < o.warmup ? peak * (s + 1) / o.warmup
                                     : floor + 0.5 * (peak - floor) *
                                                   (1.0 + std::cos(M_PI * double(s - o.warmup) / (o.steps - o.warmup)));
    const auto r = t.step();
    INFO("step " << s);
    CHECK(r.lr == Approx(want).epsilon(1e-6));
  }
}
