#include <kamp/kernels/flat_tensors.hpp>
#include <kamp/kernels/nn.hpp>
#include <kamp/model/network/gpt.hpp>

#include "network/gpt_parts.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace kamp {

namespace {

using detail::linear;
using detail::residual_linear;
template <class M>
using views = detail::views<M>;

dtype resolved(dtype t, bool fp64) { return fp64 ? dtype::fp64 : t; }

// The layer names the policy and the doctor use: h<l>.attn, h<l>.mlp, lm_head.
std::string block_name(int l) { return "h" + std::to_string(l) + "."; }

}  // namespace

template <class Real, class ES>
struct gpt<Real, ES>::buffers {
  using bytes = typename views<memory_space>::bytes;
  std::array<std::vector<bytes>, std::size_t(activation::count)> all;
  Kokkos::View<double, memory_space> loss{"kamp::gpt::loss"};  ///< the host-array API's loss sum

  const bytes& operator()(activation a, std::size_t copy = 0) const { return all[std::size_t(a)][copy]; }
  template <class T>
  T* data(activation a, std::size_t copy = 0) const {
    return reinterpret_cast<T*>((*this)(a, copy).data());
  }
};

template <class Real, class ES>
gpt<Real, ES>::gpt(const gpt_config& config, const precision_policy& policy, int batch, const ES& space)
    : config_(config),
      policy_(policy),
      parameters_((policy.validate(config), config)),
      dtypes_(config, policy, std::is_same_v<Real, double> ? dtype::fp64 : dtype::fp32),
      batch_(batch),
      space_(space),
      token_index_(std::size_t(std::max(batch, 1)) * config.context, config.vocab) {
  if (std::is_same_v<Real, double> && policy_.mode != precision_mode::fp32)
    throw std::invalid_argument("kamp::gpt<double> is the fp64 reference; it runs the fp32 policy only");
  if (batch < 1) throw std::invalid_argument("kamp::gpt: batch must be at least 1, got " + std::to_string(batch));
  grad_at_.assign(table().count(), nullptr);
  at_ = {std::vector<const void*>(table().count()), std::vector<const void*>(table().count())};
  buf_ = std::make_unique<buffers>();
  const auto layout = activation_layout(config, policy, batch, dtype_of<Real>());
  for (std::size_t a = 0; a < layout.size(); ++a)
    for (const std::size_t size : layout[a].bytes) buf_->all[a].emplace_back(std::string(layout[a].label), size);
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

/// The parameters as typed views (detail::weight_reader) and the gradients.
template <class Real, class ES>
struct gpt<Real, ES>::weights : detail::weight_reader<Real, memory_space> {
  using v = views<memory_space>;
  const gpt& model;

  explicit weights(const gpt& m) : detail::weight_reader<Real, memory_space>{m.table(), m.at_}, model(m) {}

  typename v::template vector<Real> grad(std::size_t i) const {
    using view = typename v::template vector<Real>;
    return view(model.grad_at_[i], model.table()[i].size);
  }
  typename v::template matrix<Real> grad_matrix(std::size_t i) const {
    const auto& e = model.table()[i];
    using view = typename v::template matrix<Real>;
    return view(model.grad_at_[i], e.shape.at(0), e.shape.at(1));
  }
  template <class P>
  typename v::template vector<const Real> bias(std::size_t i) const {
    using reader = detail::weight_reader<Real, memory_space>;
    return reader::template bias<P>(i, model.space_, (*model.buf_)(activation::bias));
  }
};

namespace {

// Its backward pass: dA = dY W, dW += dY^T A, db += Σ rows of `bias_source` (dY itself, or for
// a residual branch the fp32 stream gradient dY was rounded from).
template <class ES, class DY, class W, class A, class DA, class DW, class S, class DB>
void linear_backward(const ES& space, const DY& dy, const W& w, const A& a, const DA& da, const DW& dw,
                     const S& bias_source, const DB& db) {
  gemm(space, op::none, op::none, 1.0f, dy, w, 0.0f, da);
  gemm(space, op::transpose, op::none, 1.0f, dy, a, 1.0f, dw);
  column_sums(space, bias_source, db);
}

// The loss sum in fp64 into a device scalar (a fixed reduction for a given thread count). A free
// function: nvcc places no device lambda in a private member function.
template <class ES, class Losses>
void sum_losses(const ES& space, const Losses& losses, const Kokkos::View<double, typename ES::memory_space>& sum) {
  Kokkos::parallel_reduce(
      "kamp::gpt::loss_sum", Kokkos::RangePolicy<ES>(space, 0, losses.extent(0)),
      KOKKOS_LAMBDA(std::size_t i, double& s) { s += static_cast<double>(losses(i)); }, sum);
}

// The residual stream's gradient in a layer's compute type, the form its backward GEMMs read.
template <class T, class ES, class Matrix, class Bytes>
auto in_compute_type(const ES& space, const Matrix& x, const Bytes& scratch) {
  using Real = typename Matrix::non_const_value_type;
  using v = views<typename ES::memory_space>;
  if constexpr (std::is_same_v<T, Real>) {
    return typename v::template matrix<const T>(x);
  } else {
    const auto out = v::template as_matrix<T>(scratch, x.extent(0), x.extent(1));
    const std::size_t n = x.extent(0) * x.extent(1);
    cast(space, typename v::template vector<T>(out.data(), n), typename v::template vector<const Real>(x.data(), n),
         rounding_options{}, Kokkos::View<std::size_t, typename ES::memory_space>());
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
  space_.fence();
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
  sum_losses(space_, views<memory_space>::template as_vector<const Real>((*buf_)(activation::losses), n), loss);
}

template <class Real, class ES>
template <class P>
void gpt<Real, ES>::forward(bool with_grad, double grad_scale, const scaler_view& scaler) {
  using v = views<memory_space>;
  const std::size_t n = std::size_t(batch_) * config_.context;
  const weights w{*this};
  const auto& b = *buf_;
  const auto& e = parameters_;
  const auto& wte = table()[e.wte];
  const auto& wpe = table()[e.wpe];
  if (hooks_) hooks_->before_forward(0);
  embedding_forward(space_, tokens_,
                    typename v::template matrix<const P>(w.template exact<P>(e.wte).data(), wte.shape[0], wte.shape[1]),
                    typename v::template matrix<const P>(w.template exact<P>(e.wpe).data(), wpe.shape[0], wpe.shape[1]),
                    v::template as_matrix<Real>(b(activation::residual, 0), n, config_.d_model));
  for (int l = 0; l < config_.layers; ++l) {
    if (hooks_) hooks_->before_forward(1 + l);
    visit_dtype<Real>(dtypes_.attn[l], [&](auto t) { attention_forward<P, decltype(t)>(l); });
    visit_dtype<Real>(dtypes_.mlp[l], [&](auto t) { mlp_forward<P, decltype(t)>(l); });
  }
  visit_dtype<Real>(dtypes_.head, [&](auto t) { head_forward<P, decltype(t)>(with_grad, grad_scale, scaler); });
}

template <class Real, class ES>
template <class P, class T>
void gpt<Real, ES>::norm_forward(int i, const norm_parameters& p, int layer, const char* op) {
  using v = views<memory_space>;
  const auto& b = *buf_;
  const weights w{*this};
  const std::size_t n = std::size_t(batch_) * config_.context, c = config_.d_model;
  const auto ln = v::template as_matrix<T>(b(activation::ln_out, i), n, c);
  layernorm_forward(space_, v::template as_matrix<const Real>(b(activation::residual, i), n, c),
                    w.template exact<P>(p.gain), w.template exact<P>(p.bias), ln,
                    v::template as_vector<Real>(b(activation::ln_mean, i), n),
                    v::template as_vector<Real>(b(activation::ln_rstd, i), n));
  note(layer, op, false, ln.data(), n * c);
}

template <class Real, class ES>
template <class P>
void gpt<Real, ES>::norm_backward(int i, const norm_parameters& p, int layer, const char* op) {
  using v = views<memory_space>;
  const auto& b = *buf_;
  const weights w{*this};
  const std::size_t n = std::size_t(batch_) * config_.context, c = config_.d_model;
  const auto dresid = v::template as_matrix<Real>(b(activation::dresid), n, c);
  layernorm_backward(space_, v::template as_matrix<Real>(b(activation::dln), n, c),
                     v::template as_matrix<const Real>(b(activation::residual, i), n, c), w.template exact<P>(p.gain),
                     v::template as_vector<Real>(b(activation::ln_mean, i), n),
                     v::template as_vector<Real>(b(activation::ln_rstd, i), n), dresid, w.grad(p.gain), w.grad(p.bias));
  note(layer, op, true, dresid.data(), n * c);
}

template <class Real, class ES>
template <class P, class T>
void gpt<Real, ES>::attention_forward(int l) {
  using v = views<memory_space>;
  const auto& b = *buf_;
  const auto& prm = parameters_.blocks[l];
  const weights w{*this};
  const int batch = batch_, t = config_.context, c = config_.d_model, heads = config_.heads, hd = c / heads;
  const std::size_t n = std::size_t(batch) * t, bh = std::size_t(batch) * heads, rows = bh * t;
  const auto x = v::template as_matrix<const Real>(b(activation::residual, 2 * l), n, c);
  norm_forward<P, T>(2 * l, prm.ln1, l, "ln1");
  const auto ln = v::template as_matrix<T>(b(activation::ln_out, 2 * l), n, c);
  const auto qkv = v::template as_matrix<T>(b(activation::qkv_rows), n, 3 * c);
  linear(space_, ln, w.template gemm<P, T>(prm.qkv.weight), qkv, w.template bias<P>(prm.qkv.bias));
  note(l, "attn.qkv", false, qkv.data(), 3 * n * c);

  // q, k and v as 3 blocks of (batch x heads) contiguous (T, D) matrices: one GEMM each.
  T* qkv_heads = b.template data<T>(activation::qkv_heads, l);
  split_heads(space_, typename v::template matrix<const T>(qkv), batch, heads, 3,
              typename v::template vector<T>(qkv_heads, 3 * n * c));
  const auto q = v::as_batched(qkv_heads, bh, t, hd), k = v::as_batched(qkv_heads + n * c, bh, t, hd),
             val = v::as_batched(qkv_heads + 2 * n * c, bh, t, hd);
  const float alpha = float(1.0 / std::sqrt(double(hd)));
  Real* probs = b.template data<Real>(activation::probs, l);
  T* probs_low = b.template data<T>(activation::probs_low, l);
  gemm_strided_batched(space_, op::none, op::transpose, alpha, q, k, 0.0f, v::as_batched(probs, bh, t, t));
  note(l, "attn.scores", false, probs, rows * t);
  causal_softmax_forward(space_, typename v::template matrix<Real>(probs, rows, t),
                         typename v::template matrix<T>(probs_low, rows, t));
  T* y = b.template data<T>(activation::heads_out);
  gemm_strided_batched(space_, op::none, op::none, 1.0f, v::as_batched(probs_low, bh, t, t), val, 0.0f,
                       v::as_batched(y, bh, t, hd));
  const auto atty = v::template as_matrix<T>(b(activation::attn_out, l), n, c);
  merge_heads(space_, typename v::template vector<const T>(y, n * c), batch, heads, 1, atty);
  note(l, "attn.values", false, atty.data(), n * c);

  const auto out = v::template as_matrix<Real>(b(activation::residual, 2 * l + 1), n, c);
  residual_linear(space_, atty, w.template gemm<P, T>(prm.attn_proj.weight), w.template bias<P>(prm.attn_proj.bias),
                  x, out);
  note(l, "attn.proj", false, out.data(), n * c);
}

template <class Real, class ES>
template <class P, class T>
void gpt<Real, ES>::mlp_forward(int l) {
  using v = views<memory_space>;
  const auto& b = *buf_;
  const auto& prm = parameters_.blocks[l];
  const weights w{*this};
  const std::size_t n = std::size_t(batch_) * config_.context, c = config_.d_model, m = config_.mlp;
  const auto x = v::template as_matrix<const Real>(b(activation::residual, 2 * l + 1), n, c);
  norm_forward<P, T>(2 * l + 1, prm.ln2, l, "ln2");
  const auto ln = v::template as_matrix<T>(b(activation::ln_out, 2 * l + 1), n, c);
  const auto fc_pre = v::template as_matrix<Real>(b(activation::fc_pre, l), n, m);
  linear(space_, ln, w.template gemm<P, T>(prm.fc.weight), fc_pre, w.template bias<P>(prm.fc.bias));
  note(l, "mlp.fc", false, fc_pre.data(), n * m);
  const auto fc_act = v::template as_matrix<T>(b(activation::fc_act, l), n, m);
  gelu_forward(space_, v::template as_vector<const Real>(b(activation::fc_pre, l), n * m),
               v::template as_vector<T>(b(activation::fc_act, l), n * m));
  note(l, "mlp.gelu", false, fc_act.data(), n * m);
  const auto out = v::template as_matrix<Real>(b(activation::residual, 2 * l + 2), n, c);
  residual_linear(space_, fc_act, w.template gemm<P, T>(prm.mlp_proj.weight), w.template bias<P>(prm.mlp_proj.bias),
                  x, out);
  note(l, "mlp.proj", false, out.data(), n * c);
}

template <class Real, class ES>
template <class P, class T>
void gpt<Real, ES>::head_forward(bool with_grad, double grad_scale, const scaler_view& scaler) {
  using v = views<memory_space>;
  const auto& b = *buf_;
  const weights w{*this};
  const int last = 2 * config_.layers;
  const std::size_t n = std::size_t(batch_) * config_.context, c = config_.d_model, vocab = config_.vocab;
  norm_forward<P, T>(last, parameters_.lnf, -1, "lnf");
  const auto ln = v::template as_matrix<T>(b(activation::ln_out, last), n, c);
  const auto logits = v::template as_matrix<Real>(b(activation::logits), n, vocab);
  linear(space_, ln, w.template gemm<P, T>(parameters_.wte), logits, Kokkos::View<const Real*, memory_space>());
  note(-1, "lm_head", false, logits.data(), n * vocab);
  const Kokkos::View<const int*, memory_space, Kokkos::MemoryUnmanaged> targets(targets_.data(), n);
  cross_entropy(space_, typename v::template matrix<const Real>(logits), targets,
                v::template as_vector<Real>(b(activation::losses), n),
                with_grad ? v::template as_matrix<T>(b(activation::dlogits), n, vocab)
                          : typename v::template matrix<T>(),
                grad_scale / double(n), scaler);
  note(-1, "loss", false, b.template data<Real>(activation::losses), n);
  if (with_grad) note(-1, "loss", true, b.template data<T>(activation::dlogits), n * vocab);
}

template <class Real, class ES>
template <class P>
void gpt<Real, ES>::backward() {
  using v = views<memory_space>;
  const std::size_t n = std::size_t(batch_) * config_.context;
  const auto dresid = v::template as_matrix<Real>((*buf_)(activation::dresid), n, config_.d_model);
  Kokkos::deep_copy(space_, dresid, Real(0));
  if (hooks_) hooks_->before_backward(0);
  visit_dtype<Real>(dtypes_.head, [&](auto t) { head_backward<P, decltype(t)>(); });
  for (int l = config_.layers - 1; l >= 0; --l) {
    if (hooks_) hooks_->before_backward(1 + l);
    visit_dtype<Real>(dtypes_.mlp[l], [&](auto t) { mlp_backward<P, decltype(t)>(l); });
    visit_dtype<Real>(dtypes_.attn[l], [&](auto t) { attention_backward<P, decltype(t)>(l); });
    if (hooks_) hooks_->after_backward(1 + l);
  }
  const weights w{*this};
  embedding_backward(space_, token_index_, config_.context, typename v::template matrix<const Real>(dresid),
                     w.grad_matrix(parameters_.wte), w.grad_matrix(parameters_.wpe));
  if (hooks_) hooks_->after_backward(0);
}

template <class Real, class ES>
template <class P, class T>
void gpt<Real, ES>::head_backward() {
  using v = views<memory_space>;
  const auto& b = *buf_;
  const weights w{*this};
  const int last = 2 * config_.layers;
  const std::size_t n = std::size_t(batch_) * config_.context, c = config_.d_model, vocab = config_.vocab;
  const auto dlogits = v::template as_matrix<T>(b(activation::dlogits), n, vocab);
  const auto dln = v::template as_matrix<Real>(b(activation::dln), n, c);
  gemm(space_, op::none, op::none, 1.0f, dlogits, w.template gemm<P, T>(parameters_.wte), 0.0f, dln);
  note(-1, "lm_head", true, dln.data(), n * c);
  gemm(space_, op::transpose, op::none, 1.0f, dlogits, v::template as_matrix<T>(b(activation::ln_out, last), n, c),
       1.0f, w.grad_matrix(parameters_.wte));
  norm_backward<P>(last, parameters_.lnf, -1, "lnf");
}

template <class Real, class ES>
template <class P, class T>
void gpt<Real, ES>::mlp_backward(int l) {
  using v = views<memory_space>;
  const auto& b = *buf_;
  const auto& prm = parameters_.blocks[l];
  const weights w{*this};
  const std::size_t n = std::size_t(batch_) * config_.context, c = config_.d_model, m = config_.mlp;
  const auto dresid = v::template as_matrix<Real>(b(activation::dresid), n, c);
  const auto dy = in_compute_type<T>(space_, dresid, b(activation::dresid_low));
  const auto dfc_act = v::template as_matrix<Real>(b(activation::dfc_act), n, m);
  linear_backward(space_, dy, w.template gemm<P, T>(prm.mlp_proj.weight),
                  v::template as_matrix<T>(b(activation::fc_act, l), n, m), dfc_act,
                  w.grad_matrix(prm.mlp_proj.weight), dresid, w.grad(prm.mlp_proj.bias));
  note(l, "mlp.proj", true, dfc_act.data(), n * m);
  const auto dfc_pre = v::template as_matrix<T>(b(activation::dfc_pre), n, m);
  gelu_backward(space_, v::template as_vector<const Real>(b(activation::dfc_act), n * m),
                v::template as_vector<const Real>(b(activation::fc_pre, l), n * m),
                v::template as_vector<T>(b(activation::dfc_pre), n * m));
  note(l, "mlp.gelu", true, dfc_pre.data(), n * m);
  const auto dln = v::template as_matrix<Real>(b(activation::dln), n, c);
  linear_backward(space_, dfc_pre, w.template gemm<P, T>(prm.fc.weight),
                  v::template as_matrix<T>(b(activation::ln_out, 2 * l + 1), n, c), dln, w.grad_matrix(prm.fc.weight),
                  dfc_pre, w.grad(prm.fc.bias));
  note(l, "mlp.fc", true, dln.data(), n * c);
  norm_backward<P>(2 * l + 1, prm.ln2, l, "ln2");
}

template <class Real, class ES>
template <class P, class T>
void gpt<Real, ES>::attention_backward(int l) {
  using v = views<memory_space>;
  const auto& b = *buf_;
  const auto& prm = parameters_.blocks[l];
  const weights w{*this};
  const int batch = batch_, t = config_.context, c = config_.d_model, heads = config_.heads, hd = c / heads;
  const std::size_t n = std::size_t(batch) * t, bh = std::size_t(batch) * heads, rows = bh * t;
  const auto dresid = v::template as_matrix<Real>(b(activation::dresid), n, c);
  const auto dy = in_compute_type<T>(space_, dresid, b(activation::dresid_low));
  const auto datty = v::template as_matrix<T>(b(activation::dattn_out), n, c);
  linear_backward(space_, dy, w.template gemm<P, T>(prm.attn_proj.weight),
                  v::template as_matrix<T>(b(activation::attn_out, l), n, c), datty,
                  w.grad_matrix(prm.attn_proj.weight), dresid, w.grad(prm.attn_proj.bias));
  note(l, "attn.proj", true, datty.data(), n * c);

  const float alpha = float(1.0 / std::sqrt(double(hd)));
  T* dheads = b.template data<T>(activation::dheads);
  split_heads(space_, typename v::template matrix<const T>(datty), batch, heads, 1,
              typename v::template vector<T>(dheads, n * c));
  const auto dout = v::as_batched(dheads, bh, t, hd);
  const T* qkv_heads = b.template data<T>(activation::qkv_heads, l);
  const auto q = v::as_batched(qkv_heads, bh, t, hd), k = v::as_batched(qkv_heads + n * c, bh, t, hd),
             val = v::as_batched(qkv_heads + 2 * n * c, bh, t, hd);
  T* dqkv = b.template data<T>(activation::dqkv_heads);
  const auto dq = v::as_batched(dqkv, bh, t, hd), dk = v::as_batched(dqkv + n * c, bh, t, hd),
             dv = v::as_batched(dqkv + 2 * n * c, bh, t, hd);
  Real* probs = b.template data<Real>(activation::probs, l);
  const T* probs_low = b.template data<T>(activation::probs_low, l);
  Real* dprobs = b.template data<Real>(activation::dprobs);
  T* dscores = b.template data<T>(activation::dscores);
  gemm_strided_batched(space_, op::none, op::transpose, 1.0f, dout, val, 0.0f, v::as_batched(dprobs, bh, t, t));
  gemm_strided_batched(space_, op::transpose, op::none, 1.0f, v::as_batched(probs_low, bh, t, t), dout, 0.0f, dv);
  causal_softmax_backward(space_, typename v::template matrix<Real>(probs, rows, t),
                          typename v::template matrix<Real>(dprobs, rows, t),
                          typename v::template matrix<T>(dscores, rows, t));
  note(l, "attn.scores", true, dscores, rows * t);
  const auto ds = v::as_batched(static_cast<const T*>(dscores), bh, t, t);
  gemm_strided_batched(space_, op::none, op::none, alpha, ds, k, 0.0f, dq);
  gemm_strided_batched(space_, op::transpose, op::none, alpha, ds, q, 0.0f, dk);
  const auto dqkv_rows = v::template as_matrix<T>(b(activation::dqkv_rows), n, 3 * c);
  merge_heads(space_, typename v::template vector<const T>(dqkv, 3 * n * c), batch, heads, 3, dqkv_rows);
  const auto dln = v::template as_matrix<Real>(b(activation::dln), n, c);
  linear_backward(space_, typename v::template matrix<const T>(dqkv_rows), w.template gemm<P, T>(prm.qkv.weight),
                  v::template as_matrix<T>(b(activation::ln_out, 2 * l), n, c), dln, w.grad_matrix(prm.qkv.weight),
                  dqkv_rows, w.grad(prm.qkv.bias));
  note(l, "attn.qkv", true, dln.data(), n * c);
  norm_backward<P>(2 * l, prm.ln1, l, "ln1");
}

template <class Real, class ES>
std::vector<double> gpt<Real, ES>::gemm_input(const std::string& layer) const {
  const auto names = config_.layer_names();
  const auto it = std::find(names.begin(), names.end(), layer);
  if (it == names.end()) throw std::invalid_argument("kamp::gpt::gemm_input: no layer named '" + layer + "'");
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
  const std::size_t n = std::size_t(batch_) * config_.context * config_.vocab;
  const auto host = Kokkos::create_mirror_view_and_copy(
      Kokkos::HostSpace(), views<memory_space>::template as_vector<Real>((*buf_)(activation::logits), n));
  return std::vector<double>(host.data(), host.data() + n);
}

template <class Real, class ES>
template <class T>
void gpt<Real, ES>::note(int layer, const char* op, bool backward, const T* data, std::size_t n) {
  if (observations_ == nullptr) return;  // the training step pays nothing, not even the name
  const Kokkos::View<const T*, memory_space, Kokkos::MemoryUnmanaged> x(data, n);
  observations_->push_back(
      {(layer >= 0 ? block_name(layer) : std::string()) + op, backward, dtype_of<T>(), measure_range(space_, x)});
}

#define KAMP_GPT_INSTANTIATE_(Space) \
  template class gpt<float, Space>;  \
  template class gpt<double, Space>;
KAMP_FOR_EACH_EXECUTION_SPACE(KAMP_GPT_INSTANTIATE_)

}  // namespace kamp
