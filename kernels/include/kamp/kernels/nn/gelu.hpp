#ifndef KAMP_KERNELS_NN_GELU_HPP
#define KAMP_KERNELS_NN_GELU_HPP

#include <kamp/kernels/nn/column_sums.hpp>
#include <kamp/kernels/nn/detail/nn_common.hpp>
#include <kamp/tools/traffic.hpp>

#include <cstddef>
#include <cstdint>

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

/// Per element: gelu_of (two_u: 3, the sum and difference: 2, exp, one division), the loads and the store.
template <class X, class Y>
constexpr kernel_arithmetic gelu_forward_arithmetic() {
  return {5 + widen_ops<X>() + round_ops<Y>(), 1, 1};
}
/// Per element: gelu_grad_of (u: 4, tanh_of: 3 with its exp and division, dt: 6, the result: 4),
/// the product with dy, the loads and the store.
template <class DY, class X, class DX>
constexpr kernel_arithmetic gelu_backward_arithmetic() {
  return {18 + widen_ops<DY>() + widen_ops<X>() + round_ops<DX>(), 1, 1};
}

template <class ExecutionSpace, class XA, class YA>
void gelu_forward_kernel(const ExecutionSpace& space, XA xs, YA ys, std::size_t n) {
  using X = value_of<XA>;
  using Y = value_of<YA>;
  report_traffic("kamp::gelu_forward", elements_bytes<X, Y>(n), double(n) * gelu_forward_arithmetic<X, Y>());
  using acc = common_accum_t<X, Y>;
  constexpr std::size_t c = elements_per_work_item<ExecutionSpace>::value;
  Kokkos::parallel_for(
      "kamp::gelu_forward", work_item_policy<ExecutionSpace>(space, 0, work_items<ExecutionSpace>(n)),
      KOKKOS_LAMBDA(std::int64_t item) {
        const std::size_t begin = std::size_t(item) * c, end = begin + c < n ? begin + c : n;
        restrict_t<XA> src = xs;
        restrict_t<YA> dst = ys;
        KAMP_SIMD()
        for (std::size_t i = begin; i < end; ++i) store_nearest(dst + i, gelu_of(load_as<acc>(src + i)));
      });
}

// GELU'(v) = 0.5 (1 + tanh u) + 0.5 v (1 − tanh² u) du/dv. One definition for every backward
// pass: the fused bias-gradient pass promises the bits of gelu_backward.
template <class Acc>
KOKKOS_INLINE_FUNCTION Acc gelu_grad_of(Acc v) {
  using k = gelu_constants<Acc>;
  const Acc t = tanh_of(k::scale * (v + k::cubic * v * v * v));
  const Acc dt = k::scale * (Acc(1) + Acc(3) * k::cubic * v * v) * (Acc(1) - t * t);
  return Acc(0.5) * (Acc(1) + t) + Acc(0.5) * v * dt;
}

template <class ExecutionSpace, class DYA, class XA, class DXA>
void gelu_backward_kernel(const ExecutionSpace& space, DYA dys, XA xs, DXA dxs, std::size_t n) {
  using DY = value_of<DYA>;
  using X = value_of<XA>;
  using DX = value_of<DXA>;
  report_traffic("kamp::gelu_backward", elements_bytes<DY, X, DX>(n),
                 double(n) * gelu_backward_arithmetic<DY, X, DX>());
  using acc = common_accum_t<X, DX>;
  constexpr std::size_t c = elements_per_work_item<ExecutionSpace>::value;
  Kokkos::parallel_for(
      "kamp::gelu_backward", work_item_policy<ExecutionSpace>(space, 0, work_items<ExecutionSpace>(n)),
      KOKKOS_LAMBDA(std::int64_t item) {
        const std::size_t begin = std::size_t(item) * c, end = begin + c < n ? begin + c : n;
        restrict_t<XA> src = xs;
        restrict_t<DYA> grad = dys;
        restrict_t<DXA> dst = dxs;
        KAMP_SIMD()
        for (std::size_t i = begin; i < end; ++i)
          store_nearest(dst + i, load_as<acc>(grad + i) * gelu_grad_of(load_as<acc>(src + i)));
      });
}

template <class ExecutionSpace, class DYM, class XM, class DXM, class SA>
void gelu_backward_bias_grad_kernel(const ExecutionSpace& space, DYM dys, XM xs, DXM dxs, std::int64_t rows,
                                    std::int64_t cols, SA dbias) {
  using DY = typename DYM::value_type;
  using X = typename XM::value_type;
  using DX = typename DXM::value_type;
  using S = value_of<SA>;
  report_traffic(
      "kamp::gelu_backward_bias_grad", elements_bytes<DY, X, DX>(rows * cols) + elements_bytes<S, S>(cols),
      double(rows * cols) * (gelu_backward_arithmetic<DY, X, DX>() + kernel_arithmetic{1 + widen_ops<DX>()}));
  using acc = common_accum_t<X, DX>;
  using sum_acc = common_accum_t<DX, S>;
  // The bias gradient sums dx as stored (rounded), as column_sums of dx would.
  write_and_sum_columns<sum_acc>(
      "kamp::gelu_backward_bias_grad", space, rows, cols, dbias,
      KOKKOS_LAMBDA(std::int64_t n, std::int64_t c) {
        DX* const out = dxs.at(n, c);
        store_nearest(out, load_as<acc>(dys.at(n, c)) * gelu_grad_of(load_as<acc>(xs.at(n, c))));
        return load_as<sum_acc>(out);
      },
      KOKKOS_LAMBDA(std::int64_t n, std::int64_t c) { return load_as<sum_acc>(dxs.at(n, c)); });
}

}  // namespace detail

/// \brief y = GELU(x) (tanh form) elementwise, computed in fp32 (fp64 for fp64 data) and stored
/// in y's type, which is the compute type of the layer that reads y. Label `kamp::gelu_forward`.
template <class ExecutionSpace, class X, class Y, class... XP, class... YP>
void gelu_forward(const ExecutionSpace& space, const Kokkos::View<X*, XP...>& x, const Kokkos::View<Y*, YP...>& y) {
  detail::check_extent("kamp::gelu_forward", "y", y.extent(0), x.extent(0));
  detail::with_access([&](auto xs, auto ys) { detail::gelu_forward_kernel(space, xs, ys, x.extent(0)); }, x, y);
}

/// \brief dx = dy · GELU'(x) elementwise (x is the saved pre-activation). Label `kamp::gelu_backward`.
template <class ExecutionSpace, class DY, class X, class DX, class... DYP, class... XP, class... DXP>
void gelu_backward(const ExecutionSpace& space, const Kokkos::View<DY*, DYP...>& dy, const Kokkos::View<X*, XP...>& x,
                   const Kokkos::View<DX*, DXP...>& dx) {
  detail::check_extent("kamp::gelu_backward", "dy", dy.extent(0), x.extent(0));
  detail::check_extent("kamp::gelu_backward", "dx", dx.extent(0), x.extent(0));
  detail::with_access(
      [&](auto dys, auto xs, auto dxs) { detail::gelu_backward_kernel(space, dys, xs, dxs, x.extent(0)); }, dy, x, dx);
}

/// \brief dx = dy · GELU'(x) elementwise, as gelu_backward, and dbias(m) += Σ_n dx(n, m) of the
/// stored dx, in one pass: the MLP's up-projection bias gradient is the column sum of the GELU
/// input gradient, and computing it here saves column_sums a second read of dx. The same formula
/// and summation order as gelu_backward followed by column_sums(dx, dbias): the same bits where
/// the compiler contracts GELU' into multiply-adds alike in both loops, else within GELU's
/// error bound (g++ 16: up to 8 fp32 ulps). Label
/// `kamp::gelu_backward_bias_grad`.
///
/// \param dy     (N, M) gradient of the GELU output
/// \param x      (N, M) saved pre-activation
/// \param dx     (N, M) gradient of the pre-activation, overwritten (=)
/// \param dbias  (M) bias gradient, accumulated (+=)
template <class ExecutionSpace, class DY, class X, class DX, class S, class... DYP, class... XP, class... DXP,
          class... SP>
void gelu_backward_and_bias_grad(const ExecutionSpace& space, const Kokkos::View<DY**, DYP...>& dy,
                                 const Kokkos::View<X**, XP...>& x, const Kokkos::View<DX**, DXP...>& dx,
                                 const Kokkos::View<S*, SP...>& dbias) {
  detail::check_extent("kamp::gelu_backward_and_bias_grad", "dy rows", dy.extent(0), x.extent(0));
  detail::check_extent("kamp::gelu_backward_and_bias_grad", "dy columns", dy.extent(1), x.extent(1));
  detail::check_extent("kamp::gelu_backward_and_bias_grad", "dx rows", dx.extent(0), x.extent(0));
  detail::check_extent("kamp::gelu_backward_and_bias_grad", "dx columns", dx.extent(1), x.extent(1));
  detail::check_extent("kamp::gelu_backward_and_bias_grad", "dbias", dbias.extent(0), x.extent(1));
  detail::with_access(
      [&](auto dys, auto xs, auto dxs, auto db) {
        detail::gelu_backward_bias_grad_kernel(space, dys, xs, dxs, x.extent(0), x.extent(1), db);
      },
      dy, x, dx, dbias);
}

}  // namespace kamp

#endif
