#ifndef KAMP_KERNELS_UNSCALE_AND_CHECK_HPP
#define KAMP_KERNELS_UNSCALE_AND_CHECK_HPP

#include <kamp/kernels/detail/chunked_range.hpp>
#include <kamp/kernels/detail/view_access.hpp>
#include <kamp/kernels/gradient_check.hpp>
#include <kamp/kernels/loss_scaler.hpp>
#include <kamp/numeric/accum_type.hpp>
#include <kamp/numeric/convert.hpp>
#include <kamp/numeric/element_access.hpp>
#include <kamp/tools/traffic.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace kamp {

/// What unscale_and_check writes and computes.
struct unscale_options {
  bool in_place = true;      ///< grad <- grad * (1/scale); false: only check (the optimizer unscales)
  bool compute_norm = true;  ///< also the global L2 norm of the unscaled gradients, for clipping
};

namespace detail {

// A functor rather than a lambda: the reduction value is a struct, and Kokkos 3.4 needs a
// volatile join for it that Kokkos 4 no longer uses, so both are provided. InPlace and Norm are
// template parameters so the inner loop has no branches and vectorizes.
template <bool InPlace, bool Norm, class GradAddress, class ExecutionSpace>
struct unscale_and_check_functor {
  using value_type = gradient_check;
  GradAddress grads;
  Kokkos::View<const loss_scale_state, typename ExecutionSpace::memory_space> scaler;
  std::size_t n;

  KOKKOS_INLINE_FUNCTION void init(value_type& v) const {
    v.found_inf = 0;
    v.norm_squared = 0.0;
  }
  KOKKOS_INLINE_FUNCTION void join(value_type& dst, const value_type& src) const {
    dst.found_inf = dst.found_inf > src.found_inf ? dst.found_inf : src.found_inf;
    dst.norm_squared += src.norm_squared;
  }
  KOKKOS_INLINE_FUNCTION void join(volatile value_type& dst, const volatile value_type& src) const {
    dst.found_inf = dst.found_inf > src.found_inf ? dst.found_inf : src.found_inf;
    dst.norm_squared += src.norm_squared;
  }

  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t k, value_type& v) const {
    constexpr std::size_t c = elements_per_work_item<ExecutionSpace>::value;
    const std::size_t begin = static_cast<std::size_t>(k) * c, end = begin + c < n ? begin + c : n;
    // PyTorch's convention: the reciprocal is taken in double and rounded once to float.
    const float inv_scale = static_cast<float>(1.0 / static_cast<double>(scaler().scale));
    restrict_t<GradAddress> g = grads;
    double sum = 0.0;  // squares of fp32 values are exact in fp64; the sum loses ~n*2^-53 at most
    int bad = 0;
    // A non-finite x gives a non-finite y (inf or NaN times any float is inf or NaN), so y alone
    // is checked; in place, the stored value is, since a finite y can round to a 16-bit inf.
    KAMP_SIMD(reduction(+ : sum) reduction(| : bad))
    for (std::size_t i = begin; i < end; ++i) {
      const float y = load_float(g + i) * inv_scale;
      if constexpr (Norm) sum += double(y) * double(y);
      if constexpr (InPlace) {
        bad |= store_nearest(g + i, y) ? 0 : 1;
      } else {
        bad |= is_finite(y) ? 0 : 1;
      }
    }
    v.found_inf = v.found_inf | bad;
    v.norm_squared += sum;
  }
};

template <bool InPlace, bool Norm, class ExecutionSpace, class GradAddress>
void unscale_and_check_launch(const ExecutionSpace& space, GradAddress grads, std::size_t n,
                              const Kokkos::View<const loss_scale_state, typename ExecutionSpace::memory_space>& scaler,
                              const Kokkos::View<gradient_check, typename ExecutionSpace::memory_space>& result) {
  report_traffic("kamp::unscale_and_check", elements_bytes<value_of<GradAddress>>(n) * (InPlace ? 2 : 1));
  unscale_and_check_functor<InPlace, Norm, GradAddress, ExecutionSpace> f{grads, scaler, n};
  Kokkos::parallel_reduce("kamp::unscale_and_check",
                          work_item_policy<ExecutionSpace>(space, 0, work_items<ExecutionSpace>(n)), f, result);
}

}  // namespace detail

/// \brief One fused pass over a flat gradient buffer: multiply by 1/scale in fp32, detect any
/// inf/NaN (input or result), and optionally accumulate the global L2 norm² in fp64.
///
/// \param grads   (N) gradients in fp32, bf16 or fp16; overwritten when options.in_place
/// \param scaler  the loss scaler's device state (its scale is read on the device)
/// \param result  device scalar that receives {found_inf, norm²}; nothing waits for it
/// One launch, label `kamp::unscale_and_check`.
template <class ExecutionSpace, class Grad, class... Props>
void unscale_and_check(const ExecutionSpace& space, const Kokkos::View<Grad*, Props...>& grads,
                       const Kokkos::View<const loss_scale_state, typename ExecutionSpace::memory_space>& scaler,
                       const Kokkos::View<gradient_check, typename ExecutionSpace::memory_space>& result,
                       const unscale_options& options = {}) {
  static_assert(!std::is_const_v<Grad>, "kamp::unscale_and_check: gradients must be writable");
  static_assert(
      Kokkos::SpaceAccessibility<ExecutionSpace, typename Kokkos::View<Grad*, Props...>::memory_space>::accessible,
      "kamp::unscale_and_check: gradients must be accessible from the execution space");
  const std::size_t n = grads.extent(0);
  detail::with_access(
      [&](auto g) {
        if (options.in_place && options.compute_norm)
          detail::unscale_and_check_launch<true, true>(space, g, n, scaler, result);
        else if (options.in_place)
          detail::unscale_and_check_launch<true, false>(space, g, n, scaler, result);
        else if (options.compute_norm)
          detail::unscale_and_check_launch<false, true>(space, g, n, scaler, result);
        else
          detail::unscale_and_check_launch<false, false>(space, g, n, scaler, result);
      },
      grads);
}

}  // namespace kamp

#endif
