// Bandwidth of the AMP kernels against a STREAM triad measured in the same run.
#include "amp_kernels.hpp"

#include <kamp/kamp.hpp>

#include <cstdint>
#include <string>

namespace kamp::bench {

namespace {

using exec = Kokkos::DefaultExecutionSpace;
using memory = exec::memory_space;

// ~n parameters in 100 tensors of uneven sizes, like a model's parameter list.
tensor_table hundred_tensors(std::size_t n) {
  tensor_table table;
  std::size_t remaining = n;
  for (int i = 0; i < 100; ++i) {
    const std::size_t size = i == 99 ? remaining : n / 100 + (i % 7) * 1031 - 3093;
    table.add("tensor" + std::to_string(i), {size});
    remaining -= size;
  }
  return table;
}

template <class T>
Kokkos::View<T*, memory> filled(const std::string& label, std::size_t n, float value) {
  Kokkos::View<T*, memory> v(Kokkos::view_alloc(Kokkos::WithoutInitializing, label), n);
  const T x = from_float<T>(value);
  Kokkos::parallel_for(
      "kamp::bench::fill", Kokkos::RangePolicy<exec, Kokkos::IndexType<std::int64_t>>(0, n),
      KOKKOS_LAMBDA(std::int64_t i) { v(i) = x; });
  return v;
}

// The unfused baseline, in its best form: what a framework without multi-tensor fusion launches
// (a scale pass, a finite check, a norm, then the update), each reduction into device memory so
// that nothing waits for the host, as in the fused step.
template <class T>
void scale_in_place(const Kokkos::View<T*, memory>& g, const Kokkos::View<const loss_scale_state, memory>& scaler) {
  Kokkos::parallel_for(
      "kamp::bench::unfused_scale", Kokkos::RangePolicy<exec, Kokkos::IndexType<std::int64_t>>(0, g.extent(0)),
      KOKKOS_LAMBDA(std::int64_t i) { g(i) = from_float<T>(to_float(g(i)) / scaler().scale); });
}
struct unfused_results {
  Kokkos::View<int, memory> bad{"kamp::bench::unfused_bad"};
  Kokkos::View<double, memory> sum{"kamp::bench::unfused_sum"};  // fp64, as unscale_and_check sums
};
template <class T>
void check_finite(const Kokkos::View<T*, memory>& g, const unfused_results& r,
                  const Kokkos::View<gradient_check, memory>& out) {
  Kokkos::parallel_reduce(
      "kamp::bench::unfused_check", Kokkos::RangePolicy<exec, Kokkos::IndexType<std::int64_t>>(0, g.extent(0)),
      KOKKOS_LAMBDA(std::int64_t i, int& b) { b |= is_finite(to_float(g(i))) ? 0 : 1; },
      Kokkos::BOr<int, memory>(r.bad));
  Kokkos::parallel_reduce(
      "kamp::bench::unfused_norm", Kokkos::RangePolicy<exec, Kokkos::IndexType<std::int64_t>>(0, g.extent(0)),
      KOKKOS_LAMBDA(std::int64_t i, double& s) {
        const double x = to_float(g(i));
        s += x * x;
      },
      Kokkos::Sum<double, memory>(r.sum));
  const auto bad = r.bad;
  const auto sum = r.sum;
  Kokkos::parallel_for(
      "kamp::bench::unfused_result", Kokkos::RangePolicy<exec>(0, 1), KOKKOS_LAMBDA(int) {
        out() = gradient_check{bad(), sum()};
      });
}

}  // namespace

stream_triad::stream_triad(std::size_t n)
    : a_(filled<float>("kamp::bench::a", n, 0.0f)),
      b_(filled<float>("kamp::bench::b", n, 1.0f)),
      c_(filled<float>("kamp::bench::c", n, 2.0f)) {}

void stream_triad::operator()() const {
  const auto a = a_, b = b_, c = c_;
  const float s = 3.0f;
  Kokkos::parallel_for(
      "kamp::bench::triad", Kokkos::RangePolicy<exec, Kokkos::IndexType<std::int64_t>>(0, a.extent(0)),
      KOKKOS_LAMBDA(std::int64_t i) { a(i) = b(i) + s * c(i); });
}

void amp_kernels(report& out, std::size_t n_requested, int repeat, const stream_triad& triad) {
  const auto timed = [&](const std::string& name, double bytes, const auto& body, const std::string& note = "") {
    const paired_timing t = time_against(repeat, body, triad);
    out.bandwidth(name, bytes, t, triad.bytes(), note);
    return t;
  };
  const tensor_table table = hundred_tensors(n_requested);
  const std::size_t n = table.flat_size();
  const exec space;
  out.value("amp.parameters", {{"elements", n}, {"tensors", table.count()}});

  {
    auto src = filled<float>("kamp::bench::src", n, 1.1f);
    Kokkos::View<bf16*, memory> dst(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kamp::bench::dst"), n);
    timed("cast fp32->bf16 (RNE)", 6.0 * n, [&] { cast(space, dst, src); });
    const rounding_options sr{rounding::stochastic, 1, 0};
    timed("cast fp32->bf16 (stochastic)", 6.0 * n, [&] { cast(space, dst, src, sr); });
  }

  loss_scaler_options scaler_options;
  scaler_options.init_scale = 1.0f;  // repeated in-place unscaling keeps the values unchanged
  loss_scaler<memory> scaler(scaler_options);
  Kokkos::View<gradient_check, memory> check("kamp::bench::check");
  {
    auto g16 = filled<bf16>("kamp::bench::grads_bf16", n, 0.5f);
    auto g32 = filled<float>("kamp::bench::grads_fp32", n, 0.5f);
    const auto state = scaler.state();
    timed("unscale_and_check fp32 in place + norm", 8.0 * n, [&] { unscale_and_check(space, g32, state, check); });
    timed("unscale_and_check fp32 in place, no norm", 8.0 * n, [&] {
      unscale_and_check(space, g32, state, check, {true, false});
    });
    timed("unscale_and_check bf16 in place + norm", 4.0 * n, [&] { unscale_and_check(space, g16, state, check); });
    timed("check only (bf16, read) + norm", 2.0 * n, [&] {
      unscale_and_check(space, g16, state, check, {false, true});
    });
  }

  {
    // The AMP step: bf16 grads and model copy, fp32 master + m + v: 14 bytes read, 14 written.
    auto grads = filled<bf16>("kamp::bench::grads", n, 1e-3f);
    auto w = filled<float>("kamp::bench::w", n, 0.5f);
    Kokkos::View<bf16*, memory> model("kamp::bench::model", n);
    adamw<bf16, bf16, float, memory> opt(n, {});
    opt.initialize(space, w, model);
    const gradient_control<memory> control{scaler.state(), check, false, 1.0f};
    Kokkos::deep_copy(check, gradient_check{0, 1.0f});
    timed("AdamW fp32 master update (bf16 grads/copy)", 28.0 * n,
          [&] { opt.step(space, model, grads, control, 1e-4f); });

    adamw<bf16, bf16, bf16, memory> pure(n, {}, weight_update::kahan);
    pure.initialize(space, w, model);
    timed("AdamW pure bf16 + Kahan (bf16 m, v)", 20.0 * n, [&] { pure.step(space, model, grads, {}, 1e-4f); });

    // What fusion buys, per training step after backward: fused = one check pass (read-only,
    // with the norm) + the update that unscales on the fly; unfused = scale pass + finite-check
    // pass + norm pass + the update.
    const paired_timing fused = timed("step, fused (check + update)", 30.0 * n, [&] {
      unscale_and_check(space, grads, scaler.state(), check, {false, true});
      opt.step(space, model, grads, control, 1e-4f);
    });
    const gradient_control<memory> unscaled{scaler.state(), check, true, 1.0f};
    const unfused_results results;
    const paired_timing unfused = timed("step, unfused (scale, check, norm, update)", 36.0 * n, [&] {
      scale_in_place(grads, scaler.state());
      check_finite(grads, results, check);
      opt.step(space, model, grads, unscaled, 1e-4f);
    });
    std::printf("  fusion: the unfused step takes %.2f x the time of the fused one\n", unfused.seconds / fused.seconds);
    out.value("amp.fusion_speedup", unfused.seconds / fused.seconds);
  }
}

}  // namespace kamp::bench
