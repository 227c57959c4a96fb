// kamp-train: trains the GPT with kamp's kernels in the chosen precision mode. main() reads the
// options; train() takes the run's steps in order: validation, the checkpoint directory, the
// data, the banner, the resume, the training loop (train/training_loop.hpp), the summary.
#include <kamp/model/diagnostics/doctor.hpp>
#include <kamp/model/diagnostics/gemm_paths.hpp>
#include <kamp/model/diagnostics/hardware_probe.hpp>
#include <kamp/model/diagnostics/memory_plan.hpp>
#include <kamp/model/diagnostics/memory_tracker.hpp>
#include <kamp/model/diagnostics/precision_rules.hpp>
#include <kamp/model/dist/environment.hpp>
#include <kamp/model/state/checkpoint.hpp>
#include <kamp/model/state/checkpoint_directory.hpp>
#include <kamp/model/training/data.hpp>
#include <kamp/model/training/trainer.hpp>

#include <CLI/CLI.hpp>
#include <Kokkos_Core.hpp>
#include <nlohmann/json.hpp>

#include "train/checkpointing.hpp"
#include "train/config_file.hpp"
#include "train/enum_option.hpp"
#include "train/metrics.hpp"
#include "train/model_options.hpp"
#include "train/option_checks.hpp"
#include "train/output_checks.hpp"
#include "train/output_file.hpp"
#include "train/run_settings.hpp"
#include "train/tokenizer.hpp"
#include "train/training_loop.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <optional>
#include <set>
#include <sstream>
#include <string_view>

namespace {

using kamp::app::run_settings;

// --config: TOML or JSON, every key an option; a repeated option takes its last value, so
// scripts can append overrides.
void add_config_file_option(CLI::App& app) {
  app.config_formatter(std::make_shared<kamp::app::toml_or_json_config>(std::set<std::string>{"fp32-layers"}));
  app.allow_config_extras(CLI::config_extras_mode::error);
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.set_config("--config", "",
                 "Read options from a TOML file (key = value) or a JSON object; keys are the long "
                 "option names below without dashes, e.g. steps = 500. Command-line options win.")
      ->check(kamp::app::config_file_check());
}

void add_optimization_options(CLI::App& app, kamp::train_options& train) {
  app.add_option("--steps", train.steps, "Optimizer steps to take (skipped steps are retried)")->capture_default_str();
  app.add_option("--batch", train.batch, "Sequences per micro-batch")->capture_default_str();
  app.add_option("--micro-batches", train.micro_batches,
                 "Micro-batches accumulated (in fp32) per optimizer step: effective batch = batch x this")
      ->capture_default_str();
  app.add_option("--lr", train.lr, "Peak learning rate (AdamW)")->capture_default_str();
  app.add_option("--warmup", train.warmup, "Linear learning-rate warm-up steps, then cosine decay")
      ->capture_default_str();
  app.add_option("--min-lr-ratio", train.min_lr_ratio, "Cosine decay ends at lr x this")->capture_default_str();
  app.add_option("--weight-decay", train.adamw.weight_decay, "AdamW decoupled weight decay (all parameters)")
      ->capture_default_str();
  app.add_option("--beta1", train.adamw.beta1, "AdamW beta1")->capture_default_str();
  app.add_option("--beta2", train.adamw.beta2, "AdamW beta2")->capture_default_str();
  app.add_option("--eps", train.adamw.eps, "AdamW epsilon")->capture_default_str();
  app.add_option("--grad-clip", train.grad_clip, "Clip the global gradient L2 norm to this (0: off)")
      ->capture_default_str();
  app.add_option("--seed", train.seed, "Seed of the initial weights, the data order and stochastic rounding")
      ->check(kamp::app::seed_check())
      ->capture_default_str();
  app.add_option("--loss-scale", train.scaler.init_scale, "amp_fp16: initial loss scale")->capture_default_str();
  app.add_option("--loss-scale-growth-interval", train.scaler.growth_interval,
                 "amp_fp16: clean steps before the loss scale doubles")
      ->capture_default_str();
}

void add_data_options(CLI::App& app, run_settings& s) {
  app.add_option(
      "--data", s.data,
      "Train on: a text file, or every text file under a directory (bytes are tokens, --vocab 256; binary files "
      "under it are skipped, one named alone is refused); or token files (*.bin: llm.c shards, known by their "
      "header), one, a directory's, or a quoted glob pattern's, memory-mapped, files named *val* held out for "
      "validation; default: the built-in corpus");
  app.add_option("--token-format", s.token_format,
                 "How token files (*.bin) are read: llmc (llm.c's shards; any other file is refused) or raw_uint16 "
                 "(headerless little-endian uint16 ids, nanoGPT's train.bin: nothing in such a file says what it is, "
                 "so it is read so only when asked)")
      ->check(kamp::app::one_of({kamp::token_file_format::llmc, kamp::token_file_format::raw_uint16},
                                kamp::parse_token_file_format))
      ->capture_default_str();
  app.add_option("--tokenizer", s.tokenizer,
                 "A SentencePiece model (spm_train's PREFIX.model) that encodes the text of --data (or the built-in "
                 "corpus); the vocabulary is its pieces unless --vocab or --preset gives more. The run records the "
                 "file and its digest; kamp-generate decodes with it");
  // Not for users: the run's record of the tokenizer's content (kamp-train sets it), checked
  // against the file when a run's settings are given back as a --config.
  app.add_option("--tokenizer-digest", s.tokenizer_digest)->group("");
  app.add_option("--validation-fraction", s.validation_fraction,
                 "Tail of the data kept for validation (token files: unless some are named *val*)")
      ->capture_default_str();
  app.add_option("--eval-every", s.eval_every, "Validation loss every N steps (0: only at the end)")
      ->capture_default_str();
  app.add_option("--eval-batches", s.eval_batches, "Batches in each validation pass")->capture_default_str();
}

void add_output_options(CLI::App& app, run_settings& s) {
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
}

void add_checkpoint_options(CLI::App& app, run_settings& s) {
  app.add_option("--checkpoint-dir", s.checkpoint_dir,
                 "Directory of HDF5 checkpoints step-<step>.h5: written every --checkpoint-every, at the end, and on "
                 "SIGTERM/SIGUSR1/SIGINT (then the run exits 0)")
      ->capture_default_str();
  app.add_option("--checkpoint-every", s.checkpoint_every,
                 "Periodic checkpoints: every N steps (500) or wall-clock time (90s, 30m, 2h; checked at each log "
                 "line, every --log-every steps); 0: off")
      ->capture_default_str();
  app.add_option("--keep-checkpoints", s.keep_checkpoints, "Newest checkpoints kept in --checkpoint-dir")
      ->capture_default_str();
  app.add_option("--time-limit", s.time_limit_text,
                 "Stop with a checkpoint (exit 0) while the next steps, a checkpoint and the exit still fit before: "
                 "auto (the Slurm job's end, from SLURM_JOB_END_TIME or squeue), a duration from the start (90s, "
                 "30m, 2h) or none")
      ->capture_default_str();
}

// What the precision rules judge beyond the mode (kamp::run_request).
void add_precision_request_options(CLI::App& app, kamp::run_request& request) {
  // Checked against the enum's spellings first, so the parse below always succeeds.
  app.add_option_function<std::string>(
         "--loss-scaling",
         [scaling = &request.loss_scaling](const std::string& s) { *scaling = kamp::parse_loss_scaling(s); },
         "amp_fp16's loss scaling: dynamic (PyTorch's GradScaler), static (fixed at --loss-scale) or off")
      ->check(kamp::app::one_of(kamp::loss_scaling_modes(), kamp::parse_loss_scaling))
      ->default_str(kamp::name(request.loss_scaling));
  app.add_flag("--force-unscaled-fp16", request.force_unscaled_fp16,
               "Run amp_fp16 with --loss-scaling off although small gradients then vanish");
  app.add_option("--quantization", request.quantization,
                 "Quantized weights (e.g. int8, 4bit): not supported by kamp, refused with the reason")
      ->capture_default_str();
}

void add_parallel_options(CLI::App& app, run_settings& s) {
  app.add_flag("--enable-fsdp", s.request.enable_fsdp,
               "llama-recipes' enable_fsdp: --sharding parameters unless --sharding is given; checked against the "
               "precision mode");
  // Data parallelism shards at least the optimizer state: kamp-plan's "none" is no choice here.
  app.add_option("--sharding", s.sharding,
                 "Under mpirun or srun, what each rank keeps only its shard of: optimizer (master weights and "
                 "moments, ZeRO-1), gradients (also the gradients, ZeRO-2) or parameters (also the model copy, "
                 "ZeRO-3 / FSDP full shard)")
      ->check(kamp::app::one_of({kamp::sharding::optimizer, kamp::sharding::gradients, kamp::sharding::parameters},
                                kamp::parse_sharding))
      ->capture_default_str();
  app.add_option("--reshard-after-forward", s.reshard_after_forward,
                 "--sharding parameters: gather each block again for the backward pass (FSDP's FULL_SHARD); false "
                 "keeps the blocks gathered from the forward pass (SHARD_GRAD_OP: more memory, fewer gathers)")
      ->capture_default_str();
  app.add_option("--gradient-reduction", s.gradient_reduction,
                 "Under mpirun or srun: the gradients' type on the network, fp32 or bf16 (half the bytes; each "
                 "partial sum is rounded to bf16)")
      ->check(kamp::app::one_of({kamp::dtype::fp32, kamp::dtype::bf16}, kamp::parse_dtype))
      ->capture_default_str();
}

// Where the run starts, or that it only diagnoses.
void add_start_options(CLI::App& app, run_settings& s) {
  app.add_flag("--diagnose", s.diagnose,
               "Run the precision doctor on one observed step (after --resume, if given), print its report and "
               "exit. It also runs by itself when the loss turns NaN or stops falling");
  app.add_flag("--overwrite-checkpoints", s.overwrite_checkpoints,
               "Start from step 0 in a --checkpoint-dir that holds checkpoints, deleting them");
  app.add_option("--init-from-llmc", s.init_from_llmc,
                 "Start from the weights of an llm.c model file (gpt2_124M.bin: versions 3 and 5), its shape the "
                 "run's; optimizer state starts at zero. A checkpoint --resume finds takes precedence");
  app.add_option("--resume", s.resume,
                 "Continue from a checkpoint file, or 'auto': the newest checkpoint in --checkpoint-dir that loads "
                 "(none yet: start at step 0)");
  kamp::app::add_accept_unhashed_option(app, s.reading);
}

// In the order --help lists them.
void add_options(CLI::App& app, run_settings& s) {
  add_config_file_option(app);
  kamp::app::add_precision_options(app, s.precision);
  add_optimization_options(app, s.train);
  kamp::app::add_model_options(app, s.model);
  kamp::app::add_recompute_option(app, s.recompute);
  add_data_options(app, s);
  add_output_options(app, s);
  add_checkpoint_options(app, s);
  add_precision_request_options(app, s.request);
  add_parallel_options(app, s);
  add_start_options(app, s);
  kamp::app::refuse_empty_values(app);
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Options that need the whole model in one process.
void check_single_process_options(const run_settings& s, const kamp::dist::communicator& ranks) {
  if (s.sample_every > 0 && ranks.distributed() && s.sharding_level == kamp::sharding::parameters)
    throw std::invalid_argument(
        "--sample-every needs the whole model on one rank, which --sharding parameters never "
        "gathers: sample from a checkpoint with kamp-generate instead");
  if (s.diagnose && ranks.distributed())
    throw std::invalid_argument(
        "--diagnose runs the precision doctor in one process: run kamp-train --diagnose "
        "--resume PATH without mpirun on a checkpoint of this run");
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

void check_reporting_options(const run_settings& s) {
  if (s.eval_batches < 1) throw std::invalid_argument("--eval-batches must be >= 1");
  if (s.eval_every < 0 || s.log_every < 1) throw std::invalid_argument("--eval-every must be >= 0, --log-every >= 1");
  if (s.sample_every < 0 || s.sample_tokens < 1)
    throw std::invalid_argument("--sample-every must be >= 0 (0: off) and --sample-tokens >= 1");
  if (s.sample_every > 0 && s.model.vocab != 256)
    throw std::invalid_argument(
        "--sample-every prints bytes and so needs a byte-level model (--vocab 256); this one has " +
        std::to_string(s.model.vocab) + " tokens");
}

// --metrics and --summary before the run: a missing directory, an input named as an output, or
// two outputs in one file would otherwise be found after the training.
void check_outputs(const run_settings& s, const kamp::dist::communicator& ranks) {
  if (ranks.rank() != 0) return;
  if (!s.metrics.empty()) kamp::app::metrics_writer::check_name(s.metrics);
  const std::vector<kamp::named_path> outputs = s.outputs();
  for (const kamp::named_path& output : outputs)
    kamp::check_output(output, kamp::output_kind::stream, s.inputs(), outputs);
}

// Byte-level data (text without --tokenizer, the built-in corpus) has 256 tokens: a model of
// another vocabulary would train on ids no tokenizer decodes.
void check_byte_level_vocabulary(const run_settings& s, const kamp::token_dataset& data) {
  if (!data.byte_level() || s.pieces || s.model.vocab == 256) return;
  throw std::invalid_argument("--data " + (s.data.empty() ? std::string("(the built-in corpus)") : "'" + s.data + "'") +
                              " is text read as bytes (256 tokens), but the model's vocabulary is " +
                              std::to_string(s.model.vocab) +
                              ": give --tokenizer (a SentencePiece model of that many pieces) to encode it, token "
                              "files (*.bin) of that vocabulary, or --vocab 256");
}

// Everything is validated before the model is allocated; the values parsed on the way are kept
// in `s`.
void validate(run_settings& s, const kamp::dist::communicator& ranks) {
  if (!s.init_from_llmc.empty()) {
    s.imported = kamp::read_llmc_model(s.init_from_llmc);
    const kamp::gpt_config& c = s.imported->config;
    const auto shape = [](const kamp::gpt_config& m) {
      return std::vector<int>{m.vocab, m.context, m.layers, m.heads, m.d_model, m.mlp};
    };
    if (s.shape_given && shape(c) != shape(s.model))
      throw std::invalid_argument("--init-from-llmc '" + s.init_from_llmc + "' holds a model of vocab " +
                                  std::to_string(c.vocab) + ", context " + std::to_string(c.context) + ", " +
                                  std::to_string(c.layers) + " layers, " + std::to_string(c.heads) +
                                  " heads, d_model " + std::to_string(c.d_model) +
                                  ", which the model options given differ from: drop them (the file sets the shape)");
    s.model = c;
  }
  if (!s.tokenizer.empty()) {
    const kamp::app::tokenizer& pieces = s.pieces.emplace(s.tokenizer);
    // A run's recorded settings given back as --config must name the same content.
    if (!s.tokenizer_digest.empty() && s.tokenizer_digest != pieces.digest())
      throw std::invalid_argument("--tokenizer '" + s.tokenizer + "' holds " + pieces.digest() +
                                  ", but the settings given record " + s.tokenizer_digest +
                                  ": the run trained with another file");
    s.tokenizer_digest = pieces.digest();
    // Every id the model can draw must decode: the vocabulary is the tokenizer's, exactly.
    const std::string pieces_text = std::to_string(pieces.vocab());
    if (s.imported && s.model.vocab != pieces.vocab())
      throw std::invalid_argument("--init-from-llmc '" + s.init_from_llmc + "' holds a model of vocabulary " +
                                  std::to_string(s.model.vocab) + ", but --tokenizer '" + s.tokenizer + "' has " +
                                  pieces_text + " pieces: give the tokenizer the model was trained with");
    if (s.vocab_given && s.model.vocab != pieces.vocab())
      throw std::invalid_argument(
          "--vocab " + std::to_string(s.model.vocab) + ", but --tokenizer '" + s.tokenizer + "' has " + pieces_text +
          " pieces: the model's ids must be the tokenizer's; give --vocab " + pieces_text + " or leave --vocab out");
    s.model.vocab = pieces.vocab();
  }
  s.policy = s.precision.policy();
  s.train.recompute = kamp::parse_activation_recompute(s.recompute);
  s.sharding_level = kamp::parse_sharding(s.sharding);
  s.gradient_dtype = kamp::parse_dtype(s.gradient_reduction);
  s.token_files = kamp::parse_token_file_format(s.token_format);
  check_single_process_options(s, ranks);
  check_outputs(s, ranks);
  s.model.validate();
  kamp::check_memory_fits(s.model, s.policy, s.train.batch, ranks.size(), s.train.recompute);
  s.policy.validate(s.model);
  kamp::apply_loss_scaling(s.request, s.train);
  s.train.validate();
  check_precision_rules(s);
  check_reporting_options(s);
  s.periodic_checkpoints = kamp::app::checkpoint_interval::parse(s.checkpoint_every);
  s.job = kamp::app::slurm_job::from_environment();
  // Rank 0 decides when the time is up (the others follow it): only it asks the scheduler.
  if (ranks.rank() == 0) s.deadline = kamp::app::time_limit::parse(s.time_limit_text, s.job);
}

// A new run must not mix its checkpoints with another run's: --resume auto would pick theirs.
// Rank 0 manages the directory (on a file system all ranks share); the others wait for it.
kamp::checkpoint_directory prepare_checkpoint_directory(const run_settings& s, const kamp::dist::communicator& ranks) {
  kamp::checkpoint_directory checkpoints(s.checkpoint_dir, s.keep_checkpoints);
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
  return checkpoints;
}

kamp::token_dataset load_data(const run_settings& s) {
  if (s.pieces) {
    if (std::filesystem::path(s.data).extension() == ".bin" || s.data.find_first_of("*?[") != std::string::npos)
      throw std::invalid_argument("--tokenizer encodes text, and --data '" + s.data +
                                  "' names token files, which hold ids already: leave --tokenizer out");
    const kamp::token_dataset::text_files text =
        s.data.empty() ? kamp::token_dataset::text_files{kamp::default_corpus(), "built-in corpus", {}}
                       : kamp::token_dataset::read_text(s.data);
    const std::vector<int> ids = s.pieces->encode(text.text);
    return kamp::token_dataset(
        std::vector<std::uint16_t>(ids.begin(), ids.end()), s.validation_fraction, s.model.context,
        text.source + ", SentencePiece " + s.tokenizer + " (" + std::to_string(ids.size()) + " tokens)");
  }
  kamp::token_dataset data =
      s.data.empty()
          ? kamp::token_dataset(kamp::default_corpus(), s.validation_fraction, s.model.context, "built-in corpus")
          : kamp::token_dataset::from_path(s.data, s.validation_fraction, s.model.context, s.model.vocab,
                                           s.token_files);
  check_byte_level_vocabulary(s, data);
  if (!data.skipped().empty())
    std::printf("note: --data: skipped %zu binary files (with NUL bytes), e.g. %s\n", data.skipped().size(),
                data.skipped().front().c_str());
  return data;
}

void print_banner(const run_settings& s, kamp::trainer& trainer, const kamp::token_dataset& data) {
  const kamp::dist::communicator& ranks = trainer.parallel().ranks;
  std::printf("kamp-train: GPT %d layers, %d heads, d_model %d, mlp %d, context %d, vocab %d: %zu parameters\n",
              s.model.layers, s.model.heads, s.model.d_model, s.model.mlp, s.model.context, s.model.vocab,
              trainer.model().table().parameter_count());
  std::printf("  mode %s%s; batch %d x %d micro-batches; %d steps; data: %s (%zu train / %zu validation tokens)\n",
              s.precision.mode.c_str(),
              s.policy.fp32_layers.empty() ? "" : (", fp32 layers: " + CLI::detail::join(s.policy.fp32_layers)).c_str(),
              s.train.batch, s.train.micro_batches, s.train.steps, data.source().c_str(),
              data.size(kamp::token_dataset::split::train), data.size(kamp::token_dataset::split::validation));
  if (s.train.recompute != kamp::activation_recompute::none)
    std::printf("  activations: each block's input kept, the block recomputed in the backward pass\n");
  std::printf("  Kokkos execution space: %s, concurrency %d\n", Kokkos::DefaultExecutionSpace::name(),
              Kokkos::DefaultExecutionSpace().concurrency());
  for (const std::string& line : kamp::gemm_paths(s.policy)) std::printf("  GEMMs %s\n", line.c_str());
  if (s.job) std::printf("  %s\n", s.job->describe().c_str());
  if (s.deadline.set())
    std::printf(
        "  time limit %s: the run stops with a checkpoint while the next steps, a checkpoint and %.0f s "
        "still fit (%.0f s left now)\n",
        s.deadline.description().c_str(), kamp::app::time_limit::exit_seconds, s.deadline.seconds_left());
  else if (s.time_limit_text == "auto")
    std::printf("  time limit auto: the Slurm job has none\n");
  if (ranks.distributed())
    std::printf(
        "  data parallel: %d MPI ranks x batch %d = %d sequences per micro-batch; sharding %s: each rank "
        "keeps 1/%d of the %s; gradients reduced in %s%s\n",
        ranks.size(), s.train.batch, ranks.size() * s.train.batch, s.sharding.c_str(), ranks.size(),
        s.sharding_level == kamp::sharding::optimizer   ? "optimizer state"
        : s.sharding_level == kamp::sharding::gradients ? "optimizer state and gradients"
                                                        : "optimizer state, gradients and model copy",
        s.gradient_reduction.c_str(), ranks.gpu_aware() ? " (GPU-aware MPI)" : "");
}

// --resume, if given. Returns the seconds reading the checkpoint took; none when the run starts
// at step 0.
std::optional<double> resume_if_asked(const run_settings& s, kamp::trainer& trainer,
                                      const kamp::checkpoint_directory& checkpoints) {
  const auto start = std::chrono::steady_clock::now();
  const bool resumed =
      !s.resume.empty() && !kamp::app::resume(trainer, checkpoints, s.resume, s.train, s.reading, s.policy).empty();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // The banner is out: a standard output that cannot be written stops the run before it trains.
  kamp::app::flush_or_throw(stdout, "the standard output");
  return resumed ? std::optional<double>(seconds) : std::nullopt;
}

// --steps already reached: a resumed run says so; a new one (--steps 0) saves its initial
// weights, to compare with another framework or to start several runs from the same
// initialization.
void finish_without_training(const run_settings& s, const kamp::trainer& trainer, kamp::app::checkpoint_writer& writer,
                             bool resumed) {
  if (resumed) {
    std::printf("done: the checkpoint is at step %lld of --steps %d: nothing to train (raise --steps to go on)\n",
                static_cast<long long>(trainer.steps_taken()), s.train.steps);
    return;
  }
  const auto initial = writer.save();
  if (trainer.parallel().ranks.rank() == 0)
    std::printf("done: --steps 0: the initial state is in %s (%.1f MB in %.2f s)\n", initial.path.c_str(),
                double(std::filesystem::file_size(initial.path)) / 1e6, initial.seconds);
}

// Peak bytes by category, measured from Kokkos' allocations, beside kamp-plan's prediction.
nlohmann::json print_memory(const kamp::memory_tracker& memory, const kamp::memory_plan& plan) {
  const kamp::memory_plan peak = memory.peak();
  nlohmann::json out;
  std::printf("  memory, peak measured (Kokkos allocations) vs kamp-plan:");
  const std::pair<const char*, double kamp::memory_plan::*> rows[] = {
      {"parameters", &kamp::memory_plan::parameters},   {"gradients", &kamp::memory_plan::gradients},
      {"master", &kamp::memory_plan::master},           {"optimizer", &kamp::memory_plan::optimizer},
      {"activations", &kamp::memory_plan::activations}, {"fp8", &kamp::memory_plan::fp8}};
  for (const auto& [name, field] : rows) {
    const double measured = peak.*field, planned = plan.*field;
    if (measured == 0 && planned == 0 && std::string_view(name) == "fp8") continue;
    std::printf(" %s %.2f/%.2f MB;", name, measured / 1e6, planned / 1e6);
    out[name] = {{"measured", measured}, {"planned", planned}};
  }
  std::printf(" all allocations at peak %.2f MB\n", memory.peak_total() / 1e6);
  out["peak_total"] = memory.peak_total();
  return out;
}

void write_summary(const run_settings& s, const nlohmann::json& summary) {
  kamp::app::output_file out({"--summary", s.summary}, false, s.inputs());
  out.write(summary.dump(2) + '\n');
  out.close();
}

// The losses, speed, collectives and memory of the run; with --summary also as JSON.
void summarize(const run_settings& s, kamp::trainer& trainer, const kamp::app::training_record& record,
               const kamp::memory_tracker& memory, double checkpoint_write_seconds,
               std::optional<double> checkpoint_read_seconds) {
  const kamp::dist::communicator& ranks = trainer.parallel().ranks;
  const std::size_t tail = std::min<std::size_t>(10, record.losses.size());
  double final_loss = 0;
  for (std::size_t i = record.losses.size() - tail; i < record.losses.size(); ++i)
    final_loss += record.losses[i] / double(tail);
  const double final_validation = record.validation.value_or(trainer.validation_loss(s.eval_batches));
  const double tokens_per_s = median(record.tokens_per_s);
  std::printf("done: %d steps (%d skipped) in %.1f s, median %.0f tokens/s%s\n", s.train.steps, record.skipped,
              record.seconds, tokens_per_s, s.job ? ("; " + s.job->describe()).c_str() : "");
  std::printf("  train loss %.4f (step %lld) -> %.4f (mean of last %zu); validation loss %.4f -> %.4f\n",
              record.first_loss, static_cast<long long>(record.first_step), final_loss, tail, record.initial_validation,
              final_validation);
  const double waited = ranks.sum(trainer.communication_wait_seconds()) / ranks.size();
  if (ranks.distributed())
    std::printf(
        "  collectives: %.2f s per rank waited for them (%.1f%% of the training time)%s\n", waited,
        100.0 * waited / std::max(record.seconds, 1e-9),
        s.sharding_level == kamp::sharding::optimizer ? ", blocking" : "; non-blocking, the rest overlapped compute");
  const nlohmann::json memory_use =
      print_memory(memory, kamp::plan_memory(s.model, s.policy, s.train.batch, ranks.size(), s.sharding_level,
                                             s.reshard_after_forward, s.train.recompute));
  if (s.summary.empty() || ranks.rank() != 0) return;
  write_summary(s, {{"mode", s.precision.mode},
                    {"parameters", trainer.model().table().parameter_count()},
                    {"steps", s.train.steps},
                    {"skipped", record.skipped},
                    {"first_loss", record.first_loss},
                    {"final_loss", final_loss},
                    {"initial_validation_loss", record.initial_validation},
                    {"final_validation_loss", final_validation},
                    {"median_tokens_per_s", tokens_per_s},
                    {"ranks", ranks.size()},
                    {"sharding", s.sharding},
                    {"communication_wait_seconds", waited},
                    {"checkpoint_write_seconds", checkpoint_write_seconds},
                    {"checkpoint_read_seconds",
                     checkpoint_read_seconds ? nlohmann::json(*checkpoint_read_seconds) : nlohmann::json()},
                    {"memory_bytes", memory_use},
                    {"slurm", s.job ? nlohmann::json{{"job_id", s.job->id},
                                                     {"array_job_id", s.job->array_job_id},
                                                     {"array_task_id", s.job->array_task_id},
                                                     {"restart_count", s.job->restart_count}}
                                    : nlohmann::json()},
                    {"seconds", record.seconds}});
}

// `run_config` gives the run's settings as a --config file, asked for once they are resolved.
int train(run_settings& s, const std::function<std::string()>& run_config, const kamp::dist::communicator& ranks) {
  // Rank 0 reports; the other ranks' standard output would repeat it (errors still reach stderr).
  if (ranks.rank() != 0 && std::freopen("/dev/null", "w", stdout) == nullptr)
    throw std::runtime_error("cannot silence the standard output of rank " + std::to_string(ranks.rank()));
  // From the start: a stop signal during the setup stops the run at its first look, instead of
  // killing the process (Slurm may signal a requeued job soon after it starts).
  const kamp::app::stop_request stop;
  validate(s, ranks);
  const kamp::checkpoint_directory checkpoints = prepare_checkpoint_directory(s, ranks);
  const kamp::token_dataset data = load_data(s);
  const kamp::memory_tracker memory;
  kamp::trainer trainer(s.model, s.policy, s.train, data,
                        {ranks, s.gradient_dtype, s.sharding_level, s.reshard_after_forward});
  print_banner(s, trainer, data);
  const std::optional<double> resume_seconds = resume_if_asked(s, trainer, checkpoints);
  if (s.imported && !resume_seconds) {
    trainer.restore(kamp::with_weights(trainer.state(), s.imported->weights));
    std::printf("  weights from the llm.c model %s\n", s.init_from_llmc.c_str());
  }
  s.imported.reset();
  if (s.diagnose) {
    std::printf("%s", kamp::report(kamp::diagnose(trainer)).c_str());
    return 0;
  }
  // A resumed run continues its metrics file.
  std::optional<kamp::app::metrics_writer> metrics;
  if (!s.metrics.empty() && ranks.rank() == 0)
    metrics.emplace(s.metrics, resume_seconds && std::filesystem::exists(s.metrics), s.policy.fp8(), s.inputs());
  kamp::app::checkpoint_writer writer(trainer, checkpoints, run_config());
  if (trainer.steps_taken() >= s.train.steps) {
    finish_without_training(s, trainer, writer, resume_seconds.has_value());
    return 0;
  }
  const std::int64_t first_attempt = trainer.attempts();
  const kamp::app::training_record record =
      kamp::app::run_training_loop(trainer, s, data, writer, metrics ? &*metrics : nullptr, stop);
  if (metrics) metrics->close();
  if (record.stopped_by) {
    const std::string cause = kamp::app::stop_cause_name(record.stopped_by);
    // A job requeued with too little time would stop again at once, forever.
    if (record.stopped_by == kamp::app::stopped_by_time_limit && trainer.attempts() == first_attempt)
      throw std::runtime_error("--time-limit " + s.time_limit_text + ": " +
                               std::to_string(int(ranks.sum(record.seconds_left))) +
                               " s are left, too few for a step, a checkpoint and the exit: give the job more time "
                               "(sbatch --time) or a later --time-limit");
    writer.save_if_new(cause.c_str());
    const std::string margin = record.stopped_by == kamp::app::stopped_by_time_limit
                                   ? " (" + std::to_string(int(record.seconds_left)) + " s before it)"
                                   : "";
    std::printf("stopped by %s%s after step %lld of %d%s; checkpoint in '%s': continue with --resume auto\n",
                cause.c_str(), margin.c_str(), static_cast<long long>(trainer.steps_taken()), s.train.steps,
                s.job ? (" (" + s.job->describe() + ")").c_str() : "", s.checkpoint_dir.c_str());
    return 0;
  }
  writer.save_if_new("final");
  summarize(s, trainer, record, memory, writer.last_save_seconds(), resume_seconds);
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
  CLI::App app{
      "kamp-train: train a small GPT with kamp's mixed-precision kernels.\n"
      "With no options it trains the reference model (4 layers, 4 heads, d_model 256, context 128, "
      "batch 16, AdamW lr 3e-4) in amp_bf16 on the built-in corpus."};
  kamp::app::run_settings settings;
  add_options(app, settings);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return kamp::app::exit_status("kamp-train", app.exit(e));
  } catch (const std::exception& e) {  // from reading a config file (bad_alloc, a library's own)
    std::fprintf(stderr, "kamp-train: error: reading the options: %s\n", e.what());
    return 1;
  }
  if (settings.request.enable_fsdp && app.count("--sharding") == 0) settings.sharding = "parameters";
  settings.request.fp8_settings = app.count("--fp8-recipe") + app.count("--fp8-amax-history") > 0;
  for (const char* shape : {"--preset", "--vocab", "--layers", "--heads", "--d-model", "--mlp", "--context"})
    settings.shape_given = settings.shape_given || app.count(shape) > 0;
  settings.vocab_given = app.count("--vocab") > 0;
  if (app.count("--config") > 0) settings.config_file = app.get_config_ptr()->as<std::string>();
  Kokkos::ScopeGuard kokkos(argc, argv);
  try {
    // The settings a checkpoint records: the shape as resolved (a preset, an llm.c file and a
    // tokenizer set it), so that the record given back as --config builds the same model.
    const auto record = [&] {
      const kamp::gpt_config& m = settings.model;
      const std::pair<const char*, int> shape[] = {{"--vocab", m.vocab},     {"--context", m.context},
                                                   {"--layers", m.layers},   {"--heads", m.heads},
                                                   {"--d-model", m.d_model}, {"--mlp", m.mlp}};
      for (const auto& [option, value] : shape) app.get_option(option)->default_str(std::to_string(value));
      app.get_option("--tokenizer-digest")->default_str(settings.tokenizer_digest);
      // An option left out is recorded as key="", which a --config would give as an empty value
      // (refused everywhere): left out of the record instead.
      std::istringstream all(app.config_to_str(true, false));
      std::string kept;
      for (std::string line; std::getline(all, line);)
        if (line.size() < 3 || line.compare(line.size() - 3, 3, "=\"\"") != 0) kept += line + '\n';
      return kept;
    };
    return kamp::app::exit_status("kamp-train", train(settings, record, mpi->world()));
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
