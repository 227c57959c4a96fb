#include <kamp/model/network/activation_layout.hpp>
#include <kamp/model/network/gpt.hpp>
#include <kamp/model/precision/memory_plan.hpp>
#include <kamp/model/state/training_state.hpp>

#include <kamp/kernels/detail/kokkos_compat.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace kamp {

memory_plan bytes_per_parameter(const precision_policy& policy) {
  memory_plan b;
  b.gradients = 4;
  for (const auto& [role, type] : state_layout(policy)) {
    const double bytes = double(size_of(type));
    if (role == "model") {
      b.parameters += bytes;
    } else if (role == "master") {
      b.master += bytes;
    } else {
      b.optimizer += bytes;
    }
  }
  return b;
}

memory_plan plan_state(double elements, const precision_policy& policy, int shards, sharding split) {
  if (shards < 1) throw std::invalid_argument("kamp::plan_state: shards must be >= 1, got " + std::to_string(shards));
  const memory_plan per = bytes_per_parameter(policy);
  const auto share = [&](double bytes, sharding from) {
    return elements * bytes / (int(split) >= int(from) ? double(shards) : 1.0);
  };
  memory_plan p;
  p.parameters = share(per.parameters, sharding::parameters);
  p.gradients = share(per.gradients, sharding::gradients);
  p.master = share(per.master, sharding::optimizer);
  p.optimizer = share(per.optimizer, sharding::optimizer);
  return p;
}

memory_plan plan_memory(const gpt_config& model, const precision_policy& policy, int batch, int shards, sharding split,
                        bool reshard_after_forward) {
  model.validate();
  policy.validate(model);
  if (batch < 1) throw std::invalid_argument("kamp::plan_memory: batch must be >= 1, got " + std::to_string(batch));
  const gpt_parameters parameters(model);
  const double elements = double(parameters.table.flat_size());
  memory_plan p = plan_state(elements, policy, shards, split);
  if (shards > 1) {
    // What kamp's data parallelism adds. Levels optimizer and gradients, with fp32 master
    // weights: the fp32 values the model reads exactly, gathered from the shards and packed.
    if (policy.has_master() && split != sharding::parameters)
      p.master += double(exactly_read_parameters(model, policy).parameter_count()) * 4;
    // Levels gradients and parameters: the buffers units are reduced from (the root and two
    // blocks) and gathered into (the same, or every block when they stay gathered).
    if (split == sharding::gradients || split == sharding::parameters) {
      const tensor_table exact = exactly_read_parameters(model, policy);
      const auto unit_size = [&](std::size_t u, bool exact_only) {
        double n = 0;
        for (const std::size_t t : parameters.units[u])
          if (!exact_only || exact.contains(parameters.table[t].name)) n += double(parameters.table[t].size);
        return n;
      };
      const int blocks = model.layers, gathered = reshard_after_forward ? std::min(blocks, 2) : blocks;
      const double block = blocks > 0 ? unit_size(1, false) : 0.0;
      p.gradients += 4 * (unit_size(0, false) + std::min(blocks, 2) * block);
      if (split == sharding::parameters) {
        p.parameters += double(size_of(policy.low())) * (unit_size(0, false) + gathered * block);
        if (policy.has_master())
          p.master += 4 * (unit_size(0, true) + gathered * (blocks > 0 ? unit_size(1, true) : 0.0));
      }
    }
  }
  // The model's activation buffers, from the table it allocates from, and the index its
  // embedding's backward pass sorts the tokens into.
  double a = 0;
  for (const auto& buffer : activation_layout(model, policy, batch))
    for (const std::size_t bytes : buffer.bytes) a += double(bytes);
  a += double(token_rows<Kokkos::HostSpace>::bytes(std::size_t(batch) * model.context, model.vocab));
  p.activations = a;
  return p;
}

double parameter_estimate(const gpt_config& model) {
  const double v = model.vocab, t = model.context, c = model.d_model, m = model.mlp;
  // Per block: two LayerNorms (4C), qkv (3C^2 + 3C), proj (C^2 + C), fc (mC + m), mlp.proj (Cm + C).
  const double block = 4 * c * c + 2 * m * c + 9 * c + m;
  return v * c + t * c + model.layers * block + 2 * c;
}

double free_memory_bytes() {
#if defined(KOKKOS_ENABLE_CUDA)
  if (std::is_same_v<Kokkos::DefaultExecutionSpace, Kokkos::Cuda>) {
    std::size_t free = 0, total = 0;
    return cudaMemGetInfo(&free, &total) == cudaSuccess ? double(free) : 0.0;
  }
#endif
#if defined(KOKKOS_ENABLE_HIP)
  if (std::is_same_v<Kokkos::DefaultExecutionSpace, kamp::detail::hip_space>) {
    std::size_t free = 0, total = 0;
    return hipMemGetInfo(&free, &total) == hipSuccess ? double(free) : 0.0;
  }
#endif
  std::ifstream in("/proc/meminfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("MemAvailable:", 0) == 0) {
      std::istringstream words(line.substr(13));
      double kib = 0;
      words >> kib;
      return kib * 1024.0;
    }
  return 0.0;
}

void check_memory_fits(const gpt_config& model, const precision_policy& policy, int batch, int shards) {
  const double free = free_memory_bytes();
  if (free <= 0) return;  // nothing to compare with
  const auto refuse = [&](double needed, const char* what) {
    char text[512];
    std::snprintf(text, sizeof text,
                  "this run needs %.3g GB (%s, kamp-plan's figure) but the %s has %.3g GB free: use a smaller "
                  "model or batch, pure_bf16, or more ranks (kamp-plan --shards N)",
                  needed / 1e9, what, Kokkos::DefaultExecutionSpace::name(), free / 1e9);
    throw std::invalid_argument(text);
  };
  // The persistent state first, from the shape alone: a configuration far too large for any
  // machine is refused without building its parameter table.
  const double state = plan_state(parameter_estimate(model), policy, shards).total();
  if (state > free) refuse(state, "parameters, gradients and optimizer state");
  const double all = plan_memory(model, policy, batch, shards).total();
  if (all > free) refuse(all, "with activations");
}

}  // namespace kamp
