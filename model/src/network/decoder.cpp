#include <kamp/kernels/nn.hpp>
#include <kamp/model/network/decoder.hpp>

#include "network/gpt_parts.hpp"

#include <cmath>
#include <stdexcept>

namespace kamp {

namespace {
using detail::flat;
using detail::read_only;
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
        logits("kamp::decoder::logits", c.padded_vocab()),
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
    throw std::invalid_argument("kamp::gpt_decoder: token " + std::to_string(token) +
                                " is outside the vocabulary [0, " + std::to_string(config_.vocab) + ")");
  if (position_ >= config_.context)
    throw std::length_error("kamp::gpt_decoder: the cache holds " + std::to_string(config_.context) +
                            " positions (the context) and is full: reset() it");
  Kokkos::deep_copy(space_, buf_->token, token);
  visit_dtype<float>(policy_.weights(), [&](auto p) { forward<decltype(p)>(); });
  ++position_;
  return Kokkos::subview(buf_->logits, std::pair<std::size_t, std::size_t>(0, config_.vocab));  // no padding
}

template <class ES>
template <class P, class T>
struct gpt_decoder<ES>::step : detail::layer_weights<float, P, T, ES> {
  using v = views<memory_space>;
  buffers& b;
  const std::size_t width, hidden, vocab, heads, head_size, capacity;
  const float attention_scale;  ///< 1/√(head size)

  explicit step(const gpt_decoder& d)
      : detail::layer_weights<float, P, T, ES>{d.parameters_.table, d.at_, d.space_, d.buf_->bias},
        b(*d.buf_),
        width(d.config_.d_model),
        hidden(d.config_.mlp),
        vocab(d.config_.vocab),
        heads(d.config_.heads),
        head_size(width / heads),
        capacity(d.config_.context),
        attention_scale(float(1.0 / std::sqrt(double(head_size)))) {}

  /// A byte buffer as an r x c matrix in the layer's compute type, an fp32 buffer as one row.
  typename v::template matrix<T> compute(const typename v::bytes& buffer, std::size_t r, std::size_t c) const {
    return v::template as_matrix<T>(buffer, r, c);
  }
  typename v::template matrix<float> row(const Kokkos::View<float*, memory_space>& buffer) const {
    return typename v::template matrix<float>(buffer.data(), 1, buffer.extent(0));
  }
  /// A layer's keys or values: (heads, capacity, head size) in T.
  typename v::template batched<T> cache(const typename v::bytes& buffer) const {
    return v::as_batched(reinterpret_cast<T*>(buffer.data()), heads, capacity, head_size);
  }
};

template <class ES>
template <class P>
void gpt_decoder<ES>::forward() {
  const step<P, float> ctx(*this);
  embedding_forward(space_, Kokkos::View<const int**, Kokkos::LayoutRight, memory_space>(buf_->token),
                    ctx.exact_matrix(parameters_.wte), ctx.exact_matrix(parameters_.wpe), ctx.row(buf_->residual[0]),
                    position_);
  for (int l = 0; l < config_.layers; ++l) {
    visit_dtype<float>(dtypes_.attn[l], [&](auto t) { attention<P, decltype(t)>(l); });
    visit_dtype<float>(dtypes_.mlp[l], [&](auto t) { mlp<P, decltype(t)>(l); });
  }
  visit_dtype<float>(dtypes_.head, [&](auto t) { head<P, decltype(t)>(); });
}

// The stream alternates between the two residual rows. After the embedding, `at` holds the
// stream; after a Linear it holds that branch alone, and the skip connection (the other row)
// is added in the LayerNorm's pass, as the training model does (gpt::norm_forward).
template <class ES>
template <class P, class T>
void gpt_decoder<ES>::norm(const norm_parameters& p, int at, bool after_branch) {
  const step<P, T> ctx(*this);
  auto& b = *buf_;
  const auto stream = ctx.row(b.residual[at]);
  const auto ln = ctx.compute(b.ln_out, 1, ctx.width);
  if (after_branch)
    residual_layernorm_forward(space_, read_only(ctx.row(b.residual[1 - at])), read_only(stream), ctx.exact(p.gain),
                               ctx.exact(p.bias), stream, ln, b.ln_mean, b.ln_rstd);
  else
    layernorm_forward(space_, read_only(stream), ctx.exact(p.gain), ctx.exact(p.bias), ln, b.ln_mean, b.ln_rstd);
}

template <class ES>
template <class P, class T>
void gpt_decoder<ES>::attention(int l) {
  const step<P, T> ctx(*this);
  auto& b = *buf_;
  const block_parameters& p = parameters_.blocks[l];
  const std::size_t c = ctx.width;
  norm<P, T>(p.ln1, 0, l > 0);
  const auto qkv = ctx.compute(b.qkv, 1, 3 * c);
  detail::linear(space_, ctx.compute(b.ln_out, 1, c), ctx.gemm(p.qkv.weight), qkv, ctx.bias(p.qkv.bias));
  const auto keys = ctx.cache(b.keys[l]), values = ctx.cache(b.values[l]);
  const auto row = read_only(flat(qkv));
  kv_cache_append(space_, row, keys, values, position_);
  attention_decode(space_, row, keys, values, position_, ctx.attention_scale,
                   typename views<memory_space>::template matrix<float>(b.scores.data(), ctx.heads, ctx.capacity),
                   ctx.compute(b.probs, ctx.heads, ctx.capacity), flat(ctx.compute(b.attn_out, 1, c)));
  branch<P, T>(p.attn_proj, b.attn_out, c, 1);
}

template <class ES>
template <class P, class T>
void gpt_decoder<ES>::mlp(int l) {
  const step<P, T> ctx(*this);
  auto& b = *buf_;
  const block_parameters& p = parameters_.blocks[l];
  norm<P, T>(p.ln2, 1, true);
  gemm_bias_gelu(space_, op::none, op::transpose, 1.0f, ctx.compute(b.ln_out, 1, ctx.width), ctx.gemm(p.fc.weight),
                 ctx.bias(p.fc.bias), ctx.row(b.fc_pre), ctx.compute(b.fc_act, 1, ctx.hidden));
  branch<P, T>(p.mlp_proj, b.fc_act, ctx.hidden, 0);
}

template <class ES>
template <class P, class T>
void gpt_decoder<ES>::branch(const linear_parameters& p, const Kokkos::View<char*, memory_space>& input, std::size_t n,
                             int to) {
  const step<P, T> ctx(*this);
  auto& b = *buf_;
  detail::linear(space_, read_only(ctx.compute(input, 1, n)), ctx.gemm(p.weight), ctx.row(b.residual[to]),
                 ctx.bias(p.bias));
}

template <class ES>
template <class P, class T>
void gpt_decoder<ES>::head() {
  const step<P, T> ctx(*this);
  auto& b = *buf_;
  norm<P, T>(parameters_.lnf, 0, true);
  detail::linear(space_, ctx.compute(b.ln_out, 1, ctx.width), ctx.gemm(parameters_.wte), ctx.row(b.logits),
                 Kokkos::View<const float*, memory_space>());
}

#define KAMP_DECODER_INSTANTIATE_(Space) template class gpt_decoder<Space>;
KAMP_FOR_EACH_EXECUTION_SPACE(KAMP_DECODER_INSTANTIATE_)

}  // namespace kamp
