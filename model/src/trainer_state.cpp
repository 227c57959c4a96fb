#include <kamp/model/trainer.hpp>

#include "fields.hpp"
#include "optimizer_slot.hpp"

#include <algorithm>
#include <stdexcept>

namespace kamp {

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

namespace {
// Every rank's host values of `local` (this rank's shard, elements of `width` bytes) put
// together on every rank, through a buffer in the model's memory as the collectives expect.
template <class T>
std::vector<T> gather_shards(const std::vector<T>& local, const dist::communicator& ranks,
                             const std::vector<std::pair<std::size_t, std::size_t>>& spans) {
  const std::pair<std::size_t, std::size_t> mine = spans[ranks.rank()];
  Kokkos::View<T*, gpt<float>::memory_space> full("kamp::trainer::gathered", spans.back().second);
  Kokkos::deep_copy(Kokkos::subview(full, mine),
                    Kokkos::View<const T*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(local.data(), local.size()));
  ranks.all_gather(full.data(), sizeof(T), spans);
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
  return gather_shards(local, parallel_.ranks, spans_);
}

std::vector<std::uint32_t> trainer::model_copy_bits() const {
  std::vector<std::uint32_t> local = optimizer_->copy_bits();
  if (parallel_.level != sharding::parameters || !parallel_.ranks.distributed()) return local;
  return gather_shards(local, parallel_.ranks, spans_);
}

training_state trainer::state() const {
  training_state s;
  s.model = config_;
  s.policy = policy_;
  s.options = options_;
  s.steps_taken = steps_taken();
  s.attempts = attempts_;
  s.scaler = scaler_.host_state();
  s.tensors = optimizer_->state();
  if (parallel_.ranks.distributed()) s.slice = {shard().first, shard().second};
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
  if (!s.slice.whole() && !(s.slice == element_range{shard().first, shard().second}))
    fail("it holds elements [" + std::to_string(s.slice.first) + ", " + std::to_string(s.slice.last) +
         ") of the flat buffers, but this rank's shard is [" + std::to_string(shard().first) + ", " +
         std::to_string(shard().second) + "): read the checkpoint for this rank's shard");
  if (s.tensors.size() != layout.size())
    fail("it holds " + std::to_string(s.tensors.size()) + " state tensors, " + name(policy_.mode) + " keeps " +
         std::to_string(layout.size()));
  for (std::size_t t = 0; t < layout.size(); ++t) {
    const state_tensor& x = s.tensors[t];
    if (x.role != layout[t].first || x.type != layout[t].second)
      fail("state tensor " + std::to_string(t) + " is " + x.role + " (" + name(x.type) + "), expected " +
           layout[t].first + " (" + name(layout[t].second) + ")");
    if (x.bytes.size() != s.slice.size(table.flat_size()) * size_of(x.type))
      fail(x.role + " has " + std::to_string(x.bytes.size() / size_of(x.type)) + " elements, expected " +
           std::to_string(s.slice.size(table.flat_size())));
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
  if (parallel_.ranks.distributed() && s.slice.whole()) {
    optimizer_->restore(slice_of(s, {shard().first, shard().second}).tensors, s.steps_taken);
  } else {
    optimizer_->restore(s.tensors, s.steps_taken);
  }
  share_weights();
  attempts_ = s.attempts;
  unread_ = 0;  // reports of steps before the restore no longer describe this run
  drained_.clear();
}

}  // namespace kamp
