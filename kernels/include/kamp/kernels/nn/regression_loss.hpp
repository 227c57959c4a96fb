#ifndef KAMP_KERNELS_NN_REGRESSION_LOSS_HPP
#define KAMP_KERNELS_NN_REGRESSION_LOSS_HPP

// The losses of surrogate models: mean squared and mean absolute error over (N, M) predictions,
// fused with their gradient in one pass, the loss summed in fp64 and left on the device.
#include <kamp/kernels/loss_scaler.hpp>
#include <kamp/kernels/nn/detail/nn_common.hpp>
#include <kamp/tools/traffic.hpp>

#include <cstdint>
#include <stdexcept>
#include <string>

namespace kamp {

/// torch.nn.MSELoss and torch.nn.L1Loss with reduction "mean".
enum class regression_loss_kind { mse, l1 };

namespace detail {

template <regression_loss_kind K, class ExecutionSpace, class PM, class LM, class DM>
void regression_loss_kernel(const ExecutionSpace& space, PM ps, LM ls, DM ds, std::int64_t n, std::int64_t m,
                            double grad_scale,
                            const Kokkos::View<const loss_scale_state, typename ExecutionSpace::memory_space>& scaler,
                            const Kokkos::View<double, typename ExecutionSpace::memory_space>& loss) {
  using P = typename PM::value_type;
  using D = typename DM::value_type;
  report_traffic("kamp::regression_loss", elements_bytes<P, typename LM::value_type, D>(n * m),
                 double(n * m) * kernel_arithmetic{6 + widen_ops<P>() + round_ops<D>()});
  const double inv_count = 1.0 / double(n * m);
  Kokkos::parallel_reduce(
      "kamp::regression_loss", Kokkos::RangePolicy<ExecutionSpace, Kokkos::IndexType<std::int64_t>>(space, 0, n),
      KOKKOS_LAMBDA(std::int64_t r, double& sum) {
        const float scale = float(grad_scale * (scaler.data() != nullptr ? double(scaler().scale) : 1.0));
        const auto p = ps.row(r);
        const auto l = ls.row(r);
        const auto d = ds.row(r);
        double row = 0;
        for (std::int64_t j = 0; j < m; ++j) {
          const float e = load_as<float>(p + j) - load_as<float>(l + j);
          if constexpr (K == regression_loss_kind::mse) {
            row += double(e) * double(e);
            store_nearest(d + j, 2.0f * e * scale);
          } else {
            row += e < 0 ? -double(e) : double(e);
            // sign(e), 0 at 0 as torch.sign; a NaN difference stays NaN.
            store_nearest(d + j, (e > 0.0f ? scale : e < 0.0f ? -scale : e * scale));
          }
        }
        sum += row * inv_count;
      },
      loss);
}

}  // namespace detail

/// \brief loss = mean over the (N, M) elements of (pred - label)² (mse) or |pred - label| (l1),
/// summed in fp64 into the device scalar `loss` (nothing waits), and dpred = dloss/dpred ·
/// grad_scale · the loss scale (read on the device; an empty `scaler` means 1), rounded once to
/// dpred's type. grad_scale is 1/(N·M) for the mean of one batch, divided further by the
/// micro-batches a step accumulates. Views of any layout; labels may be any floating type.
/// Label `kamp::regression_loss`.
template <class ExecutionSpace, class PredView, class LabelView, class DPredView>
void regression_loss(const ExecutionSpace& space, regression_loss_kind kind, const PredView& pred,
                     const LabelView& labels, const Kokkos::View<double, typename ExecutionSpace::memory_space>& loss,
                     const DPredView& dpred, double grad_scale,
                     const Kokkos::View<const loss_scale_state, typename ExecutionSpace::memory_space>& scaler = {}) {
  static_assert(PredView::rank == 2 && LabelView::rank == 2 && DPredView::rank == 2,
                "kamp::regression_loss: pred, labels and dpred are (N, M) matrices");
  constexpr const char* api = "kamp::regression_loss";
  detail::check_extent(api, "label rows", labels.extent(0), pred.extent(0));
  detail::check_extent(api, "label columns", labels.extent(1), pred.extent(1));
  detail::check_extent(api, "dpred rows", dpred.extent(0), pred.extent(0));
  detail::check_extent(api, "dpred columns", dpred.extent(1), pred.extent(1));
  detail::with_access(
      [&](auto ps, auto ls, auto ds) {
        const std::int64_t n = pred.extent(0), m = pred.extent(1);
        if (kind == regression_loss_kind::mse)
          detail::regression_loss_kernel<regression_loss_kind::mse>(space, ps, ls, ds, n, m, grad_scale, scaler, loss);
        else
          detail::regression_loss_kernel<regression_loss_kind::l1>(space, ps, ls, ds, n, m, grad_scale, scaler, loss);
      },
      pred, labels, dpred);
}

}  // namespace kamp

#endif
