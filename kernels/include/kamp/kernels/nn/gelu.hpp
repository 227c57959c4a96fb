#ifndef KAMP_KERNELS_NN_GELU_HPP
#define KAMP_KERNELS_NN_GELU_HPP

#include <kamp/kernels/nn/detail.hpp>
#include <kamp/tools/traffic.hpp>

namespace kamp {

namespace detail {

// GELU, tanh form (GPT-2): 0.5 x (1 + tanh(u)), u = √(2/π) (x + 0.044715 x³).
template <class Acc>
struct gelu_constants {
  static constexpr double scale_exact = 0.7978845608028654;  // √(2/π)
  static constexpr double cubic_exact = 0.044715;
  static constexpr Acc scale = Acc(scale_exact);
  static constexpr Acc cubic = Acc(cubic_exact);
  static constexpr Acc twice_scale = Acc(2 * scale_exact);
  static constexpr Acc twice_scale_cubic = Acc(2 * scale_exact * cubic_exact);
};

// The forward pass as x − x / (1 + e^{2u}), the same function as 0.5 x (1 + tanh u) (which is
// x · sigmoid(2u)) in a third fewer operations: on CPUs the kernel is bound by arithmetic, not
// bytes, and a 16-bit form adds its conversions to that. Both forms cancel alike for negative x
// (an absolute error near ulp(x)), and both give x or 0 exactly where e^{2u} saturates.
template <class Acc>
KOKKOS_INLINE_FUNCTION Acc gelu_of(Acc v) {
  using k = gelu_constants<Acc>;
  const Acc two_u = v * (k::twice_scale + k::twice_scale_cubic * (v * v));
  return v - v / (Acc(1) + exp_of(two_u));
}

template <class ExecutionSpace, class X, class Y>
void gelu_forward_kernel(const ExecutionSpace& space, const X* xs, Y* ys, std::size_t n) {
  report_traffic("kamp::gelu_forward", elements_bytes<X, Y>(n));
  using acc = common_accum_t<X, Y>;
  constexpr std::size_t c = elements_per_work_item<ExecutionSpace>::value;
  Kokkos::parallel_for(
      "kamp::gelu_forward", work_item_policy<ExecutionSpace>(space, 0, work_items<ExecutionSpace>(n)),
      KOKKOS_LAMBDA(std::int64_t item) {
        const std::size_t begin = std::size_t(item) * c, end = begin + c < n ? begin + c : n;
        const X* KAMP_RESTRICT src = xs;
        Y* KAMP_RESTRICT dst = ys;
        KAMP_SIMD()
        for (std::size_t i = begin; i < end; ++i) store_nearest(dst + i, gelu_of(load_as<acc>(src + i)));
      });
}

template <class ExecutionSpace, class DY, class X, class DX>
void gelu_backward_kernel(const ExecutionSpace& space, const DY* dys, const X* xs, DX* dxs, std::size_t n) {
  report_traffic("kamp::gelu_backward", elements_bytes<DY, X, DX>(n));
  using acc = common_accum_t<X, DX>;
  constexpr std::size_t c = elements_per_work_item<ExecutionSpace>::value;
  Kokkos::parallel_for(
      "kamp::gelu_backward", work_item_policy<ExecutionSpace>(space, 0, work_items<ExecutionSpace>(n)),
      KOKKOS_LAMBDA(std::int64_t item) {
        using k = gelu_constants<acc>;
        const std::size_t begin = std::size_t(item) * c, end = begin + c < n ? begin + c : n;
        const X* KAMP_RESTRICT src = xs;
        const DY* KAMP_RESTRICT grad = dys;
        DX* KAMP_RESTRICT dst = dxs;
        KAMP_SIMD()
        for (std::size_t i = begin; i < end; ++i) {
          const acc v = load_as<acc>(src + i);
          const acc t = tanh_of(k::scale * (v + k::cubic * v * v * v));
          const acc dt = k::scale * (acc(1) + acc(3) * k::cubic * v * v) * (acc(1) - t * t);
          store_nearest(dst + i, load_as<acc>(grad + i) * (acc(0.5) * (acc(1) + t) + acc(0.5) * v * dt));
        }
      });
}

}  // namespace detail

/// \brief y = GELU(x) (tanh form) elementwise, computed in fp32 (fp64 for fp64 data) and stored
/// in y's type, which is the compute type of the layer that reads y. Label `kamp::gelu_forward`.
template <class ExecutionSpace, class X, class Y, class... XP, class... YP>
void gelu_forward(const ExecutionSpace& space, const Kokkos::View<X*, XP...>& x, const Kokkos::View<Y*, YP...>& y) {
  detail::check_extent("kamp::gelu_forward", "y", y.extent(0), x.extent(0));
  detail::gelu_forward_kernel(space, x.data(), y.data(), x.extent(0));
}

/// \brief dx = dy · GELU'(x) elementwise (x is the saved pre-activation). Label `kamp::gelu_backward`.
template <class ExecutionSpace, class DY, class X, class DX, class... DYP, class... XP, class... DXP>
void gelu_backward(const ExecutionSpace& space, const Kokkos::View<DY*, DYP...>& dy, const Kokkos::View<X*, XP...>& x,
                   const Kokkos::View<DX*, DXP...>& dx) {
  detail::check_extent("kamp::gelu_backward", "dy", dy.extent(0), x.extent(0));
  detail::check_extent("kamp::gelu_backward", "dx", dx.extent(0), x.extent(0));
  detail::gelu_backward_kernel(space, dy.data(), x.data(), dx.data(), x.extent(0));
}

}  // namespace kamp

#endif
