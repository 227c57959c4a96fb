#ifndef KAMP_KERNELS_NN_LAYERNORM_HPP
#define KAMP_KERNELS_NN_LAYERNORM_HPP

#include <kamp/kernels/nn/detail/nn_common.hpp>
#include <kamp/kernels/nn/rows.hpp>
#include <kamp/tools/traffic.hpp>

#include <stdexcept>

namespace kamp {

namespace detail {

/// One row of LayerNorm, shared by layernorm_forward and residual_layernorm_forward so that both
/// normalize bit for bit alike: the row's mean, its centred variance, y = (x - mean) rstd gamma +
/// beta rounded to Y, and the row's mean and rstd. Every loop reads the row `xr` from memory, so
/// the two kernels run the very same loops (a CPU's vectorized sums add in the same order).
template <class Member, class XR, class PA, class YR, class S>
KOKKOS_INLINE_FUNCTION void layernorm_row(const Member& m, restrict_t<XR> xr, PA g, PA b, restrict_t<YR> yr, S* mean,
                                          S* rstd, std::int64_t c, S epsilon) {
  using acc = S;
  const acc mu = row_sum<acc>(m, c, [&](std::int64_t i) { return load_as<acc>(xr + i); }) / acc(c);
  // Two passes over a row in cache: the centred variance does not cancel catastrophically.
  const acc sq = row_sum<acc>(m, c, [&](std::int64_t i) {
    const acc d = load_as<acc>(xr + i) - mu;
    return d * d;
  });
  const acc r = acc(1) / sqrt_of(sq / acc(c) + epsilon);
  row_for(m, c, [&](std::int64_t i) {
    store_nearest(yr + i, (load_as<acc>(xr + i) - mu) * r * load_as<acc>(g + i) + load_as<acc>(b + i));
  });
  row_once(m, [&] {
    *mean = mu;
    *rstd = r;
  });
}

/// Per element: the mean's and the variance's sums (3), the normalized, scaled and shifted
/// output (4), the loads and the store; per row a square root and a division.
template <class X, class Y>
constexpr kernel_arithmetic layernorm_forward_arithmetic(std::int64_t n, std::int64_t c) {
  return double(n * c) * kernel_arithmetic{7 + 3 * widen_ops<X>() + round_ops<Y>()} +
         double(n) * kernel_arithmetic{0, 0, 1, 1};
}

template <class ExecutionSpace, class XM, class PA, class YM, class SA>
void layernorm_forward_kernel(const ExecutionSpace& space, XM xs, PA g, PA b, YM ys, SA ms, SA rs, std::int64_t n,
                              std::int64_t c, value_of<SA> epsilon) {
  using X = typename XM::value_type;
  using P = value_of<PA>;
  using Y = typename YM::value_type;
  using S = value_of<SA>;
  report_traffic("kamp::layernorm_forward",
                 elements_bytes<X, Y>(n * c) + elements_bytes<P, P>(c) + elements_bytes<S, S>(n),
                 layernorm_forward_arithmetic<X, Y>(n, c));
  using member = typename Kokkos::TeamPolicy<ExecutionSpace>::member_type;
  for_each_row(
      "kamp::layernorm_forward", space, n, KOKKOS_LAMBDA(const member& m, std::int64_t row) {
        layernorm_row<member, decltype(xs.row(row)), PA, decltype(ys.row(row))>(m, xs.row(row), g, b, ys.row(row),
                                                                                ms + row, rs + row, c, epsilon);
      });
}

template <class ExecutionSpace, class XM, class BM, class PA, class OM, class YM, class SA>
void residual_layernorm_forward_kernel(const ExecutionSpace& space, XM xs, BM bs, PA g, PA b, OM os, YM ys, SA ms,
                                       SA rs, std::int64_t n, std::int64_t c, value_of<SA> epsilon) {
  using X = typename XM::value_type;
  using B = typename BM::value_type;
  using P = value_of<PA>;
  using O = typename OM::value_type;
  using Y = typename YM::value_type;
  using S = value_of<SA>;
  // x and branch are read once and out written once; LayerNorm re-reads out's row from cache.
  report_traffic("kamp::residual_layernorm_forward",
                 elements_bytes<X, B, O, Y>(n * c) + elements_bytes<P, P>(c) + elements_bytes<S, S>(n),
                 layernorm_forward_arithmetic<O, Y>(n, c) +
                     double(n * c) * kernel_arithmetic{1 + widen_ops<X>() + widen_ops<B>() + round_ops<O>()});
  using acc = S;
  using member = typename Kokkos::TeamPolicy<ExecutionSpace>::member_type;
  for_each_row(
      "kamp::residual_layernorm_forward", space, n, KOKKOS_LAMBDA(const member& m, std::int64_t row) {
        const restrict_t<decltype(xs.row(row))> xr = xs.row(row);
        // Not restrict: out may be branch itself, each element read before the same lane writes it.
        const auto br = bs.row(row);
        const auto outr = os.row(row);
        row_for(m, c, [&](std::int64_t i) { store_nearest(outr + i, load_as<acc>(xr + i) + load_as<acc>(br + i)); });
        // No barrier: row_for and row_sum hand each lane the same indices, so lanes read back their own stores.
        layernorm_row<member, decltype(outr), PA, decltype(ys.row(row))>(m, outr, g, b, ys.row(row), ms + row, rs + row,
                                                                         c, epsilon);
      });
}

template <class ExecutionSpace, class DYM, class XM, class PA, class SA, class DXM, class GA>
void layernorm_backward_kernel(const ExecutionSpace& space, DYM dys, XM xs, PA g, SA ms, SA rs, DXM dxs, GA dg, GA db,
                               std::int64_t n, std::int64_t c) {
  using DY = typename DYM::value_type;
  using X = typename XM::value_type;
  using P = value_of<PA>;
  using S = value_of<SA>;
  using DX = typename DXM::value_type;
  using G = value_of<GA>;
  // dx is accumulated into (read and written); the parameter pass reads dy and x again.
  // Per element: dy·gamma and its sum (2), the second sum (4), dx (7), each pass's loads; per
  // row two divisions.
  report_traffic(
      "kamp::layernorm_backward", elements_bytes<DY, X, DX, DX>(n * c) + elements_bytes<P>(c) + elements_bytes<S, S>(n),
      double(n * c) *
              kernel_arithmetic{13 + 3 * widen_ops<DY>() + 2 * widen_ops<X>() + widen_ops<DX>() + round_ops<DX>()} +
          double(n) * kernel_arithmetic{0, 0, 2});
  report_traffic("kamp::layernorm_backward::params",
                 elements_bytes<DY, X>(n * c) + elements_bytes<S, S>(n) + elements_bytes<G, G, G, G>(c));
  using acc = S;
  using member = typename Kokkos::TeamPolicy<ExecutionSpace>::member_type;
  for_each_row(
      "kamp::layernorm_backward", space, n, KOKKOS_LAMBDA(const member& m, std::int64_t row) {
        const restrict_t<decltype(xs.row(row))> xr = xs.row(row);
        const restrict_t<decltype(dys.row(row))> dyr = dys.row(row);
        const acc mu = ms[row], r = rs[row];
        // dx = r (dŷ - mean(dŷ) - x̂ mean(dŷ x̂)) with dŷ = dy gamma.
        const auto d = [&](std::int64_t i) { return load_as<acc>(dyr + i) * load_as<acc>(g + i); };
        const acc mean_d = row_sum<acc>(m, c, d) / acc(c);
        const acc mean_dx =
            row_sum<acc>(m, c, [&](std::int64_t i) { return d(i) * (load_as<acc>(xr + i) - mu) * r; }) / acc(c);
        const restrict_t<decltype(dxs.row(row))> out = dxs.row(row);
        row_for(m, c, [&](std::int64_t i) {
          const acc xhat = (load_as<acc>(xr + i) - mu) * r;
          store_nearest(out + i, load_as<acc>(out + i) + r * (d(i) - mean_d - xhat * mean_dx));
        });
      });

  constexpr int block = column_block<ExecutionSpace>::value;
  Kokkos::parallel_for(
      "kamp::layernorm_backward::params", row_policy(space, (c + block - 1) / block), KOKKOS_LAMBDA(std::int64_t blk) {
        const std::int64_t c0 = blk * block, width = c - c0 < block ? c - c0 : block;
        acc sg[block] = {}, sb[block] = {};
        for (std::int64_t row = 0; row < n; ++row) {
          const acc mu = ms[row], r = rs[row];
          KAMP_SIMD()
          for (std::int64_t i = 0; i < width; ++i) {
            const acc d = load_as<acc>(dys.at(row, c0 + i));
            sg[i] += d * (load_as<acc>(xs.at(row, c0 + i)) - mu) * r;
            sb[i] += d;
          }
        }
        for (std::int64_t i = 0; i < width; ++i) {
          store_nearest(dg + (c0 + i), load_as<acc>(dg + (c0 + i)) + sg[i]);
          store_nearest(db + (c0 + i), load_as<acc>(db + (c0 + i)) + sb[i]);
        }
      });
}

}  // namespace detail

/// \brief y = (x - mean) * rstd * gamma + beta per row of x (N, C), statistics in fp32 (fp64
/// for fp64 data) whatever the storage types, as autocast keeps layer_norm in fp32.
///
/// \param x      (N, C) input, usually the fp32 residual stream
/// \param gamma  (C) scale, beta (C) shift: fp32, bf16 (pure-bf16 weights) or fp64
/// \param y      (N, C) output in the compute type of the layer that reads it
/// \param mean   (N) and rstd (N): saved for the backward pass (fp32, or fp64)
/// Label `kamp::layernorm_forward`.
template <class ExecutionSpace, class X, class P, class Y, class S, class... XP, class... PP, class... YP, class... SP>
void layernorm_forward(const ExecutionSpace& space, const Kokkos::View<X**, XP...>& x,
                       const Kokkos::View<P*, PP...>& gamma, const Kokkos::View<P*, PP...>& beta,
                       const Kokkos::View<Y**, YP...>& y, const Kokkos::View<S*, SP...>& mean,
                       const Kokkos::View<S*, SP...>& rstd, double eps = 1e-5) {
  const std::int64_t n = x.extent(0), c = x.extent(1);
  detail::check_extent("kamp::layernorm_forward", "gamma", gamma.extent(0), c);
  detail::check_extent("kamp::layernorm_forward", "beta", beta.extent(0), c);
  detail::check_extent("kamp::layernorm_forward", "y rows", y.extent(0), n);
  detail::check_extent("kamp::layernorm_forward", "y columns", y.extent(1), c);
  detail::check_extent("kamp::layernorm_forward", "mean", mean.extent(0), n);
  detail::check_extent("kamp::layernorm_forward", "rstd", rstd.extent(0), n);
  detail::with_access(
      [&](auto xs, auto g, auto b, auto ys, auto ms, auto rs) {
        detail::layernorm_forward_kernel(space, xs, g, b, ys, ms, rs, n, c, static_cast<S>(eps));
      },
      x, gamma, beta, y, mean, rstd);
}

/// \brief out = x + branch (the residual stream's update) and y = LayerNorm(out), in one pass
/// over the rows instead of two kernels, so out is not read back from memory by a second launch.
///
/// The sum is computed in the statistics type S and rounded once to out's type; y, mean and
/// rstd are then those of layernorm_forward(out, ...) bit for bit (the same row code reads the
/// stored out), so the backward pass is layernorm_backward on out unchanged.
///
/// \param x      (N, C) residual stream, usually fp32
/// \param branch (N, C) the branch's output added to it: fp32, bf16 or fp16
/// \param gamma  (C) scale, beta (C) shift, as for layernorm_forward
/// \param out    (N, C) the updated residual stream, usually fp32; may be branch itself (updated in place, as a
///               Linear that wrote its branch into the stream's next buffer leaves it), not x
/// \param y      (N, C) LayerNorm(out) in the compute type of the layer that reads it
/// \param mean   (N) and rstd (N): of out, saved for the backward pass (fp32, or fp64)
/// Label `kamp::residual_layernorm_forward`.
template <class ExecutionSpace, class X, class B, class P, class O, class Y, class S, class... XP, class... BP,
          class... PP, class... OP, class... YP, class... SP>
void residual_layernorm_forward(const ExecutionSpace& space, const Kokkos::View<X**, XP...>& x,
                                const Kokkos::View<B**, BP...>& branch, const Kokkos::View<P*, PP...>& gamma,
                                const Kokkos::View<P*, PP...>& beta, const Kokkos::View<O**, OP...>& out,
                                const Kokkos::View<Y**, YP...>& y, const Kokkos::View<S*, SP...>& mean,
                                const Kokkos::View<S*, SP...>& rstd, double eps = 1e-5) {
  constexpr const char* api = "kamp::residual_layernorm_forward";
  const std::int64_t n = x.extent(0), c = x.extent(1);
  detail::check_extent(api, "branch rows", branch.extent(0), n);
  detail::check_extent(api, "branch columns", branch.extent(1), c);
  detail::check_extent(api, "gamma", gamma.extent(0), c);
  detail::check_extent(api, "beta", beta.extent(0), c);
  detail::check_extent(api, "out rows", out.extent(0), n);
  detail::check_extent(api, "out columns", out.extent(1), c);
  detail::check_extent(api, "y rows", y.extent(0), n);
  detail::check_extent(api, "y columns", y.extent(1), c);
  detail::check_extent(api, "mean", mean.extent(0), n);
  detail::check_extent(api, "rstd", rstd.extent(0), n);
  if (n > 0 && c > 0 && static_cast<const void*>(out.data()) == static_cast<const void*>(x.data()))
    throw std::invalid_argument("kamp::residual_layernorm_forward: out may be branch itself but not x");
  detail::with_access(
      [&](auto xs, auto bs, auto g, auto b, auto os, auto ys, auto ms, auto rs) {
        detail::residual_layernorm_forward_kernel(space, xs, bs, g, b, os, ys, ms, rs, n, c, static_cast<S>(eps));
      },
      x, branch, gamma, beta, out, y, mean, rstd);
}

/// \brief The LayerNorm backward pass: dx += dL/dx, dgamma += Σ dy·x̂, dbeta += Σ dy.
///
/// dx accumulates (+=) because in a pre-LN transformer it is the residual stream's gradient,
/// which the skip connection already carries. dgamma and dbeta add rows in ascending order
/// (deterministic). Labels `kamp::layernorm_backward`, `kamp::layernorm_backward::params`.
template <class ExecutionSpace, class DY, class X, class P, class DX, class S, class G, class... DYP, class... XP,
          class... PP, class... DXP, class... SP, class... GP>
void layernorm_backward(const ExecutionSpace& space, const Kokkos::View<DY**, DYP...>& dy,
                        const Kokkos::View<X**, XP...>& x, const Kokkos::View<P*, PP...>& gamma,
                        const Kokkos::View<S*, SP...>& mean, const Kokkos::View<S*, SP...>& rstd,
                        const Kokkos::View<DX**, DXP...>& dx, const Kokkos::View<G*, GP...>& dgamma,
                        const Kokkos::View<G*, GP...>& dbeta) {
  const std::int64_t n = x.extent(0), c = x.extent(1);
  detail::check_extent("kamp::layernorm_backward", "dy rows", dy.extent(0), n);
  detail::check_extent("kamp::layernorm_backward", "dy columns", dy.extent(1), c);
  detail::check_extent("kamp::layernorm_backward", "dx rows", dx.extent(0), n);
  detail::check_extent("kamp::layernorm_backward", "dx columns", dx.extent(1), c);
  detail::check_extent("kamp::layernorm_backward", "mean", mean.extent(0), n);
  detail::check_extent("kamp::layernorm_backward", "rstd", rstd.extent(0), n);
  detail::check_extent("kamp::layernorm_backward", "gamma", gamma.extent(0), c);
  detail::check_extent("kamp::layernorm_backward", "dgamma", dgamma.extent(0), c);
  detail::check_extent("kamp::layernorm_backward", "dbeta", dbeta.extent(0), c);
  detail::with_access([&](auto dys, auto xs, auto g, auto ms, auto rs, auto dxs, auto dg,
                          auto db) { detail::layernorm_backward_kernel(space, dys, xs, g, ms, rs, dxs, dg, db, n, c); },
                      dy, x, gamma, mean, rstd, dx, dgamma, dbeta);
}

}  // namespace kamp

#endif
