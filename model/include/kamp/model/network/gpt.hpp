#ifndef KAMP_MODEL_NETWORK_GPT_HPP
#define KAMP_MODEL_NETWORK_GPT_HPP

#include <kamp/kernels/execution_spaces.hpp>
#include <kamp/kernels/loss_scaler.hpp>
#include <kamp/kernels/nn/embedding.hpp>
#include <kamp/kernels/value_range.hpp>
#include <kamp/model/config/gpt_config.hpp>
#include <kamp/model/config/precision_policy.hpp>
#include <kamp/model/network/activation_layout.hpp>
#include <kamp/model/network/fp8_state.hpp>
#include <kamp/model/network/gpt_parameters.hpp>
#include <kamp/model/network/unit_hooks.hpp>
#include <kamp/model/network/weight_binding.hpp>
#include <kamp/numeric/dtype.hpp>

#include <Kokkos_Core.hpp>

#include <memory>
#include <string>
#include <vector>

namespace kamp {

namespace detail {
enum class block_linear;  ///< a block's Linear layers: qkv, attn_proj, fc, mlp_proj
}

/// \brief The range of one op's output in one pass: the precision doctor's evidence.
struct op_observation {
  std::string op;  ///< h<l>.attn.qkv, h<l>.mlp.gelu, lm_head, ... (the block and its step)
  bool backward;   ///< false: the forward output; true: the gradient the backward op produced
  dtype stored;    ///< the dtype the output is stored in
  value_range range;
  std::string layer;             ///< the layer whose precision it follows (layer_name: h<l>.attn, lm_head, ...)
  bool residual_stream = false;  ///< the output is the residual stream (kept in fp32 whatever the layer)
};

/// \brief Decoder-only GPT: token + position embeddings, pre-LayerNorm blocks (causal
/// multi-head attention, 4x MLP with tanh GELU), final LayerNorm, LM head tied to the token
/// embedding, mean cross-entropy. Every op is a kamp kernel; each forward has its backward.
///
/// The model owns activations and the flat gradient buffer (Real), not the weights: the trainer
/// (or a test) binds the exact weights (fp32 master or bf16, policy.weights()) and the
/// low-precision copy the GEMMs read (policy.low()). Real is float for training; Real = double
/// runs every op in fp64 (policy mode fp32 only), the reference for gradient checks.
///
/// Every kernel runs on the execution space instance given at construction (a CUDA or HIP
/// stream, an OpenMP or Serial instance). A pass over a device-resident batch launches kernels
/// and returns: nothing in it waits for the host, and the launches per layer do not depend on
/// the number of heads (each attention matmul is one strided-batched GEMM over batch x heads).
template <class Real, class ExecutionSpace = Kokkos::DefaultExecutionSpace>
class gpt {
 public:
  using execution_space = ExecutionSpace;
  using memory_space = typename ExecutionSpace::memory_space;
  using scaler_view = Kokkos::View<const loss_scale_state, memory_space>;
  /// A micro-batch on the device: (batch, context) token ids in [0, vocab).
  using token_view = Kokkos::View<const int**, Kokkos::LayoutRight, memory_space>;
  /// Where a pass leaves its loss: the fp64 sum over the batch x context positions.
  using loss_view = Kokkos::View<double, memory_space>;

  /// Validates the config and the policy, then allocates activations for micro-batches of
  /// `batch` sequences of config.context tokens, keeping what `recompute` says for the backward
  /// pass (activation_layout).
  gpt(const gpt_config& config, const precision_policy& policy, int batch,
      const ExecutionSpace& space = ExecutionSpace(), activation_recompute recompute = activation_recompute::none);
  ~gpt();
  gpt(const gpt&) = delete;
  gpt& operator=(const gpt&) = delete;

  const gpt_config& config() const { return config_; }
  const precision_policy& policy() const { return policy_; }
  const gpt_parameters& parameters() const { return parameters_; }
  const tensor_table& table() const { return parameters_.table; }
  int batch() const { return batch_; }
  const ExecutionSpace& space() const { return space_; }

  /// The weights the next forward/backward passes read; both must cover table().flat_size().
  void bind_weights(weights_ref exact, weights_ref copy);
  /// The same, with the exact weights laid out by `exact_layout`, which must hold at least
  /// exactly_read_parameters() (a sharded run gathers only those from its master shards).
  void bind_weights(weights_ref exact, const tensor_table& exact_layout, weights_ref copy);
  void bind_weights(const weight_binding& binding);
  /// The weights bound now (a gpt_decoder can read the same ones).
  const weight_binding& binding() const { return binding_; }
  /// Gradients, flat over table(); backward() accumulates into them (the caller zeroes them).
  /// Allocated at the first use; never for a model whose gradients shard() handed to unit hooks.
  Kokkos::View<Real*, memory_space> grads() const;

  /// From now on `hooks` place the parameters and gradients unit by unit (sharded data
  /// parallelism): the passes call them around each unit, and the whole gradient buffer is
  /// released. `hooks` must outlive the model's passes.
  void shard(unit_hooks* hooks);
  /// Where tensor `tensor` (a table index) is read until the next bind: its exact values (null
  /// when the policy reads it from the copy only) and its low-precision copy.
  void bind_tensor(std::size_t tensor, const void* exact, const void* copy);
  /// Where the gradient of tensor `tensor` is written until the next bind.
  void bind_gradient(std::size_t tensor, Real* grad) { grad_at_.at(tensor) = grad; }

  /// Mean cross-entropy of predicting targets from tokens (host arrays of batch() x context,
  /// checked against the vocabulary). Copies them to the device and waits for the loss.
  double evaluate(const int* tokens, const int* targets);
  /// evaluate(), then adds to grads() the gradient of loss · grad_scale (· the loss scale read
  /// on the device when `scaler` is given). Returns the unscaled mean loss.
  double forward_backward(const int* tokens, const int* targets, double grad_scale, const scaler_view& scaler = {});
  /// The same passes on a batch already on the device; the loss sum goes to `loss` when the
  /// kernels have run. Nothing waits for the host.
  void evaluate(const token_view& tokens, const token_view& targets, const loss_view& loss);
  void forward_backward(const token_view& tokens, const token_view& targets, double grad_scale,
                        const scaler_view& scaler, const loss_view& loss);

  /// While `sink` is set, each op appends the range of its output to it, in execution order
  /// (one reduction per op: for diagnosis, not for every step). nullptr stops it.
  void observe(std::vector<op_observation>* sink) { observations_ = sink; }

  /// amp_fp8: the scaling state of the FP8 Linears (empty in other modes), copied to the host.
  fp8_scaling_state fp8_state() const;
  /// Sets it; throws std::invalid_argument, changing nothing, unless it fits this model, mode
  /// and recipe (an empty state fits every mode but amp_fp8).
  void restore_fp8_state(const fp8_scaling_state& s);
  /// amp_fp8: the last cast of each FP8 tensor (amax, scale, saturated and underflowed counts),
  /// copied to the host: the run waits for the device.
  std::vector<fp8_tensor_report> fp8_report() const;

  /// The dtype the named layer's GEMMs read their activations in (what the policy resolved).
  dtype activation_dtype(const std::string& layer) const;
  /// A copy of the input activations of the named layer's first GEMM from the last forward
  /// pass, widened to double (host): inspection and tests. Not with recomputation (std::logic_error):
  /// the layers share one buffer.
  std::vector<double> gemm_input(const std::string& layer) const;
  /// The logits (batch() x context rows of vocab, the padded columns left out, in the head's
  /// compute type) of the last evaluate(), widened to double (host): inspection and tests.
  /// After forward_backward() the buffer holds their gradient, which the loss writes over them.
  std::vector<double> logits() const;

 private:
  struct buffers;
  /// What one op of a pass reads, for a layer computing in T with exact weights in P: the sizes,
  /// the activations as typed views, the bound weights and the gradients (gpt.cpp).
  template <class P, class T>
  struct pass;
  void run(const token_view& tokens, const token_view& targets, bool with_grad, double grad_scale,
           const scaler_view& scaler, const loss_view& loss);
  double run_host(const int* tokens, const int* targets, bool with_grad, double grad_scale, const scaler_view& scaler);
  template <class P>
  void forward(bool with_grad, double grad_scale, const scaler_view& scaler);
  template <class P>
  void backward();
  template <class P, class T>
  void attention_forward(int l);
  template <class P, class T>
  void mlp_forward(int l);
  template <class P, class T>
  void head_forward(bool with_grad, double grad_scale, const scaler_view& scaler);
  /// Block l's forward pass again, from its kept input, up to what its backward pass reads.
  template <class P>
  void recompute_block(int l);
  template <class P, class T>
  void attention_backward(int l);
  template <class P, class T>
  void mlp_backward(int l);
  template <class P, class T>
  void head_backward();
  /// The backward pass of a block's output Linear `which` and skip connection: the gradient of
  /// the Linear's input `input` into `d_input` from the residual stream's, its weight's and bias'
  /// gradients added.
  template <class P, class T, class In, class DIn>
  void residual_branch_backward(const pass<P, T>& ctx, detail::block_linear which, const In& input, const DIn& d_input);
  /// LayerNorm i (of 2L + 1) of the residual stream into its output in T, and its backward
  /// pass, which adds to the residual stream's gradient; `op` names it for observe().
  template <class P, class T>
  void norm_forward(int i, const norm_parameters& p, int block, layer_part part, const char* op);
  template <class P>
  void norm_backward(int i, const norm_parameters& p, int block, layer_part part, const char* op);
  /// Records the range of an op's output for observe(): named "<block>.<op>" (the head's ops
  /// without a block), with the layer it belongs to and whether it is the residual stream.
  template <class V>
  void note(int block, layer_part part, const char* op, bool backward, const V& output,
            bool residual_stream = false) const;

  gpt_config config_;
  precision_policy policy_;
  gpt_parameters parameters_;
  layer_dtypes dtypes_;
  int batch_;
  ExecutionSpace space_;
  activation_recompute recompute_;
  bool recomputing_ = false;      ///< inside recompute_block: the block's input is complete
  std::vector<bool> fp8_linear_;  ///< per block Linear (fp8_linears::index): through FP8, chosen once
  weight_binding binding_;
  detail::weight_addresses at_;  ///< where each parameter's weights are read
  mutable Kokkos::View<Real*, memory_space> grads_;
  mutable std::vector<Real*> grad_at_;  ///< where each parameter's gradient is written
  unit_hooks* hooks_ = nullptr;
  std::unique_ptr<buffers> buf_;
  token_rows<memory_space> token_index_;
  token_view tokens_, targets_;  ///< the batch of the pass under way
  std::vector<op_observation>* observations_ = nullptr;
};

#define KAMP_GPT_DECLARE_(Space)           \
  extern template class gpt<float, Space>; \
  extern template class gpt<double, Space>;
KAMP_FOR_EACH_EXECUTION_SPACE(KAMP_GPT_DECLARE_)

}  // namespace kamp

#endif
