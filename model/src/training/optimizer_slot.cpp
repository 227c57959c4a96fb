#include "training/optimizer_slot.hpp"

#include <kamp/kernels/cast.hpp>

namespace kamp::detail {

namespace {
template <class T, class... P>
state_tensor snapshot(const char* role, const Kokkos::View<T*, P...>& v) {
  state_tensor t{role, dtype_of<T>(), std::vector<unsigned char>(v.extent(0) * sizeof(T))};
  Kokkos::deep_copy(
      Kokkos::View<T*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(reinterpret_cast<T*>(t.bytes.data()), v.extent(0)),
      v);
  return t;
}

template <class T, class... P>
void load(const state_tensor& t, const Kokkos::View<T*, P...>& v) {
  Kokkos::deep_copy(v, Kokkos::View<const T*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(
                           reinterpret_cast<const T*>(t.bytes.data()), v.extent(0)));
}

template <class Model, class Moment>
struct adamw_slot final : optimizer_slot {
  /// The shard [first, first + opt.size()) of `model` this rank updates: the flat buffers'
  /// elements of its shard (0 when `model` holds only the shard).
  std::size_t first;
  fused_optimizer<adamw_rule, Model, float, Moment, memory_space> opt;
  Kokkos::View<Model*, memory_space> model;

  adamw_slot(const std::vector<float>& initial, element_range shard, bool whole_copy, const adamw_options& hyper,
             weight_update update, rounding_options rounding)
      : first(whole_copy ? shard.first : 0),
        opt(shard.size(), hyper, update, rounding),
        model("kamp::trainer::model_copy", initial.size()) {
    Kokkos::View<float*, memory_space> w("kamp::trainer::initial", initial.size());
    Kokkos::deep_copy(
        w, Kokkos::View<const float*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(initial.data(), initial.size()));
    // Every rank rounds its model copy from the same initial weights: nothing to gather.
    const execution_space ex;
    cast(ex, model, w);
    opt.initialize(ex, Kokkos::subview(w, std::make_pair(first, first + opt.size())), model_shard());
  }
  Kokkos::View<Model*, memory_space> model_shard() const {
    return Kokkos::subview(model, std::make_pair(first, first + opt.size()));
  }
  weights_ref exact() const override {
    return opt.master().extent(0) > 0 ? weights_ref{dtype::fp32, opt.master().data()}
                                      : weights_ref{dtype_of<Model>(), model.data()};
  }
  weights_ref copy() const override { return {dtype_of<Model>(), model.data()}; }
  void step(const Kokkos::View<const float*, memory_space>& grads, const gradient_control<memory_space>& c,
            const lr_schedule& lr) override {
    opt.step(execution_space(), model_shard(), grads, c, lr);
  }
  Kokkos::View<const std::int64_t, memory_space> step_count() const override { return opt.step_count(); }
  std::vector<float> exact_weights() const override {
    std::vector<float> out(opt.master().extent(0) > 0 ? opt.size() : model.extent(0));
    if (opt.master().extent(0) > 0) {
      Kokkos::deep_copy(Kokkos::View<float*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(out.data(), out.size()),
                        opt.master());
    } else {
      const auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), model);
      for (std::size_t i = 0; i < out.size(); ++i) out[i] = load_float(h.data() + i);
    }
    return out;
  }
  std::vector<std::uint32_t> copy_bits() const override {
    const auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), model);
    std::vector<std::uint32_t> out(h.extent(0));
    for (std::size_t i = 0; i < out.size(); ++i) {
      if constexpr (std::is_same_v<Model, float>) {
        out[i] = detail::float_to_bits(h(i));
      } else {
        out[i] = h(i).bits;
      }
    }
    return out;
  }
  std::vector<state_tensor> state() const override {
    std::vector<state_tensor> out{snapshot("model", model_shard())};
    if (opt.master().extent(0) > 0) out.push_back(snapshot("master", opt.master()));
    out.push_back(snapshot("moment1", opt.moment1()));
    out.push_back(snapshot("moment2", opt.moment2()));
    if (opt.compensation().extent(0) > 0) out.push_back(snapshot("compensation", opt.compensation()));
    return out;
  }
  void restore(const std::vector<state_tensor>& tensors, std::int64_t steps) override {
    auto next = tensors.begin();
    load(*next++, model_shard());
    if (opt.master().extent(0) > 0) load(*next++, opt.master());
    load(*next++, opt.moment1());
    load(*next++, opt.moment2());
    if (opt.compensation().extent(0) > 0) load(*next++, opt.compensation());
    Kokkos::deep_copy(opt.step_count(), steps);
  }
};

}  // namespace

std::unique_ptr<optimizer_slot> make_optimizer(const precision_policy& policy, const train_options& o,
                                               const std::vector<float>& initial, element_range shard,
                                               bool whole_copy) {
  rounding_options sr;
  sr.mode = rounding::stochastic;
  sr.seed = o.seed;
  sr.stream_offset = shard.first;  // each element's random stream does not depend on the shards
  const auto slot = [&](auto model, auto moment, weight_update update,
                        rounding_options rounding) -> std::unique_ptr<optimizer_slot> {
    return std::make_unique<adamw_slot<decltype(model), decltype(moment)>>(initial, shard, whole_copy, o.adamw, update,
                                                                           rounding);
  };
  switch (policy.mode) {
    case precision_mode::fp32:
      return slot(float(), float(), weight_update::nearest, rounding_options{});
    case precision_mode::amp_bf16:
    case precision_mode::amp_fp8:  // the FP8 copies are cast from the bf16 one at each forward pass
      return slot(bf16(), float(), weight_update::master, rounding_options{});
    case precision_mode::amp_fp16:
      return slot(fp16(), float(), weight_update::master, rounding_options{});
    case precision_mode::pure_bf16:
      // Moments in bf16 too, as llama-recipes' AnyPrecisionAdamW does for pure bf16.
      return policy.update == pure_bf16_update::kahan ? slot(bf16(), bf16(), weight_update::kahan, rounding_options{})
                                                      : slot(bf16(), bf16(), weight_update::stochastic, sr);
  }
  throw std::logic_error("unknown precision mode");
}

loss_scaler_options scaler_options(const precision_policy& policy, const train_options& o) {
  if (policy.loss_scaling()) return o.scaler;
  // Modes without loss scaling keep a static scale of 1: the same skip-on-inf/NaN bookkeeping.
  loss_scaler_options unit;
  unit.init_scale = 1.0f;
  unit.dynamic = false;
  return unit;
}

}  // namespace kamp::detail
