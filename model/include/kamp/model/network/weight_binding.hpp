#ifndef KAMP_MODEL_NETWORK_WEIGHT_BINDING_HPP
#define KAMP_MODEL_NETWORK_WEIGHT_BINDING_HPP

#include <kamp/kernels/flat_tensors.hpp>
#include <kamp/model/config/gpt_config.hpp>
#include <kamp/model/config/precision_policy.hpp>
#include <kamp/numeric/dtype.hpp>

#include <vector>

namespace kamp {

/// \brief A flat weight buffer the model reads: its element type and device pointer.
struct weights_ref {
  dtype type = dtype::fp32;
  const void* data = nullptr;  ///< null: nothing bound yet
};

/// \brief The weights a model reads: the exact ones (fp32 master, fp32 weights, or pure bf16),
/// laid out by `exact_layout`, which holds at least exactly_read_parameters() (a sharded run
/// gathers only those from its master shards), and the low-precision copy over the whole
/// parameter table, which the GEMMs of 16-bit layers read.
struct weight_binding {
  weights_ref exact;
  tensor_table exact_layout;
  weights_ref copy;
};

namespace detail {
/// Where each parameter's weights are, by table index: its exact values (null for those the
/// binding need not hold) and its low-precision copy.
struct weight_addresses {
  std::vector<const void*> exact, copy;
};

}  // namespace detail

/// The parameters gpt reads from the exact weights rather than the low-precision copy:
/// embeddings, LayerNorms, biases, and the GEMM weights of layers computing in fp32. With fp32
/// master weights (AMP) these are the only ones the model needs in fp32.
tensor_table exactly_read_parameters(const gpt_config& config, const precision_policy& policy);

}  // namespace kamp

#endif
