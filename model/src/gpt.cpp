#include <kamp/kernels/cast.hpp>
#include <kamp/kernels/flat_tensors.hpp>
#include <kamp/kernels/gemm.hpp>
#include <kamp/kernels/nn.hpp>
#include <kamp/model/gpt.hpp>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace kamp {

namespace {

using memory_space = Kokkos::DefaultExecutionSpace::memory_space;
template <class T>
using matrix = Kokkos::View<T**, Kokkos::LayoutRight, memory_space, Kokkos::MemoryUnmanaged>;
template <class T>
using tensor3 = Kokkos::View<T***, Kokkos::LayoutRight, memory_space, Kokkos::MemoryUnmanaged>;
template <class T>
using vector = Kokkos::View<T*, memory_space, Kokkos::MemoryUnmanaged>;
using bytes = Kokkos::View<char*, memory_space>;

// Activations whose type depends on the layer's compute dtype live in byte buffers sized for
// the widest type the model may use (Real) and are viewed with the type of the moment.
template <class T>
matrix<T> as_matrix(const bytes& b, std::size_t rows, std::size_t cols) {
  return matrix<T>(reinterpret_cast<T*>(b.data()), rows, cols);
}
template <class T>
vector<T> as_vector(const bytes& b, std::size_t n) {
  return vector<T>(reinterpret_cast<T*>(b.data()), n);
}
// Columns [first, first + width) of each row of an (B, T, W) activation: one attention head.
template <class T>
auto head(const matrix<T>& m, int batch, int first, int width) {
  const tensor3<T> t(m.data(), batch, m.extent(0) / batch, m.extent(1));
  return Kokkos::subview(t, Kokkos::ALL, Kokkos::ALL, Kokkos::make_pair(first, first + width));
}
// Head h of (B, H, T, T) scores or probabilities.
template <class T>
auto head_scores(T* data, int batch, int heads, int h, int t) {
  const Kokkos::View<T****, Kokkos::LayoutRight, memory_space, Kokkos::MemoryUnmanaged> s(data, batch, heads, t, t);
  return Kokkos::subview(s, Kokkos::ALL, h, Kokkos::ALL, Kokkos::ALL);
}

std::string layer_prefix(int l) { return "h" + std::to_string(l) + "."; }

}  // namespace

template <class Real>
struct gpt<Real>::buffers {
  // Forward activations, one set per layer (the backward pass reads them).
  std::vector<bytes> residual;             // 2L+1 of (N, C) Real: the residual stream
  std::vector<Kokkos::View<Real*, memory_space>> mean, rstd;  // 2L+1 LayerNorms of (N)
  std::vector<bytes> ln_out;               // 2L+1 of (N, C) compute type: LayerNorm outputs
  std::vector<bytes> qkv, probs, probs_low, atty, fc_pre, fc_act;
  bytes logits, losses;
  Kokkos::View<int**, memory_space> tokens;
  Kokkos::View<int*, memory_space> targets;
  // Backward scratch, reused by every layer.
  bytes dresid, dresid_low, dln, dfc_act, dfc_pre, datty, dprobs, dscores, dqkv, dlogits, bias;
};

template <class Real>
gpt<Real>::gpt(const gpt_config& config, const precision_policy& policy, int batch)
    : config_(config), policy_(policy), table_(config.parameter_table()), exact_table_(table_), batch_(batch) {
  policy_.validate(config_);
  if (std::is_same_v<Real, double> && policy_.mode != precision_mode::fp32)
    throw std::invalid_argument("kamp::gpt<double> is the fp64 reference; it runs the fp32 policy only");
  if (batch < 1) throw std::invalid_argument("kamp::gpt: batch must be at least 1, got " + std::to_string(batch));
  const std::size_t n = std::size_t(batch) * config.context, c = config.d_model, t = config.context;
  const std::size_t scores = std::size_t(batch) * config.heads * t * t, w = sizeof(Real);
  // Buffers a layer writes in its compute type take that type's width: bf16/fp16 layers halve
  // them. Backward scratch is shared by all layers, so it takes the widest of them.
  const auto width = [&](const std::string& layer) {
    return visit_dtype<Real>(activation_dtype(layer), [](auto x) { return sizeof(x); });
  };
  std::size_t widest = width("lm_head");
  for (const auto& layer : config.layer_names()) widest = std::max(widest, width(layer));
  const int norms = 2 * config.layers + 1;
  grads_ = Kokkos::View<Real*, memory_space>("kamp::gpt::grads", table_.flat_size());
  buf_ = std::make_unique<buffers>();
  auto& b = *buf_;
  const auto alloc = [](const std::string& label, std::size_t size) { return bytes(label, size); };
  for (int i = 0; i < norms; ++i) {
    // LayerNorm i feeds h<i/2>.attn (even i), h<i/2>.mlp (odd i), or the head (the last).
    const std::string consumer =
        i == norms - 1 ? "lm_head" : layer_prefix(i / 2) + (i % 2 == 0 ? "attn" : "mlp");
    b.residual.push_back(alloc("kamp::gpt::residual", n * c * w));
    b.mean.emplace_back("kamp::gpt::ln_mean", n);
    b.rstd.emplace_back("kamp::gpt::ln_rstd", n);
    b.ln_out.push_back(alloc("kamp::gpt::ln_out", n * c * width(consumer)));
  }
  for (int l = 0; l < config.layers; ++l) {
    const std::size_t attn = width(layer_prefix(l) + "attn"), mlp = width(layer_prefix(l) + "mlp");
    b.qkv.push_back(alloc("kamp::gpt::qkv", 3 * n * c * attn));
    b.probs.push_back(alloc("kamp::gpt::probs", scores * w));
    b.probs_low.push_back(alloc("kamp::gpt::probs_low", scores * attn));
    b.atty.push_back(alloc("kamp::gpt::atty", n * c * attn));
    b.fc_pre.push_back(alloc("kamp::gpt::fc_pre", n * config.mlp * w));
    b.fc_act.push_back(alloc("kamp::gpt::fc_act", n * config.mlp * mlp));
  }
  b.logits = alloc("kamp::gpt::logits", n * config.vocab * w);
  b.losses = alloc("kamp::gpt::losses", n * w);
  b.tokens = Kokkos::View<int**, memory_space>("kamp::gpt::tokens", batch, t);
  b.targets = Kokkos::View<int*, memory_space>("kamp::gpt::targets", n);
  b.dresid = alloc("kamp::gpt::dresid", n * c * w);
  b.dresid_low = alloc("kamp::gpt::dresid_low", n * c * widest);
  b.dln = alloc("kamp::gpt::dln", n * c * w);
  b.dfc_act = alloc("kamp::gpt::dfc_act", n * config.mlp * w);
  b.dfc_pre = alloc("kamp::gpt::dfc_pre", n * config.mlp * widest);
  b.datty = alloc("kamp::gpt::datty", n * c * widest);
  b.dprobs = alloc("kamp::gpt::dprobs", scores * w);
  b.dscores = alloc("kamp::gpt::dscores", scores * widest);
  b.dqkv = alloc("kamp::gpt::dqkv", 3 * n * c * widest);
  b.dlogits = alloc("kamp::gpt::dlogits", n * config.vocab * width("lm_head"));
  b.bias = alloc("kamp::gpt::bias", std::max<std::size_t>(3 * c, config.mlp) * w);
}

template <class Real>
gpt<Real>::~gpt() = default;

template <class Real>
dtype gpt<Real>::resolve(dtype t) const {
  return std::is_same_v<Real, double> ? dtype::fp64 : t;
}

template <class Real>
void gpt<Real>::bind_weights(weights_ref exact, weights_ref copy) {
  if (resolve(exact.type) != resolve(policy_.weights()) || resolve(copy.type) != resolve(policy_.low()))
    throw std::invalid_argument(std::string("kamp::gpt::bind_weights: the policy needs ") +
                                name(resolve(policy_.weights())) + " weights and a " + name(resolve(policy_.low())) +
                                " copy, got " + name(exact.type) + " and " + name(copy.type));
  exact_ = exact;
  copy_ = copy;
  exact_table_ = table_;
}

template <class Real>
void gpt<Real>::bind_weights(weights_ref exact, const tensor_table& exact_layout, weights_ref copy) {
  const tensor_table needed = exactly_read_parameters(config_, policy_);
  for (const auto& e : needed.entries()) {
    const auto found = std::find_if(exact_layout.entries().begin(), exact_layout.entries().end(),
                                    [&](const tensor_table::entry& x) { return x.name == e.name; });
    if (found == exact_layout.entries().end() || found->shape != e.shape)
      throw std::invalid_argument("kamp::gpt::bind_weights: the exact weights' layout lacks " + e.name +
                                  " (or gives it another shape); it must hold exactly_read_parameters()");
  }
  bind_weights(exact, copy);
  exact_table_ = exact_layout;
}

tensor_table exactly_read_parameters(const gpt_config& config, const precision_policy& policy) {
  const tensor_table all = config.parameter_table();
  tensor_table out;
  for (const auto& e : all.entries()) {
    // GEMM weight matrices are h<l>.attn.* and h<l>.mlp.* weights; wte is also the embedding.
    const std::string layer = e.name.substr(0, e.name.find('.', e.name.find('.') + 1));
    const bool gemm_weight = (layer.find(".attn") != std::string::npos || layer.find(".mlp") != std::string::npos) &&
                             e.name.compare(e.name.size() - 7, 7, ".weight") == 0;
    if (gemm_weight && policy.compute(layer) != dtype::fp32) continue;
    out.add(e.name, e.shape);
  }
  return out;
}

template <class Real>
dtype gpt<Real>::activation_dtype(const std::string& layer) const {
  return resolve(policy_.compute(layer));
}

namespace {

// Parameter tensors of a flat buffer as typed views.
template <class P>
struct parameter_views {
  const tensor_table& table;
  const P* flat;
  vector<const P> vec(const std::string& name) const {
    const auto& e = table[table.index_of(name)];
    return vector<const P>(flat + e.offset, e.size);
  }
  matrix<const P> mat(const std::string& name) const {
    const auto& e = table[table.index_of(name)];
    return matrix<const P>(flat + e.offset, e.shape.at(0), e.shape.at(1));
  }
};
template <class G>
struct gradient_views {
  const tensor_table& table;
  G* flat;
  vector<G> vec(const std::string& name) const {
    const auto& e = table[table.index_of(name)];
    return vector<G>(flat + e.offset, e.size);
  }
  matrix<G> mat(const std::string& name) const {
    const auto& e = table[table.index_of(name)];
    return matrix<G>(flat + e.offset, e.shape.at(0), e.shape.at(1));
  }
};

}  // namespace

namespace {

// The GEMM weights of a layer computing in T: the low-precision copy, or, for a layer kept in
// the exact precision (an fp32 override, or the fp32 mode), the exact weights themselves.
template <class Real, class P, class T>
auto gemm_weights(const tensor_table& table, const tensor_table& exact_table, weights_ref exact, weights_ref copy) {
  using W = std::conditional_t<std::is_same_v<T, Real>, P, T>;
  if constexpr (std::is_same_v<T, Real>) {
    return parameter_views<W>{exact_table, static_cast<const W*>(exact.data)};
  } else {
    return parameter_views<W>{table, static_cast<const W*>(copy.data)};
  }
}

// A Linear layer whose weight is (out, in): C = A W^T + bias (+ beta C).
template <class A, class W, class C, class B>
void linear(const A& a, const W& w, float beta, const C& c, const B& bias) {
  gemm(Kokkos::DefaultExecutionSpace(), op::none, op::transpose, 1.0f, a, w, beta, c, bias);
}

// Its backward pass: dA = dY W, dW += dY^T A, db += Σ rows of `bias_source` (dY itself, or for
// a residual branch the fp32 stream gradient dY was rounded from).
template <class DY, class W, class A, class DA, class DW, class S, class DB>
void linear_backward(const DY& dy, const W& w, const A& a, const DA& da, const DW& dw, const S& bias_source,
                     const DB& db) {
  const Kokkos::DefaultExecutionSpace ex;
  gemm(ex, op::none, op::none, 1.0f, dy, w, 0.0f, da);
  gemm(ex, op::transpose, op::none, 1.0f, dy, a, 1.0f, dw);
  column_sums(ex, bias_source, db);
}

}  // namespace

namespace detail {

// Sum of a loss vector in fp64 (one value per row; a fixed reduction for a given thread count).
template <class Real>
double sum_of(const Kokkos::View<const Real*, memory_space, Kokkos::MemoryUnmanaged>& x) {
  double total = 0;
  Kokkos::parallel_reduce(
      "kamp::gpt::loss_sum", Kokkos::RangePolicy<Kokkos::DefaultExecutionSpace>(0, x.extent(0)),
      KOKKOS_LAMBDA(std::size_t i, double& s) { s += static_cast<double>(x(i)); }, total);
  return total;
}

}  // namespace detail

namespace {

// A bias as the GEMM epilogue reads it (fp32, or fp64): the exact weights when they have that
// type, else (pure bf16) widened exactly into a scratch buffer.
template <class Real, class P>
Kokkos::View<const Real*, memory_space> bias_of(const parameter_views<P>& p, const std::string& name,
                                                const bytes& scratch) {
  const auto b = p.vec(name);
  if constexpr (std::is_same_v<P, Real>) {
    return b;
  } else {
    const auto wide = as_vector<Real>(scratch, b.extent(0));
    cast(Kokkos::DefaultExecutionSpace(), wide, b);
    return wide;
  }
}

// The residual stream's gradient in a layer's compute type, the form its backward GEMMs read.
template <class T, class Real>
matrix<const T> in_compute_type(const matrix<Real>& x, const bytes& scratch) {
  if constexpr (std::is_same_v<T, Real>) {
    return x;
  } else {
    const auto out = as_matrix<T>(scratch, x.extent(0), x.extent(1));
    const std::size_t n = x.extent(0) * x.extent(1);
    cast(Kokkos::DefaultExecutionSpace(), vector<T>(out.data(), n), vector<const Real>(x.data(), n));
    return out;
  }
}

}  // namespace

template <class Real>
double gpt<Real>::evaluate(const int* tokens, const int* targets) {
  return run(tokens, targets, false, 0.0, {});
}

template <class Real>
double gpt<Real>::forward_backward(const int* tokens, const int* targets, double grad_scale,
                                   const scaler_view& scaler) {
  return run(tokens, targets, true, grad_scale, scaler);
}

template <class Real>
double gpt<Real>::run(const int* tokens, const int* targets, bool with_grad, double grad_scale,
                      const scaler_view& scaler) {
  if (exact_.data == nullptr || copy_.data == nullptr)
    throw std::logic_error("kamp::gpt: bind_weights() before running the model");
  const std::size_t n = std::size_t(batch_) * config_.context;
  for (std::size_t i = 0; i < n; ++i)
    if (tokens[i] < 0 || tokens[i] >= config_.vocab || targets[i] < 0 || targets[i] >= config_.vocab)
      throw std::invalid_argument("kamp::gpt: token " + std::to_string(std::min(tokens[i], targets[i])) +
                                  " at position " + std::to_string(i) + " is outside the vocabulary [0, " +
                                  std::to_string(config_.vocab) + ")");
  using host_ints = Kokkos::View<const int*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>;
  Kokkos::deep_copy(Kokkos::View<int*, memory_space>(buf_->tokens.data(), n), host_ints(tokens, n));
  Kokkos::deep_copy(buf_->targets, host_ints(targets, n));
  if (with_grad && token_index_ == nullptr)
    token_index_ = std::make_unique<token_rows<memory_space>>(tokens, n, config_.vocab);
  else if (with_grad)
    token_index_->assign(tokens);
  visit_dtype<Real>(resolve(policy_.weights()), [&](auto p) {
    using P = decltype(p);
    forward<P>(with_grad, grad_scale, scaler);
    if (with_grad) backward<P>();
  });
  return detail::sum_of<Real>(as_vector<const Real>(buf_->losses, n)) / double(n);
}

template <class Real>
template <class P>
void gpt<Real>::forward(bool with_grad, double grad_scale, const scaler_view& scaler) {
  const std::size_t n = std::size_t(batch_) * config_.context;
  const parameter_views<P> prm{exact_table_, static_cast<const P*>(exact_.data)};
  const Kokkos::View<const int**, memory_space> tokens = buf_->tokens;
  embedding_forward(execution_space(), tokens, prm.mat("wte"), prm.mat("wpe"),
                    as_matrix<Real>(buf_->residual[0], n, config_.d_model));
  for (int l = 0; l < config_.layers; ++l) {
    visit_dtype<Real>(activation_dtype(layer_prefix(l) + "attn"),
                      [&](auto t) { attention_forward<P, decltype(t)>(l); });
    visit_dtype<Real>(activation_dtype(layer_prefix(l) + "mlp"), [&](auto t) { mlp_forward<P, decltype(t)>(l); });
  }
  visit_dtype<Real>(activation_dtype("lm_head"),
                    [&](auto t) { head_forward<P, decltype(t)>(with_grad, grad_scale, scaler); });
}

template <class Real>
template <class P, class T>
void gpt<Real>::attention_forward(int l) {
  const execution_space ex;
  auto& b = *buf_;
  const int batch = batch_, t = config_.context, c = config_.d_model, heads = config_.heads, hd = c / heads;
  const std::size_t n = std::size_t(batch) * t, rows = std::size_t(batch) * heads * t;
  const std::string h = layer_prefix(l);
  const parameter_views<P> prm{exact_table_, static_cast<const P*>(exact_.data)};
  const auto w = gemm_weights<Real, P, T>(table_, exact_table_, exact_, copy_);
  const auto x = as_matrix<const Real>(b.residual[2 * l], n, c);
  const auto ln = as_matrix<T>(b.ln_out[2 * l], n, c);
  layernorm_forward(ex, x, prm.vec(h + "ln1.weight"), prm.vec(h + "ln1.bias"), ln, b.mean[2 * l], b.rstd[2 * l]);
  note(h, "ln1", false, ln.data(), n * c);
  const auto qkv = as_matrix<T>(b.qkv[l], n, 3 * c);
  linear(ln, w.mat(h + "attn.qkv.weight"), 0.0f, qkv, bias_of<Real>(prm, h + "attn.qkv.bias", b.bias));
  note(h, "attn.qkv", false, qkv.data(), 3 * n * c);

  const float alpha = float(1.0 / std::sqrt(double(hd)));
  Real* probs = reinterpret_cast<Real*>(b.probs[l].data());
  T* probs_low = reinterpret_cast<T*>(b.probs_low[l].data());
  for (int i = 0; i < heads; ++i)
    gemm_strided_batched(ex, op::none, op::transpose, alpha, head(qkv, batch, i * hd, hd),
                         head(qkv, batch, c + i * hd, hd), 0.0f, head_scores(probs, batch, heads, i, t));
  note(h, "attn.scores", false, probs, rows * t);
  causal_softmax_forward(ex, matrix<Real>(probs, rows, t), matrix<T>(probs_low, rows, t));
  const auto atty = as_matrix<T>(b.atty[l], n, c);
  for (int i = 0; i < heads; ++i)
    gemm_strided_batched(ex, op::none, op::none, 1.0f, head_scores(probs_low, batch, heads, i, t),
                         head(qkv, batch, 2 * c + i * hd, hd), 0.0f, head(atty, batch, i * hd, hd));

  note(h, "attn.values", false, atty.data(), n * c);
  const auto out = as_matrix<Real>(b.residual[2 * l + 1], n, c);
  Kokkos::deep_copy(ex, out, x);
  linear(atty, w.mat(h + "attn.proj.weight"), 1.0f, out, bias_of<Real>(prm, h + "attn.proj.bias", b.bias));
  note(h, "attn.proj", false, out.data(), n * c);
}

template <class Real>
template <class P, class T>
void gpt<Real>::mlp_forward(int l) {
  const execution_space ex;
  auto& b = *buf_;
  const std::size_t n = std::size_t(batch_) * config_.context, c = config_.d_model, m = config_.mlp;
  const std::string h = layer_prefix(l);
  const parameter_views<P> prm{exact_table_, static_cast<const P*>(exact_.data)};
  const auto w = gemm_weights<Real, P, T>(table_, exact_table_, exact_, copy_);
  const auto x = as_matrix<const Real>(b.residual[2 * l + 1], n, c);
  const auto ln = as_matrix<T>(b.ln_out[2 * l + 1], n, c);
  layernorm_forward(ex, x, prm.vec(h + "ln2.weight"), prm.vec(h + "ln2.bias"), ln, b.mean[2 * l + 1],
                    b.rstd[2 * l + 1]);
  note(h, "ln2", false, ln.data(), n * c);
  const auto fc_pre = as_matrix<Real>(b.fc_pre[l], n, m);
  linear(ln, w.mat(h + "mlp.fc.weight"), 0.0f, fc_pre, bias_of<Real>(prm, h + "mlp.fc.bias", b.bias));
  note(h, "mlp.fc", false, fc_pre.data(), n * m);
  const auto fc_act = as_matrix<T>(b.fc_act[l], n, m);
  gelu_forward(ex, as_vector<const Real>(b.fc_pre[l], n * m), as_vector<T>(b.fc_act[l], n * m));
  note(h, "mlp.gelu", false, fc_act.data(), n * m);
  const auto out = as_matrix<Real>(b.residual[2 * l + 2], n, c);
  Kokkos::deep_copy(ex, out, x);
  linear(fc_act, w.mat(h + "mlp.proj.weight"), 1.0f, out, bias_of<Real>(prm, h + "mlp.proj.bias", b.bias));
  note(h, "mlp.proj", false, out.data(), n * c);
}

template <class Real>
template <class P, class T>
void gpt<Real>::head_forward(bool with_grad, double grad_scale, const scaler_view& scaler) {
  const execution_space ex;
  auto& b = *buf_;
  const int last = 2 * config_.layers;
  const std::size_t n = std::size_t(batch_) * config_.context, c = config_.d_model, v = config_.vocab;
  const parameter_views<P> prm{exact_table_, static_cast<const P*>(exact_.data)};
  const auto w = gemm_weights<Real, P, T>(table_, exact_table_, exact_, copy_);
  const auto ln = as_matrix<T>(b.ln_out[last], n, c);
  layernorm_forward(ex, as_matrix<const Real>(b.residual[last], n, c), prm.vec("lnf.weight"), prm.vec("lnf.bias"), ln,
                    b.mean[last], b.rstd[last]);
  note({}, "lnf", false, ln.data(), n * c);
  const auto logits = as_matrix<Real>(b.logits, n, v);
  linear(ln, w.mat("wte"), 0.0f, logits, Kokkos::View<const Real*, memory_space>());
  note({}, "lm_head", false, logits.data(), n * v);
  const Kokkos::View<const int*, memory_space> targets = b.targets;
  cross_entropy(ex, matrix<const Real>(logits), targets, as_vector<Real>(b.losses, n),
                with_grad ? as_matrix<T>(b.dlogits, n, v) : matrix<T>(), grad_scale / double(n), scaler);
  note({}, "loss", false, reinterpret_cast<const Real*>(b.losses.data()), n);
  if (with_grad) note({}, "loss", true, reinterpret_cast<const T*>(b.dlogits.data()), n * v);
}

template <class Real>
template <class P>
void gpt<Real>::backward() {
  const std::size_t n = std::size_t(batch_) * config_.context;
  Kokkos::deep_copy(execution_space(), as_matrix<Real>(buf_->dresid, n, config_.d_model), Real(0));
  visit_dtype<Real>(activation_dtype("lm_head"), [&](auto t) { head_backward<P, decltype(t)>(); });
  for (int l = config_.layers - 1; l >= 0; --l) {
    visit_dtype<Real>(activation_dtype(layer_prefix(l) + "mlp"), [&](auto t) { mlp_backward<P, decltype(t)>(l); });
    visit_dtype<Real>(activation_dtype(layer_prefix(l) + "attn"),
                      [&](auto t) { attention_backward<P, decltype(t)>(l); });
  }
  const gradient_views<Real> g{table_, grads_.data()};
  embedding_backward(execution_space(), *token_index_, config_.context,
                     as_matrix<const Real>(buf_->dresid, n, config_.d_model), g.mat("wte"), g.mat("wpe"));
}

template <class Real>
template <class P, class T>
void gpt<Real>::head_backward() {
  const execution_space ex;
  auto& b = *buf_;
  const int last = 2 * config_.layers;
  const std::size_t n = std::size_t(batch_) * config_.context, c = config_.d_model, v = config_.vocab;
  const parameter_views<P> prm{exact_table_, static_cast<const P*>(exact_.data)};
  const gradient_views<Real> g{table_, grads_.data()};
  const auto w = gemm_weights<Real, P, T>(table_, exact_table_, exact_, copy_);
  const auto dlogits = as_matrix<T>(b.dlogits, n, v);
  const auto dln = as_matrix<Real>(b.dln, n, c);
  gemm(ex, op::none, op::none, 1.0f, dlogits, w.mat("wte"), 0.0f, dln);
  note({}, "lm_head", true, dln.data(), n * c);
  gemm(ex, op::transpose, op::none, 1.0f, dlogits, as_matrix<T>(b.ln_out[last], n, c), 1.0f, g.mat("wte"));
  layernorm_backward(ex, dln, as_matrix<const Real>(b.residual[last], n, c), prm.vec("lnf.weight"), b.mean[last],
                     b.rstd[last], as_matrix<Real>(b.dresid, n, c), g.vec("lnf.weight"), g.vec("lnf.bias"));
  note({}, "lnf", true, reinterpret_cast<const Real*>(b.dresid.data()), n * c);
}

template <class Real>
template <class P, class T>
void gpt<Real>::mlp_backward(int l) {
  const execution_space ex;
  auto& b = *buf_;
  const std::size_t n = std::size_t(batch_) * config_.context, c = config_.d_model, m = config_.mlp;
  const std::string h = layer_prefix(l);
  const parameter_views<P> prm{exact_table_, static_cast<const P*>(exact_.data)};
  const gradient_views<Real> g{table_, grads_.data()};
  const auto w = gemm_weights<Real, P, T>(table_, exact_table_, exact_, copy_);
  const auto dresid = as_matrix<Real>(b.dresid, n, c);
  const auto dy = in_compute_type<T>(dresid, b.dresid_low);
  const auto dfc_act = as_matrix<Real>(b.dfc_act, n, m);
  linear_backward(dy, w.mat(h + "mlp.proj.weight"), as_matrix<T>(b.fc_act[l], n, m), dfc_act,
                  g.mat(h + "mlp.proj.weight"), dresid, g.vec(h + "mlp.proj.bias"));
  note(h, "mlp.proj", true, dfc_act.data(), n * m);
  const auto dfc_pre = as_matrix<T>(b.dfc_pre, n, m);
  gelu_backward(ex, as_vector<const Real>(b.dfc_act, n * m), as_vector<const Real>(b.fc_pre[l], n * m),
                as_vector<T>(b.dfc_pre, n * m));
  note(h, "mlp.gelu", true, dfc_pre.data(), n * m);
  const auto dln = as_matrix<Real>(b.dln, n, c);
  linear_backward(dfc_pre, w.mat(h + "mlp.fc.weight"), as_matrix<T>(b.ln_out[2 * l + 1], n, c), dln,
                  g.mat(h + "mlp.fc.weight"), dfc_pre, g.vec(h + "mlp.fc.bias"));
  note(h, "mlp.fc", true, dln.data(), n * c);
  layernorm_backward(ex, dln, as_matrix<const Real>(b.residual[2 * l + 1], n, c), prm.vec(h + "ln2.weight"),
                     b.mean[2 * l + 1], b.rstd[2 * l + 1], dresid, g.vec(h + "ln2.weight"), g.vec(h + "ln2.bias"));
  note(h, "ln2", true, dresid.data(), n * c);
}

template <class Real>
template <class P, class T>
void gpt<Real>::attention_backward(int l) {
  const execution_space ex;
  auto& b = *buf_;
  const int batch = batch_, t = config_.context, c = config_.d_model, heads = config_.heads, hd = c / heads;
  const std::size_t n = std::size_t(batch) * t, rows = std::size_t(batch) * heads * t;
  const std::string h = layer_prefix(l);
  const parameter_views<P> prm{exact_table_, static_cast<const P*>(exact_.data)};
  const gradient_views<Real> g{table_, grads_.data()};
  const auto w = gemm_weights<Real, P, T>(table_, exact_table_, exact_, copy_);
  const auto dresid = as_matrix<Real>(b.dresid, n, c);
  const auto dy = in_compute_type<T>(dresid, b.dresid_low);
  const auto datty = as_matrix<T>(b.datty, n, c);
  linear_backward(dy, w.mat(h + "attn.proj.weight"), as_matrix<T>(b.atty[l], n, c), datty,
                  g.mat(h + "attn.proj.weight"), dresid, g.vec(h + "attn.proj.bias"));
  note(h, "attn.proj", true, datty.data(), n * c);

  const float alpha = float(1.0 / std::sqrt(double(hd)));
  const auto qkv = as_matrix<T>(b.qkv[l], n, 3 * c);
  const auto dqkv = as_matrix<T>(b.dqkv, n, 3 * c);
  Real* probs = reinterpret_cast<Real*>(b.probs[l].data());
  T* probs_low = reinterpret_cast<T*>(b.probs_low[l].data());
  Real* dprobs = reinterpret_cast<Real*>(b.dprobs.data());
  T* dscores = reinterpret_cast<T*>(b.dscores.data());
  for (int i = 0; i < heads; ++i) {
    const auto dout = head(datty, batch, i * hd, hd);
    gemm_strided_batched(ex, op::none, op::transpose, 1.0f, dout, head(qkv, batch, 2 * c + i * hd, hd), 0.0f,
                         head_scores(dprobs, batch, heads, i, t));
    gemm_strided_batched(ex, op::transpose, op::none, 1.0f, head_scores(probs_low, batch, heads, i, t), dout, 0.0f,
                         head(dqkv, batch, 2 * c + i * hd, hd));
  }
  causal_softmax_backward(ex, matrix<Real>(probs, rows, t), matrix<Real>(dprobs, rows, t),
                          matrix<T>(dscores, rows, t));
  note(h, "attn.scores", true, dscores, rows * t);
  for (int i = 0; i < heads; ++i) {
    const auto ds = head_scores(dscores, batch, heads, i, t);
    gemm_strided_batched(ex, op::none, op::none, alpha, ds, head(qkv, batch, c + i * hd, hd), 0.0f,
                         head(dqkv, batch, i * hd, hd));
    gemm_strided_batched(ex, op::transpose, op::none, alpha, ds, head(qkv, batch, i * hd, hd), 0.0f,
                         head(dqkv, batch, c + i * hd, hd));
  }
  const auto dln = as_matrix<Real>(b.dln, n, c);
  linear_backward(dqkv, w.mat(h + "attn.qkv.weight"), as_matrix<T>(b.ln_out[2 * l], n, c), dln,
                  g.mat(h + "attn.qkv.weight"), dqkv, g.vec(h + "attn.qkv.bias"));
  note(h, "attn.qkv", true, dln.data(), n * c);
  layernorm_backward(ex, dln, as_matrix<const Real>(b.residual[2 * l], n, c), prm.vec(h + "ln1.weight"),
                     b.mean[2 * l], b.rstd[2 * l], dresid, g.vec(h + "ln1.weight"), g.vec(h + "ln1.bias"));
  note(h, "ln1", true, dresid.data(), n * c);
}

template <class Real>
std::vector<double> gpt<Real>::gemm_input(const std::string& layer) const {
  const auto names = config_.layer_names();
  const auto it = std::find(names.begin(), names.end(), layer);
  if (it == names.end()) throw std::invalid_argument("kamp::gpt::gemm_input: no layer named '" + layer + "'");
  // names are h0.attn, h0.mlp, h1.attn, ..., lm_head: the LayerNorm feeding each, in order.
  const std::size_t index = it - names.begin(), n = std::size_t(batch_) * config_.context * config_.d_model;
  std::vector<double> out(n);
  visit_dtype<Real>(activation_dtype(layer), [&](auto t) {
    using T = decltype(t);
    const auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), as_vector<T>(buf_->ln_out[index], n));
    for (std::size_t i = 0; i < n; ++i) out[i] = load_as<double>(host.data() + i);
  });
  return out;
}

template <class Real>
template <class T>
void gpt<Real>::note(const std::string& block, const char* op, bool backward, const T* data, std::size_t n) {
  if (observations_ == nullptr) return;  // the training step pays nothing, not even the name
  const Kokkos::View<const T*, memory_space, Kokkos::MemoryUnmanaged> x(data, n);
  observations_->push_back({block + op, backward, dtype_of<T>(), measure_range(execution_space(), x)});
}

template class gpt<float>;
template class gpt<double>;

}  // namespace kamp
