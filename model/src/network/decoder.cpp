#include <kamp/kernels/nn.hpp>
#include <kamp/model/network/decoder.hpp>

#include "network/gpt_parts.hpp"

#include <cmath>
#include <stdexcept>

namespace kamp {

namespace {
template <class M>
using views = detail::views<M>;
}  // namespace

/// One position's activations (the widest compute type is fp32: 4 bytes per element), the
/// residual stream in two buffers that the blocks write in turn, and each layer's cache.
template <class ES>
struct gpt_decoder<ES>::buffers {
  using bytes = typename views<memory_space>::bytes;
  using floats = Kokkos::View<float*, memory_space>;
  Kokkos::View<int**, Kokkos::LayoutRight, memory_space> token;
  floats residual[2], ln_mean, ln_rstd, scores, fc_pre, logits;
  bytes ln_out, qkv, probs, attn_out, fc_act, bias;
  std::vector<bytes> keys, values;

  buffers(const gpt_config& c, const layer_dtypes& types)
      : token("kamp::decoder::token", 1, 1),
        residual{floats("kamp::decoder::residual", c.d_model), floats("kamp::decoder::residual", c.d_model)},
        ln_mean("kamp::decoder::ln_mean", 1),
        ln_rstd("kamp::decoder::ln_rstd", 1),
        scores("kamp::decoder::scores", std::size_t(c.heads) * c.context),
        fc_pre("kamp::decoder::fc_pre", c.mlp),
        logits("kamp::decoder::logits", c.vocab),
        ln_out("kamp::decoder::ln_out", 4 * std::size_t(c.d_model)),
        qkv("kamp::decoder::qkv", 12 * std::size_t(c.d_model)),
        probs("kamp::decoder::probs", 4 * std::size_t(c.heads) * c.context),
        attn_out("kamp::decoder::attn_out", 4 * std::size_t(c.d_model)),
        fc_act("kamp::decoder::fc_act", 4 * std::size_t(c.mlp)),
        bias("kamp::decoder::bias", 4 * std::size_t(std::max(3 * c.d_model, c.mlp))) {
    for (int l = 0; l < c.layers; ++l) {
      const std::size_t cache = std::size_t(c.context) * c.d_model * size_of(types.attn[l]);
      keys.emplace_back("kamp::decoder::keys", cache);
      values.emplace_back("kamp::decoder::values", cache);
    }
  }
};

template <class ES>
gpt_decoder<ES>::gpt_decoder(const gpt_config& config, const precision_policy& policy, const ES& space)
    : config_(config),
      policy_(policy),
      parameters_((policy.validate(config), config)),
      dtypes_(config, policy, dtype::fp32),
      space_(space),
      buf_(std::make_unique<buffers>(config, dtypes_)) {}

template <class ES>
gpt_decoder<ES>::~gpt_decoder() = default;

template <class ES>
void gpt_decoder<ES>::bind_weights(const weight_binding& binding) {
  at_ = detail::bound_addresses("kamp::gpt_decoder::bind_weights", config_, policy_, false, binding);
  binding_ = binding;
}

template <class ES>
typename gpt_decoder<ES>::logits_view gpt_decoder<ES>::advance(int token) {
  if (binding_.exact.data == nullptr) throw std::logic_error("kamp::gpt_decoder: bind_weights() before advance()");
  if (token < 0 || token >= config_.vocab)
    throw std::invalid_argument("kamp::gpt_decoder: token " + std::to_string(token) + " is outside the vocabulary [0, " +
                                std::to_string(config_.vocab) + ")");
  if (position_ >= config_.context)
    throw std::length_error("kamp::gpt_decoder: the cache holds " + std::to_string(config_.context) +
                            " positions (the context) and is full: reset() it");
  Kokkos::deep_copy(space_, buf_->token, token);
  visit_dtype<float>(policy_.weights(), [&](auto p) { forward<decltype(p)>(); });
  ++position_;
  return buf_->logits;
}

template <class ES>
auto gpt_decoder<ES>::reader() const {
  return detail::weight_reader<float, memory_space>{parameters_.table, at_};
}

template <class ES>
template <class P>
void gpt_decoder<ES>::forward() {
  using v = views<memory_space>;
  const auto w = reader();
  embedding_forward(space_, Kokkos::View<const int**, Kokkos::LayoutRight, memory_space>(buf_->token),
                    w.template exact_matrix<P>(parameters_.wte), w.template exact_matrix<P>(parameters_.wpe),
                    typename v::template matrix<float>(buf_->residual[0].data(), 1, config_.d_model), position_);
  for (int l = 0; l < config_.layers; ++l) {
    visit_dtype<float>(dtypes_.attn[l], [&](auto t) { attention<P, decltype(t)>(l); });
    visit_dtype<float>(dtypes_.mlp[l], [&](auto t) { mlp<P, decltype(t)>(l); });
  }
  visit_dtype<float>(dtypes_.head, [&](auto t) { head<P, decltype(t)>(); });
}

namespace {

// LayerNorm of the one row `x` into the compute type T. A free function: nvcc places no device
// lambda in a private member function.
template <class T, class P, class ES, class M = typename ES::memory_space>
typename views<M>::template matrix<T> norm(const ES& space, const detail::weight_reader<float, M>& w,
                                           const norm_parameters& p, const Kokkos::View<float*, M>& x,
                                           const typename views<M>::bytes& out, const Kokkos::View<float*, M>& mean,
                                           const Kokkos::View<float*, M>& rstd) {
  using v = views<M>;
  const std::size_t c = x.extent(0);
  const auto ln = v::template as_matrix<T>(out, 1, c);
  layernorm_forward(space, typename v::template matrix<const float>(x.data(), 1, c), w.template exact<P>(p.gain),
                    w.template exact<P>(p.bias), ln, mean, rstd);
  return ln;
}

}  // namespace

template <class ES>
template <class P, class T>
void gpt_decoder<ES>::attention(int l) {
  using v = views<memory_space>;
  auto& b = *buf_;
  const auto w = reader();
  const auto& prm = parameters_.blocks[l];
  const std::size_t c = config_.d_model, heads = config_.heads, d = c / heads, capacity = config_.context;
  const auto ln = norm<T, P>(space_, w, prm.ln1, b.residual[0], b.ln_out, b.ln_mean, b.ln_rstd);
  const auto qkv = v::template as_matrix<T>(b.qkv, 1, 3 * c);
  detail::linear(space_, ln, w.template gemm<P, T>(prm.qkv.weight), qkv,
                 w.template bias<P>(prm.qkv.bias, space_, b.bias));
  const auto keys = v::as_batched(reinterpret_cast<T*>(b.keys[l].data()), heads, capacity, d);
  const auto values = v::as_batched(reinterpret_cast<T*>(b.values[l].data()), heads, capacity, d);
  const typename v::template vector<const T> row(qkv.data(), 3 * c);
  kv_cache_append(space_, row, keys, values, position_);
  const auto y = v::template as_vector<T>(b.attn_out, c);
  attention_decode(space_, row, keys, values, position_, float(1.0 / std::sqrt(double(d))),
                   typename v::template matrix<float>(b.scores.data(), heads, capacity),
                   v::template as_matrix<T>(b.probs, heads, capacity), y);
  residual_branch<P>(prm.attn_proj, typename v::template matrix<const T>(y.data(), 1, c), 0, 1);
}

template <class ES>
template <class P, class T>
void gpt_decoder<ES>::mlp(int l) {
  using v = views<memory_space>;
  auto& b = *buf_;
  const auto w = reader();
  const auto& prm = parameters_.blocks[l];
  const std::size_t c = config_.d_model, m = config_.mlp;
  const auto ln = norm<T, P>(space_, w, prm.ln2, b.residual[1], b.ln_out, b.ln_mean, b.ln_rstd);
  const typename v::template matrix<float> fc_pre(b.fc_pre.data(), 1, m);
  detail::linear(space_, ln, w.template gemm<P, T>(prm.fc.weight), fc_pre,
                 w.template bias<P>(prm.fc.bias, space_, b.bias));
  gelu_forward(space_, typename v::template vector<const float>(b.fc_pre.data(), m), v::template as_vector<T>(b.fc_act, m));
  residual_branch<P>(prm.mlp_proj, v::template as_matrix<const T>(b.fc_act, 1, m), 1, 0);
}

template <class ES>
template <class P, class In>
void gpt_decoder<ES>::residual_branch(const linear_parameters& p, const In& in, int from, int to) {
  using v = views<memory_space>;
  using T = typename In::non_const_value_type;
  auto& b = *buf_;
  const std::size_t c = config_.d_model;
  const auto w = reader();
  detail::residual_linear(space_, in, w.template gemm<P, T>(p.weight), w.template bias<P>(p.bias, space_, b.bias),
                          typename v::template matrix<const float>(b.residual[from].data(), 1, c),
                          typename v::template matrix<float>(b.residual[to].data(), 1, c));
}

template <class ES>
template <class P, class T>
void gpt_decoder<ES>::head() {
  using v = views<memory_space>;
  auto& b = *buf_;
  const auto w = reader();
  const auto ln = norm<T, P>(space_, w, parameters_.lnf, b.residual[0], b.ln_out, b.ln_mean, b.ln_rstd);
  detail::linear(space_, ln, w.template gemm<P, T>(parameters_.wte),
                 typename v::template matrix<float>(b.logits.data(), 1, config_.vocab),
                 Kokkos::View<const float*, memory_space>());
}

#define KAMP_DECODER_INSTANTIATE_(Space) template class gpt_decoder<Space>;
KAMP_FOR_EACH_EXECUTION_SPACE(KAMP_DECODER_INSTANTIATE_)

}  // namespace kamp
