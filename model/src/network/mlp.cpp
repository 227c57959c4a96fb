#include <kamp/model/network/mlp.hpp>

#include <kamp/kernels/execution_spaces.hpp>
#include <kamp/kernels/gemm.hpp>
#include <kamp/kernels/nn/activation.hpp>
#include <kamp/kernels/nn/column_sums.hpp>
#include <kamp/kernels/nn/layernorm.hpp>
#include <kamp/numeric/format.hpp>

#include <stdexcept>
#include <string>
#include <utility>

namespace kamp {

mlp_parameters::mlp_parameters(const mlp_config& config) {
  if (config.layer_sizes.size() < 2)
    throw std::invalid_argument("kamp::mlp: layer_sizes needs the input and output sizes at least");
  const int count = config.layers();
  for (int l = 0; l < count; ++l) {
    layer x{};
    x.in = config.layer_sizes[l];
    x.out = config.layer_sizes[l + 1];
    x.hidden = l + 1 < count;
    x.residual = x.hidden && config.residual_at(l);
    x.weight = table.add("layers." + std::to_string(l) + ".weight", {std::size_t(x.out), std::size_t(x.in)});
    layers.push_back(x);
  }
  std::size_t first_vector = 0;
  for (int l = 0; l < count; ++l) {
    layer& x = layers[l];
    x.bias = table.add("layers." + std::to_string(l) + ".bias", {std::size_t(x.out)});
    if (l == 0) first_vector = table[x.bias].offset;
    if (x.hidden && config.layernorm) {
      x.norm_weight = table.add("layers." + std::to_string(l) + ".norm.weight", {std::size_t(x.out)});
      x.norm_bias = table.add("layers." + std::to_string(l) + ".norm.bias", {std::size_t(x.out)});
    }
  }
  vectors = {first_vector, table.flat_size()};
}

template <class T, class ExecutionSpace>
mlp<T, ExecutionSpace>::mlp(const mlp_config& config, const ExecutionSpace& space)
    : space_(space), config_(config), parameters_(config), layers_(parameters_.layers.size()) {}

template <class T, class ExecutionSpace>
void mlp<T, ExecutionSpace>::reserve(int n) {
  if (n <= capacity_) return;
  const auto alloc = [](const char* what, std::size_t l) {
    return std::string("kamp::mlp::") + what + "." + std::to_string(l);
  };
  const std::size_t rows = std::size_t(n);
  for (std::size_t l = 0; l < layers_.size(); ++l) {
    const auto& p = parameters_.layers[l];
    buffers& b = layers_[l];
    b.x = matrix<T>(alloc("x", l), rows, std::size_t(p.in));
    b.z = matrix<float>(alloc("z", l), rows, std::size_t(p.out));
    b.dz = matrix<float>(alloc("dz", l), rows, std::size_t(p.out));
    b.dz_low = matrix<T>(alloc("dz_low", l), rows, std::size_t(p.out));
    if (p.norm_weight != mlp_parameters::none) {
      b.normalized = matrix<float>(alloc("normalized", l), rows, std::size_t(p.out));
      b.dargument = matrix<float>(alloc("dargument", l), rows, std::size_t(p.out));
      b.mean = flat<float>(alloc("mean", l), rows);
      b.rstd = flat<float>(alloc("rstd", l), rows);
    }
  }
  // Output gradients from the last layer down: a residual layer's input gradient is its output
  // gradient plus what its GEMM adds, so the two share one buffer.
  for (std::size_t l = layers_.size(); l-- > 0;) {
    const auto& p = parameters_.layers[l];
    const bool shares = l + 1 < layers_.size() && parameters_.layers[l + 1].residual;
    layers_[l].g = shares ? layers_[l + 1].g : matrix<float>(alloc("g", l), rows, std::size_t(p.out));
  }
  capacity_ = n;
}

namespace {
template <class V>
auto rows_of(const V& v, int n) {
  return Kokkos::subview(v, std::make_pair(0, n), Kokkos::ALL);
}
}  // namespace

template <class T, class ExecutionSpace>
auto mlp<T, ExecutionSpace>::input(int n) const -> matrix<T> {
  return rows_of(layers_.front().x, n);
}
template <class T, class ExecutionSpace>
auto mlp<T, ExecutionSpace>::output(int n) const -> matrix<float> {
  return rows_of(layers_.back().z, n);
}
template <class T, class ExecutionSpace>
auto mlp<T, ExecutionSpace>::output_gradient(int n) const -> matrix<float> {
  return rows_of(layers_.back().g, n);
}

namespace {

template <class U, class Memory>
using const_matrix = Kokkos::View<const U**, Kokkos::LayoutRight, Memory, Kokkos::MemoryUnmanaged>;
template <class U, class Memory>
using writable_matrix = Kokkos::View<U**, Kokkos::LayoutRight, Memory, Kokkos::MemoryUnmanaged>;

template <class U, class Memory>
const_matrix<U, Memory> weight_of(const Kokkos::View<const U*, Memory>& flat, const tensor_table& t, std::size_t i) {
  const auto& e = t[i];
  return const_matrix<U, Memory>(flat.data() + e.offset, e.shape[0], e.shape[1]);
}
template <class U, class Memory>
writable_matrix<U, Memory> weight_of(const Kokkos::View<U*, Memory>& flat, const tensor_table& t, std::size_t i) {
  const auto& e = t[i];
  return writable_matrix<U, Memory>(flat.data() + e.offset, e.shape[0], e.shape[1]);
}
template <class U, class Memory>
Kokkos::View<U*, Memory, Kokkos::MemoryUnmanaged> vector_of(const Kokkos::View<U*, Memory>& flat, const tensor_table& t,
                                                            std::size_t i) {
  const auto& e = t[i];
  return Kokkos::View<U*, Memory, Kokkos::MemoryUnmanaged>(flat.data() + e.offset, e.size);
}

}  // namespace

template <class T, class ExecutionSpace>
void mlp<T, ExecutionSpace>::forward(const flat<const T>& model, const flat<const float>& vectors, int n) {
  if (n > capacity_) reserve(n);
  const tensor_table& t = parameters_.table;
  for (std::size_t l = 0; l < layers_.size(); ++l) {
    const auto& p = parameters_.layers[l];
    const buffers& b = layers_[l];
    const auto z = rows_of(b.z, n);
    gemm(space_, op::none, op::transpose, 1.0f, rows_of(b.x, n), weight_of(model, t, p.weight), 0.0f, z,
         vector_of(vectors, t, p.bias));
    if (!p.hidden) continue;
    auto argument = z;
    if (p.norm_weight != mlp_parameters::none) {
      argument = rows_of(b.normalized, n);
      layernorm_forward(space_, z, vector_of(vectors, t, p.norm_weight), vector_of(vectors, t, p.norm_bias), argument,
                        Kokkos::subview(b.mean, std::make_pair(0, n)), Kokkos::subview(b.rstd, std::make_pair(0, n)));
    }
    const auto next = rows_of(layers_[l + 1].x, n);
    if (p.residual)
      residual_activation_forward(space_, config_.hidden_activation, argument, rows_of(b.x, n), next);
    else
      activation_forward(space_, config_.hidden_activation, argument, next);
  }
}

template <class T, class ExecutionSpace>
void mlp<T, ExecutionSpace>::backward(const flat<const T>& model, const flat<const float>& vectors,
                                      const flat<float>& grads, int n) {
  const tensor_table& t = parameters_.table;
  for (std::size_t l = layers_.size(); l-- > 0;) {
    const auto& p = parameters_.layers[l];
    const buffers& b = layers_[l];
    const auto g = rows_of(b.g, n);
    auto dz = g;  // the output layer's z is its output
    if (p.hidden) {
      dz = rows_of(b.dz, n);
      if (p.norm_weight != mlp_parameters::none) {
        const auto darg = rows_of(b.dargument, n);
        activation_backward(space_, config_.hidden_activation, g, rows_of(b.normalized, n), darg);
        Kokkos::deep_copy(space_, dz, 0.0f);  // layernorm_backward accumulates
        layernorm_backward(space_, darg, rows_of(b.z, n), vector_of(vectors, t, p.norm_weight),
                           Kokkos::subview(b.mean, std::make_pair(0, n)), Kokkos::subview(b.rstd, std::make_pair(0, n)),
                           dz, vector_of(grads, t, p.norm_weight), vector_of(grads, t, p.norm_bias));
      } else {
        activation_backward(space_, config_.hidden_activation, g, rows_of(b.z, n), dz);
      }
    }
    // The bias gradient sums the fp32 dz; the GEMMs read it rounded once to T.
    const auto dz_low = rows_of(b.dz_low, n);
    cast_and_column_sums(space_, dz, dz_low, vector_of(grads, t, p.bias));
    gemm(space_, op::transpose, op::none, 1.0f, dz_low, rows_of(b.x, n), 1.0f, weight_of(grads, t, p.weight));
    if (l > 0)
      gemm(space_, op::none, op::none, 1.0f, dz_low, weight_of(model, t, p.weight), p.residual ? 1.0f : 0.0f,
           rows_of(layers_[l - 1].g, n));
  }
}

#define KAMP_MLP_INSTANTIATE_(Space) \
  template class mlp<float, Space>;  \
  template class mlp<bf16, Space>;   \
  template class mlp<fp16, Space>;
KAMP_FOR_EACH_EXECUTION_SPACE(KAMP_MLP_INSTANTIATE_)
#undef KAMP_MLP_INSTANTIATE_

}  // namespace kamp
