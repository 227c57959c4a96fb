#include <kamp/kernels/detail/fence.hpp>
#include <kamp/kernels/flat_tensors.hpp>
#include <kamp/kernels/nn.hpp>
#include <kamp/model/network/gpt.hpp>

#include "network/fp8_linears.hpp"
#include "network/gpt_parts.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <utility>

namespace kamp {

namespace {

using detail::flat;
using detail::linear;
using detail::read_only;
template <class M>
using views = detail::views<M>;

dtype resolved(dtype t, bool fp64) { return fp64 ? dtype::fp64 : t; }

}  // namespace

template <class Real, class ES>
struct gpt<Real, ES>::buffers {
  using bytes = typename views<memory_space>::bytes;
  std::array<std::vector<bytes>, std::size_t(activation::count)> all;
  Kokkos::View<double, memory_space> loss{"kamp::gpt::loss"};  ///< the host-array API's loss sum
  static_assert(sizeof(double) == gpt_loss_sum_bytes, "the memory planner counts the loss sum's bytes");
  std::unique_ptr<detail::fp8_linears<ES>> fp8;  ///< amp_fp8's Linear layers
  int layers;
  activation_recompute recompute;

  /// Activation `a` of LayerNorm or layer `index`: its own copy, or the one it shares.
  const bytes& operator()(activation a, std::size_t index = 0) const {
    return all[std::size_t(a)][activation_copy(a, index, layers, recompute)];
  }
  template <class T>
  T* data(activation a, std::size_t copy = 0) const {
    return reinterpret_cast<T*>((*this)(a, copy).data());
  }
};

template <class Real, class ES>
gpt<Real, ES>::gpt(const gpt_config& config, const precision_policy& policy, int batch, const ES& space,
                   activation_recompute recompute)
    : config_(config),
      policy_(policy),
      parameters_((policy.validate(config), config)),
      dtypes_(config, policy, std::is_same_v<Real, double> ? dtype::fp64 : dtype::fp32),
      batch_(batch),
      space_(space),
      recompute_(recompute),
      token_index_(std::size_t(std::max(batch, 1)) * config.context, config.padded_vocab()) {
  if (std::is_same_v<Real, double> && policy_.mode != precision_mode::fp32)
    throw std::invalid_argument("kamp::gpt<double> is the fp64 reference; it runs the fp32 policy only");
  if (batch < 1) throw std::invalid_argument("kamp::gpt: batch must be at least 1, got " + std::to_string(batch));
  grad_at_.assign(table().count(), nullptr);
  at_ = {std::vector<const void*>(table().count()), std::vector<const void*>(table().count())};
  buf_ = std::make_unique<buffers>();
  buf_->layers = config.layers;
  buf_->recompute = recompute;
  const auto layout = activation_layout(config, policy, batch, dtype_of<Real>(), recompute);
  for (std::size_t a = 0; a < layout.size(); ++a)
    for (const std::size_t size : layout[a].bytes) buf_->all[a].emplace_back(std::string(layout[a].label), size);
  // Each block Linear's path, chosen once: FP8 where amp_fp8 keeps an FP8 Linear for it (the
  // layers computing in bf16: fp8_linears decides), else its compute type's GEMM.
  fp8_linear_.assign(std::size_t(detail::fp8_linears<ES>::per_block) * config.layers, false);
  if (!policy_.fp8()) return;
  buf_->fp8 = std::make_unique<detail::fp8_linears<ES>>(config_, policy_, std::size_t(batch) * config.context);
  for (std::size_t i = 0; i < fp8_linear_.size(); ++i) fp8_linear_[i] = buf_->fp8->serves(int(i));
}

template <class Real, class ES>
gpt<Real, ES>::~gpt() = default;

template <class Real, class ES>
void gpt<Real, ES>::bind_weights(weights_ref exact, weights_ref copy) {
  bind_weights({exact, table(), copy});
}

template <class Real, class ES>
void gpt<Real, ES>::bind_weights(weights_ref exact, const tensor_table& exact_layout, weights_ref copy) {
  bind_weights({exact, exact_layout, copy});
}

template <class Real, class ES>
void gpt<Real, ES>::bind_weights(const weight_binding& binding) {
  at_ = detail::bound_addresses("kamp::gpt::bind_weights", config_, policy_, std::is_same_v<Real, double>, binding);
  binding_ = binding;
}

template <class Real, class ES>
Kokkos::View<Real*, typename gpt<Real, ES>::memory_space> gpt<Real, ES>::grads() const {
  if (hooks_ == nullptr && grads_.extent(0) == 0) {
    grads_ = Kokkos::View<Real*, memory_space>("kamp::gpt::grads", table().flat_size());
    for (std::size_t i = 0; i < table().count(); ++i) grad_at_[i] = grads_.data() + table()[i].offset;
  }
  return grads_;
}

template <class Real, class ES>
void gpt<Real, ES>::shard(unit_hooks* hooks) {
  hooks_ = hooks;
  grads_ = {};
  std::fill(grad_at_.begin(), grad_at_.end(), nullptr);
}

template <class Real, class ES>
void gpt<Real, ES>::bind_tensor(std::size_t tensor, const void* exact, const void* copy) {
  at_.exact.at(tensor) = exact;
  at_.copy.at(tensor) = copy;
}

template <class Real, class ES>
dtype gpt<Real, ES>::activation_dtype(const std::string& layer) const {
  const auto names = config_.layer_names();
  const auto it = std::find(names.begin(), names.end(), layer);
  if (it == names.end()) throw std::invalid_argument("kamp::gpt: no layer named '" + layer + "'");
  const std::size_t i = it - names.begin();
  if (i == names.size() - 1) return dtypes_.head;
  return i % 2 == 0 ? dtypes_.attn[i / 2] : dtypes_.mlp[i / 2];
}

// Sizes: the batch B, the context T, the residual stream's width C, the MLP's width M, the
// vocabulary V, H heads of width D. Rows are the B·T positions of a micro-batch.
template <class Real, class ES>
template <class P, class T>
struct gpt<Real, ES>::pass : detail::layer_weights<Real, P, T, ES> {
  using v = views<memory_space>;
  const gpt& model;
  const std::size_t rows, width, hidden, vocab, padded_vocab, context, heads, head_size, batch;
  const std::size_t head_count;  ///< B·H: the attention matrices of a micro-batch
  const float attention_scale;   ///< 1/√D
  const int block;               ///< the block whose ops this pass runs (0 for the head's)
  const layer_part part;

  explicit pass(const gpt& m, int block_index = 0, layer_part layer = layer_part::head)
      : detail::layer_weights<Real, P, T, ES>{m.table(), m.at_, m.space_, (*m.buf_)(activation::bias)},
        model(m),
        rows(std::size_t(m.batch_) * m.config_.context),
        width(m.config_.d_model),
        hidden(m.config_.mlp),
        vocab(m.config_.vocab),
        padded_vocab(m.config_.padded_vocab()),
        context(m.config_.context),
        heads(m.config_.heads),
        head_size(width / heads),
        batch(std::size_t(m.batch_)),
        head_count(std::size_t(m.batch_) * heads),
        attention_scale(float(1.0 / std::sqrt(double(head_size)))),
        block(block_index),
        part(layer) {}

  /// Copy `copy` of activation `a` as an r x c matrix in the layer's compute type T...
  typename v::template matrix<T> compute(activation a, std::size_t copy, std::size_t r, std::size_t c) const {
    return v::template as_matrix<T>((*model.buf_)(a, copy), r, c);
  }
  /// ...or in the type of the exact activations.
  typename v::template matrix<Real> real(activation a, std::size_t copy, std::size_t r, std::size_t c) const {
    return v::template as_matrix<Real>((*model.buf_)(a, copy), r, c);
  }
  /// Part `part` (q, k, v: 0, 1, 2) of rows of `parts`·C columns at `data` (the QKV projection
  /// and its gradient: 3; the merged heads: 1) as (B, H) head matrices (T, D), in place: the
  /// attention GEMMs read and write the Linear layers' rows, with no copy to a head-major
  /// layout and none back.
  template <class U>
  typename v::template heads<U> head_matrices(U* data, std::size_t parts, std::size_t part = 0) const {
    const std::size_t row = parts * width;
    return typename v::template heads<U>(
        data + part * width, Kokkos::LayoutStride(batch, context * row, heads, head_size, context, row, head_size, 1));
  }
  /// The (B, H) (T, T) score or probability matrices at `data`.
  template <class U>
  typename v::template scores<U> score_matrices(U* data) const {
    return typename v::template scores<U>(data, batch, heads, context, context);
  }
  /// Op `op`'s output, recorded for observe() (see gpt::note).
  template <class V>
  void observe(const char* op, bool backward, const V& output, bool residual_stream = false) const {
    model.note(block, part, op, backward, output, residual_stream);
  }

  /// The block's Linear `which`, y = x·W^T + bias, on the path chosen for it at construction:
  /// FP8 (amp_fp8, a bf16 layer) or the GEMM of T. Observed as `op` unless that is null.
  template <class X, class Y>
  void forward_linear(detail::block_linear which, const X& x, const Y& y, const char* op) const {
    const linear_parameters& p = linear_of(which);
    const int i = detail::fp8_linears<ES>::index(block, which);
    if (model.fp8_linear_[i]) {
      if constexpr (std::is_same_v<T, bf16>)
        model.buf_->fp8->forward(model.space_, i, x, this->gemm(p.weight), y, this->bias(p.bias));
    } else {
      detail::linear(model.space_, x, this->gemm(p.weight), y, this->bias(p.bias));
    }
    if (op != nullptr) observe(op, false, y);
  }
  /// The MLP's first Linear and its GELU: fused into the GEMM's epilogue, or after an FP8 GEMM.
  template <class X, class Pre, class Act>
  void forward_linear_gelu(const X& x, const Pre& pre, const Act& act) const {
    const linear_parameters& p = linear_of(detail::block_linear::fc);
    const int i = detail::fp8_linears<ES>::index(block, detail::block_linear::fc);
    if (model.fp8_linear_[i]) {
      if constexpr (std::is_same_v<T, bf16>) {
        model.buf_->fp8->forward(model.space_, i, x, this->gemm(p.weight), pre, this->bias(p.bias));
        detail::gelu_forward_kernel(model.space_, static_cast<const Real*>(pre.data()), act.data(), pre.size());
      }
    } else {
      gemm_bias_gelu(model.space_, op::none, op::transpose, 1.0f, x, this->gemm(p.weight), this->bias(p.bias), pre,
                     act);
    }
    observe("mlp.fc", false, pre);
    observe("mlp.gelu", false, act);
  }
  /// Its backward pass on the same path: dx = dy W, dW += dy^T x (the bias gradient is summed by
  /// the pass that produced dy).
  template <class DY, class X, class DX>
  void backward_linear(detail::block_linear which, const DY& dy, const X& x, const DX& dx) const {
    const linear_parameters& p = linear_of(which);
    const int i = detail::fp8_linears<ES>::index(block, which);
    if (model.fp8_linear_[i]) {
      if constexpr (std::is_same_v<T, bf16>) model.buf_->fp8->backward(model.space_, i, dy, dx, grad_matrix(p.weight));
    } else {
      gemm(model.space_, op::none, op::none, 1.0f, dy, this->gemm(p.weight), 0.0f, dx);
      gemm(model.space_, op::transpose, op::none, 1.0f, dy, x, 1.0f, grad_matrix(p.weight));
    }
  }
  /// Attention scores of every (B, H) head at once, q·k^T/√D, from the QKV rows where the
  /// projection wrote them.
  template <class Rows, class Scores>
  void attention_scores(const Rows& qkv, const Scores& scores) const {
    const T* rows = qkv.data();
    gemm_strided_batched(model.space_, op::none, op::transpose, attention_scale, head_matrices(rows, 3, 0),
                         head_matrices(rows, 3, 1), 0.0f, score_matrices(scores.data()));
    observe("attn.scores", false, scores);
  }
  /// The heads' outputs, probabilities · v, merged in place into rows of C.
  template <class Probs, class Rows, class Out>
  void attention_values(const Probs& probs, const Rows& qkv, const Out& out) const {
    gemm_strided_batched(model.space_, op::none, op::none, 1.0f, score_matrices(probs.data()),
                         head_matrices(qkv.data(), 3, 2), 0.0f, head_matrices(out.data(), 1));
    observe("attn.values", false, out);
  }
  const linear_parameters& linear_of(detail::block_linear which) const {
    const block_parameters& p = model.parameters_.blocks[block];
    switch (which) {
      case detail::block_linear::qkv:
        return p.qkv;
      case detail::block_linear::attn_proj:
        return p.attn_proj;
      case detail::block_linear::fc:
        return p.fc;
      default:
        return p.mlp_proj;
    }
  }

  typename v::template vector<Real> grad(std::size_t i) const {
    return typename v::template vector<Real>(model.grad_at_[i], model.table()[i].size);
  }
  typename v::template matrix<Real> grad_matrix(std::size_t i) const {
    const auto& e = model.table()[i];
    return typename v::template matrix<Real>(model.grad_at_[i], e.shape.at(0), e.shape.at(1));
  }
};

namespace {

// The loss sum in fp64 into a device scalar (a fixed reduction for a given thread count). A free
// function: nvcc places no device lambda in a private member function.
template <class ES, class Losses>
void sum_losses(const ES& space, const Losses& losses, const Kokkos::View<double, typename ES::memory_space>& sum) {
  Kokkos::parallel_reduce(
      "kamp::gpt::loss_sum", Kokkos::RangePolicy<ES>(space, 0, losses.extent(0)),
      KOKKOS_LAMBDA(std::size_t i, double& s) { s += static_cast<double>(losses(i)); }, sum);
}

// The residual stream's gradient in a layer's compute type, the form its backward GEMMs read,
// and the gradient of the bias added to the stream (the sum of its fp32 rows), in one pass.
template <class T, class ES, class Matrix, class Bytes, class DB>
auto in_compute_type_with_bias_grad(const ES& space, const Matrix& x, const Bytes& scratch, const DB& db) {
  using Real = typename Matrix::non_const_value_type;
  using v = views<typename ES::memory_space>;
  if constexpr (std::is_same_v<T, Real>) {
    column_sums(space, x, db);
    return typename v::template matrix<const T>(x);
  } else {
    const auto out = v::template as_matrix<T>(scratch, x.extent(0), x.extent(1));
    cast_and_column_sums(space, read_only(x), out, db);
    return typename v::template matrix<const T>(out);
  }
}

}  // namespace

template <class Real, class ES>
double gpt<Real, ES>::evaluate(const int* tokens, const int* targets) {
  return run_host(tokens, targets, false, 0.0, {});
}

template <class Real, class ES>
double gpt<Real, ES>::forward_backward(const int* tokens, const int* targets, double grad_scale,
                                       const scaler_view& scaler) {
  return run_host(tokens, targets, true, grad_scale, scaler);
}

template <class Real, class ES>
void gpt<Real, ES>::evaluate(const token_view& tokens, const token_view& targets, const loss_view& loss) {
  run(tokens, targets, false, 0.0, {}, loss);
}

template <class Real, class ES>
void gpt<Real, ES>::forward_backward(const token_view& tokens, const token_view& targets, double grad_scale,
                                     const scaler_view& scaler, const loss_view& loss) {
  run(tokens, targets, true, grad_scale, scaler, loss);
}

template <class Real, class ES>
double gpt<Real, ES>::run_host(const int* tokens, const int* targets, bool with_grad, double grad_scale,
                               const scaler_view& scaler) {
  const std::size_t n = std::size_t(batch_) * config_.context;
  for (std::size_t i = 0; i < n; ++i)
    if (tokens[i] < 0 || tokens[i] >= config_.vocab || targets[i] < 0 || targets[i] >= config_.vocab)
      throw std::invalid_argument("kamp::gpt: token " + std::to_string(std::min(tokens[i], targets[i])) +
                                  " at position " + std::to_string(i) + " is outside the vocabulary [0, " +
                                  std::to_string(config_.vocab) + ")");
  const auto& b = *buf_;
  using device_ints = Kokkos::View<int**, Kokkos::LayoutRight, memory_space, Kokkos::MemoryUnmanaged>;
  const device_ints tok(b.template data<int>(activation::tokens), batch_, config_.context);
  const device_ints tgt(b.template data<int>(activation::targets), batch_, config_.context);
  using host_ints = Kokkos::View<const int**, Kokkos::LayoutRight, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>;
  Kokkos::deep_copy(space_, tok, host_ints(tokens, batch_, config_.context));
  Kokkos::deep_copy(space_, tgt, host_ints(targets, batch_, config_.context));
  run(tok, tgt, with_grad, grad_scale, scaler, b.loss);
  double sum = 0;
  Kokkos::deep_copy(space_, sum, b.loss);
  detail::fence(space_, "the host reads the loss");
  return sum / double(n);
}

template <class Real, class ES>
void gpt<Real, ES>::run(const token_view& tokens, const token_view& targets, bool with_grad, double grad_scale,
                        const scaler_view& scaler, const loss_view& loss) {
  if (binding_.exact.data == nullptr && hooks_ == nullptr)
    throw std::logic_error("kamp::gpt: bind_weights() before running the model");
  if (int(tokens.extent(0)) != batch_ || int(tokens.extent(1)) != config_.context ||
      targets.extent(0) != tokens.extent(0) || targets.extent(1) != tokens.extent(1))
    throw std::invalid_argument("kamp::gpt: a batch is " + std::to_string(batch_) + " x " +
                                std::to_string(config_.context) + " tokens and targets");
  const std::size_t n = std::size_t(batch_) * config_.context;
  tokens_ = tokens;
  targets_ = targets;
  if (with_grad) grads();  // allocated at the first backward pass
  if (with_grad)
    token_index_.assign(space_, Kokkos::View<const int*, memory_space, Kokkos::MemoryUnmanaged>(tokens.data(), n));
  visit_dtype<Real>(resolved(policy_.weights(), std::is_same_v<Real, double>), [&](auto p) {
    using P = decltype(p);
    forward<P>(with_grad, grad_scale, scaler);
    if (with_grad) backward<P>();
  });
  if (with_grad && buf_->fp8) buf_->fp8->after_backward(space_);
  sum_losses(space_, views<memory_space>::template as_vector<const Real>((*buf_)(activation::losses), n), loss);
}

// The passes, top to bottom as llm.c's gpt2_forward: one line per op, each layer in its own
// compute type T (visit_dtype picks it from the policy), the residual stream in Real.
template <class Real, class ES>
template <class P>
void gpt<Real, ES>::forward(bool with_grad, double grad_scale, const scaler_view& scaler) {
  const pass<P, Real> ctx(*this);
  if (hooks_) hooks_->before_forward(0);
  embedding_forward(space_, tokens_, ctx.exact_matrix(parameters_.wte), ctx.exact_matrix(parameters_.wpe),
                    ctx.real(activation::residual, 0, ctx.rows, ctx.width));
  for (int l = 0; l < config_.layers; ++l) {
    if (hooks_) hooks_->before_forward(1 + l);
    visit_dtype<Real>(dtypes_.attn[l], [&](auto t) { attention_forward<P, decltype(t)>(l); });
    visit_dtype<Real>(dtypes_.mlp[l], [&](auto t) { mlp_forward<P, decltype(t)>(l); });
  }
  visit_dtype<Real>(dtypes_.head, [&](auto t) { head_forward<P, decltype(t)>(with_grad, grad_scale, scaler); });
}

// LayerNorm i reads residual i. For i > 0 the previous Linear wrote only its branch (its GEMM
// and bias) into residual i; the skip connection, residual i - 1, is added here in the pass that
// normalizes the sum, so the new stream is not read back by a second kernel.
template <class Real, class ES>
template <class P, class T>
void gpt<Real, ES>::norm_forward(int i, const norm_parameters& p, int block, layer_part part, const char* op) {
  const pass<P, T> ctx(*this);
  const auto ln = ctx.compute(activation::ln_out, i, ctx.rows, ctx.width);
  const auto stream = ctx.real(activation::residual, i, ctx.rows, ctx.width);
  const auto mean = flat(ctx.real(activation::ln_mean, i, ctx.rows, 1)),
             rstd = flat(ctx.real(activation::ln_rstd, i, ctx.rows, 1));
  if (i == 0 || (recomputing_ && i % 2 == 0)) {  // the stream is complete: the embedding's, a kept block input
    layernorm_forward(space_, read_only(stream), ctx.exact(p.gain), ctx.exact(p.bias), ln, mean, rstd);
  } else {
    residual_layernorm_forward(space_, read_only(ctx.real(activation::residual, i - 1, ctx.rows, ctx.width)),
                               read_only(stream), ctx.exact(p.gain), ctx.exact(p.bias), stream, ln, mean, rstd);
    // The Linear that ends the previous branch: h<l>.attn.proj before LayerNorm 2l + 1, h<l>.mlp.proj before 2l + 2.
    const bool after_attention = i % 2 == 1;
    note((i - 1) / 2, after_attention ? layer_part::attention : layer_part::mlp,
         after_attention ? "attn.proj" : "mlp.proj", false, stream, true);
  }
  note(block, part, op, false, ln);
}

template <class Real, class ES>
template <class P, class T>
void gpt<Real, ES>::attention_forward(int l) {
  const pass<P, T> ctx(*this, l, layer_part::attention);
  const std::size_t n = ctx.rows, c = ctx.width, scores = ctx.head_count * ctx.context;
  const auto ln = ctx.compute(activation::ln_out, 2 * l, n, c);
  const auto qkv = ctx.compute(activation::qkv_rows, l, n, 3 * c);
  const auto probs = ctx.real(activation::probs, l, scores, ctx.context);
  const auto probs_low = ctx.compute(activation::probs_low, l, scores, ctx.context);
  const auto atty = ctx.compute(activation::attn_out, l, n, c);
  norm_forward<P, T>(2 * l, parameters_.blocks[l].ln1, l, layer_part::attention, "ln1");
  ctx.forward_linear(detail::block_linear::qkv, ln, qkv, "attn.qkv");
  ctx.attention_scores(qkv, probs);
  causal_softmax_forward(space_, probs, probs_low);
  ctx.attention_values(probs_low, qkv, atty);
  // The branch alone: LayerNorm 2l + 1 adds the skip connection and observes the sum.
  ctx.forward_linear(detail::block_linear::attn_proj, atty, ctx.real(activation::residual, 2 * l + 1, n, c), nullptr);
}

template <class Real, class ES>
template <class P, class T>
void gpt<Real, ES>::mlp_forward(int l) {
  const pass<P, T> ctx(*this, l, layer_part::mlp);
  const std::size_t n = ctx.rows, c = ctx.width, m = ctx.hidden;
  const auto fc_act = ctx.compute(activation::fc_act, l, n, m);
  norm_forward<P, T>(2 * l + 1, parameters_.blocks[l].ln2, l, layer_part::mlp, "ln2");
  ctx.forward_linear_gelu(ctx.compute(activation::ln_out, 2 * l + 1, n, c), ctx.real(activation::fc_pre, l, n, m),
                          fc_act);
  if (recomputing_) return;  // the branch's output is block l + 1's kept input, and the backward pass reads fc_act
  ctx.forward_linear(detail::block_linear::mlp_proj, fc_act, ctx.real(activation::residual, 2 * l + 2, n, c), nullptr);
}

template <class Real, class ES>
template <class P, class T>
void gpt<Real, ES>::head_forward(bool with_grad, double grad_scale, const scaler_view& scaler) {
  const pass<P, T> ctx(*this);
  const int last = 2 * config_.layers;
  const std::size_t n = ctx.rows;
  constexpr layer_part head = layer_part::head;
  norm_forward<P, T>(last, parameters_.lnf, 0, head, "lnf");
  // Logits in the head's compute type, as autocast and llm.c keep them; the loss reads them in
  // fp32 and, with a backward pass, overwrites them with their gradient (one buffer, not two).
  // The padded vocabulary's columns are no class: the loss skips them, their gradient is 0.
  const auto logits = ctx.compute(activation::logits, 0, n, ctx.padded_vocab);
  linear(space_, ctx.compute(activation::ln_out, last, n, ctx.width), ctx.gemm(parameters_.wte), logits,
         Kokkos::View<const Real*, memory_space>());
  const auto classes =
      Kokkos::subview(read_only(logits), Kokkos::ALL, std::pair<std::size_t, std::size_t>(0, ctx.vocab));
  note(0, head, "lm_head", false, logits);  // the padded columns are 0: no range and no inf
  const auto losses = flat(ctx.real(activation::losses, 0, n, 1));
  auto dlogits = logits;
  if (!with_grad) dlogits = {};  // the loss alone
  const Kokkos::View<const int*, memory_space, Kokkos::MemoryUnmanaged> targets(targets_.data(), n);
  cross_entropy(space_, classes, targets, losses, dlogits, grad_scale / double(n), scaler);
  note(0, head, "loss", false, losses);
  if (with_grad) note(0, head, "loss", true, dlogits);
}

template <class Real, class ES>
template <class P>
void gpt<Real, ES>::backward() {
  const pass<P, Real> ctx(*this);
  const auto dresid = ctx.real(activation::dresid, 0, ctx.rows, ctx.width);
  Kokkos::deep_copy(space_, dresid, Real(0));
  if (hooks_) hooks_->before_backward(0);
  visit_dtype<Real>(dtypes_.head, [&](auto t) { head_backward<P, decltype(t)>(); });
  for (int l = config_.layers - 1; l >= 0; --l) {
    if (hooks_) hooks_->before_backward(1 + l);
    if (recompute_ == activation_recompute::blocks) recompute_block<P>(l);
    visit_dtype<Real>(dtypes_.mlp[l], [&](auto t) { mlp_backward<P, decltype(t)>(l); });
    visit_dtype<Real>(dtypes_.attn[l], [&](auto t) { attention_backward<P, decltype(t)>(l); });
    if (hooks_) hooks_->after_backward(1 + l);
  }
  embedding_backward(space_, token_index_, config_.context, read_only(dresid), ctx.grad_matrix(parameters_.wte),
                     ctx.grad_matrix(parameters_.wpe));
  if (hooks_) hooks_->after_backward(0);
}

// The same kernels on the same inputs as the forward pass: the activations, and so the
// gradients, are bit for bit those of a run that kept them. LayerNorm 2l reads the kept block
// input, already the sum its forward pass formed; LayerNorm 2l + 1 adds the attention branch
// to it again, in the scratch copy of the stream.
template <class Real, class ES>
template <class P>
void gpt<Real, ES>::recompute_block(int l) {
  // Nothing is observed twice: the sink is off while the block runs again.
  struct again {
    gpt& model;
    std::vector<op_observation>* sink;
    explicit again(gpt& m) : model(m), sink(std::exchange(m.observations_, nullptr)) { m.recomputing_ = true; }
    ~again() {
      model.recomputing_ = false;
      model.observations_ = sink;
    }
  } const scope(*this);
  visit_dtype<Real>(dtypes_.attn[l], [&](auto t) { attention_forward<P, decltype(t)>(l); });
  visit_dtype<Real>(dtypes_.mlp[l], [&](auto t) { mlp_forward<P, decltype(t)>(l); });
}

template <class Real, class ES>
template <class P>
void gpt<Real, ES>::norm_backward(int i, const norm_parameters& p, int block, layer_part part, const char* op) {
  const pass<P, Real> ctx(*this);
  const auto dresid = ctx.real(activation::dresid, 0, ctx.rows, ctx.width);
  layernorm_backward(space_, ctx.real(activation::dln, 0, ctx.rows, ctx.width),
                     read_only(ctx.real(activation::residual, i, ctx.rows, ctx.width)), ctx.exact(p.gain),
                     flat(ctx.real(activation::ln_mean, i, ctx.rows, 1)),
                     flat(ctx.real(activation::ln_rstd, i, ctx.rows, 1)), dresid, ctx.grad(p.gain), ctx.grad(p.bias));
  note(block, part, op, true, dresid);
}

template <class Real, class ES>
template <class P, class T>
void gpt<Real, ES>::head_backward() {
  const pass<P, T> ctx(*this);
  const int last = 2 * config_.layers;
  const std::size_t n = ctx.rows, c = ctx.width;
  const auto dlogits = ctx.compute(activation::logits, 0, n, ctx.padded_vocab);  // overwritten by the loss
  const auto dln = ctx.real(activation::dln, 0, n, c);
  gemm(space_, op::none, op::none, 1.0f, dlogits, ctx.gemm(parameters_.wte), 0.0f, dln);
  note(0, layer_part::head, "lm_head", true, dln);
  gemm(space_, op::transpose, op::none, 1.0f, dlogits, ctx.compute(activation::ln_out, last, n, c), 1.0f,
       ctx.grad_matrix(parameters_.wte));
  norm_backward<P>(last, parameters_.lnf, 0, layer_part::head, "lnf");
}

template <class Real, class ES>
template <class P, class T, class In, class DIn>
void gpt<Real, ES>::residual_branch_backward(const pass<P, T>& ctx, detail::block_linear which, const In& input,
                                             const DIn& d_input) {
  const auto dresid = ctx.real(activation::dresid, 0, ctx.rows, ctx.width);
  const auto dy = in_compute_type_with_bias_grad<T>(space_, dresid, (*buf_)(activation::dresid_low),
                                                    ctx.grad(ctx.linear_of(which).bias));
  ctx.backward_linear(which, dy, input, d_input);
}

template <class Real, class ES>
template <class P, class T>
void gpt<Real, ES>::mlp_backward(int l) {
  const pass<P, T> ctx(*this, l, layer_part::mlp);
  const std::size_t n = ctx.rows, c = ctx.width, m = ctx.hidden;
  const auto dfc_act = ctx.real(activation::dfc_act, 0, n, m);
  const auto dfc_pre = ctx.compute(activation::dfc_pre, 0, n, m);
  const auto dln = ctx.real(activation::dln, 0, n, c);
  residual_branch_backward(ctx, detail::block_linear::mlp_proj, ctx.compute(activation::fc_act, l, n, m), dfc_act);
  ctx.observe("mlp.proj", true, dfc_act);
  gelu_backward_and_bias_grad(space_, read_only(dfc_act), read_only(ctx.real(activation::fc_pre, l, n, m)), dfc_pre,
                              ctx.grad(parameters_.blocks[l].fc.bias));
  ctx.observe("mlp.gelu", true, dfc_pre);
  ctx.backward_linear(detail::block_linear::fc, dfc_pre, ctx.compute(activation::ln_out, 2 * l + 1, n, c), dln);
  ctx.observe("mlp.fc", true, dln);
  norm_backward<P>(2 * l + 1, parameters_.blocks[l].ln2, l, layer_part::mlp, "ln2");
}

template <class Real, class ES>
template <class P, class T>
void gpt<Real, ES>::attention_backward(int l) {
  const pass<P, T> ctx(*this, l, layer_part::attention);
  const std::size_t n = ctx.rows, c = ctx.width, score_rows = ctx.head_count * ctx.context;
  const auto datty = ctx.compute(activation::dattn_out, 0, n, c);
  residual_branch_backward(ctx, detail::block_linear::attn_proj, ctx.compute(activation::attn_out, l, n, c), datty);
  ctx.observe("attn.proj", true, datty);

  const auto dout = ctx.head_matrices(static_cast<const T*>(datty.data()), 1);
  const T* rows = ctx.compute(activation::qkv_rows, l, n, 3 * c).data();
  const auto q = ctx.head_matrices(rows, 3, 0), k = ctx.head_matrices(rows, 3, 1), val = ctx.head_matrices(rows, 3, 2);
  // dq, dk and dv written side by side into the rows the QKV Linear's backward pass reads.
  const auto dqkv_rows = ctx.compute(activation::dqkv_rows, 0, n, 3 * c);
  const auto dq = ctx.head_matrices(dqkv_rows.data(), 3, 0), dk = ctx.head_matrices(dqkv_rows.data(), 3, 1),
             dv = ctx.head_matrices(dqkv_rows.data(), 3, 2);
  const auto probs = ctx.real(activation::probs, l, score_rows, ctx.context);
  const T* probs_low = ctx.compute(activation::probs_low, l, score_rows, ctx.context).data();
  const auto dprobs = ctx.real(activation::dprobs, 0, score_rows, ctx.context);
  const auto dscores = ctx.compute(activation::dscores, 0, score_rows, ctx.context);
  gemm_strided_batched(space_, op::none, op::transpose, 1.0f, dout, val, 0.0f, ctx.score_matrices(dprobs.data()));
  gemm_strided_batched(space_, op::transpose, op::none, 1.0f, ctx.score_matrices(probs_low), dout, 0.0f, dv);
  causal_softmax_backward(space_, probs, dprobs, dscores);
  ctx.observe("attn.scores", true, dscores);
  const auto ds = ctx.score_matrices(static_cast<const T*>(dscores.data()));
  gemm_strided_batched(space_, op::none, op::none, ctx.attention_scale, ds, k, 0.0f, dq);
  gemm_strided_batched(space_, op::transpose, op::none, ctx.attention_scale, ds, q, 0.0f, dk);
  const auto dln = ctx.real(activation::dln, 0, n, c);
  column_sums(space_, read_only(dqkv_rows), ctx.grad(parameters_.blocks[l].qkv.bias));
  ctx.backward_linear(detail::block_linear::qkv, read_only(dqkv_rows), ctx.compute(activation::ln_out, 2 * l, n, c),
                      dln);
  ctx.observe("attn.qkv", true, dln);
  norm_backward<P>(2 * l, parameters_.blocks[l].ln1, l, layer_part::attention, "ln1");
}

template <class Real, class ES>
fp8_scaling_state gpt<Real, ES>::fp8_state() const {
  return buf_->fp8 ? buf_->fp8->state() : fp8_scaling_state{};
}

template <class Real, class ES>
void gpt<Real, ES>::restore_fp8_state(const fp8_scaling_state& s) {
  if (buf_->fp8) return buf_->fp8->restore(s);
  if (!s.scales.empty() || !s.history.empty())
    throw std::invalid_argument(std::string("the state holds FP8 scales, but this run's mode is ") +
                                name(policy_.mode) + ": resume with --mode amp_fp8");
}

template <class Real, class ES>
std::vector<fp8_tensor_report> gpt<Real, ES>::fp8_report() const {
  if (!buf_->fp8) return {};
  std::vector<std::string> names;
  for (int l = 0; l < config_.layers; ++l)
    for (const char* linear : {"attn.qkv", "attn.proj", "mlp.fc", "mlp.proj"})
      names.push_back("h" + std::to_string(l) + "." + linear);
  return buf_->fp8->report(names);
}

template <class Real, class ES>
std::vector<double> gpt<Real, ES>::gemm_input(const std::string& layer) const {
  const auto names = config_.layer_names();
  const auto it = std::find(names.begin(), names.end(), layer);
  if (it == names.end()) throw std::invalid_argument("kamp::gpt::gemm_input: no layer named '" + layer + "'");
  if (recompute_ != activation_recompute::none)
    throw std::logic_error("kamp::gpt::gemm_input: with activation recomputation the layers share one input buffer");
  // names are h0.attn, h0.mlp, h1.attn, ..., lm_head: the LayerNorm feeding each, in order.
  const std::size_t index = it - names.begin(), n = std::size_t(batch_) * config_.context * config_.d_model;
  std::vector<double> out(n);
  visit_dtype<Real>(activation_dtype(layer), [&](auto t) {
    using T = decltype(t);
    const auto host = Kokkos::create_mirror_view_and_copy(
        Kokkos::HostSpace(), views<memory_space>::template as_vector<T>((*buf_)(activation::ln_out, index), n));
    for (std::size_t i = 0; i < n; ++i) out[i] = load_as<double>(host.data() + i);
  });
  return out;
}

template <class Real, class ES>
std::vector<double> gpt<Real, ES>::logits() const {
  const std::size_t rows = std::size_t(batch_) * config_.context, v = config_.vocab, vp = config_.padded_vocab();
  std::vector<double> out(rows * v);
  visit_dtype<Real>(dtypes_.head, [&](auto t) {
    using T = decltype(t);
    const auto host = Kokkos::create_mirror_view_and_copy(
        Kokkos::HostSpace(), views<memory_space>::template as_vector<T>((*buf_)(activation::logits), rows * vp));
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t j = 0; j < v; ++j) out[r * v + j] = load_as<double>(host.data() + r * vp + j);
  });
  return out;
}

template <class Real, class ES>
template <class V>
void gpt<Real, ES>::note(int block, layer_part part, const char* op, bool backward, const V& output,
                         bool residual_stream) const {
  if (observations_ == nullptr) return;  // the training step pays nothing, not even the name
  using T = typename V::non_const_value_type;
  const Kokkos::View<const T*, memory_space, Kokkos::MemoryUnmanaged> x(output.data(), output.size());
  observations_->push_back({part == layer_part::head ? std::string(op) : block_name(block) + "." + op, backward,
                            dtype_of<T>(), measure_range(space_, x), layer_name(block, part), residual_stream});
}

#define KAMP_GPT_INSTANTIATE_(Space) \
  template class gpt<float, Space>;  \
  template class gpt<double, Space>;
KAMP_FOR_EACH_EXECUTION_SPACE(KAMP_GPT_INSTANTIATE_)

}  // namespace kamp
