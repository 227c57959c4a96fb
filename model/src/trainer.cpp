#include <kamp/kernels/fused_optimizer.hpp>
#include <kamp/kernels/unscale_and_check.hpp>
#include <kamp/model/trainer.hpp>
#include <kamp/numeric/counter_random.hpp>

#include "fields.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>

namespace kamp {

using memory_space = gpt<float>::memory_space;
using execution_space = gpt<float>::execution_space;

void train_options::validate() const {
  const auto require = [](bool ok, const std::string& what) {
    if (!ok) throw std::invalid_argument("training options: " + what);
  };
  require(batch >= 1, "batch must be >= 1, got " + std::to_string(batch));
  require(micro_batches >= 1, "micro_batches must be >= 1, got " + std::to_string(micro_batches));
  require(steps >= 0, "steps must be >= 0, got " + std::to_string(steps));
  require(lr > 0.0f && std::isfinite(lr), "lr must be finite and > 0, got " + std::to_string(lr));
  require(warmup >= 0, "warmup must be >= 0, got " + std::to_string(warmup));
  require(min_lr_ratio >= 0.0f && min_lr_ratio <= 1.0f, "min_lr_ratio must lie in [0, 1]");
  require(grad_clip >= 0.0f && std::isfinite(grad_clip), "grad_clip must be finite and >= 0 (0 turns clipping off)");
  adamw_rule::validate(adamw);
  scaler.validate();
}

std::vector<float> gpt2_initial_weights(const gpt_config& config, std::uint64_t seed) {
  const tensor_table table = config.parameter_table();
  std::vector<float> w(table.flat_size(), 0.0f);
  const double residual_std = 0.02 / std::sqrt(2.0 * config.layers);
  const auto ends_with = [](const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  for (const auto& e : table.entries()) {
    if (ends_with(e.name, ".bias")) continue;
    if (e.name.find("ln") != std::string::npos) {
      std::fill(w.begin() + e.offset, w.begin() + e.offset + e.size, 1.0f);
      continue;
    }
    const double sd = ends_with(e.name, "proj.weight") ? residual_std : 0.02;
    for (std::size_t i = 0; i < e.size; ++i) {
      // Box-Muller on two counter-based uniforms in (0, 1].
      const std::uint64_t k = 2 * (e.offset + i);
      const double u1 = (counter_random(seed, k) + 1.0) / 4294967296.0, u2 = counter_random(seed, k + 1) / 4294967296.0;
      w[e.offset + i] = float(sd * std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
    }
  }
  return w;
}

namespace detail {

/// The fused AdamW optimizer of one precision mode behind a uniform face: the trainer needs
/// its weights (exact and model copy) and its step, not its element types.
struct optimizer_slot {
  virtual ~optimizer_slot() = default;
  virtual weights_ref exact() const = 0;
  virtual weights_ref copy() const = 0;
  virtual void step(const Kokkos::View<const float*, memory_space>& grads, const gradient_control<memory_space>& c,
                    float lr) = 0;
  /// The master shard, or (no master) the whole model copy widened.
  virtual std::vector<float> exact_weights() const = 0;
  virtual std::vector<std::uint32_t> copy_bits() const = 0;
  /// The optimizer's tensors in state_layout's order: the whole model copy, then this rank's
  /// shard of the others.
  virtual std::vector<state_tensor> state() const = 0;
  /// Loads tensors sized like state()'s (checked by the trainer), and the optimizer's step count.
  virtual void restore(const std::vector<state_tensor>& tensors, std::int64_t steps) = 0;
};

template <class T>
state_tensor snapshot(const char* role, const Kokkos::View<T*, memory_space>& v) {
  state_tensor t{role, dtype_of<T>(), std::vector<unsigned char>(v.extent(0) * sizeof(T))};
  Kokkos::deep_copy(
      Kokkos::View<T*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(reinterpret_cast<T*>(t.bytes.data()), v.extent(0)),
      v);
  return t;
}

template <class T>
void load(const state_tensor& t, const Kokkos::View<T*, memory_space>& v) {
  Kokkos::deep_copy(v, Kokkos::View<const T*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(
                           reinterpret_cast<const T*>(t.bytes.data()), v.extent(0)));
}

template <class Model, class Moment>
struct adamw_slot final : optimizer_slot {
  std::size_t first;  ///< the shard [first, first + opt.size()) of the flat buffers this rank updates
  fused_optimizer<adamw_rule, Model, float, Moment, memory_space> opt;
  Kokkos::View<Model*, memory_space> model;

  adamw_slot(const std::vector<float>& initial, std::pair<std::size_t, std::size_t> shard, const adamw_options& hyper,
             weight_update update, rounding_options rounding)
      : first(shard.first),
        opt(shard.second - shard.first, hyper, update, rounding),
        model("kamp::trainer::model_copy", initial.size()) {
    Kokkos::View<float*, memory_space> w("kamp::trainer::initial", initial.size());
    Kokkos::deep_copy(w, Kokkos::View<const float*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(initial.data(),
                                                                                                  initial.size()));
    // Every rank rounds the whole model copy from the same initial weights: nothing to gather.
    const execution_space ex;
    cast(ex, model, w);
    opt.initialize(ex, Kokkos::subview(w, shard), model_shard());
  }
  Kokkos::View<Model*, memory_space> model_shard() const {
    return Kokkos::subview(model, std::make_pair(first, first + opt.size()));
  }
  weights_ref exact() const override {
    return opt.master().extent(0) > 0 ? weights_ref{dtype::fp32, opt.master().data()}
                                      : weights_ref{dtype_of<Model>(), model.data()};
  }
  weights_ref copy() const override { return {dtype_of<Model>(), model.data()}; }
  void step(const Kokkos::View<const float*, memory_space>& grads, const gradient_control<memory_space>& c,
            float lr) override {
    opt.step(execution_space(), model_shard(), grads, c, lr);
  }
  std::vector<float> exact_weights() const override {
    std::vector<float> out(opt.master().extent(0) > 0 ? opt.size() : model.extent(0));
    if (opt.master().extent(0) > 0) {
      Kokkos::deep_copy(Kokkos::View<float*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(out.data(), out.size()),
                        opt.master());
    } else {
      const auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), model);
      for (std::size_t i = 0; i < out.size(); ++i) out[i] = load_float(h.data() + i);
    }
    return out;
  }
  std::vector<std::uint32_t> copy_bits() const override {
    const auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), model);
    std::vector<std::uint32_t> out(h.extent(0));
    for (std::size_t i = 0; i < out.size(); ++i) {
      if constexpr (std::is_same_v<Model, float>) {
        out[i] = detail::float_to_bits(h(i));
      } else {
        out[i] = h(i).bits;
      }
    }
    return out;
  }
  std::vector<state_tensor> state() const override {
    std::vector<state_tensor> out{snapshot("model", model)};
    if (opt.master().extent(0) > 0) out.push_back(snapshot("master", opt.master()));
    out.push_back(snapshot("moment1", opt.moment1()));
    out.push_back(snapshot("moment2", opt.moment2()));
    if (opt.compensation().extent(0) > 0) out.push_back(snapshot("compensation", opt.compensation()));
    return out;
  }
  void restore(const std::vector<state_tensor>& tensors, std::int64_t steps) override {
    auto next = tensors.begin();
    load(*next++, model);
    if (opt.master().extent(0) > 0) load(*next++, opt.master());
    load(*next++, opt.moment1());
    load(*next++, opt.moment2());
    if (opt.compensation().extent(0) > 0) load(*next++, opt.compensation());
    Kokkos::deep_copy(opt.step_count(), steps);
  }
};

std::unique_ptr<optimizer_slot> make_optimizer(const precision_policy& policy, const train_options& o,
                                               const std::vector<float>& initial,
                                               std::pair<std::size_t, std::size_t> shard) {
  rounding_options sr;
  sr.mode = rounding::stochastic;
  sr.seed = o.seed;
  sr.stream_offset = shard.first;  // each element's random stream does not depend on the shards
  switch (policy.mode) {
    case precision_mode::fp32:
      return std::make_unique<adamw_slot<float, float>>(initial, shard, o.adamw, weight_update::nearest, rounding_options{});
    case precision_mode::amp_bf16:
      return std::make_unique<adamw_slot<bf16, float>>(initial, shard, o.adamw, weight_update::master, rounding_options{});
    case precision_mode::amp_fp16:
      return std::make_unique<adamw_slot<fp16, float>>(initial, shard, o.adamw, weight_update::master, rounding_options{});
    case precision_mode::pure_bf16:
      // Moments in bf16 too, as llama-recipes' AnyPrecisionAdamW does for pure bf16.
      return policy.update == pure_bf16_update::kahan
                 ? std::make_unique<adamw_slot<bf16, bf16>>(initial, shard, o.adamw, weight_update::kahan, rounding_options{})
                 : std::make_unique<adamw_slot<bf16, bf16>>(initial, shard, o.adamw, weight_update::stochastic, sr);
  }
  throw std::logic_error("unknown precision mode");
}

loss_scaler_options scaler_options(const precision_policy& policy, const train_options& o) {
  if (policy.loss_scaling()) return o.scaler;
  // Modes without loss scaling keep a static scale of 1: the same skip-on-inf/NaN bookkeeping.
  loss_scaler_options unit;
  unit.init_scale = 1.0f;
  unit.dynamic = false;
  return unit;
}

}  // namespace detail

std::vector<std::pair<std::string, dtype>> state_layout(const precision_policy& policy) {
  const dtype moments = policy.mode == precision_mode::pure_bf16 ? dtype::bf16 : dtype::fp32;
  std::vector<std::pair<std::string, dtype>> out{{"model", policy.low()}};
  if (policy.has_master()) out.emplace_back("master", dtype::fp32);
  out.emplace_back("moment1", moments);
  out.emplace_back("moment2", moments);
  if (policy.mode == precision_mode::pure_bf16 && policy.update == pure_bf16_update::kahan)
    out.emplace_back("compensation", dtype::bf16);
  return out;
}

trainer::trainer(const gpt_config& config, const precision_policy& policy, const train_options& options,
                 const token_dataset& data, const parallel_options& parallel)
    : config_(config),
      policy_(policy),
      options_(options),
      data_(data),
      parallel_(parallel),
      scaler_((options.validate(), config.validate(), policy.validate(config),
               detail::scaler_options(policy, options))),
      check_("kamp::trainer::check") {
  if (data.context() != config.context)
    throw std::invalid_argument("trainer: the data was cut into windows of " + std::to_string(data.context()) +
                                " tokens but the model's context is " + std::to_string(config.context));
  if (parallel.gradient_reduction != dtype::fp32 && parallel.gradient_reduction != dtype::bf16)
    throw std::invalid_argument(std::string("trainer: gradients are reduced in fp32 or bf16, not ") +
                                name(parallel.gradient_reduction));
  const tensor_table table = config.parameter_table();
  const dist::communicator& ranks = parallel.ranks;
  for (int r = 0; r < ranks.size(); ++r) {
    spans_.push_back(table.shard(r, ranks.size()));
    if (spans_.back().first == spans_.back().second)
      throw std::invalid_argument("trainer: " + std::to_string(ranks.size()) + " ranks leave rank " + std::to_string(r) +
                                  " without a shard of the " + std::to_string(table.flat_size()) +
                                  " parameters (shards are multiples of 64): use fewer ranks or a larger model");
  }
  model_ = std::make_unique<gpt<float>>(config, policy, options.batch);
  optimizer_ = detail::make_optimizer(policy, options, gpt2_initial_weights(config, options.seed), shard());
  if (ranks.distributed() && policy.has_master()) {
    // The model reads embeddings, LayerNorms and biases in fp32: those values of the master
    // are gathered from the shards after every update, the rest stays sharded.
    exact_layout_ = exactly_read_parameters(config, policy);
    exact_gathered_ = Kokkos::View<float*, memory_space>("kamp::dist::exact_weights", exact_layout_.flat_size());
    // Each rank's pieces of those tensors, found once: (offset in its master shard, offset in
    // the gathered buffer, length); a rank's pieces span one range of the gathered buffer.
    for (int r = 0; r < ranks.size(); ++r) {
      const auto [first, last] = spans_[r];
      std::size_t lo = exact_layout_.flat_size(), hi = 0;
      for (const auto& e : exact_layout_.entries()) {
        const auto& f = table[table.index_of(e.name)];
        const std::size_t a = std::max(first, f.offset), b = std::min(last, f.offset + f.size);
        if (a >= b) continue;
        lo = std::min(lo, e.offset + (a - f.offset));
        hi = std::max(hi, e.offset + (b - f.offset));
        if (r == ranks.rank()) exact_pieces_.push_back({a - first, e.offset + (a - f.offset), b - a});
      }
      exact_spans_.emplace_back(std::min(lo, hi), hi);
    }
    model_->bind_weights({dtype::fp32, exact_gathered_.data()}, exact_layout_, optimizer_->copy());
    share_weights();
  } else {
    model_->bind_weights(optimizer_->exact(), optimizer_->copy());
  }
  tokens_.resize(std::size_t(options.batch) * config.context);
  targets_.resize(tokens_.size());
}

std::vector<std::size_t> trainer::shard_sizes() const {
  std::vector<std::size_t> out;
  for (const auto& [first, last] : spans_) out.push_back(last - first);
  return out;
}

void trainer::share_weights() {
  const dist::communicator& ranks = parallel_.ranks;
  if (!ranks.distributed()) return;
  const execution_space ex;
  ex.fence();
  const weights_ref copy = optimizer_->copy();
  ranks.all_gather(const_cast<void*>(copy.data), size_of(copy.type), spans_);
  if (exact_gathered_.extent(0) == 0) return;
  const float* master = static_cast<const float*>(optimizer_->exact().data);
  for (const auto& p : exact_pieces_)
    Kokkos::deep_copy(
        ex, Kokkos::View<float*, memory_space, Kokkos::MemoryUnmanaged>(exact_gathered_.data() + p.gathered, p.size),
        Kokkos::View<const float*, memory_space, Kokkos::MemoryUnmanaged>(master + p.master, p.size));
  ex.fence();
  ranks.all_gather(exact_gathered_.data(), sizeof(float), exact_spans_);
}

trainer::~trainer() = default;

float trainer::learning_rate(std::int64_t step) const {
  const double peak = options_.lr, floor = peak * options_.min_lr_ratio;
  if (step < options_.warmup) return float(peak * double(step + 1) / double(options_.warmup));
  const std::int64_t decay = std::max<std::int64_t>(1, options_.steps - options_.warmup);
  const double progress = std::min(1.0, double(step - options_.warmup) / double(decay));
  return float(floor + 0.5 * (peak - floor) * (1.0 + std::cos(3.141592653589793 * progress)));
}

step_report trainer::step() {
  const auto start = std::chrono::steady_clock::now();
  const execution_space ex;
  const dist::communicator& ranks = parallel_.ranks;
  const float lr = learning_rate(steps_taken_);
  const float scale = scaler_.host_state().scale;
  Kokkos::deep_copy(ex, model_->grads(), 0.0f);
  double loss = 0;
  for (int m = 0; m < options_.micro_batches; ++m) {
    // Rank r's micro-batch is rows [r·B, (r+1)·B) of one process's batch N·B: the same windows.
    const std::uint64_t micro = std::uint64_t(attempts_) * options_.micro_batches + m;
    data_.sample(token_dataset::split::train, options_.seed, micro * ranks.size() + ranks.rank(), options_.batch,
                 tokens_.data(), targets_.data());
    loss += model_->forward_backward(tokens_.data(), targets_.data(), 1.0 / (options_.micro_batches * ranks.size()),
                                     policy_.loss_scaling() ? scaler_.state() : gpt<float>::scaler_view()) /
            options_.micro_batches;
  }
  if (gradient_hook_) gradient_hook_(model_->grads());
  Kokkos::View<float*, memory_space> grads = model_->grads();
  if (ranks.distributed()) {
    loss = ranks.sum(loss) / ranks.size();
    ex.fence();
    ranks.reduce_scatter_sum(grads.data(), shard_sizes(), parallel_.gradient_reduction);
    grads = Kokkos::subview(grads, shard());
  }
  // One pass: inf/NaN check and the norm; the optimizer applies 1/scale and the clip factor.
  unscale_and_check(ex, grads, scaler_.state(), check_, unscale_options{false, true});
  gradient_check result;
  if (ranks.distributed()) {
    // Every rank skips or steps, clips and updates its scaler from the same global verdict.
    Kokkos::deep_copy(result, check_);
    result.found_inf = ranks.max(result.found_inf);
    result.norm_squared = ranks.sum(result.norm_squared);
    Kokkos::deep_copy(check_, result);
  }
  gradient_control<memory_space> control{scaler_.state(), check_, false, options_.grad_clip};
  optimizer_->step(grads, control, lr);
  scaler_.update(ex, check_);
  Kokkos::deep_copy(result, check_);
  if (!result.found_inf) share_weights();
  ++attempts_;
  if (!result.found_inf) ++steps_taken_;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return {attempts_,
          loss,
          result.found_inf != 0,
          float(std::sqrt(double(result.norm_squared))),
          scale,
          lr,
          seconds,
          std::int64_t(options_.micro_batches) * options_.batch * ranks.size() * config_.context};
}

double trainer::validation_loss(int batches) {
  // As in step(): rank r takes rows [r·B, (r+1)·B) of one process's validation batch N·B.
  const dist::communicator& ranks = parallel_.ranks;
  double total = 0;
  for (int b = 0; b < batches; ++b) {
    data_.sample(token_dataset::split::validation, options_.seed, std::uint64_t(b) * ranks.size() + ranks.rank(),
                 options_.batch, tokens_.data(), targets_.data());
    total += model_->evaluate(tokens_.data(), targets_.data());
  }
  if (ranks.distributed()) total = ranks.sum(total) / ranks.size();
  return batches > 0 ? total / batches : 0.0;
}

std::vector<float> trainer::exact_weights() const {
  std::vector<float> local = optimizer_->exact_weights();
  if (!policy_.has_master() || !parallel_.ranks.distributed()) return local;
  // Master shards: gathered through a buffer in the model's memory, as the model copy is.
  Kokkos::View<float*, memory_space> full("kamp::trainer::exact_weights", spans_.back().second);
  Kokkos::deep_copy(Kokkos::subview(full, shard()),
                    Kokkos::View<const float*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(local.data(), local.size()));
  parallel_.ranks.all_gather(full.data(), sizeof(float), spans_);
  std::vector<float> out(full.extent(0));
  Kokkos::deep_copy(Kokkos::View<float*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(out.data(), out.size()), full);
  return out;
}

std::vector<std::uint32_t> trainer::model_copy_bits() const { return optimizer_->copy_bits(); }

training_state trainer::state() const {
  training_state s;
  s.model = config_;
  s.policy = policy_;
  s.options = options_;
  s.steps_taken = steps_taken_;
  s.attempts = attempts_;
  s.scaler = scaler_.host_state();
  s.tensors = optimizer_->state();
  const dist::communicator& ranks = parallel_.ranks;
  if (!ranks.distributed()) return s;
  const std::vector<std::size_t> counts = shard_sizes();
  for (auto& t : s.tensors) {
    if (t.role == "model") continue;
    const std::size_t width = size_of(t.type);
    std::vector<unsigned char> full(ranks.rank() == 0 ? spans_.back().second * width : 0);
    ranks.gather(t.bytes.data(), full.data(), width, counts, 0);
    t.bytes = std::move(full);
  }
  if (ranks.rank() != 0) s.tensors.clear();
  return s;
}

namespace {
// kamp-train's option for a configuration field: d_model -> d-model.
std::string option_name(std::string field) {
  std::replace(field.begin(), field.end(), '_', '-');
  return field;
}
}  // namespace

void trainer::check_restorable(const training_state& s) const {
  const auto fail = [](const std::string& what) { throw std::invalid_argument("the saved state does not fit this run: " + what); };
  std::vector<int> saved;
  detail::for_each_field(s.model, [&](const char*, int v) { saved.push_back(v); });
  std::size_t i = 0;
  detail::for_each_field(config_, [&](const char* field, int v) {
    if (saved[i] != v)
      fail("it holds a model with " + std::string(field) + " " + std::to_string(saved[i]) + ", this run's has " +
           std::to_string(v) + ": resume with the checkpoint's model shape (--" + option_name(field) + " " +
           std::to_string(saved[i]) + "), or start a new run in another checkpoint directory");
    ++i;
  });
  if (s.policy.mode != policy_.mode ||
      (policy_.mode == precision_mode::pure_bf16 && s.policy.update != policy_.update))
    fail(std::string("it was written in precision mode ") + name(s.policy.mode) +
         (s.policy.mode == precision_mode::pure_bf16 ? std::string(" (") + name(s.policy.update) + " updates)" : "") +
         ", this run uses " + name(policy_.mode) +
         (policy_.mode == precision_mode::pure_bf16 ? std::string(" (") + name(policy_.update) + " updates)" : "") +
         ": the optimizer state differs between modes; resume with the checkpoint's mode");
  const auto layout = state_layout(policy_);
  const tensor_table table = config_.parameter_table();
  if (s.tensors.size() != layout.size())
    fail("it holds " + std::to_string(s.tensors.size()) + " state tensors, " + name(policy_.mode) + " keeps " +
         std::to_string(layout.size()));
  for (std::size_t t = 0; t < layout.size(); ++t) {
    const state_tensor& x = s.tensors[t];
    if (x.role != layout[t].first || x.type != layout[t].second)
      fail("state tensor " + std::to_string(t) + " is " + x.role + " (" + name(x.type) + "), expected " +
           layout[t].first + " (" + name(layout[t].second) + ")");
    if (x.bytes.size() != table.flat_size() * size_of(x.type))
      fail(x.role + " has " + std::to_string(x.bytes.size() / size_of(x.type)) + " elements, expected " +
           std::to_string(table.flat_size()));
  }
  try {
    check_state(s, table);
  } catch (const std::invalid_argument& e) {
    fail(e.what());
  }
}

void trainer::restore(const training_state& s) {
  // Every rank checks the state it was given; all restore it or none does (restoring is
  // collective, and a rank left behind would wait in it forever).
  // The scaler's restore is the last check that can fail; nothing changes before it.
  std::string problem;
  const loss_scale_state before = scaler_.host_state();
  try {
    check_restorable(s);
    scaler_.restore(s.scaler);
  } catch (const std::invalid_argument& e) {
    problem = e.what();
  }
  if (!parallel_.ranks.all(problem.empty())) {
    if (problem.empty()) scaler_.restore(before);
    throw std::invalid_argument(problem.empty() ? "the saved state does not fit this run on another rank" : problem);
  }
  if (parallel_.ranks.distributed()) {
    std::vector<state_tensor> mine;
    for (const auto& t : s.tensors) {
      if (t.role == "model") {
        mine.push_back(t);
        continue;
      }
      const std::size_t width = size_of(t.type);
      mine.push_back({t.role, t.type,
                      std::vector<unsigned char>(t.bytes.begin() + shard().first * width,
                                                 t.bytes.begin() + shard().second * width)});
    }
    optimizer_->restore(mine, s.steps_taken);
  } else {
    optimizer_->restore(s.tensors, s.steps_taken);
  }
  share_weights();
  steps_taken_ = s.steps_taken;
  attempts_ = s.attempts;
}

}  // namespace kamp
