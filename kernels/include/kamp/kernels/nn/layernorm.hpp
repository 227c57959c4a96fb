#ifndef KAMP_KERNELS_NN_LAYERNORM_HPP
#define KAMP_KERNELS_NN_LAYERNORM_HPP

#include <kamp/kernels/nn/detail.hpp>
#include <kamp/kernels/nn/rows.hpp>
#include <kamp/tools/traffic.hpp>

namespace kamp {

namespace detail {

template <class ExecutionSpace, class X, class P, class Y, class S>
void layernorm_forward_kernel(const ExecutionSpace& space, const X* xs, std::int64_t ldx, const P* g, const P* b, Y* ys,
                              std::int64_t ldy, S* ms, S* rs, std::int64_t n, std::int64_t c, S epsilon) {
  report_traffic("kamp::layernorm_forward",
                 elements_bytes<X, Y>(n * c) + elements_bytes<P, P>(c) + elements_bytes<S, S>(n));
  using acc = S;
  using member = typename Kokkos::TeamPolicy<ExecutionSpace>::member_type;
  for_each_row(
      "kamp::layernorm_forward", space, n, KOKKOS_LAMBDA(const member& m, std::int64_t row) {
        const X* KAMP_RESTRICT xr = xs + row * ldx;
        const acc mu = row_sum<acc>(m, c, [&](std::int64_t i) { return load_as<acc>(xr + i); }) / acc(c);
        // Two passes over a row in cache: the centred variance does not cancel catastrophically.
        const acc sq = row_sum<acc>(m, c, [&](std::int64_t i) {
          const acc d = load_as<acc>(xr + i) - mu;
          return d * d;
        });
        const acc r = acc(1) / sqrt_of(sq / acc(c) + epsilon);
        Y* KAMP_RESTRICT yr = ys + row * ldy;
        row_for(m, c, [&](std::int64_t i) {
          store_nearest(yr + i, (load_as<acc>(xr + i) - mu) * r * load_as<acc>(g + i) + load_as<acc>(b + i));
        });
        row_once(m, [&] {
          ms[row] = mu;
          rs[row] = r;
        });
      });
}

template <class ExecutionSpace, class DY, class X, class P, class DX, class S, class G>
void layernorm_backward_kernel(const ExecutionSpace& space, const DY* dys, std::int64_t ldd, const X* xs,
                               std::int64_t ld, const P* g, const S* ms, const S* rs, DX* dxs, std::int64_t ldx, G* dg,
                               G* db, std::int64_t n, std::int64_t c) {
  // dx is accumulated into (read and written); the parameter pass reads dy and x again.
  report_traffic("kamp::layernorm_backward",
                 elements_bytes<DY, X, DX, DX>(n * c) + elements_bytes<P>(c) + elements_bytes<S, S>(n));
  report_traffic("kamp::layernorm_backward::params",
                 elements_bytes<DY, X>(n * c) + elements_bytes<S, S>(n) + elements_bytes<G, G, G, G>(c));
  using acc = S;
  using member = typename Kokkos::TeamPolicy<ExecutionSpace>::member_type;
  for_each_row(
      "kamp::layernorm_backward", space, n, KOKKOS_LAMBDA(const member& m, std::int64_t row) {
        const X* KAMP_RESTRICT xr = xs + row * ld;
        const DY* KAMP_RESTRICT dyr = dys + row * ldd;
        const acc mu = ms[row], r = rs[row];
        // dx = r (dŷ - mean(dŷ) - x̂ mean(dŷ x̂)) with dŷ = dy gamma.
        const auto d = [&](std::int64_t i) { return load_as<acc>(dyr + i) * load_as<acc>(g + i); };
        const acc mean_d = row_sum<acc>(m, c, d) / acc(c);
        const acc mean_dx =
            row_sum<acc>(m, c, [&](std::int64_t i) { return d(i) * (load_as<acc>(xr + i) - mu) * r; }) / acc(c);
        DX* KAMP_RESTRICT out = dxs + row * ldx;
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
            const acc d = load_as<acc>(dys + row * ldd + c0 + i);
            sg[i] += d * (load_as<acc>(xs + row * ld + c0 + i) - mu) * r;
            sb[i] += d;
          }
        }
        for (std::int64_t i = 0; i < width; ++i) {
          store_nearest(dg + c0 + i, load_as<acc>(dg + c0 + i) + sg[i]);
          store_nearest(db + c0 + i, load_as<acc>(db + c0 + i) + sb[i]);
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
  detail::check_extent("kamp::layernorm_forward", "y", y.extent(0) * y.extent(1), n * c);
  detail::check_extent("kamp::layernorm_forward", "mean", mean.extent(0), n);
  detail::check_extent("kamp::layernorm_forward", "rstd", rstd.extent(0), n);
  detail::layernorm_forward_kernel(space, x.data(), x.stride(0), gamma.data(), beta.data(), y.data(), y.stride(0),
                                   mean.data(), rstd.data(), n, c, static_cast<S>(eps));
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
  detail::check_extent("kamp::layernorm_backward", "dy", dy.extent(0) * dy.extent(1), n * c);
  detail::check_extent("kamp::layernorm_backward", "dx", dx.extent(0) * dx.extent(1), n * c);
  detail::check_extent("kamp::layernorm_backward", "gamma", gamma.extent(0), c);
  detail::check_extent("kamp::layernorm_backward", "dgamma", dgamma.extent(0), c);
  detail::check_extent("kamp::layernorm_backward", "dbeta", dbeta.extent(0), c);
  detail::layernorm_backward_kernel(space, dy.data(), dy.stride(0), x.data(), x.stride(0), gamma.data(), mean.data(),
                                    rstd.data(), dx.data(), dx.stride(0), dgamma.data(), dbeta.data(), n, c);
}

}  // namespace kamp

#endif
