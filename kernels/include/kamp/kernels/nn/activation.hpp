#ifndef KAMP_KERNELS_NN_ACTIVATION_HPP
#define KAMP_KERNELS_NN_ACTIVATION_HPP

// The activations of the networks science codes train (MLP surrogates): forward and backward
// over (N, C) matrices of any layout, in fp32 (fp64 for fp64 data) whatever the storage type.
#include <kamp/kernels/nn/detail/nn_common.hpp>
#include <kamp/kernels/nn/gelu.hpp>
#include <kamp/kernels/nn/rows.hpp>
#include <kamp/tools/traffic.hpp>

#include <cstdint>
#include <stdexcept>
#include <string>

namespace kamp {

/// GELU is the tanh form (GPT-2's, PyTorch's `GELU(approximate="tanh")`).
enum class activation_function { identity, relu, gelu, tanh, silu };

inline const char* name(activation_function a) {
  switch (a) {
    case activation_function::identity:
      return "identity";
    case activation_function::relu:
      return "relu";
    case activation_function::gelu:
      return "gelu";
    case activation_function::tanh:
      return "tanh";
    case activation_function::silu:
      return "silu";
  }
  return "?";
}

namespace detail {

template <activation_function A, class Acc>
KOKKOS_INLINE_FUNCTION Acc activate(Acc v) {
  if constexpr (A == activation_function::relu) {
    return v > Acc(0) ? v : Acc(0);
  } else if constexpr (A == activation_function::gelu) {
    return gelu_of(v);
  } else if constexpr (A == activation_function::tanh) {
    return tanh_of(v);
  } else if constexpr (A == activation_function::silu) {
    return v / (Acc(1) + exp_of(-v));
  } else {
    return v;
  }
}

/// d activate / dv at v. ReLU's derivative at 0 is 0, as PyTorch's.
template <activation_function A, class Acc>
KOKKOS_INLINE_FUNCTION Acc activation_slope(Acc v) {
  if constexpr (A == activation_function::relu) {
    return v > Acc(0) ? Acc(1) : Acc(0);
  } else if constexpr (A == activation_function::gelu) {
    return gelu_grad_of(v);
  } else if constexpr (A == activation_function::tanh) {
    const Acc t = tanh_of(v);
    return Acc(1) - t * t;
  } else if constexpr (A == activation_function::silu) {
    const Acc s = Acc(1) / (Acc(1) + exp_of(-v));
    return s * (Acc(1) + v * (Acc(1) - s));
  } else {
    return Acc(1);
  }
}

/// y = act(x), plus skip where Skip.
template <activation_function A, bool Skip, class ExecutionSpace, class XM, class SM, class YM>
void activation_forward_kernel(const ExecutionSpace& space, XM xs, SM skips, YM ys, std::int64_t n, std::int64_t c) {
  using X = typename XM::value_type;
  using Y = typename YM::value_type;
  constexpr double transcendental = A == activation_function::relu || A == activation_function::identity ? 0.0 : 1.0;
  report_traffic(
      "kamp::activation_forward",
      elements_bytes<X, Y>(n * c) + (Skip ? elements_bytes<typename SM::value_type>(n * c) : 0.0),
      double(n * c) * kernel_arithmetic{6 + widen_ops<X>() + round_ops<Y>(), transcendental, transcendental});
  using acc = common_accum_t<X, Y>;
  using member = typename Kokkos::TeamPolicy<ExecutionSpace>::member_type;
  for_each_row(
      "kamp::activation_forward", space, n, KOKKOS_LAMBDA(const member& m, std::int64_t r) {
        const auto x = xs.row(r);
        const auto y = ys.row(r);
        // Read outside `if constexpr`: nvcc's device lambdas cannot first capture a variable there.
        const auto skip = skips.row(r);
        row_for(m, c, [&](std::int64_t i) {
          acc v = activate<A>(load_as<acc>(x + i));
          if constexpr (Skip) v += load_as<acc>(skip + i);
          store_nearest(y + i, v);
        });
      });
}

/// dx = dy · act'(x).
template <activation_function A, class ExecutionSpace, class DYM, class XM, class DXM>
void activation_backward_kernel(const ExecutionSpace& space, DYM dys, XM xs, DXM dxs, std::int64_t n, std::int64_t c) {
  using DY = typename DYM::value_type;
  using X = typename XM::value_type;
  using DX = typename DXM::value_type;
  constexpr double transcendental = A == activation_function::relu || A == activation_function::identity ? 0.0 : 1.0;
  report_traffic("kamp::activation_backward", elements_bytes<DY, X, DX>(n * c),
                 double(n * c) * kernel_arithmetic{8 + widen_ops<DY>() + widen_ops<X>() + round_ops<DX>(),
                                                   transcendental, transcendental});
  using acc = common_accum_t<X, DX>;
  using member = typename Kokkos::TeamPolicy<ExecutionSpace>::member_type;
  for_each_row(
      "kamp::activation_backward", space, n, KOKKOS_LAMBDA(const member& m, std::int64_t r) {
        const auto dy = dys.row(r);
        const auto x = xs.row(r);
        const auto dx = dxs.row(r);
        row_for(m, c, [&](std::int64_t i) {
          store_nearest(dx + i, load_as<acc>(dy + i) * activation_slope<A>(load_as<acc>(x + i)));
        });
      });
}

/// Calls f(std::integral_constant<activation_function, a>) for the run-time activation a.
template <class F>
void with_activation(activation_function a, const F& f) {
  switch (a) {
    case activation_function::identity:
      return f(std::integral_constant<activation_function, activation_function::identity>());
    case activation_function::relu:
      return f(std::integral_constant<activation_function, activation_function::relu>());
    case activation_function::gelu:
      return f(std::integral_constant<activation_function, activation_function::gelu>());
    case activation_function::tanh:
      return f(std::integral_constant<activation_function, activation_function::tanh>());
    case activation_function::silu:
      return f(std::integral_constant<activation_function, activation_function::silu>());
  }
  throw std::invalid_argument("kamp: unknown activation");
}

template <class A, class B>
void check_same_shape(const char* api, const char* what, const A& a, const B& b) {
  check_extent(api, (std::string(what) + " rows").c_str(), a.extent(0), b.extent(0));
  check_extent(api, (std::string(what) + " columns").c_str(), a.extent(1), b.extent(1));
}

}  // namespace detail

/// \brief y = act(x) elementwise on (N, C) matrices of any layout, computed in fp32 (fp64 for
/// fp64 data) and rounded once to y's type. Label `kamp::activation_forward`.
template <class ExecutionSpace, class XView, class YView>
void activation_forward(const ExecutionSpace& space, activation_function a, const XView& x, const YView& y) {
  static_assert(XView::rank == 2 && YView::rank == 2, "kamp::activation_forward: x and y are (N, C) matrices");
  detail::check_same_shape("kamp::activation_forward", "y", y, x);
  detail::with_activation(a, [&](auto kind) {
    detail::with_access(
        [&](auto xs, auto ys) {
          detail::activation_forward_kernel<decltype(kind)::value, false>(space, xs, xs, ys, x.extent(0), x.extent(1));
        },
        x, y);
  });
}

/// \brief A residual block's output: y = skip + act(x), summed in fp32 and rounded once to y's
/// type. y may not be skip. Label `kamp::activation_forward`.
template <class ExecutionSpace, class XView, class SkipView, class YView>
void residual_activation_forward(const ExecutionSpace& space, activation_function a, const XView& x,
                                 const SkipView& skip, const YView& y) {
  static_assert(XView::rank == 2 && SkipView::rank == 2 && YView::rank == 2,
                "kamp::residual_activation_forward: x, skip and y are (N, C) matrices");
  constexpr const char* api = "kamp::residual_activation_forward";
  detail::check_same_shape(api, "skip", skip, x);
  detail::check_same_shape(api, "y", y, x);
  detail::with_activation(a, [&](auto kind) {
    detail::with_access(
        [&](auto xs, auto ss, auto ys) {
          detail::activation_forward_kernel<decltype(kind)::value, true>(space, xs, ss, ys, x.extent(0), x.extent(1));
        },
        x, skip, y);
  });
}

/// \brief dx = dy · act'(x) elementwise (x: the saved input of the activation), computed in fp32
/// and rounded once to dx's type. Label `kamp::activation_backward`.
template <class ExecutionSpace, class DYView, class XView, class DXView>
void activation_backward(const ExecutionSpace& space, activation_function a, const DYView& dy, const XView& x,
                         const DXView& dx) {
  static_assert(DYView::rank == 2 && XView::rank == 2 && DXView::rank == 2,
                "kamp::activation_backward: dy, x and dx are (N, C) matrices");
  detail::check_same_shape("kamp::activation_backward", "dy", dy, x);
  detail::check_same_shape("kamp::activation_backward", "dx", dx, x);
  detail::with_activation(a, [&](auto kind) {
    detail::with_access(
        [&](auto dys, auto xs, auto dxs) {
          detail::activation_backward_kernel<decltype(kind)::value>(space, dys, xs, dxs, x.extent(0), x.extent(1));
        },
        dy, x, dx);
  });
}

}  // namespace kamp

#endif
