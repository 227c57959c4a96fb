#ifndef KAMP_KERNELS_DETAIL_FUSED_UPDATE_HPP
#define KAMP_KERNELS_DETAIL_FUSED_UPDATE_HPP

// The fused optimizer's flat update kernel and its one-thread prepare task (fused_optimizer.hpp).
#include <kamp/kernels/cast.hpp>
#include <kamp/kernels/detail/chunked_range.hpp>
#include <kamp/kernels/gradient_check.hpp>
#include <kamp/kernels/loss_scaler.hpp>
#include <kamp/kernels/rounding_options.hpp>
#include <kamp/numeric/convert.hpp>
#include <kamp/numeric/counter_random.hpp>
#include <kamp/numeric/element_access.hpp>
#include <kamp/tools/traffic.hpp>

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace kamp {
namespace detail {

/// What the one-thread prepare task computes for the flat update kernel.
template <class Rule>
struct step_scalars {
  int skip;           ///< found_inf: the update kernel returns without touching anything
  float grad_factor;  ///< 1/scale (unless already unscaled) times the clip coefficient
  float grad_norm;    ///< global L2 norm of the unscaled gradients (0 if not computed)
  std::int64_t t;     ///< 1-based number of this step
  typename Rule::scalars rule;
};

enum class store_scheme { master_nearest, master_stochastic, nearest, stochastic, kahan };

// Functions, not constexpr locals: nvcc's extended lambdas may not capture a variable for the
// first time inside `if constexpr`, and a constexpr local would be such a capture.
KOKKOS_INLINE_FUNCTION constexpr bool has_master(store_scheme s) {
  return s == store_scheme::master_nearest || s == store_scheme::master_stochastic;
}
KOKKOS_INLINE_FUNCTION constexpr bool is_stochastic(store_scheme s) {
  return s == store_scheme::master_stochastic || s == store_scheme::stochastic;
}

/// The caller's model copy and gradients (any layout: addresses as view_access.hpp makes
/// them) and the optimizer's own contiguous master weights and moments.
template <class ModelAddress, class GradAddress, class Moment>
struct optimizer_arrays {
  using Model = value_of<ModelAddress>;
  using Grad = value_of<GradAddress>;
  ModelAddress model;
  GradAddress grads;
  float* master;
  Moment* moment1;
  Moment* moment2;
  Model* compensation;
};

/// The flat update: per element, load the gradient, apply the factor, run the rule in fp32 on
/// the master (or the widened weight), store moments and weights per the scheme.
template <class Rule, store_scheme Scheme, class ExecutionSpace, class ModelAddress, class GradAddress, class Moment,
          class ScalarsView>
void fused_update(const ExecutionSpace& space, const optimizer_arrays<ModelAddress, GradAddress, Moment>& a,
                  const ScalarsView& scalars, std::size_t n, const rounding_options& rounding) {
  using Model = value_of<ModelAddress>;
  using Grad = value_of<GradAddress>;
  // Gradients read; master, moments and compensation read and written; the model copy
  // written, and read too where it is the weight itself (no master).
  report_traffic(Rule::update_label,
                 elements_bytes<Grad, Model>(n) +
                     (a.master ? elements_bytes<float, float>(n) : elements_bytes<Model>(n)) +
                     (a.moment1 ? elements_bytes<Moment, Moment>(n) : 0.0) +
                     (a.moment2 ? elements_bytes<Moment, Moment>(n) : 0.0) +
                     (a.compensation ? elements_bytes<Model, Model>(n) : 0.0),
                 double(n) * Rule::arithmetic + double(n) * kernel_arithmetic{widen_ops<Grad>() + round_ops<Model>()});
  constexpr std::size_t c = elements_per_work_item<ExecutionSpace>::value;
  const std::uint64_t base_seed = rounding.seed, stream_offset = rounding.stream_offset;
  Kokkos::parallel_for(
      Rule::update_label, work_item_policy<ExecutionSpace>(space, 0, work_items<ExecutionSpace>(n)),
      KOKKOS_LAMBDA(std::int64_t k) {
        const step_scalars<Rule> s = scalars();
        if (s.skip) return;
        const std::size_t begin = static_cast<std::size_t>(k) * c, end = begin + c < n ? begin + c : n;
        restrict_t<ModelAddress> w_lo = a.model;
        restrict_t<GradAddress> g_lo = a.grads;
        float* KAMP_RESTRICT w32 = a.master;
        Moment* KAMP_RESTRICT m1 = a.moment1;
        Moment* KAMP_RESTRICT m2 = a.moment2;
        Model* KAMP_RESTRICT comp = a.compensation;
        // A fresh random stream every step (s.t), the same for every backend and shard layout.
        const std::uint64_t seed = base_seed + static_cast<std::uint64_t>(s.t) * 0x9e3779b97f4a7c15ull;
        const std::uint64_t first_index = stream_offset;
        const float factor = s.grad_factor;
        const typename Rule::scalars rule = s.rule;
        KAMP_SIMD()
        for (std::size_t i = begin; i < end; ++i) {
          const float g = load_float(g_lo + i) * factor;
          float first = load_float(m1 + i);
          float second = 0.0f;
          if constexpr (Rule::moments > 1) second = load_float(m2 + i);
          float w;
          if constexpr (has_master(Scheme)) {
            w = w32[i];
          } else {
            w = load_float(w_lo + i);
          }
          const float updated = Rule::apply(rule, w, g, first, second);
          store_nearest(m1 + i, first);
          if constexpr (Rule::moments > 1) store_nearest(m2 + i, second);
          if constexpr (has_master(Scheme)) w32[i] = updated;
          if constexpr (Scheme == store_scheme::kahan) {
            // Kahan summation: add the carried remainder to this step's change, store the
            // rounded weight, carry what the rounding lost (exact in fp32: both are 16-bit).
            const float y = (updated - w) + load_float(comp + i);
            store_nearest(w_lo + i, w + y);
            store_nearest(comp + i, y - (load_float(w_lo + i) - w));
          } else if constexpr (is_stochastic(Scheme)) {
            store_stochastic(w_lo + i, updated, counter_random(seed, first_index + i));
          } else {
            store_nearest(w_lo + i, updated);
          }
        }
      });
}

}  // namespace detail

namespace detail {
template <class LearningRate>
KOKKOS_INLINE_FUNCTION float learning_rate_at(const LearningRate& lr, std::int64_t steps_taken) {
  if constexpr (std::is_arithmetic_v<LearningRate>) {
    return static_cast<float>(lr);
  } else {
    return lr(steps_taken);
  }
}
}  // namespace detail

}  // namespace kamp

#endif
