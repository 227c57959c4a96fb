#include "dist/gradient_exchange.hpp"
#include <kamp/kernels/detail/fence.hpp>

#include "dist/packing.hpp"
#include "dist/sharded_units.hpp"

#include <chrono>
#include <optional>
#include <stdexcept>
#include <utility>

namespace kamp::detail {

namespace {

using execution_space = gpt<float>::execution_space;
using memory_space = gradient_exchange::memory_space;
using gradients_view = gradient_exchange::gradients_view;

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// One process: the model's own gradient buffer, weights bound as the optimizer holds them.
class local_exchange final : public gradient_exchange {
 public:
  local_exchange(gpt<float>& model, weights_ref exact, weights_ref copy) : model_(model) {
    model.bind_weights(exact, copy);
  }
  void start_step() override { Kokkos::deep_copy(execution_space(), model_.grads(), 0.0f); }
  gradients_view finish_backward(const gradient_hook& hook) override {
    if (hook) hook(model_.grads());
    return model_.grads();
  }
  void agree(const Kokkos::View<gradient_check, memory_space>&) override {}
  void share_updated_weights() override {}
  void share_weights() override {}
  double take_wait_seconds() override { return 0; }

 private:
  gpt<float>& model_;
};

/// Whole weights on every rank, gathered from the updated shards (ZeRO-1 and ZeRO-2): the model
/// copy, and in AMP the fp32 values the model reads exactly (embeddings, LayerNorms, biases),
/// packed in table order; the rest of the master stays sharded.
class gathered_weights {
 public:
  gathered_weights(gpt<float>& model, const precision_policy& policy, const dist::communicator& ranks,
                   const std::vector<element_range>& shards, weights_ref exact, weights_ref copy)
      : ranks_(ranks), shards_(shards), exact_(exact), copy_(copy) {
    if (!policy.has_master()) {
      model.bind_weights(exact, copy);
      return;
    }
    const tensor_table& table = model.table();
    tensor_table packed(1);
    std::vector<std::size_t> tensors;
    const tensor_table exact_read = exactly_read_parameters(model.config(), policy);  // outlives the loop
    for (const auto& e : exact_read.entries()) {
      tensors.push_back(table.index_of(e.name));
      packed.add(e.name, e.shape);
    }
    packing_.emplace(tensor_ranges(table, tensors, std::vector<bool>(table.count(), true)), shards, ranks.rank());
    for (std::size_t i = 0; i < tensors.size(); ++i)
      if (packing_->position(table[tensors[i]].offset) != packed[i].offset)
        throw std::logic_error("kamp::trainer: the packed exact weights are not laid out in table order");
    gathered_ = Kokkos::View<float*, memory_space>("kamp::dist::exact_weights", packing_->size);
    model.bind_weights({dtype::fp32, gathered_.data()}, packed, copy);
    share();
  }

  void share() const {
    const execution_space ex;
    detail::fence(ex, "MPI reads the buffers");
    ranks_.all_gather(const_cast<void*>(copy_.data), size_of(copy_.type), shards_);
    if (!packing_) return;
    const float* master = static_cast<const float*>(exact_.data);
    for (const auto& p : packing_->mine)
      Kokkos::deep_copy(
          ex, Kokkos::View<float*, memory_space, Kokkos::MemoryUnmanaged>(gathered_.data() + p.packed, p.size),
          Kokkos::View<const float*, memory_space, Kokkos::MemoryUnmanaged>(master + p.shard, p.size));
    detail::fence(ex, "MPI reads the packed master weights");
    ranks_.all_gather(gathered_.data(), sizeof(float), packing_->parts);
  }

 private:
  const dist::communicator& ranks_;
  const std::vector<element_range>& shards_;
  weights_ref exact_, copy_;
  std::optional<packing> packing_;
  Kokkos::View<float*, memory_space> gathered_;
};

/// What every data-parallel exchange shares: the global verdict on the gradients, agreed on the
/// host (one wait per step).
class distributed_exchange : public gradient_exchange {
 public:
  explicit distributed_exchange(const dist::communicator& ranks) : ranks_(ranks) {}
  void agree(const Kokkos::View<gradient_check, memory_space>& check) override {
    // Every rank skips or steps, clips and updates its scaler from the same global verdict.
    gradient_check result;
    Kokkos::deep_copy(result, check);
    result.found_inf = ranks_.max(result.found_inf);
    result.norm_squared = ranks_.sum(result.norm_squared);
    Kokkos::deep_copy(check, result);
    skipped_ = result.found_inf != 0;
  }

 protected:
  const dist::communicator& ranks_;
  bool skipped_ = false;  ///< the agreed verdict of the step under way
};

/// ZeRO-1: each rank sums whole gradients into shards with one blocking reduce-scatter, updates
/// its shard, and the ranks all-gather the weights.
class reduce_scatter_exchange final : public distributed_exchange {
 public:
  reduce_scatter_exchange(gpt<float>& model, const precision_policy& policy, const parallel_options& parallel,
                          const std::vector<element_range>& shards, weights_ref exact, weights_ref copy)
      : distributed_exchange(parallel.ranks),
        model_(model),
        shards_(shards),
        wire_(parallel.gradient_reduction),
        weights_(model, policy, parallel.ranks, shards, exact, copy) {
    for (const element_range& s : shards) shard_sizes_.push_back(s.size());
  }
  void start_step() override { Kokkos::deep_copy(execution_space(), model_.grads(), 0.0f); }
  gradients_view finish_backward(const gradient_hook& hook) override {
    const gradients_view grads = model_.grads();
    if (hook) hook(grads);
    detail::fence(execution_space(), "MPI reads the gradients");
    const auto start = std::chrono::steady_clock::now();
    ranks_.reduce_scatter_sum(grads.data(), shard_sizes_, wire_);
    waited_ += seconds_since(start);
    return Kokkos::subview(grads, shards_[ranks_.rank()].pair());
  }
  void share_updated_weights() override {
    if (skipped_) return;
    const auto start = std::chrono::steady_clock::now();
    weights_.share();
    waited_ += seconds_since(start);
  }
  void share_weights() override { weights_.share(); }
  double take_wait_seconds() override { return std::exchange(waited_, 0.0); }

 private:
  gpt<float>& model_;
  const std::vector<element_range>& shards_;
  std::vector<std::size_t> shard_sizes_;
  dtype wire_;
  gathered_weights weights_;
  double waited_ = 0;
};

/// ZeRO-2 and ZeRO-3: the model's unit hooks reduce-scatter each unit's gradients as its backward
/// pass ends (sharded_units). At ZeRO-2 the ranks then all-gather whole weights; at ZeRO-3 each
/// unit's weights are gathered as it runs, so an update only marks the gathered units stale.
class sharded_units_exchange final : public distributed_exchange {
 public:
  sharded_units_exchange(gpt<float>& model, const precision_policy& policy, const parallel_options& parallel,
                         const std::vector<element_range>& shards, weights_ref exact, weights_ref copy)
      : distributed_exchange(parallel.ranks),
        units_(model, parallel.ranks, shards, parallel.gradient_reduction, parallel.level == sharding::parameters,
               !parallel.reshard_after_forward,
               sharded_units::weights_source{copy, policy.has_master() ? exact : weights_ref{}}) {
    if (parallel.level != sharding::parameters) weights_.emplace(model, policy, parallel.ranks, shards, exact, copy);
  }
  void start_step() override { units_.start_step(); }
  gradients_view finish_backward(const gradient_hook& hook) override {
    units_.finish_backward();
    if (hook) hook(units_.gradients());
    return units_.gradients();
  }
  void share_updated_weights() override {
    if (!skipped_) share_weights();
  }
  void share_weights() override {
    if (weights_) return weights_->share();
    units_.weights_changed();  // the next pass gathers the units again
  }
  double take_wait_seconds() override { return units_.take_wait_seconds(); }

 private:
  sharded_units units_;
  std::optional<gathered_weights> weights_;  ///< ZeRO-2's whole weights
};

}  // namespace

std::unique_ptr<gradient_exchange> make_gradient_exchange(gpt<float>& model, const precision_policy& policy,
                                                          const parallel_options& parallel,
                                                          const std::vector<element_range>& shards, weights_ref exact,
                                                          weights_ref copy) {
  if (!parallel.ranks.distributed()) return std::make_unique<local_exchange>(model, exact, copy);
  if (parallel.level == sharding::optimizer)
    return std::make_unique<reduce_scatter_exchange>(model, policy, parallel, shards, exact, copy);
  return std::make_unique<sharded_units_exchange>(model, policy, parallel, shards, exact, copy);
}

}  // namespace kamp::detail
