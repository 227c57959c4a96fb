#ifndef KAMP_KERNELS_VALUE_RANGE_HPP
#define KAMP_KERNELS_VALUE_RANGE_HPP

#include <kamp/kernels/detail/view_access.hpp>
#include <kamp/numeric/element_access.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace kamp {

/// \brief How large a buffer's values are and how many are not finite: what decides whether
/// it fits fp16 (max 65504) and where an inf/NaN first appeared.
struct value_range {
  double max_abs = 0;            ///< largest |x| over the finite values
  std::uint64_t non_finite = 0;  ///< count of inf and NaN
};

namespace detail {
template <class ExecutionSpace, class XA>
value_range value_range_kernel(const ExecutionSpace& space, XA x, std::int64_t n) {
  value_range r;
  // v - v is 0 exactly for finite v, NaN for inf and NaN.
  double max_abs = 0;
  Kokkos::parallel_reduce(
      "kamp::value_range::max", Kokkos::RangePolicy<ExecutionSpace>(space, 0, n),
      KOKKOS_LAMBDA(std::int64_t i, double& m) {
        const double v = load_as<double>(x + i), a = v < 0 ? -v : v;
        if (v - v == 0.0 && a > m) m = a;
      },
      Kokkos::Max<double>(max_abs));
  std::uint64_t bad = 0;
  Kokkos::parallel_reduce(
      "kamp::value_range::non_finite", Kokkos::RangePolicy<ExecutionSpace>(space, 0, n),
      KOKKOS_LAMBDA(std::int64_t i, std::uint64_t & c) {
        const double v = load_as<double>(x + i);
        c += v - v == 0.0 ? 0 : 1;
      },
      bad);
  r.max_abs = max_abs > 0 ? max_abs : 0;  // the reduction starts from the lowest double
  r.non_finite = bad;
  return r;
}
}  // namespace detail

/// max |x| and the non-finite count of a flat buffer of fp64, fp32, bf16 or fp16 values.
/// Waits for the result. Labels
/// `kamp::value_range::max`, `kamp::value_range::non_finite`.
template <class ExecutionSpace, class T, class... P>
value_range measure_range(const ExecutionSpace& space, const Kokkos::View<T*, P...>& x) {
  value_range r;
  detail::with_access([&](auto xs) { r = detail::value_range_kernel(space, xs, std::int64_t(x.extent(0))); }, x);
  return r;
}

}  // namespace kamp

#endif
