#ifndef KAMP_MODEL_NETWORK_MLP_HPP
#define KAMP_MODEL_NETWORK_MLP_HPP

#include <kamp/kernels/element_range.hpp>
#include <kamp/kernels/flat_tensors.hpp>
#include <kamp/model/config/session_config.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <vector>

namespace kamp {

/// \brief Where each Linear layer's parameters sit in the flat buffers, built once from the
/// config: weights first, then every vector (biases, LayerNorm scales and shifts) in one
/// contiguous range, so the vectors can be kept or widened to fp32 with one kernel.
/// Names follow PyTorch's state_dict of an nn.Sequential-like MLP: `layers.<l>.weight`,
/// `layers.<l>.bias`, `layers.<l>.norm.weight`, `layers.<l>.norm.bias`.
struct mlp_parameters {
  static constexpr std::size_t none = std::size_t(-1);
  struct layer {
    int in, out;
    bool hidden;    ///< followed by LayerNorm (if any) and the activation
    bool residual;  ///< adds its input (hidden, in == out, config.residual)
    std::size_t weight, bias, norm_weight = none, norm_bias = none;
  };
  tensor_table table;
  std::vector<layer> layers;
  element_range vectors;  ///< the biases and norms, contiguous at the end of the flat buffers

  explicit mlp_parameters(const mlp_config& config);
};

/// \brief An MLP's forward and backward passes on the execution space instance, in compute type
/// T (float, bf16, fp16): GEMMs read T and accumulate in fp32, pre-activations, LayerNorm,
/// activations' arguments and every gradient sum stay fp32. The network owns its activations
/// (grown to the largest batch seen); the caller owns the weights and gradients, flat buffers
/// laid out by parameters(). Nothing in a pass waits for the host.
template <class T, class ExecutionSpace>
class mlp {
 public:
  using memory_space = typename ExecutionSpace::memory_space;
  template <class U>
  using matrix = Kokkos::View<U**, Kokkos::LayoutRight, memory_space>;
  template <class U>
  using flat = Kokkos::View<U*, memory_space>;

  mlp(const mlp_config& config, const ExecutionSpace& space);

  const mlp_config& config() const { return config_; }
  const mlp_parameters& parameters() const { return parameters_; }

  /// Makes room for batches of n rows (allocates only when n exceeds every earlier batch).
  void reserve(int n);
  /// The (n, inputs) buffer the first GEMM reads: the caller fills it before forward.
  matrix<T> input(int n) const;
  /// The (n, outputs) fp32 output of the last forward pass.
  matrix<float> output(int n) const;
  /// The (n, outputs) fp32 buffer backward reads the output's gradient from.
  matrix<float> output_gradient(int n) const;

  /// `model`: the T copy of every parameter; `vectors`: an fp32 flat buffer whose
  /// parameters().vectors range holds the biases and norms (the master weights, or a widened copy).
  void forward(const flat<const T>& model, const flat<const float>& vectors, int n);
  /// Accumulates (+=) the gradients of every parameter into the fp32 `grads` from
  /// output_gradient(n), for the batch of the last forward pass.
  void backward(const flat<const T>& model, const flat<const float>& vectors, const flat<float>& grads, int n);

 private:
  struct buffers {
    matrix<T> x;               // the layer's GEMM input (layer 0: the network input)
    matrix<float> z;           // x W^T + b (the output layer's: the network output)
    matrix<float> normalized;  // LayerNorm(z), the activation's argument
    flat<float> mean, rstd;    // LayerNorm statistics
    matrix<float> g;           // gradient of the layer's output (a residual layer shares it with the layer before)
    matrix<float> dargument;   // gradient of the activation's argument (LayerNorm only)
    matrix<float> dz;          // gradient of z
    matrix<T> dz_low;          // dz in T, for the GEMMs
  };
  ExecutionSpace space_;
  mlp_config config_;
  mlp_parameters parameters_;
  int capacity_ = 0;
  std::vector<buffers> layers_;
};

}  // namespace kamp

#endif
