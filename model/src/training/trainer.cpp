#include <kamp/kernels/unscale_and_check.hpp>
#include <kamp/model/dist/agree.hpp>
#include <kamp/model/network/gpt_parameters.hpp>
#include <kamp/model/training/trainer.hpp>

#include "dist/gradient_exchange.hpp"
#include "state/fields.hpp"
#include "training/optimizer_slot.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <sstream>
#include <stdexcept>

namespace kamp {

using detail::execution_space;
using detail::memory_space;

trainer::trainer(const gpt_config& config, const precision_policy& policy, const train_options& options,
                 const token_dataset& data, const parallel_options& parallel)
    : config_(config),
      policy_(policy),
      options_(options),
      parallel_(parallel),
      schedule_{double(options.lr), double(options.min_lr_ratio), options.warmup, options.steps},
      scaler_(
          (options.validate(), config.validate(), policy.validate(config), detail::scaler_options(policy, options))),
      check_("kamp::trainer::check"),
      batches_(data, options.batch),
      micro_losses_("kamp::trainer::micro_losses", options.micro_batches),
      records_("kamp::trainer::records", report_capacity) {
  if (data.context() != config.context)
    throw std::invalid_argument("trainer: the data was cut into windows of " + std::to_string(data.context()) +
                                " tokens but the model's context is " + std::to_string(config.context));
  if (data.max_token() >= config.vocab)
    throw std::invalid_argument("trainer: the data holds token " + std::to_string(data.max_token()) +
                                ", outside the model's vocabulary of " + std::to_string(config.vocab) +
                                ": give the model the tokenizer's vocabulary (--vocab)");
  if (policy.fp8() && parallel.ranks.distributed())
    throw std::invalid_argument(
        "trainer: amp_fp8 runs in one process for now: each rank would scale its FP8 tensors from its own amaxes "
        "(Transformer Engine reduces them over the data-parallel ranks first; kamp does not yet). Train in one "
        "process, or use --mode amp_bf16 with several ranks");
  if (parallel.gradient_reduction != dtype::fp32 && parallel.gradient_reduction != dtype::bf16)
    throw std::invalid_argument(std::string("trainer: gradients are reduced in fp32 or bf16, not ") +
                                name(parallel.gradient_reduction));
  if (parallel.level == sharding::none)
    throw std::invalid_argument(
        "trainer: data parallelism shards at least the optimizer state: use sharding "
        "optimizer (ZeRO-1), gradients (ZeRO-2) or parameters (ZeRO-3/FSDP)");
  const tensor_table table = parameter_table(config);
  const dist::communicator& ranks = parallel.ranks;
  for (int r = 0; r < ranks.size(); ++r) {
    shards_.push_back(table.shard(r, ranks.size()));
    if (shards_.back().empty())
      throw std::invalid_argument("trainer: " + std::to_string(ranks.size()) + " ranks leave rank " +
                                  std::to_string(r) + " without a shard of the " + std::to_string(table.flat_size()) +
                                  " parameters (shards are multiples of 64): use fewer ranks or a larger model");
  }
  model_ = std::make_unique<gpt<float>>(config, policy, options.batch, execution_space(), options.recompute);
  // At ZeRO-3 each rank keeps only its shard of the model copy; otherwise the whole copy.
  const bool sharded_copy = ranks.distributed() && parallel.level == sharding::parameters;
  optimizer_ = detail::make_optimizer(
      policy, options,
      sharded_copy ? gpt2_initial_weights(config, options.seed, shard()) : gpt2_initial_weights(config, options.seed),
      shard(), !sharded_copy);
  exchange_ =
      detail::make_gradient_exchange(*model_, policy_, parallel_, shards_, optimizer_->exact(), optimizer_->copy());
}

trainer::~trainer() = default;

namespace {

// What the report needs, before the optimizer and the scaler move on: one device task. A free
// function: nvcc places no device lambda in a private member function.
void record_step(const execution_space& ex, const Kokkos::View<const double*, memory_space>& losses,
                 const Kokkos::View<const gradient_check, memory_space>& check,
                 const Kokkos::View<const loss_scale_state, memory_space>& scale,
                 const Kokkos::View<const std::int64_t, memory_space>& taken, const lr_schedule& schedule,
                 double positions, const Kokkos::View<detail::step_record, memory_space>& slot) {
  const int micro = int(losses.extent(0));
  Kokkos::parallel_for(
      "kamp::trainer::record", Kokkos::RangePolicy<execution_space>(ex, 0, 1), KOKKOS_LAMBDA(int) {
        detail::step_record r;
        r.loss = 0;
        for (int m = 0; m < micro; ++m) r.loss += losses(m) / positions / micro;
        r.skipped = check().found_inf != 0;
        r.grad_norm = static_cast<float>(sqrt(static_cast<double>(check().norm_squared)));
        r.scale = scale().scale;
        r.lr = schedule(taken());
        slot() = r;
      });
}

}  // namespace

double trainer::communication_wait_seconds() { return exchange_->take_wait_seconds(); }

std::int64_t trainer::steps_taken() const {
  std::int64_t taken = 0;
  Kokkos::deep_copy(taken, optimizer_->step_count());
  return taken;
}

void trainer::advance() {
  const execution_space ex;
  const dist::communicator& ranks = parallel_.ranks;
  if (unread_ == report_capacity) {
    const auto early = reports();
    drained_.insert(drained_.end(), early.begin(), early.end());
  }
  if (unread_ == 0 && drained_.empty()) unread_since_ = std::chrono::steady_clock::now();
  exchange_->start_step();
  const auto scaler = policy_.loss_scaling() ? scaler_.state() : gpt<float>::scaler_view();
  for (int m = 0; m < options_.micro_batches; ++m) {
    // Rank r's micro-batch is rows [r·B, (r+1)·B) of one process's batch N·B: the same windows.
    const std::uint64_t micro = std::uint64_t(attempts_) * options_.micro_batches + m;
    batches_.sample(token_dataset::split::train, options_.seed, micro * ranks.size() + ranks.rank());
    model_->forward_backward(batches_.tokens(), batches_.targets(), 1.0 / (options_.micro_batches * ranks.size()),
                             scaler, Kokkos::subview(micro_losses_, m));
  }
  const Kokkos::View<float*, memory_space> grads = exchange_->finish_backward(gradient_hook_);
  // One pass: inf/NaN check and the norm; the optimizer applies 1/scale and the clip factor.
  unscale_and_check(ex, grads, scaler_.state(), check_, unscale_options{false, true});
  exchange_->agree(check_);
  record_step(ex, micro_losses_, check_, scaler_.state(), optimizer_->step_count(), schedule_,
              double(options_.batch) * config_.context, Kokkos::subview(records_, unread_));
  optimizer_->step(grads, gradient_control<memory_space>{scaler_.state(), check_, false, options_.grad_clip},
                   schedule_);
  scaler_.update(ex, check_);
  exchange_->share_updated_weights();
  ++attempts_;
  ++unread_;
}

std::vector<step_report> trainer::reports() {
  std::vector<step_report> out = std::move(drained_);
  drained_.clear();
  if (unread_ == 0) return out;
  // A copy even where the device is the host, so that it is one step's single read.
  Kokkos::View<detail::step_record*, Kokkos::HostSpace> host(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "kamp::trainer::reports"), unread_);
  Kokkos::deep_copy(host, Kokkos::subview(records_, std::make_pair(std::int64_t(0), unread_)));
  const auto now = std::chrono::steady_clock::now();
  const std::int64_t steps = std::int64_t(out.size()) + unread_;
  const double seconds = std::chrono::duration<double>(now - unread_since_).count() / double(steps);
  for (auto& r : out) r.seconds = seconds;
  const dist::communicator& ranks = parallel_.ranks;
  for (std::int64_t i = 0; i < unread_; ++i) {
    const detail::step_record& r = host(i);
    out.push_back({attempts_ - unread_ + i + 1, ranks.distributed() ? ranks.sum(r.loss) / ranks.size() : r.loss,
                   r.skipped != 0, r.grad_norm, r.scale, r.lr, seconds,
                   std::int64_t(options_.micro_batches) * options_.batch * ranks.size() * config_.context});
  }
  unread_ = 0;
  return out;
}

step_report trainer::step() {
  advance();
  return reports().back();
}

double trainer::validation_loss(int batches) {
  // As in step(): rank r takes rows [r·B, (r+1)·B) of one process's validation batch N·B.
  const dist::communicator& ranks = parallel_.ranks;
  Kokkos::View<double*, memory_space> sums("kamp::trainer::validation_losses", std::max(batches, 0));
  for (int b = 0; b < batches; ++b) {
    batches_.sample(token_dataset::split::validation, options_.seed, std::uint64_t(b) * ranks.size() + ranks.rank());
    model_->evaluate(batches_.tokens(), batches_.targets(), Kokkos::subview(sums, b));
  }
  const auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), sums);
  double total = 0;
  for (int b = 0; b < batches; ++b) total += host(b) / (double(options_.batch) * config_.context);
  if (ranks.distributed()) total = ranks.sum(total) / ranks.size();
  return batches > 0 ? total / batches : 0.0;
}

namespace {
// Every rank's host values of `local` (this rank's shard, elements of `width` bytes) put
// together on every rank, through a buffer in the model's memory as the collectives expect.
template <class T>
std::vector<T> gather_shards(const std::vector<T>& local, const dist::communicator& ranks,
                             const std::vector<element_range>& shards) {
  Kokkos::View<T*, gpt<float>::memory_space> full("kamp::trainer::gathered", shards.back().last);
  Kokkos::deep_copy(Kokkos::subview(full, shards[ranks.rank()].pair()),
                    Kokkos::View<const T*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(local.data(), local.size()));
  ranks.all_gather(full.data(), sizeof(T), shards);
  std::vector<T> out(full.extent(0));
  Kokkos::deep_copy(Kokkos::View<T*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(out.data(), out.size()), full);
  return out;
}
}  // namespace

std::vector<float> trainer::exact_weights() const {
  std::vector<float> local = optimizer_->exact_weights();
  // The master is sharded, and at level parameters the copy too.
  const bool sharded = policy_.has_master() || parallel_.level == sharding::parameters;
  if (!sharded || !parallel_.ranks.distributed()) return local;
  return gather_shards(local, parallel_.ranks, shards_);
}

std::vector<std::uint32_t> trainer::model_copy_bits() const {
  std::vector<std::uint32_t> local = optimizer_->copy_bits();
  if (parallel_.level != sharding::parameters || !parallel_.ranks.distributed()) return local;
  return gather_shards(local, parallel_.ranks, shards_);
}

training_state trainer::state() const {
  training_state s;
  s.model = config_;
  s.policy = policy_;
  s.options = options_;
  s.steps_taken = steps_taken();
  s.attempts = attempts_;
  s.scaler = scaler_.host_state();
  s.fp8 = model_->fp8_state();
  s.tensors = optimizer_->state();
  if (parallel_.ranks.distributed()) s.slice = shard();
  return s;
}

namespace {
// kamp-train's option for a configuration field: d_model -> d-model.
std::string option_name(std::string field) {
  std::replace(field.begin(), field.end(), '_', '-');
  return field;
}

// The first tensor of `s` holding inf/NaN values, e.g. "model/wte holds 8192 non-finite values";
// empty when every value is finite.
std::string first_non_finite(const training_state& s, const tensor_table& table) {
  const element_range slice = s.slice.within(table.flat_size());
  for (const state_tensor& x : s.tensors)
    for (const auto& e : table.entries()) {
      const element_range part = overlap(e.range(), slice);
      if (part.empty()) continue;
      const std::size_t bad = statistics(x, part.first - slice.first, part.size()).non_finite;
      if (bad > 0) return x.role + "/" + e.name + " holds " + std::to_string(bad) + " non-finite values";
    }
  return "";
}

// Throws when `saved` holds non-finite values and so does `now`, the trainer's own state: restore
// refuses every such state and initial weights are finite, so the trainer diverged in this run
// (the doctor restores the state before the step it observed), and no earlier checkpoint is to
// blame.
void check_not_diverged_here(const training_state& saved, const training_state& now, const tensor_table& table,
                             float lr) {
  const std::string bad = first_non_finite(saved, table);
  if (bad.empty() || first_non_finite(now, table).empty()) return;
  std::ostringstream peak;
  peak << lr;
  throw std::invalid_argument("the weights turned non-finite in this run, by step " +
                              std::to_string(saved.steps_taken) + " (" + bad +
                              "): a loss or an update overflowed, typically from too large a learning rate; start "
                              "again with a smaller --lr (this run's peak is " +
                              peak.str() + ")");
}
}  // namespace

void trainer::check_restorable(const training_state& s) const {
  const auto fail = [](const std::string& what) {
    throw std::invalid_argument("the saved state does not fit this run: " + what);
  };
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
  if (s.policy.mode != policy_.mode || (policy_.mode == precision_mode::pure_bf16 && s.policy.update != policy_.update))
    fail(std::string("it was written in precision mode ") + name(s.policy.mode) +
         (s.policy.mode == precision_mode::pure_bf16 ? std::string(" (") + name(s.policy.update) + " updates)" : "") +
         ", this run uses " + name(policy_.mode) +
         (policy_.mode == precision_mode::pure_bf16 ? std::string(" (") + name(policy_.update) + " updates)" : "") +
         ": the optimizer state differs between modes; resume with the checkpoint's mode");
  const auto layout = state_layout(policy_);
  const tensor_table table = parameter_table(config_);
  if (!s.slice.whole() && s.slice != shard())
    fail("it holds elements [" + std::to_string(s.slice.first) + ", " + std::to_string(s.slice.last) +
         ") of the flat buffers, but this rank's shard is [" + std::to_string(shard().first) + ", " +
         std::to_string(shard().last) + "): read the checkpoint for this rank's shard");
  if (s.tensors.size() != layout.size())
    fail("it holds " + std::to_string(s.tensors.size()) + " state tensors, " + name(policy_.mode) + " keeps " +
         std::to_string(layout.size()));
  for (std::size_t t = 0; t < layout.size(); ++t) {
    const state_tensor& x = s.tensors[t];
    if (x.role != layout[t].first || x.type != layout[t].second)
      fail("state tensor " + std::to_string(t) + " is " + x.role + " (" + name(x.type) + "), expected " +
           layout[t].first + " (" + name(layout[t].second) + ")");
    if (x.bytes.size() != s.slice.within(table.flat_size()).size() * size_of(x.type))
      fail(x.role + " has " + std::to_string(x.bytes.size() / size_of(x.type)) + " elements, expected " +
           std::to_string(s.slice.within(table.flat_size()).size()));
  }
  try {
    check_state(s, table);
  } catch (const std::invalid_argument& e) {
    check_not_diverged_here(s, state(), table, options_.lr);
    fail(e.what());
  }
}

void trainer::restore(const training_state& s) {
  // Every rank checks the state it was given; all restore it or none does (restoring is
  // collective, and a rank left behind would wait in it forever).
  // The scaler's restore is the last check that can fail; nothing changes before it.
  const loss_scale_state before = scaler_.host_state();
  const std::string problem =
      dist::agree<std::invalid_argument>(parallel_.ranks, "the saved state does not fit this run on another rank", [&] {
        check_restorable(s);
        scaler_.restore(s.scaler);
        model_->restore_fp8_state(s.fp8);  // checks first, changes nothing when it throws
      });
  if (!problem.empty()) {
    scaler_.restore(before);
    throw std::invalid_argument(problem);
  }
  if (parallel_.ranks.distributed() && s.slice.whole()) {
    optimizer_->restore(slice_of(s, shard()).tensors, s.steps_taken);
  } else {
    optimizer_->restore(s.tensors, s.steps_taken);
  }
  exchange_->share_weights();
  attempts_ = s.attempts;
  unread_ = 0;  // reports of steps before the restore no longer describe this run
  drained_.clear();
}

}  // namespace kamp
