#ifndef KAMP_KERNELS_CAST_HPP
#define KAMP_KERNELS_CAST_HPP

#include <kamp/kernels/detail/chunked_range.hpp>
#include <kamp/kernels/rounding_options.hpp>
#include <kamp/numeric/convert.hpp>
#include <kamp/numeric/counter_random.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace kamp {

/// \brief out(i) = in(i) converted, for fp32 <-> bf16/fp16 (and same-type copies).
///
/// Narrowing rounds to nearest even, or stochastically with `options`. Returns how many finite
/// inputs became ±inf (overflow); that needs the count on the host, so the call waits for the
/// kernel. One launch, label `kamp::cast`.
template <class ExecutionSpace, class Out, class In, class... OutProps, class... InProps>
std::size_t cast(const ExecutionSpace& space, const Kokkos::View<Out*, OutProps...>& out,
                 const Kokkos::View<In*, InProps...>& in, const rounding_options& options = {}) {
  using out_value = typename Kokkos::View<Out*, OutProps...>::non_const_value_type;
  using in_value = typename Kokkos::View<In*, InProps...>::non_const_value_type;
  static_assert(std::is_same_v<Out, out_value>, "kamp::cast: the output view must be writable");
  static_assert(Kokkos::SpaceAccessibility<ExecutionSpace, typename Kokkos::View<Out*, OutProps...>::memory_space>::accessible &&
                    Kokkos::SpaceAccessibility<ExecutionSpace, typename Kokkos::View<In*, InProps...>::memory_space>::accessible,
                "kamp::cast: both views must be accessible from the execution space");
  if (out.extent(0) != in.extent(0))
    throw std::invalid_argument("kamp::cast: output '" + out.label() + "' has " + std::to_string(out.extent(0)) +
                                " elements but input '" + in.label() + "' has " + std::to_string(in.extent(0)));
  const std::size_t n = in.extent(0);
  std::size_t overflowed = 0;
  if (n == 0) return overflowed;

  constexpr std::size_t c = detail::elements_per_work_item<ExecutionSpace>::value;
  out_value* KAMP_RESTRICT dst = out.data();
  const in_value* KAMP_RESTRICT src = in.data();
  const bool stochastic = options.mode == rounding::stochastic;
  const std::uint64_t seed = options.seed, offset = options.stream_offset;
  Kokkos::parallel_reduce(
      "kamp::cast", detail::work_item_policy<ExecutionSpace>(space, 0, detail::work_items<ExecutionSpace>(n)),
      KOKKOS_LAMBDA(std::int64_t k, std::size_t& count) {
        const std::size_t begin = static_cast<std::size_t>(k) * c, end = begin + c < n ? begin + c : n;
        std::size_t local = 0;
        for (std::size_t i = begin; i < end; ++i) {
          const float x = to_float(src[i]);
          const out_value y = stochastic ? from_float_stochastic<out_value>(x, counter_random(seed, offset + i))
                                         : from_float<out_value>(x);
          dst[i] = y;
          local += (is_finite(x) && !is_finite(y)) ? 1 : 0;
        }
        count += local;
      },
      overflowed);
  return overflowed;
}

}  // namespace kamp

#endif
