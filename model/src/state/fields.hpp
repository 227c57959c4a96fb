#ifndef KAMP_MODEL_SRC_STATE_FIELDS_HPP
#define KAMP_MODEL_SRC_STATE_FIELDS_HPP

#include <kamp/model/state/training_state.hpp>

// One list of the configuration fields, visited by the checkpoint writer, its reader and the
// comparisons, so a new field cannot be saved but forgotten when resuming (or the reverse).
namespace kamp::detail {

template <class Config, class F>
void for_each_field(Config& c, F&& f) {
  static_assert(std::is_same_v<std::remove_const_t<Config>, gpt_config>);
  f("vocab", c.vocab);
  f("context", c.context);
  f("layers", c.layers);
  f("heads", c.heads);
  f("d_model", c.d_model);
  f("mlp", c.mlp);
}

template <class Options, class F>
void for_each_option(Options& o, F&& f) {
  static_assert(std::is_same_v<std::remove_const_t<Options>, train_options>);
  f("batch", o.batch);
  f("micro_batches", o.micro_batches);
  f("steps", o.steps);
  f("lr", o.lr);
  f("warmup", o.warmup);
  f("min_lr_ratio", o.min_lr_ratio);
  f("beta1", o.adamw.beta1);
  f("beta2", o.adamw.beta2);
  f("eps", o.adamw.eps);
  f("weight_decay", o.adamw.weight_decay);
  f("grad_clip", o.grad_clip);
  f("seed", o.seed);
  f("loss_scale", o.scaler.init_scale);
  f("loss_scale_growth_factor", o.scaler.growth_factor);
  f("loss_scale_backoff_factor", o.scaler.backoff_factor);
  f("loss_scale_growth_interval", o.scaler.growth_interval);
  f("loss_scale_hysteresis", o.scaler.hysteresis);
  f("loss_scale_consecutive_hysteresis", o.scaler.consecutive_hysteresis);
  f("loss_scale_min", o.scaler.min_scale);
  f("loss_scale_max", o.scaler.max_scale);
  f("loss_scale_dynamic", o.scaler.dynamic);
}

template <class State, class F>
void for_each_scaler_field(State& s, F&& f) {
  static_assert(std::is_same_v<std::remove_const_t<State>, loss_scale_state>);
  f("scale", s.scale);
  f("growth_tracker", s.growth_tracker);
  f("hysteresis_left", s.hysteresis_left);
  f("last_step_skipped", s.last_step_skipped);
  f("steps", s.steps);
  f("skipped_steps", s.skipped_steps);
}

/// The members of two training states side by side, f(a.x, b.x), for each but the tensors and
/// their slice: what says which run a state belongs to and where it stands.
template <class A, class B, class F>
void for_each_run_field(A& a, B& b, F&& f) {
  static_assert(std::is_same_v<std::remove_const_t<A>, training_state> &&
                std::is_same_v<std::remove_const_t<B>, training_state>);
  // A new member of training_state stops the build here until it is listed below (or is a
  // tensor's): twelve members, in declaration order.
  auto& [model, policy, options, steps_taken, attempts, scaler, fp8, tensors, slice, run_config, kamp_version,
         format_version] = a;
  f(model, b.model);
  f(policy, b.policy);
  f(options, b.options);
  f(steps_taken, b.steps_taken);
  f(attempts, b.attempts);
  f(scaler, b.scaler);
  f(fp8, b.fp8);
  f(run_config, b.run_config);
  f(kamp_version, b.kamp_version);
  f(format_version, b.format_version);
  (void)tensors;
  (void)slice;
}

}  // namespace kamp::detail

#endif
