#ifndef KAMP_KERNELS_CAST_HPP
#define KAMP_KERNELS_CAST_HPP

#include <kamp/kernels/detail/chunked_range.hpp>
#include <kamp/kernels/detail/view_access.hpp>
#include <kamp/kernels/rounding_options.hpp>
#include <kamp/numeric/convert.hpp>
#include <kamp/numeric/counter_random.hpp>
#include <kamp/numeric/element_access.hpp>
#include <kamp/tools/traffic.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace kamp {

namespace detail {

/// The smallest fp32 magnitude (as bits) that round-to-nearest-even turns into infinity in T:
/// T's maximum plus half an ulp (the tie goes up, because the maximum's mantissa is odd).
template <class T>
KOKKOS_INLINE_FUNCTION constexpr std::uint32_t nearest_overflow_bits() {
  if constexpr (std::is_same_v<T, float>) {
    return 0x7f800000u;
  } else {
    using t = format_traits<T>;
    constexpr std::uint32_t max_bits =
        (std::uint32_t(t::exponent_bias + 127) << 23) | (((1u << t::mantissa_bits) - 1) << (23 - t::mantissa_bits));
    return max_bits + (1u << (22 - t::mantissa_bits));
  }
}

/// One work item of a cast: `c` elements converted, the finite inputs that overflowed counted.
template <rounding Mode, class ExecutionSpace, class OutAddress, class InAddress>
struct cast_items {
  using value_type = std::size_t;
  using Out = value_of<OutAddress>;
  OutAddress out;
  InAddress in;
  std::size_t n;
  std::uint64_t seed, offset;

  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t k, std::size_t& count) const {
    constexpr std::size_t c = elements_per_work_item<ExecutionSpace>::value;
    const std::size_t begin = static_cast<std::size_t>(k) * c, end = begin + c < n ? begin + c : n;
    restrict_t<OutAddress> dst = out;
    restrict_t<InAddress> src = in;
    std::uint32_t local = 0;  // 32-bit: a work item has at most 2048 elements, and the sum vectorizes 8-wide
    for (std::size_t i = begin; i < end; ++i) {
      const float x = load_float(src + i);
      if constexpr (Mode == rounding::stochastic) {
        const bool finite = store_stochastic(dst + i, x, counter_random(seed, offset + i));
        local += (is_finite(x) && !finite) ? 1 : 0;
      } else {
        // Round-to-nearest overflows exactly from a fixed input magnitude on; comparing the
        // input is cheaper than testing the packed result.
        store_nearest(dst + i, x);
        const std::uint32_t magnitude = detail::float_to_bits(x) & 0x7fffffffu;
        local += (magnitude >= nearest_overflow_bits<Out>() && magnitude < 0x7f800000u) ? 1 : 0;
      }
    }
    count += local;
  }
};

/// What a cast does with its overflow count: nothing (not_counted), or a reduction into a
/// std::size_t (the call waits) or into a View on the device (it does not).
struct not_counted {};

template <rounding Mode, class ExecutionSpace, class OutAddress, class InAddress, class Count>
void cast_kernel(const ExecutionSpace& space, OutAddress out, InAddress in, std::size_t n,
                 const rounding_options& options, Count& overflowed) {
  using Out = value_of<OutAddress>;
  using In = value_of<InAddress>;
  // Per element: the load, the rounding and the overflow test (mask, compare, count).
  report_traffic("kamp::cast", elements_bytes<Out, In>(n),
                 double(n) * kernel_arithmetic{widen_ops<In>() + round_ops<Out>() + 3});
  const cast_items<Mode, ExecutionSpace, OutAddress, InAddress> items{out, in, n, options.seed, options.stream_offset};
  const auto policy = work_item_policy<ExecutionSpace>(space, 0, work_items<ExecutionSpace>(n));
  if constexpr (std::is_same_v<Count, not_counted>) {
    Kokkos::parallel_for(
        "kamp::cast", policy, KOKKOS_LAMBDA(std::int64_t k) {
          std::size_t ignored = 0;
          items(k, ignored);
        });
  } else {
    Kokkos::parallel_reduce("kamp::cast", policy, items, overflowed);
  }
}

template <class Out, class In, class... OutProps, class... InProps>
void check_cast(const Kokkos::View<Out*, OutProps...>& out, const Kokkos::View<In*, InProps...>& in) {
  static_assert(std::is_same_v<Out, typename Kokkos::View<Out*, OutProps...>::non_const_value_type>,
                "kamp::cast: the output view must be writable");
  if (out.extent(0) != in.extent(0))
    throw std::invalid_argument("kamp::cast: output '" + out.label() + "' has " + std::to_string(out.extent(0)) +
                                " elements but input '" + in.label() + "' has " + std::to_string(in.extent(0)));
}

template <class ExecutionSpace, class OutView, class InView, class Count>
void cast_dispatch(const ExecutionSpace& space, const OutView& out_view, const InView& in_view,
                   const rounding_options& options, Count& overflowed) {
  with_access(
      [&](auto out, auto in) {
        if (options.mode == rounding::stochastic)
          cast_kernel<rounding::stochastic>(space, out, in, in_view.extent(0), options, overflowed);
        else
          cast_kernel<rounding::nearest_even>(space, out, in, in_view.extent(0), options, overflowed);
      },
      out_view, in_view);
}

}  // namespace detail

/// \brief out(i) = in(i) converted, for fp32 <-> bf16/fp16 (and same-type copies).
///
/// Views of any layout (LayoutRight, LayoutLeft, LayoutStride: a matrix's column) are read and
/// written where they lie.
/// Narrowing rounds to nearest even, or stochastically with `options`. Returns how many finite
/// inputs became ±inf (overflow); that needs the count on the host, so the call waits for the
/// kernel. One launch, label `kamp::cast`.
template <class ExecutionSpace, class Out, class In, class... OutProps, class... InProps>
std::size_t cast(const ExecutionSpace& space, const Kokkos::View<Out*, OutProps...>& out,
                 const Kokkos::View<In*, InProps...>& in, const rounding_options& options = {}) {
  static_assert(
      Kokkos::SpaceAccessibility<ExecutionSpace, typename Kokkos::View<Out*, OutProps...>::memory_space>::accessible &&
          Kokkos::SpaceAccessibility<ExecutionSpace, typename Kokkos::View<In*, InProps...>::memory_space>::accessible,
      "kamp::cast: both views must be accessible from the execution space");
  detail::check_cast(out, in);
  std::size_t overflowed = 0;
  detail::cast_dispatch(space, out, in, options, overflowed);
  return overflowed;
}

/// \brief The same conversion without waiting: the overflow count is written to `overflowed`, a
/// scalar View in the execution space's memory, when the kernel has run. An empty View skips
/// the count (a model's gradient casts: an overflow there is an inf that unscale_and_check
/// finds downstream).
template <class ExecutionSpace, class Out, class In, class... OutProps, class... InProps>
void cast(const ExecutionSpace& space, const Kokkos::View<Out*, OutProps...>& out,
          const Kokkos::View<In*, InProps...>& in, const rounding_options& options,
          const Kokkos::View<std::size_t, typename ExecutionSpace::memory_space>& overflowed) {
  static_assert(
      Kokkos::SpaceAccessibility<ExecutionSpace, typename Kokkos::View<Out*, OutProps...>::memory_space>::accessible &&
          Kokkos::SpaceAccessibility<ExecutionSpace, typename Kokkos::View<In*, InProps...>::memory_space>::accessible,
      "kamp::cast: both views must be accessible from the execution space");
  detail::check_cast(out, in);
  if (overflowed.data() == nullptr) {
    detail::not_counted nothing;
    detail::cast_dispatch(space, out, in, options, nothing);
  } else {
    auto count = overflowed;
    detail::cast_dispatch(space, out, in, options, count);
  }
}

}  // namespace kamp

#endif
