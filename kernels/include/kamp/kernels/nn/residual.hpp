#ifndef KAMP_KERNELS_NN_RESIDUAL_HPP
#define KAMP_KERNELS_NN_RESIDUAL_HPP

#include <kamp/kernels/nn/detail/nn_common.hpp>
#include <kamp/kernels/nn/rows.hpp>
#include <kamp/tools/traffic.hpp>

namespace kamp {

namespace detail {

template <class ExecutionSpace, class XM, class BA, class OM>
void residual_kernel(const ExecutionSpace& space, XM x, BA bias, OM out, std::int64_t rows, std::int64_t c) {
  using X = typename XM::value_type;
  using B = value_of<BA>;
  using O = typename OM::value_type;
  report_traffic("kamp::residual_with_bias", elements_bytes<X, O>(rows * c) + elements_bytes<B>(c));
  using acc = common_accum_t<X, B, O>;
  using member = typename Kokkos::TeamPolicy<ExecutionSpace>::member_type;
  for_each_row(
      "kamp::residual_with_bias", space, rows, KOKKOS_LAMBDA(const member& m, std::int64_t r) {
        const restrict_t<decltype(x.row(r))> src = x.row(r);
        const restrict_t<decltype(out.row(r))> dst = out.row(r);
        row_for(m, c, [&](std::int64_t i) { store_nearest(dst + i, load_as<acc>(src + i) + load_as<acc>(bias + i)); });
      });
}

}  // namespace detail

/// \brief out(n, c) = x(n, c) + bias(c): a residual branch's skip connection plus its Linear's
/// bias, written before the Linear's GEMM adds A·Wᵀ to `out` (beta = 1). One pass instead of a
/// copy and a bias epilogue, and the GEMM needs no bias, so any vendor takes it.
/// Label `kamp::residual_with_bias`.
template <class ExecutionSpace, class X, class B, class O, class... XP, class... BP, class... OP>
void residual_with_bias(const ExecutionSpace& space, const Kokkos::View<X**, XP...>& x,
                        const Kokkos::View<B*, BP...>& bias, const Kokkos::View<O**, OP...>& out) {
  detail::check_extent("kamp::residual_with_bias", "bias", bias.extent(0), x.extent(1));
  detail::check_extent("kamp::residual_with_bias", "out rows", out.extent(0), x.extent(0));
  detail::check_extent("kamp::residual_with_bias", "out columns", out.extent(1), x.extent(1));
  detail::with_access(
      [&](auto xs, auto b, auto os) { detail::residual_kernel(space, xs, b, os, x.extent(0), x.extent(1)); }, x, bias,
      out);
}

}  // namespace kamp

#endif
