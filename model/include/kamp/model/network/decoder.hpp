#ifndef KAMP_MODEL_NETWORK_DECODER_HPP
#define KAMP_MODEL_NETWORK_DECODER_HPP

#include <kamp/kernels/execution_spaces.hpp>
#include <kamp/model/network/activation_layout.hpp>
#include <kamp/model/network/gpt_parameters.hpp>
#include <kamp/model/network/weight_binding.hpp>

#include <Kokkos_Core.hpp>

#include <memory>

namespace kamp {

/// \brief The GPT's forward pass one token at a time, for generation. Each layer keeps the keys
/// and values of the positions seen so far (a KV cache), so a new token costs one position's
/// work, not the whole context's.
///
/// It computes in the types gpt's training forward uses in the same precision policy (bf16 or
/// fp16 GEMM inputs, fp32 residual stream, LayerNorm and softmax statistics) and through the
/// same kernels, so its logits match a full-context forward up to the order of summation inside
/// the GEMMs and, in 16-bit modes, the training forward's rounding of logits to the head's type
/// (the decoder keeps them fp32 for sampling). One sequence; every kernel runs on the given execution space
/// instance.
template <class ExecutionSpace = Kokkos::DefaultExecutionSpace>
class gpt_decoder {
 public:
  using execution_space = ExecutionSpace;
  using memory_space = typename ExecutionSpace::memory_space;
  using logits_view = Kokkos::View<const float*, memory_space>;

  /// Validates the config and the policy, then allocates the cache for config.context positions.
  gpt_decoder(const gpt_config& config, const precision_policy& policy, const ExecutionSpace& space = ExecutionSpace());
  ~gpt_decoder();
  gpt_decoder(const gpt_decoder&) = delete;
  gpt_decoder& operator=(const gpt_decoder&) = delete;

  /// The weights to read, as gpt::bind_weights takes them (a trainer's model().binding() too).
  void bind_weights(const weight_binding& binding);
  const gpt_config& config() const { return config_; }

  /// Forgets the tokens seen: the next token is position 0.
  void reset() { position_ = 0; }
  /// Tokens in the cache: the position the next token takes.
  int position() const { return position_; }
  /// Runs `token` at position(), keeps its keys and values, and returns the logits of the next
  /// token (vocab, fp32, on the device; valid until the next call). Throws std::invalid_argument
  /// for a token outside the vocabulary and std::length_error when the cache is full
  /// (position() == config().context).
  logits_view advance(int token);

 private:
  struct buffers;
  /// What one op of a step reads, for a layer computing in T with exact weights in P: the
  /// sizes, its buffers as typed views, the bound weights (decoder.cpp).
  template <class P, class T>
  struct step;
  template <class P>
  void forward();
  template <class P, class T>
  void attention(int l);
  template <class P, class T>
  void mlp(int l);
  template <class P, class T>
  void head();
  /// LayerNorm of residual row `at` into the layer's input (ln_out, in T); `after_branch`: the
  /// row holds a branch's output, and the skip connection (the other row) is added first.
  template <class P, class T>
  void norm(const norm_parameters& p, int at, bool after_branch);
  /// residual[to] = in · Wᵀ + bias, `in` the first `n` elements of `input` in T: a block's
  /// output Linear, its skip connection added by the next norm.
  template <class P, class T>
  void branch(const linear_parameters& p, const Kokkos::View<char*, memory_space>& input, std::size_t n, int to);

  gpt_config config_;
  precision_policy policy_;
  gpt_parameters parameters_;
  layer_dtypes dtypes_;
  ExecutionSpace space_;
  weight_binding binding_;
  detail::weight_addresses at_;
  std::unique_ptr<buffers> buf_;
  int position_ = 0;
};

#define KAMP_DECODER_DECLARE_(Space) extern template class gpt_decoder<Space>;
KAMP_FOR_EACH_EXECUTION_SPACE(KAMP_DECODER_DECLARE_)

}  // namespace kamp

#endif
