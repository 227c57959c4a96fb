// kamp-train: trains the GPT with kamp's kernels in the chosen precision mode.
#include <kamp/model/decoder.hpp>
#include <kamp/model/doctor.hpp>
#include <kamp/model/memory_plan.hpp>
#include <kamp/model/memory_tracker.hpp>
#include <kamp/model/precision_rules.hpp>
#include <kamp/model/trainer.hpp>

#include <CLI/CLI.hpp>
#include <Kokkos_Core.hpp>
#include <nlohmann/json.hpp>

#include "train/checkpointing.hpp"
#include "train/config_file.hpp"
#include "train/loss_watch.hpp"
#include "train/metrics.hpp"
#include "train/model_options.hpp"

#include <algorithm>
#include <set>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>

namespace {

struct run_settings {
  kamp::gpt_config model;
  kamp::app::precision_options precision;
  kamp::precision_policy policy;
  kamp::train_options train;
  std::string data, metrics, summary;
  double validation_fraction = 0.1;
  int eval_every = 50, eval_batches = 8, log_every = 10, sample_every = 0, sample_tokens = 64;
  std::string checkpoint_dir = "checkpoints", checkpoint_every = "0", resume;
  int keep_checkpoints = 3;
  kamp::run_request request;
  bool diagnose = false, overwrite_checkpoints = false;
  std::string gradient_reduction = "fp32";
  std::string sharding = "optimizer";
  bool reshard_after_forward = true;
};

void add_options(CLI::App& app, run_settings& s) {
  app.config_formatter(std::make_shared<kamp::app::toml_or_json_config>(std::set<std::string>{"fp32-layers"}));
  app.allow_config_extras(CLI::config_extras_mode::error);
  // A repeated option takes its last value, so scripts can append overrides.
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.set_config("--config", "", "Read options from a TOML file (key = value) or a JSON object; keys are the long "
                                 "option names below without dashes, e.g. steps = 500. Command-line options win.");
  kamp::app::add_precision_options(app, s.precision);
  app.add_option("--steps", s.train.steps, "Optimizer steps to take (skipped steps are retried)")->capture_default_str();
  app.add_option("--batch", s.train.batch, "Sequences per micro-batch")->capture_default_str();
  app.add_option("--micro-batches", s.train.micro_batches,
                 "Micro-batches accumulated (in fp32) per optimizer step: effective batch = batch x this")
      ->capture_default_str();
  app.add_option("--lr", s.train.lr, "Peak learning rate (AdamW)")->capture_default_str();
  app.add_option("--warmup", s.train.warmup, "Linear learning-rate warm-up steps, then cosine decay")
      ->capture_default_str();
  app.add_option("--min-lr-ratio", s.train.min_lr_ratio, "Cosine decay ends at lr x this")->capture_default_str();
  app.add_option("--weight-decay", s.train.adamw.weight_decay, "AdamW decoupled weight decay (all parameters)")
      ->capture_default_str();
  app.add_option("--beta1", s.train.adamw.beta1, "AdamW beta1")->capture_default_str();
  app.add_option("--beta2", s.train.adamw.beta2, "AdamW beta2")->capture_default_str();
  app.add_option("--eps", s.train.adamw.eps, "AdamW epsilon")->capture_default_str();
  app.add_option("--grad-clip", s.train.grad_clip, "Clip the global gradient L2 norm to this (0: off)")
      ->capture_default_str();
  app.add_option("--seed", s.train.seed, "Seed of the initial weights, the data order and stochastic rounding")
      ->check(CLI::Validator(
          [](const std::string& v) {
            return v.find('-') == std::string::npos ? std::string()
                                                    : "the seed is a non-negative integer, got " + v;
          },
          "NONNEGATIVE"))
      ->capture_default_str();
  app.add_option("--loss-scale", s.train.scaler.init_scale, "amp_fp16: initial loss scale")->capture_default_str();
  app.add_option("--loss-scale-growth-interval", s.train.scaler.growth_interval,
                 "amp_fp16: clean steps before the loss scale doubles")
      ->capture_default_str();
  kamp::app::add_model_options(app, s.model);
  app.add_option("--data", s.data, "Train on this text file, or every text file under this directory (bytes are tokens: a vocabulary of 256; "
                 "binary files are skipped); default: the built-in corpus");
  app.add_option("--validation-fraction", s.validation_fraction, "Tail of the text kept for validation")
      ->capture_default_str();
  app.add_option("--eval-every", s.eval_every, "Validation loss every N steps (0: only at the end)")
      ->capture_default_str();
  app.add_option("--eval-batches", s.eval_batches, "Batches in each validation pass")->capture_default_str();
  app.add_option("--metrics", s.metrics,
                 "Write per-step metrics (step, loss, val_loss, scale, skipped, grad_norm, lr, tokens_per_s) to this "
                 "file: .csv or .jsonl");
  app.add_option("--sample-every", s.sample_every,
                 "Every N steps, print --sample-tokens bytes the model generates from the start of the validation "
                 "text (temperature 0.8, one line); 0: off")
      ->capture_default_str();
  app.add_option("--sample-tokens", s.sample_tokens, "Bytes in each --sample-every sample")->capture_default_str();
  app.add_option("--summary", s.summary, "Write the run's summary as JSON to this file");
  app.add_option("--log-every", s.log_every, "Without a terminal, print a line every N steps")->capture_default_str();
  app.add_option("--checkpoint-dir", s.checkpoint_dir,
                 "Directory of HDF5 checkpoints step-<step>.h5: written every --checkpoint-every, at the end, and on "
                 "SIGTERM/SIGUSR1/SIGINT (then the run exits 0)")
      ->capture_default_str();
  app.add_option("--checkpoint-every", s.checkpoint_every,
                 "Periodic checkpoints: every N steps (500) or wall-clock time (90s, 30m, 2h; checked at each log line, every --log-every steps); 0: off")
      ->capture_default_str();
  app.add_option("--keep-checkpoints", s.keep_checkpoints, "Newest checkpoints kept in --checkpoint-dir")
      ->capture_default_str();
  app.add_option("--loss-scaling", s.request.loss_scaling,
                 "amp_fp16's loss scaling: dynamic (PyTorch's GradScaler), static (fixed at --loss-scale) or off")
      ->check(CLI::IsMember({"dynamic", "static", "off"}))
      ->capture_default_str();
  app.add_flag("--force-unscaled-fp16", s.request.force_unscaled_fp16,
               "Run amp_fp16 with --loss-scaling off although small gradients then vanish");
  app.add_option("--quantization", s.request.quantization,
                 "Quantized weights (e.g. int8, 4bit): not supported by kamp, refused with the reason")
      ->capture_default_str();
  app.add_flag("--enable-fsdp", s.request.enable_fsdp,
               "llama-recipes' enable_fsdp: --sharding parameters unless --sharding is given; checked against the "
               "precision mode");
  app.add_option("--sharding", s.sharding,
                 "Under mpirun or srun, what each rank keeps only its shard of: optimizer (master weights and "
                 "moments, ZeRO-1), gradients (also the gradients, ZeRO-2) or parameters (also the model copy, "
                 "ZeRO-3 / FSDP full shard)")
      ->check(CLI::IsMember({"optimizer", "gradients", "parameters"}))
      ->capture_default_str();
  app.add_option("--reshard-after-forward", s.reshard_after_forward,
                 "--sharding parameters: gather each block again for the backward pass (FSDP's FULL_SHARD); false "
                 "keeps the blocks gathered from the forward pass (SHARD_GRAD_OP: more memory, fewer gathers)")
      ->capture_default_str();
  app.add_option("--gradient-reduction", s.gradient_reduction,
                 "Under mpirun or srun: the gradients' type on the network, fp32 or bf16 (half the bytes; each "
                 "partial sum is rounded to bf16)")
      ->check(CLI::IsMember({"fp32", "bf16"}))
      ->capture_default_str();
  app.add_flag("--diagnose", s.diagnose,
               "Run the precision doctor on one observed step (after --resume, if given), print its report and "
               "exit. It also runs by itself when the loss turns NaN or stops falling");
  app.add_flag("--overwrite-checkpoints", s.overwrite_checkpoints,
               "Start from step 0 in a --checkpoint-dir that holds checkpoints, deleting them");
  app.add_option("--resume", s.resume,
                 "Continue from a checkpoint file, or 'auto': the newest checkpoint in --checkpoint-dir that loads "
                 "(none yet: start at step 0)");
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The precision rules, before anything is allocated: notes and warnings are printed, errors stop
// the run (all of them reported at once).
void check_precision_rules(const run_settings& s) {
  std::string errors;
  for (const auto& f : kamp::check_precision(s.policy, s.request, kamp::detect_hardware())) {
    using level = kamp::precision_finding::level;
    if (f.severity == level::error) {
      errors += "\n  [" + f.rule + "] " + f.message;
    } else {
      std::printf("%s [%s] %s\n", f.severity == level::warning ? "warning:" : "note:", f.rule.c_str(),
                  f.message.c_str());
    }
  }
  if (!errors.empty()) throw std::invalid_argument("the precision configuration is refused:" + errors);
}

// Peak bytes by category, measured from Kokkos' allocations, beside kamp-plan's prediction.
nlohmann::json print_memory(const kamp::memory_tracker& memory, const kamp::memory_plan& plan) {
  const kamp::memory_plan peak = memory.peak();
  nlohmann::json out;
  std::printf("  memory, peak measured (Kokkos allocations) vs kamp-plan:");
  const std::pair<const char*, double kamp::memory_plan::*> rows[] = {
      {"parameters", &kamp::memory_plan::parameters}, {"gradients", &kamp::memory_plan::gradients},
      {"master", &kamp::memory_plan::master},         {"optimizer", &kamp::memory_plan::optimizer},
      {"activations", &kamp::memory_plan::activations}};
  for (const auto& [name, field] : rows) {
    const double measured = peak.*field, planned = plan.*field;
    std::printf(" %s %.2f/%.2f MB;", name, measured / 1e6, planned / 1e6);
    out[name] = {{"measured", measured}, {"planned", planned}};
  }
  std::printf(" all allocations at peak %.2f MB\n", memory.peak_total() / 1e6);
  out["peak_total"] = memory.peak_total();
  return out;
}

int train(run_settings& s, const std::string& run_config, const kamp::dist::communicator& ranks) {
  // Rank 0 reports; the other ranks' standard output would repeat it (errors still reach stderr).
  if (ranks.rank() != 0 && std::freopen("/dev/null", "w", stdout) == nullptr)
    throw std::runtime_error("cannot silence the standard output of rank " + std::to_string(ranks.rank()));
  s.policy = s.precision.policy();
  const kamp::sharding level = kamp::parse_sharding(s.sharding);
  if (s.sample_every > 0 && ranks.distributed() && level == kamp::sharding::parameters)
    throw std::invalid_argument("--sample-every needs the whole model on one rank, which --sharding parameters never "
                                "gathers: sample from a checkpoint with kamp-generate instead");
  if (s.diagnose && ranks.distributed())
    throw std::invalid_argument("--diagnose runs the precision doctor in one process: run kamp-train --diagnose "
                                "--resume PATH without mpirun on a checkpoint of this run");
  // Everything is validated before the model is allocated.
  s.model.validate();
  kamp::check_memory_fits(s.model, s.policy, s.train.batch, ranks.size());
  s.policy.validate(s.model);
  kamp::apply_loss_scaling(s.request, s.train);
  s.train.validate();
  check_precision_rules(s);
  if (s.eval_batches < 1) throw std::invalid_argument("--eval-batches must be >= 1");
  if (s.eval_every < 0 || s.log_every < 1) throw std::invalid_argument("--eval-every must be >= 0, --log-every >= 1");
  if (s.sample_every < 0 || s.sample_tokens < 1)
    throw std::invalid_argument("--sample-every must be >= 0 (0: off) and --sample-tokens >= 1");
  const auto every = kamp::app::checkpoint_interval::parse(s.checkpoint_every);
  const kamp::checkpoint_directory checkpoints(s.checkpoint_dir, s.keep_checkpoints);
  // A new run must not mix its checkpoints with another run's: --resume auto would pick theirs.
  // Rank 0 manages the directory (on a file system all ranks share); the others wait for it.
  if (ranks.rank() == 0 && s.resume.empty() && !checkpoints.list().empty()) {
    if (!s.overwrite_checkpoints)
      throw std::invalid_argument("--checkpoint-dir '" + s.checkpoint_dir + "' holds checkpoints of a run (newest " +
                                  checkpoints.list().front() +
                                  "): continue that run with --resume auto, start a new one in another "
                                  "--checkpoint-dir, or delete them with --overwrite-checkpoints");
    checkpoints.clear();
  }
  if (ranks.rank() == 0) checkpoints.check_room(kamp::checkpoint_tensor_bytes(s.model, s.policy));
  ranks.all(true);
  const kamp::token_dataset data =
      s.data.empty() ? kamp::token_dataset(kamp::default_corpus(), s.validation_fraction, s.model.context,
                                           "built-in corpus")
                     : kamp::token_dataset::from_path(s.data, s.validation_fraction, s.model.context);
  if (!data.skipped().empty())
    std::printf("note: --data: skipped %zu binary files (with NUL bytes), e.g. %s\n", data.skipped().size(),
                data.skipped().front().c_str());
  const kamp::memory_tracker memory;
  kamp::trainer trainer(s.model, s.policy, s.train, data,
                        {ranks, s.gradient_reduction == "bf16" ? kamp::dtype::bf16 : kamp::dtype::fp32, level,
                         s.reshard_after_forward});
  const auto& table = trainer.model().table();
  std::printf("kamp-train: GPT %d layers, %d heads, d_model %d, mlp %d, context %d: %zu parameters\n", s.model.layers,
              s.model.heads, s.model.d_model, s.model.mlp, s.model.context, table.parameter_count());
  std::printf("  mode %s%s; batch %d x %d micro-batches; %d steps; data: %s (%zu train / %zu validation bytes)\n",
              s.precision.mode.c_str(),
              s.policy.fp32_layers.empty() ? "" : (", fp32 layers: " + CLI::detail::join(s.policy.fp32_layers)).c_str(),
              s.train.batch, s.train.micro_batches, s.train.steps, data.source().c_str(),
              data.size(kamp::token_dataset::split::train), data.size(kamp::token_dataset::split::validation));
  std::printf("  Kokkos execution space: %s, concurrency %d\n", Kokkos::DefaultExecutionSpace::name(),
              Kokkos::DefaultExecutionSpace().concurrency());
  for (const std::string& line : kamp::gemm_paths(s.policy)) std::printf("  GEMMs %s\n", line.c_str());
  if (ranks.distributed())
    std::printf("  data parallel: %d MPI ranks x batch %d = %d sequences per micro-batch; sharding %s: each rank "
                "keeps 1/%d of the %s; gradients reduced in %s%s\n",
                ranks.size(), s.train.batch, ranks.size() * s.train.batch, s.sharding.c_str(), ranks.size(),
                level == kamp::sharding::optimizer   ? "optimizer state"
                : level == kamp::sharding::gradients ? "optimizer state and gradients"
                                                     : "optimizer state, gradients and model copy",
                s.gradient_reduction.c_str(), ranks.gpu_aware() ? " (GPU-aware MPI)" : "");
  const auto resume_start = std::chrono::steady_clock::now();
  const bool resumed = !s.resume.empty() && !kamp::app::resume(trainer, checkpoints, s.resume, s.train, s.policy).empty();
  const double resume_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - resume_start).count();
  std::fflush(stdout);
  if (s.diagnose) {
    std::printf("%s", kamp::report(kamp::diagnose(trainer)).c_str());
    return 0;
  }
  // A resumed run continues its metrics file.
  std::optional<kamp::app::metrics_writer> metrics;
  if (!s.metrics.empty() && ranks.rank() == 0) metrics.emplace(s.metrics, resumed && std::filesystem::exists(s.metrics));

  using clock = std::chrono::steady_clock;
  std::int64_t saved_step = trainer.steps_taken(), saved_attempts = trainer.attempts();
  auto saved_time = clock::now();
  double last_save_seconds = 0;
  const auto save = [&] {
    kamp::training_state state = trainer.state();
    state.run_config = run_config;
    const auto start = clock::now();
    // Each rank writes its own shard into the file; none ever holds the whole state.
    const std::string path = checkpoints.save(state, ranks);
    const double seconds = std::chrono::duration<double>(clock::now() - start).count();
    last_save_seconds = seconds;
    saved_step = trainer.steps_taken();
    saved_attempts = trainer.attempts();
    saved_time = clock::now();
    return std::make_pair(path, seconds);
  };
  const auto save_if_new = [&](const char* why) {
    if (trainer.steps_taken() == saved_step && trainer.attempts() == saved_attempts) return;
    const auto [path, seconds] = save();
    if (ranks.rank() == 0)
      std::printf("checkpoint (%s): %s, %.1f MB in %.2f s\n", why, path.c_str(),
                  double(std::filesystem::file_size(path)) / 1e6, seconds);
    std::fflush(stdout);
  };

  if (trainer.steps_taken() >= s.train.steps) {
    if (resumed) {
      std::printf("done: the checkpoint is at step %lld of --steps %d: nothing to train (raise --steps to go on)\n",
                  static_cast<long long>(trainer.steps_taken()), s.train.steps);
      return 0;
    }
    // --steps 0 on a new run: the initial weights, to compare with another framework or to start
    // several runs from the same initialization.
    const auto [path, seconds] = save();
    if (ranks.rank() == 0)
      std::printf("done: --steps 0: the initial state is in %s (%.1f MB in %.2f s)\n", path.c_str(),
                  double(std::filesystem::file_size(path)) / 1e6, seconds);
    return 0;
  }
  // Samples come from rank 0's model copy with the decoder generation uses; the prompt is the
  // start of the validation text, so it is shaped like the data.
  std::optional<kamp::gpt_decoder<>> sampler;
  const auto& held_out = data.bytes(kamp::token_dataset::split::validation);
  const std::string sample_prompt(held_out.begin(), held_out.begin() + std::min<std::size_t>(16, held_out.size()));
  const auto print_sample = [&](std::int64_t step) {
    if (!sampler) {
      sampler.emplace(s.model, s.policy);
      sampler->bind_weights(trainer.model().binding());
    }
    std::string text = sample_prompt + kamp::generate(*sampler, sample_prompt, s.sample_tokens,
                                                      {0.8f, 0, s.train.seed + std::uint64_t(step)});
    for (char& c : text)  // one log line: control bytes become spaces, UTF-8 stays
      if ((unsigned char)c < 0x20 || c == 0x7f) c = ' ';
    std::printf("sample at step %lld: %s\n", static_cast<long long>(step), text.c_str());
  };
  const kamp::app::stop_request stop;
  const std::int64_t first_step = trainer.attempts() + 1;
  const double initial_validation = trainer.validation_loss(s.eval_batches);
  kamp::app::progress bar(s.train.steps, s.log_every, ranks.distributed());
  std::vector<double> losses, rates;
  std::optional<double> validation;
  double first_loss = 0, seconds = 0;
  int skipped = 0, consecutive_skips = 0;
  kamp::app::loss_watch watch;
  // Ranks stop together: at the first step after any of them received a signal.
  int stopped_by = ranks.max(stop.signal());
  // Steps are launched in runs up to the next point where the host must look (a log line, a
  // validation, a checkpoint by steps, the end) and their reports read together: the steps of
  // a run never wait for the host. A skipped step only ends a run before that point, never after.
  std::int64_t taken = trainer.steps_taken();
  while (taken < s.train.steps && !stopped_by) {
    std::int64_t run = std::min<std::int64_t>(s.train.steps - taken, s.log_every - taken % s.log_every);
    if (s.eval_every > 0) run = std::min<std::int64_t>(run, s.eval_every - taken % s.eval_every);
    if (s.sample_every > 0) run = std::min<std::int64_t>(run, s.sample_every - taken % s.sample_every);
    run = std::min(run, every.steps_until_due(taken));
    for (std::int64_t i = 0; i < run; ++i) trainer.advance();
    const std::vector<kamp::step_report> reports = trainer.reports();
    for (const auto& r : reports) {
      taken += r.skipped ? 0 : 1;
      seconds += r.seconds;
      if (r.step == first_step) first_loss = r.loss;
      skipped += r.skipped;
      consecutive_skips = r.skipped ? consecutive_skips + 1 : 0;
      if (r.skipped && skipped == 1 && !s.train.scaler.dynamic && s.policy.loss_scaling())
        std::printf("\nwarning: the static loss scale %g overflowed at step %lld (the step was skipped): lower "
                    "--loss-scale or use --loss-scaling dynamic\n",
                    r.scale, static_cast<long long>(r.step));
      if (const std::string why = watch.update(r); !why.empty()) {
        bar.finish();
        if (ranks.distributed()) {
          std::printf("%s: diagnose a checkpoint of this run in one process: kamp-train --diagnose --resume PATH\n",
                      why.c_str());
        } else {
          std::printf("%s: running the precision doctor\n%s", why.c_str(),
                      kamp::report(kamp::diagnose(trainer)).c_str());
        }
        if (!s.metrics.empty())
          std::printf("see the run so far (loss, loss scale, skipped steps, gradient norm): tools/plot-metrics %s\n",
                      s.metrics.c_str());
        std::fflush(stdout);
      }
      if (consecutive_skips == 50)
        throw std::runtime_error(
            "50 consecutive steps had inf/NaN gradients: the model or the data produce non-finite "
            "values. Try --mode amp_bf16 or fp32, a smaller --lr, or --fp32-layers");
      if (!r.skipped) {
        losses.push_back(r.loss);
        if (taken > 2) rates.push_back(r.tokens / r.seconds);
      }
      // Only a run's last step can reach a validation point (the run ends there).
      validation.reset();
      if (!r.skipped && (taken == s.train.steps || (s.eval_every > 0 && taken % s.eval_every == 0)))
        validation = trainer.validation_loss(s.eval_batches);
      bar.update(r, taken, validation);
      if (metrics) metrics->write(r, validation);
    }
    if (s.sample_every > 0 && !reports.back().skipped && taken % s.sample_every == 0 && ranks.rank() == 0) {
      bar.finish();
      print_sample(taken);
      std::fflush(stdout);
    }
    if (!reports.back().skipped &&
        ranks.max(every.due(taken, std::chrono::duration<double>(clock::now() - saved_time).count())))
      save_if_new("periodic");
    stopped_by = ranks.max(stop.signal());
  }
  bar.finish();
  if (stopped_by) {
    save_if_new(kamp::app::stop_request::name(stopped_by));
    std::printf("stopped by %s after step %lld of %d; checkpoint in '%s': continue with --resume auto\n",
                kamp::app::stop_request::name(stopped_by), static_cast<long long>(trainer.steps_taken()),
                s.train.steps, s.checkpoint_dir.c_str());
    return 0;
  }
  save_if_new("final");
  const std::size_t tail = std::min<std::size_t>(10, losses.size());
  double final_loss = 0;
  for (std::size_t i = losses.size() - tail; i < losses.size(); ++i) final_loss += losses[i] / double(tail);
  const double final_validation = validation.value_or(trainer.validation_loss(s.eval_batches));
  std::printf("done: %d steps (%d skipped) in %.1f s, median %.0f tokens/s\n", s.train.steps, skipped, seconds,
              median(rates));
  std::printf("  train loss %.4f (step %lld) -> %.4f (mean of last %zu); validation loss %.4f -> %.4f\n", first_loss,
              static_cast<long long>(first_step), final_loss, tail, initial_validation, final_validation);
  const double waited = ranks.sum(trainer.communication_wait_seconds()) / ranks.size();
  if (ranks.distributed())
    std::printf("  collectives: %.2f s per rank waited for them (%.1f%% of the training time)%s\n", waited,
                100.0 * waited / std::max(seconds, 1e-9),
                level == kamp::sharding::optimizer ? ", blocking" : "; non-blocking, the rest overlapped compute");
  const nlohmann::json memory_use = print_memory(
      memory, kamp::plan_memory(s.model, s.policy, s.train.batch, ranks.size(), level, s.reshard_after_forward));
  if (!s.summary.empty() && ranks.rank() == 0) {
    std::ofstream out(s.summary);
    if (!out) throw std::runtime_error("--summary: cannot open '" + s.summary + "' for writing");
    out << nlohmann::json{{"mode", s.precision.mode},
                          {"parameters", table.parameter_count()},
                          {"steps", s.train.steps},
                          {"skipped", skipped},
                          {"first_loss", first_loss},
                          {"final_loss", final_loss},
                          {"initial_validation_loss", initial_validation},
                          {"final_validation_loss", final_validation},
                          {"median_tokens_per_s", median(rates)},
                          {"ranks", ranks.size()},
                          {"sharding", s.sharding},
                          {"communication_wait_seconds", waited},
                          {"checkpoint_write_seconds", last_save_seconds},
                          {"checkpoint_read_seconds", resumed ? nlohmann::json(resume_seconds) : nlohmann::json()},
                          {"memory_bytes", memory_use},
                          {"seconds", seconds}}
               .dump(2)
        << '\n';
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::optional<kamp::dist::environment> mpi;
  try {
    // Under mpirun/srun every rank runs this program; without a launcher MPI is not touched.
    mpi.emplace(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kamp-train: error: %s\n", e.what());
    return 1;
  }
  CLI::App app{"kamp-train: train a small GPT with kamp's mixed-precision kernels.\n"
               "With no options it trains the reference model (4 layers, 4 heads, d_model 256, context 128, "
               "batch 16, AdamW lr 3e-4) in amp_bf16 on the built-in corpus."};
  run_settings settings;
  add_options(app, settings);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {  // from reading a config file (bad_alloc, a library's own)
    std::fprintf(stderr, "kamp-train: error: reading the options: %s\n", e.what());
    return 1;
  }
  if (settings.request.enable_fsdp && app.count("--sharding") == 0) settings.sharding = "parameters";
  Kokkos::ScopeGuard kokkos(argc, argv);
  try {
    return train(settings, app.config_to_str(true, false), mpi->world());
  } catch (const std::exception& e) {
    const auto& ranks = mpi->world();
    if (!ranks.distributed()) {
      std::fprintf(stderr, "kamp-train: error: %s\n", e.what());
      return 1;
    }
    // The other ranks may wait in a collective for this one: stop them all.
    std::fprintf(stderr, "kamp-train: error (rank %d of %d): %s\n", ranks.rank(), ranks.size(), e.what());
    std::fflush(stderr);
    ranks.abort(1);
  }
}
