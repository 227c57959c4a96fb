#include "dist/sharded_units.hpp"
#include <kamp/kernels/detail/fence.hpp>

#include <algorithm>
#include <chrono>
#include <stdexcept>

namespace kamp::detail {

namespace {

using memory_space = gpt<float>::memory_space;
using execution_space = gpt<float>::execution_space;
using bytes_view = Kokkos::View<char*, memory_space, Kokkos::MemoryUnmanaged>;
using floats = Kokkos::View<float*, memory_space, Kokkos::MemoryUnmanaged>;

// dst += src, element by element. A free function: nvcc places no device lambda in a private
// member function.
void accumulate(const execution_space& ex, const floats& dst, const floats& src) {
  Kokkos::parallel_for(
      "kamp::fsdp::accumulate", Kokkos::RangePolicy<execution_space>(ex, 0, dst.extent(0)),
      KOKKOS_LAMBDA(std::size_t i) { dst(i) += src(i); });
}

}  // namespace

struct sharded_units::unit_buffers {
  Kokkos::View<char*, memory_space> copy;    ///< the packed low-precision copy
  Kokkos::View<float*, memory_space> exact;  ///< the packed fp32 values read exactly (AMP)
  Kokkos::View<float*, memory_space> grads;
  int held = -1;      ///< the unit whose weights it holds or is gathering (-1: none)
  int reducing = -1;  ///< the unit whose gradients it is reducing (-1: none)
  dist::request copy_gather, exact_gather, reduction;
};

sharded_units::sharded_units(gpt<float>& model, const dist::communicator& ranks,
                             const std::vector<element_range>& shards, dtype gradient_wire, bool gather_weights,
                             bool keep_gathered, weights_source source)
    : model_(model),
      ranks_(ranks),
      wire_(gradient_wire),
      gather_weights_(gather_weights),
      keep_gathered_(keep_gathered),
      source_(source) {
  const gpt_parameters& p = model.parameters();
  const tensor_table exact = exactly_read_parameters(model.config(), model.policy());
  const std::vector<bool> all(p.table.count(), true);
  std::vector<bool> read_exactly(p.table.count());
  for (std::size_t t = 0; t < p.table.count(); ++t) read_exactly[t] = exact.contains(p.table[t].name);
  const bool master = source.master.data != nullptr;
  packed_at_.assign(p.table.count(), 0);
  exact_at_.assign(p.table.count(), std::size_t(-1));
  for (const auto& unit : p.units) {
    params_.emplace_back(tensor_ranges(p.table, unit, all), shards, ranks.rank());
    exact_.push_back(master ? packing(tensor_ranges(p.table, unit, read_exactly), shards, ranks.rank()) : packing());
    for (const std::size_t t : unit) {
      packed_at_[t] = params_.back().position(p.table[t].offset);
      if (master && read_exactly[t]) exact_at_[t] = exact_.back().position(p.table[t].offset);
    }
  }
  const int units = int(p.units.size());
  const std::size_t width = size_of(model.policy().low());
  // Slot sizes: the largest unit each holds.
  const auto size_slots = [&](std::vector<unit_buffers>& slots, int count, auto slot_of, bool weights) {
    slots.resize(count);
    std::vector<std::size_t> params(count, 0), exacts(count, 0);
    for (int u = 0; u < units; ++u) {
      params[slot_of(u)] = std::max(params[slot_of(u)], params_[u].size);
      exacts[slot_of(u)] = std::max(exacts[slot_of(u)], exact_[u].size);
    }
    for (int s = 0; s < count; ++s) {
      if (weights) {
        slots[s].copy = Kokkos::View<char*, memory_space>("kamp::fsdp::unit_weights", params[s] * width);
        if (master) slots[s].exact = Kokkos::View<float*, memory_space>("kamp::fsdp::unit_exact", exacts[s]);
      } else {
        slots[s].grads = Kokkos::View<float*, memory_space>("kamp::fsdp::unit_grads", params[s]);
      }
    }
  };
  if (gather_weights)
    size_slots(
        weight_slots_, keep_gathered ? units : std::min(units, 3), [&](int u) { return weight_slot(u); }, true);
  size_slots(
      gradient_slots_, std::min(units, 3), [&](int u) { return gradient_slot(u); }, false);
  const auto [first, last] = shards[ranks.rank()];
  shard_grads_ = Kokkos::View<float*, memory_space>("kamp::trainer::gradient_shard", last - first);
  model.shard(this);
}

sharded_units::~sharded_units() = default;

int sharded_units::weight_slot(int unit) const { return unit == 0 || keep_gathered_ ? unit : 1 + (unit - 1) % 2; }

int sharded_units::gradient_slot(int unit) const { return unit == 0 ? 0 : 1 + (unit - 1) % 2; }

void sharded_units::gather(int unit) {
  unit_buffers& b = weight_slots_[weight_slot(unit)];
  if (b.held == unit) return;
  b.copy_gather.wait();
  b.exact_gather.wait();
  const execution_space& ex = model_.space();
  detail::fence(ex, "the kernels that read the slot's previous unit are done");
  const std::size_t width = size_of(source_.copy.type);
  const auto* copy = static_cast<const char*>(source_.copy.data);
  for (const auto& piece : params_[unit].mine)
    Kokkos::deep_copy(ex, bytes_view(b.copy.data() + piece.packed * width, piece.size * width),
                      Kokkos::View<const char*, memory_space, Kokkos::MemoryUnmanaged>(copy + piece.shard * width,
                                                                                       piece.size * width));
  const auto* master = static_cast<const float*>(source_.master.data);
  for (const auto& piece : exact_[unit].mine)
    Kokkos::deep_copy(
        ex, floats(b.exact.data() + piece.packed, piece.size),
        Kokkos::View<const float*, memory_space, Kokkos::MemoryUnmanaged>(master + piece.shard, piece.size));
  detail::fence(ex, "MPI reads the slot");
  b.copy_gather = ranks_.start_all_gather(b.copy.data(), width, params_[unit].parts);
  if (master != nullptr) b.exact_gather = ranks_.start_all_gather(b.exact.data(), sizeof(float), exact_[unit].parts);
  b.held = unit;
}

void sharded_units::wait_gather(int unit) {
  unit_buffers& b = weight_slots_[weight_slot(unit)];
  const auto start = std::chrono::steady_clock::now();
  b.copy_gather.wait();
  b.exact_gather.wait();
  waited_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void sharded_units::bind_unit(int unit) {
  const unit_buffers& b = weight_slots_[weight_slot(unit)];
  const std::size_t width = size_of(source_.copy.type);
  for (const std::size_t t : model_.parameters().units[unit]) {
    const void* copy = b.copy.data() + packed_at_[t] * width;
    // Without master weights the exact weights are the copy.
    const void* exact = source_.master.data == nullptr    ? copy
                        : exact_at_[t] != std::size_t(-1) ? static_cast<const void*>(b.exact.data() + exact_at_[t])
                                                          : nullptr;
    model_.bind_tensor(t, exact, copy);
  }
}

void sharded_units::before_forward(int unit) {
  if (!gather_weights_) return;
  gather(unit);
  wait_gather(unit);
  bind_unit(unit);
  // Prefetch the next block: its all-gather travels while this unit computes.
  if (unit + 1 < int(params_.size())) gather(unit + 1);
}

void sharded_units::before_backward(int unit) {
  const int g = gradient_slot(unit);
  reduce_done(g);
  unit_buffers& b = gradient_slots_[g];
  Kokkos::deep_copy(model_.space(), b.grads, 0.0f);
  for (const std::size_t t : model_.parameters().units[unit]) model_.bind_gradient(t, b.grads.data() + packed_at_[t]);
  if (!gather_weights_) return;
  gather(unit);
  wait_gather(unit);
  bind_unit(unit);
  if (unit > 1) gather(unit - 1);  // the previous block, which the backward pass reaches next
}

void sharded_units::after_backward(int unit) {
  unit_buffers& b = gradient_slots_[gradient_slot(unit)];
  detail::fence(model_.space(), "MPI reads the gradients");
  b.reduction = ranks_.start_reduce_scatter_sum(b.grads.data(), params_[unit].counts(), wire_);
  b.reducing = unit;
}

void sharded_units::reduce_done(int slot) {
  unit_buffers& b = gradient_slots_[slot];
  if (b.reducing < 0) return;
  const auto start = std::chrono::steady_clock::now();
  b.reduction.wait();
  waited_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (const auto& piece : params_[b.reducing].mine)
    accumulate(model_.space(), floats(shard_grads_.data() + piece.shard, piece.size),
               floats(b.grads.data() + piece.packed, piece.size));
  b.reducing = -1;
}

void sharded_units::start_step() {
  // Reductions an interrupted step left are waited for and dropped, not added to this step.
  for (auto& b : gradient_slots_) {
    b.reduction.wait();
    b.reducing = -1;
  }
  Kokkos::deep_copy(model_.space(), shard_grads_, 0.0f);
}

void sharded_units::finish_backward() {
  for (int s = 0; s < int(gradient_slots_.size()); ++s) reduce_done(s);
}

void sharded_units::weights_changed() {
  for (auto& b : weight_slots_) {
    b.copy_gather.wait();
    b.exact_gather.wait();
    b.held = -1;
  }
}

double sharded_units::take_wait_seconds() {
  const double w = waited_;
  waited_ = 0;
  return w;
}

}  // namespace kamp::detail
