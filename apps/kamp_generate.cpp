// kamp-generate: text from a kamp checkpoint, one token at a time over a KV cache, in the
// checkpoint's precision mode. The text goes to standard output, everything else to stderr.
#include <kamp/model/network/decoder.hpp>
#include <kamp/model/network/generate.hpp>
#include <kamp/model/network/sampling.hpp>
#include <kamp/model/state/checkpoint.hpp>
#include <kamp/model/state/checkpoint_directory.hpp>
#include <kamp/model/state/state_weights.hpp>

#include <CLI/CLI.hpp>
#include <Kokkos_Core.hpp>

#include "train/option_checks.hpp"
#include "train/output_checks.hpp"
#include "train/tokenizer.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <sstream>

namespace {

struct generate_settings {
  std::string checkpoint = "auto", checkpoint_dir = "checkpoints", prompt = "the ", tokenizer;
  int tokens = 200;
  kamp::sampling_options sampling{0.8f, 0, 0};
  kamp::checkpoint_read_options reading;
};

// The checkpoint --checkpoint names: a file, or the newest in the directory that loads.
std::pair<std::string, kamp::training_state> load(const generate_settings& s) {
  if (s.checkpoint != "auto") return {s.checkpoint, kamp::read_checkpoint(s.checkpoint, s.reading)};
  if (!std::filesystem::is_directory(s.checkpoint_dir))
    throw std::invalid_argument("--checkpoint auto: there is no directory '" + s.checkpoint_dir +
                                "'; train first (kamp-train writes checkpoints there), or name a --checkpoint-dir "
                                "or a --checkpoint file");
  const kamp::checkpoint_directory dir(s.checkpoint_dir, 1);
  for (const std::string& path : dir.list()) {
    try {
      return {path, kamp::read_checkpoint(path, s.reading)};
    } catch (const kamp::checkpoint_error& e) {
      std::fprintf(stderr, "kamp-generate: skipping %s: %s\n", path.c_str(), e.what());
    }
  }
  throw std::invalid_argument("--checkpoint auto: no checkpoint in '" + s.checkpoint_dir +
                              "' loads; train first (kamp-train) or name a --checkpoint file");
}

// The value of `key` in the run's settings (kamp-train's options as CLI11 wrote them), or "": read
// back by CLI11's own parser, so that its quoting of any value (a path with quotes) is undone.
std::string recorded(const std::string& run_config, const std::string& key) {
  std::istringstream text(run_config);
  for (const CLI::ConfigItem& item : CLI::ConfigTOML().from_config(text))
    if (item.parents.empty() && item.name == key && item.inputs.size() == 1) return item.inputs.front();
  return "";
}

// The tokenizer the model's ids need: the one its run recorded (or --tokenizer with the recorded
// content), none for a byte-level model; a tokenizer of another size than the vocabulary is
// refused, since some drawn ids would not decode.
std::optional<kamp::app::tokenizer> model_tokenizer(const generate_settings& s, const kamp::training_state& state) {
  const std::string digest = recorded(state.run_config, "tokenizer-digest");
  const std::string path = s.tokenizer.empty() ? recorded(state.run_config, "tokenizer") : s.tokenizer;
  const std::string vocab = std::to_string(state.model.vocab);
  if (digest.empty() && state.model.vocab == 256) {
    if (!s.tokenizer.empty())
      throw std::invalid_argument(
          "the model is byte-level (vocabulary 256, trained without a tokenizer): its ids are "
          "bytes, which --tokenizer '" +
          s.tokenizer +
          "' would decode as pieces; leave "
          "--tokenizer out");
    return std::nullopt;
  }
  if (path.empty())
    throw std::invalid_argument("the model's vocabulary has " + vocab +
                                " tokens and its run recorded no tokenizer: give --tokenizer FILE (the SentencePiece "
                                "model its data was encoded with)");
  kamp::app::tokenizer t(path);
  if (!digest.empty() && digest != t.digest())
    throw std::invalid_argument("'" + path + "' (" + t.digest() + ") is not the tokenizer the run trained with (" +
                                digest + "): give that file as --tokenizer");
  if (t.vocab() != state.model.vocab)
    throw std::invalid_argument("'" + path + "' has " + std::to_string(t.vocab()) + " pieces, but the model draws " +
                                vocab + " ids: every id must decode, so the tokenizer must be the model's");
  return t;
}

int run(const generate_settings& s) {
  // The options first: a bad one must not cost a checkpoint read or leave the prompt on stdout.
  s.sampling.validate(kamp::gpt_config::max_vocab);
  if (s.tokens < 0) throw std::invalid_argument("--tokens must be >= 0, got " + std::to_string(s.tokens));
  const auto [path, state] = load(s);
  s.sampling.validate(state.model.vocab);
  const std::optional<kamp::app::tokenizer> pieces = model_tokenizer(s, state);
  kamp::gpt_decoder<> decoder(state.model, state.policy);
  const kamp::state_weights<> weights(state);
  decoder.bind_weights(weights.binding());
  std::fprintf(
      stderr,
      "kamp-generate: %s (step %lld, %s, %d layers, d_model %d, context %d); temperature %g, top-k %d, seed %llu\n",
      path.c_str(), static_cast<long long>(state.steps_taken), kamp::name(state.policy.mode), state.model.layers,
      state.model.d_model, state.model.context, s.sampling.temperature, s.sampling.top_k,
      static_cast<unsigned long long>(s.sampling.seed));
  std::fputs(s.prompt.c_str(), stdout);
  const auto start = std::chrono::steady_clock::now();
  std::size_t prompt_tokens = s.prompt.size();
  if (pieces) {
    // Pieces join into text only together (a space belongs to the next word's piece): each new
    // token prints what it adds to the decoded whole.
    const std::vector<int> prompt = pieces->encode(s.prompt);
    prompt_tokens = prompt.size();
    std::vector<int> drawn;
    std::string printed;
    kamp::generate_tokens(decoder, prompt, s.tokens, s.sampling, [&](int t) {
      drawn.push_back(t);
      const std::string text = pieces->decode(drawn);
      if (text.size() > printed.size() && text.compare(0, printed.size(), printed) == 0) {
        std::fputs(text.c_str() + printed.size(), stdout);
        printed = text;
      }
      kamp::app::flush_or_throw(stdout, "the standard output");
    });
    if (printed.empty() && s.tokens > 0) std::fputs(pieces->decode(drawn).c_str(), stdout);
  } else {
    kamp::generate(decoder, s.prompt, s.tokens, s.sampling, [](char c) {
      std::fputc(c, stdout);
      kamp::app::flush_or_throw(stdout, "the standard output");
    });
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::fputc('\n', stdout);
  std::fprintf(stderr, "kamp-generate: %d tokens in %.2f s (%.0f tokens/s, the prompt's %zu included)\n", s.tokens,
               seconds, double(std::size_t(s.tokens) + prompt_tokens) / seconds, prompt_tokens);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "kamp-generate: text from a kamp checkpoint (byte tokens), computed in the checkpoint's precision "
      "mode with a KV cache. The text goes to standard output."};
  generate_settings s;
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_option("--checkpoint", s.checkpoint,
                 "A checkpoint file, or 'auto': the newest in --checkpoint-dir that loads")
      ->capture_default_str();
  app.add_option("--checkpoint-dir", s.checkpoint_dir, "Where --checkpoint auto looks")->capture_default_str();
  kamp::app::add_accept_unhashed_option(app, s.reading);
  app.add_option("--tokenizer", s.tokenizer,
                 "The SentencePiece model to encode the prompt and decode the text with; default: the one the "
                 "checkpoint's run recorded (a byte-level model needs none)");
  app.add_option("--prompt", s.prompt, "The text to continue (at least one byte)")
      ->check(CLI::Validator(
          [](const std::string& v) { return v.empty() ? "the prompt needs at least one byte to start from" : ""; }, ""))
      ->capture_default_str();
  app.add_option("--tokens", s.tokens, "Bytes to generate")->capture_default_str();
  app.add_option("--temperature", s.sampling.temperature, "Divides the logits; 0: greedy (always the most likely byte)")
      ->capture_default_str();
  app.add_option("--top-k", s.sampling.top_k, "Draw among the k most likely bytes only; 0: all")->capture_default_str();
  app.add_option("--seed", s.sampling.seed, "Seed of the draws: the same seed gives the same text on a machine")
      ->check(kamp::app::seed_check())
      ->capture_default_str();
  kamp::app::refuse_empty_values(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return kamp::app::exit_status("kamp-generate", app.exit(e));
  }
  // Standard output is the text: keep Kokkos' advice about unset OpenMP binding out of it.
  setenv("OMP_PROC_BIND", "spread", 0);
  setenv("OMP_PLACES", "threads", 0);
  Kokkos::ScopeGuard kokkos(argc, argv);
  try {
    return kamp::app::exit_status("kamp-generate", run(s));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kamp-generate: error: %s\n", e.what());
    return 1;
  }
}
