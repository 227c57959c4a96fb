// kamp-bench: kamp's kernels measured against references run in the same process (STREAM
// triad for bandwidth-bound kernels), printed as a table and written as JSON.
#include "amp_kernels.hpp"
#include "checkpoint.hpp"
#include "gemm.hpp"
#include "mlp.hpp"
#include "report.hpp"
#include "shape.hpp"
#include "train.hpp"

#include <kamp/kamp.hpp>
#include <kamp/model/state/file_rules.hpp>

#include <CLI/CLI.hpp>

#include "../train/model_options.hpp"

#include <algorithm>
#include <cstdio>
#include <thread>

int main(int argc, char* argv[]) {
  CLI::App app{"kamp-bench: GB/s of kamp's kernels as ratios to a STREAM triad measured in the same run"};
  std::size_t elements = std::size_t(1) << 25;
  int repeat = 10;
  std::string json_path;
  std::string suite = "all";
  bool large = false;
  app.add_option("--elements", elements, "flat buffer size; >= 2^24 keeps every array above a 32 MiB L3 (default 2^25)")
      ->check(CLI::Range(std::size_t(100000), std::size_t(1) << 31));
  app.add_option("--repeat", repeat, "timed runs per kernel; the median is reported (default 10)")
      ->check(CLI::Range(1, 1000));
  app.add_option("--json", json_path, "also write the results to this JSON file");
  int train_steps = 20;
  app.add_option("--suite", suite,
                 "which benchmarks: amp, gemm, train, checkpoint or all (default all); or shape: training steps of "
                 "the model the model options give (tools/bench-scaling.sh); or mlp: training sessions of surrogate "
                 "MLPs against PyTorch (Debian's python3-torch) in the same run; shape and mlp are not part of all")
      ->check(CLI::IsMember({"amp", "gemm", "train", "checkpoint", "all", "shape", "mlp"}));
  int rounds = 3;
  app.add_option("--rounds", rounds, "mlp suite: rounds of kamp and PyTorch in alternation (default 3)")
      ->check(CLI::Range(1, 100));
  kamp::gpt_config shape;
  int shape_batch = 4;
  std::vector<std::string> shape_modes{"fp32", "amp_bf16"};
  std::string recompute = "none";
  kamp::app::add_model_options(app, shape);
  kamp::app::add_recompute_option(app, recompute);
  app.add_option("--batch", shape_batch, "shape and train suites: sequences per step (train: default 16)")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  app.add_option("--modes", shape_modes, "shape suite: precision modes, each timed in turn")
      ->delimiter(',')
      ->check(CLI::IsMember({"fp32", "amp_bf16", "amp_fp16", "pure_bf16"}));
  std::string checkpoint_dir = ".";
  app.add_option("--checkpoint-dir", checkpoint_dir,
                 "where the checkpoint benchmark writes its scratch files (default: the current directory)");
  app.add_option("--train-steps", train_steps, "timed training steps per precision mode (default 20)")
      ->check(CLI::Range(1, 10000));
  app.add_flag("--large", large, "also GEMM 2048^3 (slow with the portable kernel on few cores)");
  bool profile = false;
  app.add_flag("--profile", profile,
               "train suite: also where a step's time goes, per GEMM region and kernel label (Kokkos Tools)");
  CLI11_PARSE(app, argc, argv);

  // Before the benchmarks: a --json that cannot be written must not cost their run.
  try {
    if (!json_path.empty()) kamp::check_output({"--json", json_path}, kamp::output_kind::document);
  } catch (const kamp::file_rule_error& e) {
    std::fprintf(stderr, "kamp-bench: error: %s\n", e.what());
    return 1;
  }
  Kokkos::ScopeGuard kokkos(argc, argv);
  nlohmann::json context = {{"kamp_version", KAMP_VERSION_STRING},
                            {"execution_space", Kokkos::DefaultExecutionSpace::name()},
                            {"concurrency", Kokkos::DefaultExecutionSpace().concurrency()},
                            {"elements", elements},
                            {"repeat", repeat}};
  std::printf("kamp-bench on %s (concurrency %d), %zu elements, median of %d runs\n",
              Kokkos::DefaultExecutionSpace::name(), Kokkos::DefaultExecutionSpace().concurrency(), elements, repeat);
  kamp::bench::report out(context);
  if (suite == "amp" || suite == "all") {
    const kamp::bench::stream_triad triad(elements);
    const auto alone = kamp::bench::time_against(repeat, triad, triad);
    const double triad_gbs = triad.bytes() / alone.seconds / 1e9;
    out.value("stream_triad_gb_per_s", triad_gbs);
    std::printf("  %-44s %8.2f GB/s  (reference; every kernel below alternates with it)\n", "STREAM triad fp32",
                triad_gbs);
    kamp::bench::amp_kernels(out, elements, repeat, triad);
  }
  if (suite == "gemm" || suite == "all") kamp::bench::gemm_kernels(out, repeat, large);
  // The train suite runs the reference GPT unless the model options or --batch say otherwise.
  if (suite == "train" || suite == "all")
    kamp::bench::training_steps(out, shape, app.count("--batch") > 0 ? shape_batch : 0, train_steps, profile);
  if (suite == "checkpoint" || suite == "all") kamp::bench::checkpoints(out, std::min(repeat, 5), checkpoint_dir);
  if (suite == "mlp") kamp::bench::mlp_sessions(out, train_steps, rounds, KAMP_BENCH_SCRIPTS);
  if (suite == "shape") {
    std::vector<kamp::precision_mode> modes;
    for (const std::string& m : shape_modes) modes.push_back(kamp::parse_precision_mode(m));
    kamp::bench::shape_throughput(out, shape, shape_batch, train_steps, modes,
                                  kamp::parse_activation_recompute(recompute));
  }

  if (!json_path.empty()) {
    try {
      kamp::replacement_file f({"--json", json_path});
      std::fputs((out.doc().dump(2) + '\n').c_str(), f.stream());
      f.commit();
    } catch (const kamp::file_rule_error& e) {
      std::fprintf(stderr, "kamp-bench: error: %s\n", e.what());
      return 1;
    }
    std::printf("results written to %s\n", json_path.c_str());
  }
  return 0;
}
