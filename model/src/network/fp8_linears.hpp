#ifndef KAMP_MODEL_SRC_NETWORK_FP8_LINEARS_HPP
#define KAMP_MODEL_SRC_NETWORK_FP8_LINEARS_HPP

// amp_fp8's Linear layers: Transformer Engine's HYBRID recipe on kamp's kernels. Forward:
// y = x·w^T + bias with x and w cast to E4M3; backward: dx = dy·w, dw += dy^T·x with dy cast to
// E5M2 and the E4M3 copies of the forward pass. Each tensor has its scale on the device; delayed
// scaling updates them all after a pass with gradients (one launch per format), current scaling
// computes each from its tensor just before the cast. Nothing waits for the host.
#include <kamp/kernels/fp8_scaling.hpp>
#include <kamp/kernels/gemm_fp8.hpp>
#include <kamp/kernels/nn/gelu.hpp>
#include <kamp/model/config/gpt_config.hpp>
#include <kamp/model/config/precision_policy.hpp>
#include <kamp/model/network/fp8_state.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace kamp::detail {

/// A block's Linear layers in the order of their FP8 tensors: block l's is 4l + this.
enum class block_linear { qkv = 0, attn_proj = 1, fc = 2, mlp_proj = 3 };

template <class ExecutionSpace>
class fp8_linears {
 public:
  using memory = typename ExecutionSpace::memory_space;
  static constexpr int per_block = 4;

  /// FP8 buffers for micro-batches of `rows` positions, for the Linears of the layers computing
  /// in bf16 (policy.compute): the sizes memory_plan::fp8 counts.
  fp8_linears(const gpt_config& config, const precision_policy& policy, std::size_t rows)
      : linears_(per_block * config.layers),
        recipe_(policy.recipe),
        inputs_(linears_),
        weights_(linears_),
        input_rows_(linears_, 0),
        input_cols_(linears_, 0),
        weight_rows_(linears_, 0),
        scales_("kamp::fp8::scales", 3 * linears_),
        amax_("kamp::fp8::amax", 3 * linears_),
        stats_("kamp::fp8::stats", 3 * linears_) {
    // Current scaling keeps no history (Kokkos would still allocate for an empty view).
    if (recipe_ == fp8_recipe::delayed)
      history_ = Kokkos::View<float**, Kokkos::LayoutRight, memory>("kamp::fp8::amax_history", 3 * linears_,
                                                                    policy.amax_history);
    Kokkos::deep_copy(scales_, 1.0f);  // Transformer Engine's initial scale
    const std::size_t c = config.d_model, m = config.mlp;
    std::size_t widest_grad = 0;
    for (int l = 0; l < config.layers; ++l) {
      if (policy.compute(layer_name(l, layer_part::attention)) == dtype::bf16) {
        allocate(index(l, block_linear::qkv), rows, c, 3 * c);
        allocate(index(l, block_linear::attn_proj), rows, c, c);
        widest_grad = std::max(widest_grad, 3 * c);
      }
      if (policy.compute(layer_name(l, layer_part::mlp)) == dtype::bf16) {
        allocate(index(l, block_linear::fc), rows, c, m);
        allocate(index(l, block_linear::mlp_proj), rows, m, c);
        widest_grad = std::max({widest_grad, m, c});
      }
    }
    grad_ = Kokkos::View<fp8_e5m2*, memory>("kamp::fp8::grad", rows * widest_grad);
  }

  static int index(int block, block_linear which) { return per_block * block + int(which); }
  /// Whether Linear `linear` has FP8 buffers: its layer computes in bf16.
  bool serves(int linear) const { return weights_[linear].extent(0) > 0; }

  /// y = x·w^T (+ bias), x (rows, in) and w (out, in) in bf16, through E4M3 copies; x's is kept
  /// for the backward pass. y is fp32 or bf16.
  template <class X, class W, class Y>
  void forward(const ExecutionSpace& space, int linear, const X& x, const W& w, const Y& y,
               const Kokkos::View<const float*, memory>& bias) {
    auto& x8 = inputs_[linear];
    auto& w8 = weights_[linear];
    if (x8.extent(0) < x.size() || w8.extent(0) != w.size())
      throw std::logic_error("kamp::gpt: FP8 Linear " + std::to_string(linear) + " was not allocated for this shape");
    input_rows_[linear] = x.extent(0);
    quantize(space, input(linear), x8, x);
    quantize(space, weight(linear), w8, w);
    gemm_fp8(space, op::none, op::transpose, 1.0f, matrix(x8, x.extent(0), x.extent(1)), scale_inv(input(linear)),
             matrix(w8, w.extent(0), w.extent(1)), scale_inv(weight(linear)), 0.0f, y, bias);
  }

  /// dx = dy·w and dw += dy^T·x for the Linear's last forward pass, dy (rows, out) in bf16 cast to
  /// E5M2. dx is fp32 or bf16; dw is fp32.
  template <class DY, class DX, class DW>
  void backward(const ExecutionSpace& space, int linear, const DY& dy, const DX& dx, const DW& dw) {
    const std::size_t rows = input_rows_[linear], in = input_cols_[linear], out = weight_rows_[linear];
    if (rows == 0) throw std::logic_error("kamp::gpt: an FP8 Linear's backward pass before its forward pass");
    if (grad_.extent(0) < dy.size()) throw std::logic_error("kamp::gpt: the FP8 gradient buffer is too small");
    quantize(space, grad(linear), grad_, dy);
    const auto dy8 = matrix(grad_, dy.extent(0), dy.extent(1));
    gemm_fp8(space, op::none, op::none, 1.0f, dy8, scale_inv(grad(linear)), matrix(weights_[linear], out, in),
             scale_inv(weight(linear)), 0.0f, dx);
    gemm_fp8(space, op::transpose, op::none, 1.0f, dy8, scale_inv(grad(linear)), matrix(inputs_[linear], rows, in),
             scale_inv(input(linear)), 1.0f, dw);
  }

  /// After a pass with gradients: delayed scaling writes every cast's amax into the histories and
  /// computes the next scales (one launch per format). Current scaling has nothing to do.
  void after_backward(const ExecutionSpace& space) {
    if (recipe_ != fp8_recipe::delayed) return;
    const std::pair<int, int> e4m3(0, 2 * linears_), e5m2(2 * linears_, 3 * linears_);
    fp8_delayed_update<fp8_e4m3>(space, Kokkos::subview(history_, e4m3, Kokkos::ALL), updates_,
                                 Kokkos::subview(stats_const(), e4m3), Kokkos::subview(scales_, e4m3));
    fp8_delayed_update<fp8_e5m2>(space, Kokkos::subview(history_, e5m2, Kokkos::ALL), updates_,
                                 Kokkos::subview(stats_const(), e5m2), Kokkos::subview(scales_, e5m2));
    ++updates_;
  }

  fp8_scaling_state state() const {
    fp8_scaling_state s;
    s.scales.resize(scales_.extent(0));
    Kokkos::deep_copy(host(s.scales), scales_);
    s.history.resize(history_.size());
    Kokkos::deep_copy(Kokkos::View<float**, Kokkos::LayoutRight, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(
                          s.history.data(), history_.extent(0), history_.extent(1)),
                      history_);
    s.updates = updates_;
    return s;
  }

  /// Throws std::invalid_argument, changing nothing, unless `s` fits this model and recipe.
  void restore(const fp8_scaling_state& s) {
    if (s.scales.size() != scales_.extent(0) || s.history.size() != history_.size())
      throw std::invalid_argument("the FP8 scaling state holds " + std::to_string(s.scales.size()) + " scales and " +
                                  std::to_string(s.history.size()) + " history entries; this run keeps " +
                                  std::to_string(scales_.extent(0)) + " and " + std::to_string(history_.size()) + " (" +
                                  name(recipe_) +
                                  " scaling): resume with the checkpoint's --fp8-recipe and --fp8-amax-history");
    check_fp8_values(s);
    std::vector<float> scales = s.scales, history = s.history;
    Kokkos::deep_copy(scales_, host(scales));
    Kokkos::deep_copy(history_,
                      Kokkos::View<const float**, Kokkos::LayoutRight, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(
                          history.data(), history_.extent(0), history_.extent(1)));
    updates_ = s.updates;
  }

  /// The last cast of every tensor that has been cast (copied to the host: a wait).
  std::vector<fp8_tensor_report> report(const std::vector<std::string>& linear_names) const {
    std::vector<fp8_cast_stats> stats(stats_.extent(0));
    Kokkos::deep_copy(
        Kokkos::View<fp8_cast_stats*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(stats.data(), stats.size()), stats_);
    std::vector<fp8_tensor_report> out;
    const char* roles[] = {"input", "weight", "grad"};
    for (int role = 0; role < 3; ++role) {
      for (int i = 0; i < linears_; ++i) {
        const std::size_t elements = role == 0   ? input_rows_[i] * input_cols_[i]
                                     : role == 1 ? weight_rows_[i] * input_cols_[i]
                                                 : input_rows_[i] * weight_rows_[i];
        if (elements == 0) continue;  // not cast yet, or a layer kept out of FP8
        const int t = role * linears_ + i;
        // The scale the cast used (delayed scaling has already computed the next one).
        out.push_back({linear_names.at(i), roles[role], role == 2 ? dtype::fp8_e5m2 : dtype::fp8_e4m3, elements,
                       stats[t].amax, 1.0f / stats[t].scale_inv, stats[t].saturated, stats[t].underflowed});
      }
    }
    return out;
  }

 private:
  int input(int i) const { return i; }
  int weight(int i) const { return linears_ + i; }
  int grad(int i) const { return 2 * linears_ + i; }

  /// Linear i's input copy (rows, in) and weight copy (out, in).
  void allocate(int i, std::size_t rows, std::size_t in, std::size_t out) {
    inputs_[i] = Kokkos::View<fp8_e4m3*, memory>("kamp::fp8::input", rows * in);
    weights_[i] = Kokkos::View<fp8_e4m3*, memory>("kamp::fp8::weight", out * in);
    input_cols_[i] = in;
    weight_rows_[i] = out;
  }
  template <class T>
  static Kokkos::View<T**, Kokkos::LayoutRight, memory, Kokkos::MemoryUnmanaged> matrix(
      const Kokkos::View<T*, memory>& v, std::size_t rows, std::size_t cols) {
    return Kokkos::View<T**, Kokkos::LayoutRight, memory, Kokkos::MemoryUnmanaged>(v.data(), rows, cols);
  }
  static Kokkos::View<float*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged> host(std::vector<float>& v) {
    return Kokkos::View<float*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(v.data(), v.size());
  }
  Kokkos::View<const fp8_cast_stats*, memory> stats_const() const { return stats_; }
  Kokkos::View<const float, memory> scale_inv(int t) const {
    return Kokkos::View<const float, memory>(&stats_.data()[t].scale_inv);
  }

  /// out = the saturating cast of x · scale(t), the stats of tensor t written; under current
  /// scaling, scale(t) is first computed from x's own amax.
  template <class F, class X>
  void quantize(const ExecutionSpace& space, int t, const Kokkos::View<F*, memory>& out, const X& x) {
    const Kokkos::View<const typename X::value_type*, memory> flat(x.data(), x.size());
    const auto whole = Kokkos::subview(out, std::pair<std::size_t, std::size_t>(0, x.size()));
    if (recipe_ == fp8_recipe::current) {
      const std::pair<int, int> one(t, t + 1);
      amax(space, flat, Kokkos::View<float, memory>(amax_.data() + t));
      fp8_current_scale<F>(space, Kokkos::subview(Kokkos::View<const float*, memory>(amax_), one),
                           Kokkos::subview(scales_, one));
    }
    quantize_fp8(space, whole, flat, Kokkos::View<const float, memory>(scales_.data() + t),
                 Kokkos::View<fp8_cast_stats, memory>(stats_.data() + t));
  }

  int linears_;
  fp8_recipe recipe_;
  std::vector<Kokkos::View<fp8_e4m3*, memory>> inputs_, weights_;
  Kokkos::View<fp8_e5m2*, memory> grad_;
  /// Linear i's shape: input_rows_ is set by its first forward pass (0 until then).
  std::vector<std::size_t> input_rows_, input_cols_, weight_rows_;
  Kokkos::View<float*, memory> scales_, amax_;
  Kokkos::View<fp8_cast_stats*, memory> stats_;
  Kokkos::View<float**, Kokkos::LayoutRight, memory> history_;
  std::int64_t updates_ = 0;
};

}  // namespace kamp::detail

#endif
