#include <kamp/model/diagnostics/memory_tracker.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <stdexcept>

namespace kamp {

namespace {

enum category { parameters, gradients, master, optimizer, activations, fp8, other, categories };

struct ledger {
  std::mutex lock;
  bool active = false;
  double now[categories] = {}, high[categories] = {};
  double total = 0, high_total = 0;
  std::map<const void*, std::pair<category, double>> live;

  void reset() {
    std::fill(std::begin(now), std::end(now), 0.0);
    std::fill(std::begin(high), std::end(high), 0.0);
    total = high_total = 0;
    live.clear();
  }
};

ledger& books() {
  static ledger l;
  return l;
}

bool starts_with(const char* s, const char* prefix) { return std::strncmp(s, prefix, std::strlen(prefix)) == 0; }

category classify(const char* label) {
  // Sharded runs: a rank's shards, and the buffers units are gathered into or reduced from.
  if (std::strcmp(label, "kamp::trainer::model_copy") == 0 || std::strcmp(label, "kamp::fsdp::unit_weights") == 0)
    return parameters;
  if (std::strcmp(label, "kamp::gpt::grads") == 0 || std::strcmp(label, "kamp::fsdp::unit_grads") == 0 ||
      std::strcmp(label, "kamp::trainer::gradient_shard") == 0)
    return gradients;
  if (std::strcmp(label, "kamp::optimizer::master") == 0 || std::strcmp(label, "kamp::dist::exact_weights") == 0 ||
      std::strcmp(label, "kamp::fsdp::unit_exact") == 0)
    return master;
  if (starts_with(label, "kamp::optimizer::moment") || std::strcmp(label, "kamp::optimizer::compensation") == 0)
    return optimizer;
  if (starts_with(label, "kamp::fp8::")) return fp8;
  // The model's buffers (activation_layout's labels) and its token index.
  if (starts_with(label, "kamp::gpt::") || starts_with(label, "kamp::token_rows::")) return activations;
  return other;
}

bool in_default_space(const Kokkos::Tools::SpaceHandle space) {
  return std::strcmp(space.name, Kokkos::DefaultExecutionSpace::memory_space::name()) == 0;
}

void on_allocate(const Kokkos::Tools::SpaceHandle space, const char* label, const void* ptr, const uint64_t size) {
  if (!in_default_space(space)) return;
  ledger& l = books();
  const std::lock_guard<std::mutex> guard(l.lock);
  const category c = classify(label);
  l.live[ptr] = {c, double(size)};
  l.now[c] += double(size);
  l.high[c] = std::max(l.high[c], l.now[c]);
  l.total += double(size);
  l.high_total = std::max(l.high_total, l.total);
}

void on_deallocate(const Kokkos::Tools::SpaceHandle space, const char*, const void* ptr, const uint64_t) {
  if (!in_default_space(space)) return;
  ledger& l = books();
  const std::lock_guard<std::mutex> guard(l.lock);
  const auto it = l.live.find(ptr);
  if (it == l.live.end()) return;  // allocated before the tracker started
  l.now[it->second.first] -= it->second.second;
  l.total -= it->second.second;
  l.live.erase(it);
}

memory_plan as_plan(const double* bytes) {
  memory_plan p;
  p.parameters = bytes[parameters];
  p.gradients = bytes[gradients];
  p.master = bytes[master];
  p.optimizer = bytes[optimizer];
  p.activations = bytes[activations];
  p.fp8 = bytes[fp8];
  return p;
}

}  // namespace

memory_tracker::memory_tracker() {
  ledger& l = books();
  const std::lock_guard<std::mutex> guard(l.lock);
  if (l.active) throw std::logic_error("kamp::memory_tracker: only one tracker can be active at a time");
  l.reset();
  l.active = true;
  Kokkos::Tools::Experimental::set_allocate_data_callback(on_allocate);
  Kokkos::Tools::Experimental::set_deallocate_data_callback(on_deallocate);
}

memory_tracker::~memory_tracker() {
  Kokkos::Tools::Experimental::set_allocate_data_callback(nullptr);
  Kokkos::Tools::Experimental::set_deallocate_data_callback(nullptr);
  ledger& l = books();
  const std::lock_guard<std::mutex> guard(l.lock);
  l.active = false;
  l.reset();
}

memory_plan memory_tracker::current() const {
  ledger& l = books();
  const std::lock_guard<std::mutex> guard(l.lock);
  return as_plan(l.now);
}

memory_plan memory_tracker::peak() const {
  ledger& l = books();
  const std::lock_guard<std::mutex> guard(l.lock);
  return as_plan(l.high);
}

double memory_tracker::peak_other() const {
  ledger& l = books();
  const std::lock_guard<std::mutex> guard(l.lock);
  return l.high[other];
}

double memory_tracker::peak_total() const {
  ledger& l = books();
  const std::lock_guard<std::mutex> guard(l.lock);
  return l.high_total;
}

}  // namespace kamp
