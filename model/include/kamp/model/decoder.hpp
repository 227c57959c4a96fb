#ifndef KAMP_MODEL_DECODER_HPP
#define KAMP_MODEL_DECODER_HPP

#include <kamp/model/gpt.hpp>
#include <kamp/model/training_state.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace kamp {

/// \brief The GPT's forward pass one token at a time, for generation. Each layer keeps the keys
/// and values of the positions seen so far (a KV cache), so a new token costs one position's
/// work, not the whole context's.
///
/// It computes in the types gpt's training forward uses in the same precision policy (bf16 or
/// fp16 GEMM inputs, fp32 residual stream, LayerNorm and softmax statistics, fp32 logits) and
/// through the same kernels, so its logits match a full-context forward up to the order of
/// summation inside the GEMMs. One sequence; every kernel runs on the given execution space
/// instance.
template <class ExecutionSpace = Kokkos::DefaultExecutionSpace>
class gpt_decoder {
 public:
  using execution_space = ExecutionSpace;
  using memory_space = typename ExecutionSpace::memory_space;
  using logits_view = Kokkos::View<const float*, memory_space>;

  /// Validates the config and the policy, then allocates the cache for config.context positions.
  gpt_decoder(const gpt_config& config, const precision_policy& policy,
              const ExecutionSpace& space = ExecutionSpace());
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
  template <class P>
  void forward();
  template <class P, class T>
  void attention(int l);
  template <class P, class T>
  void mlp(int l);
  template <class P, class T>
  void head();
  /// residual[to] = residual[from] + in · Wᵀ + bias: a block's output Linear and skip connection.
  template <class P, class In>
  void residual_branch(const linear_parameters& p, const In& in, int from, int to);
  /// The bound weights as typed views (model/src/gpt_parts.hpp).
  auto reader() const;

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

/// \brief A training state's weights copied to the device, as a model binds them: the fp32
/// master weights (AMP) or the weights themselves as the exact ones, the model copy as the copy.
/// Generation from a checkpoint reads these; nothing of the optimizer is copied.
template <class ExecutionSpace = Kokkos::DefaultExecutionSpace>
class state_weights {
 public:
  /// Throws std::invalid_argument when `state` lacks a tensor its precision mode keeps.
  explicit state_weights(const training_state& state);
  weight_binding binding() const;

 private:
  Kokkos::View<unsigned char*, typename ExecutionSpace::memory_space> exact_, copy_;
  dtype exact_type_, copy_type_;
  tensor_table table_;
};

/// \brief How the next token is drawn from the logits.
struct sampling_options {
  float temperature = 1.0f;  ///< logits are divided by it; 0: greedy (the most likely token)
  int top_k = 0;             ///< draw among the k most likely tokens only; 0: all
  std::uint64_t seed = 0;    ///< draw n uses counter_random(seed, 2n) and (seed, 2n + 1): the same everywhere

  /// Throws std::invalid_argument naming the bad field and its range.
  void validate(int vocab) const;
};

/// The token drawn from `logits` (host, `vocab` of them) as draw number `draw` of a run:
/// softmax(logits / temperature) in fp64 over the top_k most likely (ties: the lower id), then
/// inverse-CDF sampling with one 53-bit uniform from the words (seed, 2·draw), (seed, 2·draw + 1). Greedy when temperature is 0.
int sample_token(const float* logits, int vocab, const sampling_options& options, std::uint64_t draw);

/// Feeds `prompt` (byte tokens; at least one) to `decoder` from position 0, then draws `tokens`
/// more, each fed back; calls `emit` with each drawn byte as it comes. When the cache is full,
/// the decoder restarts on the last context/2 tokens (a sliding window), so any length works.
/// Returns the bytes drawn.
template <class ExecutionSpace>
std::string generate(gpt_decoder<ExecutionSpace>& decoder, const std::string& prompt, int tokens,
                     const sampling_options& options, const std::function<void(char)>& emit = {});

#define KAMP_DECODER_DECLARE_(Space)                                        \
  extern template class gpt_decoder<Space>;                               \
  extern template class state_weights<Space>;                              \
  extern template std::string generate(gpt_decoder<Space>&, const std::string&, int, const sampling_options&, \
                                       const std::function<void(char)>&);
KAMP_GPT_FOR_EACH_SPACE(KAMP_DECODER_DECLARE_)

}  // namespace kamp

#endif
