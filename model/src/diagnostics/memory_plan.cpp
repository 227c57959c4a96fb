#include <kamp/model/diagnostics/memory_plan.hpp>
#include <kamp/model/network/activation_layout.hpp>
#include <kamp/model/network/gpt_parameters.hpp>
#include <kamp/model/state/training_state.hpp>

#include <kamp/kernels/detail/kokkos_compat.hpp>
#include <kamp/kernels/nn/embedding.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

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
  // One View per role (model copy, gradients, master, each moment), each allocated by Kokkos in
  // whole 8-byte units.
  const auto view = [&](double bytes_per_element, sharding from) {
    return std::ceil(elements / (int(split) >= int(from) ? double(shards) : 1.0) * bytes_per_element / 8) * 8;
  };
  memory_plan p;
  p.gradients = view(4, sharding::gradients);
  for (const auto& [role, type] : state_layout(policy)) {
    const double bytes = double(size_of(type));
    if (role == "model") {
      p.parameters += view(bytes, sharding::parameters);
    } else if (role == "master") {
      p.master += view(bytes, sharding::optimizer);
    } else {
      p.optimizer += view(bytes, sharding::optimizer);
    }
  }
  return p;
}

namespace {

// What layer_dtypes lists layer by layer, counted: the fp32 overrides are few, so sums over the
// blocks cost the same for any number of them. Sizes are bytes per element.
struct layer_sizes {
  double blocks;
  double low_attn, low_mlp;  ///< blocks whose attention / MLP computes in policy.low() (no fp32 override)
  bool low_attn0, low_mlp0;  ///< whether block 0's does
  double low, head, widest;

  layer_sizes(const gpt_config& model, const precision_policy& policy) : blocks(model.layers) {
    policy.validate(model);
    std::set<std::pair<int, layer_part>> fp32;
    for (const std::string& name : policy.fp32_layers) fp32.insert(*find_layer(name, model.layers));
    const auto overridden = [&](layer_part part) {
      return double(std::count_if(fp32.begin(), fp32.end(), [&](const auto& layer) { return layer.second == part; }));
    };
    low_attn = blocks - overridden(layer_part::attention);
    low_mlp = blocks - overridden(layer_part::mlp);
    low_attn0 = fp32.count({0, layer_part::attention}) == 0;
    low_mlp0 = fp32.count({0, layer_part::mlp}) == 0;
    low = double(size_of(policy.low()));
    head = fp32.count({0, layer_part::head}) != 0 ? fp32_size : low;
    widest = std::max({head, low_attn + low_mlp > 0 ? low : 0.0, low_attn + low_mlp < 2 * blocks ? fp32_size : 0.0});
  }
  /// Bytes per element of every block's attention, or MLP, together.
  double attention() const { return low_attn * low + (blocks - low_attn) * fp32_size; }
  double mlp() const { return low_mlp * low + (blocks - low_mlp) * fp32_size; }
  /// ...and of the one copy all blocks share when they are recomputed: the widest block's.
  double widest_attention() const { return low_attn < blocks ? fp32_size : low; }
  double widest_mlp() const { return low_mlp < blocks ? fp32_size : low; }

  static constexpr double fp32_size = 4;
};

// The parameter table's figures, taken from the table of a model of at most two blocks: blocks
// repeat, each from an aligned offset, so every block adds the same elements and the same span
// of the flat buffer.
struct table_figures {
  double flat;                       ///< flat_size(): the elements with their alignment padding
  double root, block;                ///< elements of units[0] (wte, wpe, lnf) and of one block
  double attn_weights, mlp_weights;  ///< of one block: the GEMM weights of its attention, of its MLP

  explicit table_figures(const gpt_config& model) {
    gpt_config two = model;
    two.layers = std::min(model.layers, 2);
    const gpt_parameters p(two);
    const auto elements = [&](const std::vector<std::size_t>& tensors) {
      double n = 0;
      for (const std::size_t t : tensors) n += double(p[t].size);
      return n;
    };
    flat = double(p.table.flat_size());
    if (model.layers > 2)
      flat += double(model.layers - 2) * double(p[p.blocks[1].ln1.gain].offset - p[p.blocks[0].ln1.gain].offset);
    root = elements(p.units[0]);
    block = elements(p.units[1]);
    const block_parameters& b = p.blocks[0];
    attn_weights = elements({b.qkv.weight, b.attn_proj.weight});
    mlp_weights = elements({b.fc.weight, b.mlp_proj.weight});
  }
};

// The bytes Kokkos allocates for activation_layout's buffers, for the index the embedding's
// backward pass sorts the tokens into and for the loss sum, from the shape. Kokkos allocates
// whole 8-byte units (a View of 257 ints takes 1032 bytes), so each buffer is rounded up by
// itself; a kind of buffer with one copy per LayerNorm or per layer is a count of copies of each
// element type, the same for any number of blocks.
double activation_bytes(const gpt_config& model, const layer_sizes& layers, int batch, activation_recompute recompute) {
  const double n = double(batch) * model.context, c = model.d_model, m = model.mlp, v = model.padded_vocab();
  const double s = double(batch) * model.heads * model.context * model.context;  // scores per layer
  const double r = layer_sizes::fp32_size, wide = layers.widest, norms = 2 * layers.blocks + 1;
  const auto buffer = [](double elements, double size) { return std::ceil(elements * size / 8) * 8; };
  // Recomputing blocks: one copy of each per-layer buffer, in the widest block's type; the
  // stream kept at the L + 1 block inputs and one scratch; ln_out one scratch per branch kind.
  const bool shared = recompute == activation_recompute::blocks;
  // One buffer of `elements` per block's attention, or MLP, in its compute type (or the one copy).
  const auto attention = [&](double elements) {
    return shared ? buffer(elements, layers.widest_attention())
                  : layers.low_attn * buffer(elements, layers.low) +
                        (layers.blocks - layers.low_attn) * buffer(elements, r);
  };
  const auto mlp = [&](double elements) {
    return shared
               ? buffer(elements, layers.widest_mlp())
               : layers.low_mlp * buffer(elements, layers.low) + (layers.blocks - layers.low_mlp) * buffer(elements, r);
  };
  const double per_layer_fp32 = shared ? 1 : layers.blocks, streams = shared ? layers.blocks + 2 : norms;
  const double index = double(sizeof(int));
  const auto bytes = [&](activation a) {
    switch (a) {
      case activation::residual:
        return streams * buffer(n * c, r);
      case activation::ln_mean:
      case activation::ln_rstd:
        return norms * buffer(n, r);
      case activation::ln_out:  // LayerNorm i feeds h<i/2>.attn (even i), h<i/2>.mlp (odd i), the last the head
        return attention(n * c) + mlp(n * c) + buffer(n * c, layers.head);
      case activation::qkv_rows:
        return attention(3 * n * c);
      case activation::probs:
        return per_layer_fp32 * buffer(s, r);
      case activation::probs_low:
        return attention(s);
      case activation::attn_out:
        return attention(n * c);
      case activation::fc_pre:
        return per_layer_fp32 * buffer(n * m, r);
      case activation::fc_act:
        return mlp(n * m);
      case activation::dqkv_rows:
        return buffer(3 * n * c, wide);
      case activation::dresid_low:
      case activation::dattn_out:
        return buffer(n * c, wide);
      case activation::logits:
        return buffer(n * v, layers.head);
      case activation::losses:
        return buffer(n, r);
      case activation::tokens:
      case activation::targets:
        return buffer(n, index);
      case activation::dresid:
      case activation::dln:
        return buffer(n * c, r);
      case activation::dfc_act:
        return buffer(n * m, r);
      case activation::dfc_pre:
        return buffer(n * m, wide);
      case activation::dprobs:
        return buffer(s, r);
      case activation::dscores:
        return buffer(s, wide);
      case activation::bias:
        return buffer(std::max(3 * c, m), r);
      case activation::count:
        break;
    }
    throw std::logic_error("kamp::plan_memory: activation " + std::to_string(int(a)) +
                           " has no figure: add its bytes beside activation_layout's");
  };
  double total = gpt_loss_sum_bytes;
  for (int a = 0; a < int(activation::count); ++a) total += bytes(activation(a));
  return total + double(token_rows<Kokkos::HostSpace>::bytes(std::size_t(n), model.padded_vocab()));
}

}  // namespace

memory_plan plan_memory(const gpt_config& model, const precision_policy& policy, int batch, int shards, sharding split,
                        bool reshard_after_forward, activation_recompute recompute) {
  model.validate();
  const layer_sizes layers(model, policy);
  if (batch < 1) throw std::invalid_argument("kamp::plan_memory: batch must be >= 1, got " + std::to_string(batch));
  const table_figures table(model);
  memory_plan p = plan_state(table.flat, policy, shards, split);
  if (shards > 1) {
    // What kamp's data parallelism adds. `exact`: the elements of `blocks` blocks the model reads
    // exactly (exactly_read_parameters), all but the GEMM weights of the attention and MLP layers
    // computing in 16 bits (`attn_low` and `mlp_low` of them).
    const bool sixteen_bit = policy.low() != dtype::fp32;
    const auto exact = [&](double attn_low, double mlp_low, double blocks) {
      return blocks * table.block - (sixteen_bit ? attn_low * table.attn_weights + mlp_low * table.mlp_weights : 0.0);
    };
    // Levels optimizer and gradients, with fp32 master weights: the fp32 values the model reads
    // exactly, gathered from the shards and packed.
    if (policy.has_master() && split != sharding::parameters)
      p.master += (table.root + exact(layers.low_attn, layers.low_mlp, layers.blocks)) * 4;
    // Levels gradients and parameters: the buffers units are reduced from (the root and two
    // blocks) and gathered into (the same, or every block when they stay gathered), sized as
    // block 0's.
    if (split == sharding::gradients || split == sharding::parameters) {
      const int blocks = model.layers, gathered = reshard_after_forward ? std::min(blocks, 2) : blocks;
      p.gradients += 4 * (table.root + std::min(blocks, 2) * table.block);
      if (split == sharding::parameters) {
        p.parameters += double(size_of(policy.low())) * (table.root + gathered * table.block);
        if (policy.has_master())
          p.master += 4 * (table.root + gathered * exact(double(layers.low_attn0), double(layers.low_mlp0), 1));
      }
    }
  }
  p.activations = activation_bytes(model, layers, batch, recompute);
  p.fp8 = fp8_bytes(model, policy, batch);
  return p;
}

double fp8_bytes(const gpt_config& model, const precision_policy& policy, int batch) {
  if (!policy.fp8()) return 0;
  const layer_sizes layers(model, policy);
  const double rows = double(batch) * model.context, c = model.d_model, m = model.mlp;
  // Per FP8 attention: the inputs of qkv and attn.proj, and their weights; per FP8 MLP: those of
  // mlp.fc and mlp.proj. One E5M2 buffer takes the widest output gradient of them.
  const double copies = layers.low_attn * (2 * rows * c + 4 * c * c) + layers.low_mlp * (rows * (c + m) + 2 * m * c);
  const double widest_grad = std::max(layers.low_attn > 0 ? 3 * c : 0.0, layers.low_mlp > 0 ? std::max(m, c) : 0.0);
  const double tensors = 3 * 4 * layers.blocks;
  const double history = policy.recipe == fp8_recipe::delayed ? policy.amax_history : 0;
  return copies + rows * widest_grad + tensors * (2 * 4 + sizeof(fp8_cast_stats) + 4 * history);
}

double parameter_estimate(const gpt_config& model) {
  const double v = model.padded_vocab(), t = model.context, c = model.d_model, m = model.mlp;
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

void check_memory_fits(const gpt_config& model, const precision_policy& policy, int batch, int shards,
                       activation_recompute recompute) {
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
  const double all = plan_memory(model, policy, batch, shards, sharding::optimizer, true, recompute).total();
  if (all > free) refuse(all, "with activations");
}

}  // namespace kamp
