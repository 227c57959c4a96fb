#ifndef KAMP_KERNELS_NN_GELU_HPP
#define KAMP_KERNELS_NN_GELU_HPP

#include <kamp/kernels/nn/detail.hpp>

namespace kamp {

namespace detail {
// GELU, tanh form (GPT-2): 0.5 x (1 + tanh(√(2/π) (x + 0.044715 x³))).
template <class Acc>
struct gelu_constants {
  static constexpr Acc scale = Acc(0.7978845608028654);  // √(2/π)
  static constexpr Acc cubic = Acc(0.044715);
};
}  // namespace detail

/// \brief y = GELU(x) (tanh form) elementwise, computed in fp32 (fp64 for fp64 data) and stored
/// in y's type, which is the compute type of the layer that reads y. Label `kamp::gelu_forward`.
template <class ExecutionSpace, class X, class Y, class... XP, class... YP>
void gelu_forward(const ExecutionSpace& space, const Kokkos::View<X*, XP...>& x, const Kokkos::View<Y*, YP...>& y) {
  using acc = common_accum_t<typename Kokkos::View<X*, XP...>::non_const_value_type, Y>;
  detail::check_extent("kamp::gelu_forward", "y", y.extent(0), x.extent(0));
  const auto* xs = x.data();
  Y* ys = y.data();
  const std::size_t n = x.extent(0);
  constexpr std::size_t c = detail::elements_per_work_item<ExecutionSpace>::value;
  Kokkos::parallel_for(
      "kamp::gelu_forward", detail::work_item_policy<ExecutionSpace>(space, 0, detail::work_items<ExecutionSpace>(n)),
      KOKKOS_LAMBDA(std::int64_t item) {
        using k = detail::gelu_constants<acc>;
        const std::size_t begin = std::size_t(item) * c, end = begin + c < n ? begin + c : n;
        const auto* KAMP_RESTRICT src = xs;
        Y* KAMP_RESTRICT dst = ys;
        KAMP_SIMD()
        for (std::size_t i = begin; i < end; ++i) {
          const acc v = load_as<acc>(src + i);
          store_nearest(dst + i, acc(0.5) * v * (acc(1) + detail::tanh_of(k::scale * (v + k::cubic * v * v * v))));
        }
      });
}

/// \brief dx = dy · GELU'(x) elementwise (x is the saved pre-activation). Label `kamp::gelu_backward`.
template <class ExecutionSpace, class DY, class X, class DX, class... DYP, class... XP, class... DXP>
void gelu_backward(const ExecutionSpace& space, const Kokkos::View<DY*, DYP...>& dy, const Kokkos::View<X*, XP...>& x,
                   const Kokkos::View<DX*, DXP...>& dx) {
  using acc = common_accum_t<typename Kokkos::View<X*, XP...>::non_const_value_type, DX>;
  detail::check_extent("kamp::gelu_backward", "dy", dy.extent(0), x.extent(0));
  detail::check_extent("kamp::gelu_backward", "dx", dx.extent(0), x.extent(0));
  const auto* dys = dy.data();
  const auto* xs = x.data();
  DX* dxs = dx.data();
  const std::size_t n = x.extent(0);
  constexpr std::size_t c = detail::elements_per_work_item<ExecutionSpace>::value;
  Kokkos::parallel_for(
      "kamp::gelu_backward", detail::work_item_policy<ExecutionSpace>(space, 0, detail::work_items<ExecutionSpace>(n)),
      KOKKOS_LAMBDA(std::int64_t item) {
        using k = detail::gelu_constants<acc>;
        const std::size_t begin = std::size_t(item) * c, end = begin + c < n ? begin + c : n;
        const auto* KAMP_RESTRICT src = xs;
        const auto* KAMP_RESTRICT grad = dys;
        DX* KAMP_RESTRICT dst = dxs;
        KAMP_SIMD()
        for (std::size_t i = begin; i < end; ++i) {
          const acc v = load_as<acc>(src + i);
          const acc t = detail::tanh_of(k::scale * (v + k::cubic * v * v * v));
          const acc dt = k::scale * (acc(1) + acc(3) * k::cubic * v * v) * (acc(1) - t * t);
          store_nearest(dst + i, load_as<acc>(grad + i) * (acc(0.5) * (acc(1) + t) + acc(0.5) * v * dt));
        }
      });
}

}  // namespace kamp

#endif
