#include "model_options.hpp"

namespace kamp::app {

precision_policy precision_options::policy() const {
  precision_policy p;
  p.mode = parse_precision_mode(mode);
  p.update = parse_pure_bf16_update(pure_update);
  p.fp32_layers = fp32_layers;
  p.recipe = parse_fp8_recipe(fp8_recipe);
  p.amax_history = fp8_amax_history;
  return p;
}

void add_model_options(CLI::App& app, gpt_config& model) {
  // First: CLI11 applies options in the order they are added, so --layers and the rest, given
  // beside a preset, change the preset's shape.
  std::vector<std::string> presets;
  std::string listed;
  for (const gpt_preset& p : gpt_presets()) {
    presets.emplace_back(p.name);
    listed += std::string(listed.empty() ? "" : ", ") + p.name + " (" + p.description + ")";
  }
  app.add_option_function<std::string>(
         "--preset", [&model](const std::string& name) { model = find_gpt_preset(name).config; },
         "A published shape, vocabulary 50257 and context 1024: " + listed +
             "; the other model options given change it")
      ->check(CLI::IsMember(presets));
  app.add_option("--vocab", model.vocab,
                 "Tokens in the vocabulary: 256 for byte-level text, the tokenizer's count for token files "
                 "(50257 for GPT-2's); wte is padded to a multiple of 128 rows")
      ->capture_default_str()
      ->check(CLI::Range(2, gpt_config::max_vocab));
  app.add_option("--layers", model.layers, "Transformer blocks")->capture_default_str();
  app.add_option("--heads", model.heads, "Attention heads per block")->capture_default_str();
  app.add_option("--d-model", model.d_model, "Width of the residual stream (a multiple of heads)")
      ->capture_default_str();
  app.add_option("--mlp", model.mlp, "Hidden width of each MLP")->capture_default_str();
  app.add_option("--context", model.context, "Tokens per sequence")->capture_default_str();
}

void add_recompute_option(CLI::App& app, std::string& recompute) {
  app.add_option("--recompute", recompute,
                 "Activations kept for the backward pass: none (all), or blocks (each block's input; the backward "
                 "pass runs the block's forward again: less memory, about a third more compute, the same gradients)")
      ->check(one_of(activation_recomputes(), parse_activation_recompute))
      ->capture_default_str();
}

void add_precision_options(CLI::App& app, precision_options& precision) {
  app.add_option("--mode", precision.mode,
                 "Precision: fp32 (all fp32), amp_bf16 (fp32 master weights, bf16 GEMMs; default), amp_fp16 "
                 "(fp32 master, fp16 GEMMs, dynamic loss scaling), pure_bf16 (bf16 weights and moments, no master), "
                 "amp_fp8 (amp_bf16 with the blocks' Linear GEMMs in FP8: E4M3 inputs and weights, E5M2 gradients)")
      ->check(one_of(precision_modes(), parse_precision_mode))
      ->capture_default_str();
  app.add_option("--pure-bf16-update", precision.pure_update,
                 "How pure_bf16 keeps updates smaller than half a bf16 ulp: kahan (compensation buffer) or "
                 "stochastic (stochastic rounding)")
      ->check(one_of(pure_bf16_updates(), parse_pure_bf16_update))
      ->capture_default_str();
  app.add_option("--fp32-layers", precision.fp32_layers,
                 "Layers whose GEMMs run in fp32 whatever the mode (autocast(enabled=False) around them): h<l>.attn, "
                 "h<l>.mlp, lm_head")
      ->delimiter(',')
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_option("--fp8-recipe", precision.fp8_recipe,
                 "amp_fp8's per-tensor scales: delayed (from the largest amax of the last --fp8-amax-history "
                 "steps; one pass per cast) or current (from each tensor's own amax; an extra pass)")
      ->check(CLI::IsMember({"delayed", "current"}))
      ->capture_default_str();
  app.add_option("--fp8-amax-history", precision.fp8_amax_history,
                 "Steps of amaxes delayed scaling takes its scale from (Transformer Engine's default: 1024)")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
}

}  // namespace kamp::app
