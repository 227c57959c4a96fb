#ifndef KAMP_KERNELS_FP8_SCALING_HPP
#define KAMP_KERNELS_FP8_SCALING_HPP

// Per-tensor FP8 scaling, every step on the device: a quantizing cast that also measures the
// input (amax, saturation), and the two ways Transformer Engine turns amaxes into scales:
// delayed (from a history of earlier steps' amaxes) and current (from this tensor's amax).
#include <kamp/kernels/detail/chunked_range.hpp>
#include <kamp/kernels/detail/view_access.hpp>
#include <kamp/numeric/convert.hpp>
#include <kamp/numeric/element_access.hpp>
#include <kamp/tools/traffic.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace kamp {

/// \brief What a quantizing cast measured, written on the device.
struct fp8_cast_stats {
  /// max |x| over the input before scaling; +inf when the input held an infinity or NaN.
  float amax;
  /// 1 / the scale the cast used: the GEMM multiplies its result by the operands' scale_inv.
  float scale_inv;
  /// Finite inputs whose scaled magnitude exceeded the format's largest value, so the
  /// saturating cast clamped them.
  std::uint32_t saturated;
  /// Finite non-zero inputs that became zero: a scale too small for the data.
  std::uint32_t underflowed;
};

/// \brief How per-tensor scales follow the data.
/// - delayed: from the largest amax of the last N steps (Transformer Engine's DelayedScaling);
///   the cast uses a scale known before the data, so it is one pass.
/// - current: from this tensor's own amax (Float8CurrentScaling); an amax pass comes first.
enum class fp8_recipe { delayed, current };

inline const char* name(fp8_recipe r) { return r == fp8_recipe::delayed ? "delayed" : "current"; }
inline fp8_recipe parse_fp8_recipe(const std::string& s) {
  if (s == "delayed") return fp8_recipe::delayed;
  if (s == "current") return fp8_recipe::current;
  throw std::invalid_argument("unknown FP8 recipe '" + s + "': expected delayed or current");
}

/// \brief Scale computation settings (Transformer Engine's defaults).
struct fp8_scaling_options {
  /// scale = max / amax / 2^margin.
  int margin = 0;
  /// Round the scale down to a power of two, so scaling changes no mantissa bits.
  bool power_of_2 = false;
  /// Current scaling: amax is taken as at least this (0: no floor).
  float amax_epsilon = 0.0f;
};

namespace detail {

/// |x| as the bits of a non-negative float, NaN as +inf: for non-negative floats the bit
/// patterns order like the values, so the amax is an integer max, which vectorizes.
KOKKOS_INLINE_FUNCTION std::uint32_t amax_bits(float x) {
  const std::uint32_t magnitude = float_to_bits(x) & 0x7fffffffu;
  return magnitude > 0x7f800000u ? 0x7f800000u : magnitude;
}

// Functors rather than lambdas: the reductions have their own join, and Kokkos 3.4 needs a
// volatile one that Kokkos 4 no longer uses, so both are provided.

/// One work item of the quantizing cast: `c` elements scaled, cast (saturating) and measured.
/// The reduction's value is the stats themselves: init writes 1/scale into each partial result.
template <class ExecutionSpace, class Out, class In, class MemorySpace>
struct quantize_items {
  using value_type = fp8_cast_stats;
  Out* out;
  const In* in;
  std::size_t n;
  Kokkos::View<const float, MemorySpace> scale;

  KOKKOS_INLINE_FUNCTION void init(value_type& v) const { v = {0.0f, 1.0f / scale(), 0u, 0u}; }
  KOKKOS_INLINE_FUNCTION void join(value_type& a, const value_type& b) const {
    a.amax = a.amax > b.amax ? a.amax : b.amax;
    a.saturated += b.saturated;
    a.underflowed += b.underflowed;
  }
  KOKKOS_INLINE_FUNCTION void join(volatile value_type& a, const volatile value_type& b) const {
    a.amax = a.amax > b.amax ? a.amax : b.amax;
    a.saturated += b.saturated;
    a.underflowed += b.underflowed;
  }
  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t k, value_type& v) const {
    constexpr std::size_t c = elements_per_work_item<ExecutionSpace>::value;
    constexpr float max = float(format_traits<Out>::max());  // constexpr: no host call in device code
    const std::uint32_t fp8_max = float_to_bits(max);
    const std::size_t begin = static_cast<std::size_t>(k) * c, end = begin + c < n ? begin + c : n;
    const float s = scale();
    Out* KAMP_RESTRICT dst = out;
    const In* KAMP_RESTRICT src = in;
    std::uint32_t amax = 0, saturated = 0, underflowed = 0;
    for (std::size_t i = begin; i < end; ++i) {
      const float x = load_float(src + i);
      const float scaled = x * s;
      const std::uint8_t bits = detail::narrow_fp8_bits<Out>(scaled, fp8_overflow::saturate);
      dst[i].bits = bits;
      const std::uint32_t a = amax_bits(x);
      amax = a > amax ? a : amax;
      const std::uint32_t m = float_to_bits(scaled) & 0x7fffffffu;
      saturated += (a < 0x7f800000u && m > fp8_max) ? 1u : 0u;  // a finite input, clamped (even from inf)
      underflowed += (a != 0u && a < 0x7f800000u && (bits & 0x7fu) == 0u) ? 1u : 0u;
    }
    const float local = bits_to_float(amax);
    v.amax = local > v.amax ? local : v.amax;
    v.saturated += saturated;
    v.underflowed += underflowed;
  }
};

/// One work item of an amax pass.
template <class ExecutionSpace, class In>
struct amax_items {
  using value_type = float;
  const In* in;
  std::size_t n;
  KOKKOS_INLINE_FUNCTION void init(value_type& v) const { v = 0.0f; }
  KOKKOS_INLINE_FUNCTION void join(value_type& a, const value_type& b) const { a = a > b ? a : b; }
  KOKKOS_INLINE_FUNCTION void join(volatile value_type& a, const volatile value_type& b) const { a = a > b ? a : b; }
  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t k, value_type& v) const {
    constexpr std::size_t c = elements_per_work_item<ExecutionSpace>::value;
    const std::size_t begin = static_cast<std::size_t>(k) * c, end = begin + c < n ? begin + c : n;
    const In* KAMP_RESTRICT src = in;
    std::uint32_t amax = 0;
    for (std::size_t i = begin; i < end; ++i) {
      const std::uint32_t a = amax_bits(load_float(src + i));
      amax = a > amax ? a : amax;
    }
    const float local = bits_to_float(amax);
    v = local > v ? local : v;
  }
};

/// scale from amax as both recipes share it: max / amax / 2^margin (a correctly rounded fp32
/// division; the 2^margin division is exact), FLT_MAX where that overflows, then rounded down to
/// a power of two if asked. `fallback` where amax is 0, inf or NaN.
KOKKOS_INLINE_FUNCTION float scale_from_amax(float amax, float fp8_max, const fp8_scaling_options& o, float fallback) {
  const bool usable = amax > 0.0f && amax < bits_to_float(0x7f800000u);  // false for NaN too
  if (!usable) return fallback;
  float scale = fp8_max / amax;
  for (int i = 0; i < o.margin; ++i) scale *= 0.5f;
  if ((float_to_bits(scale) & 0x7fffffffu) == 0x7f800000u) scale = bits_to_float(0x7f7fffffu);  // FLT_MAX
  if (o.power_of_2) scale = bits_to_float(float_to_bits(scale) & 0xff800000u);
  return scale;
}

template <class In, class... Props>
void check_fp8_input(const Kokkos::View<In*, Props...>&) {
  static_assert(std::is_same_v<std::remove_const_t<In>, float> || std::is_same_v<std::remove_const_t<In>, bf16> ||
                    std::is_same_v<std::remove_const_t<In>, fp16>,
                "kamp: FP8 quantization reads fp32, bf16 or fp16 data");
}

}  // namespace detail

/// \brief out(i) = saturating RNE cast of in(i) · scale, in one pass that also writes `stats`:
/// the input's amax, 1/scale, and how many elements saturated or underflowed to zero. `scale` and `stats` are scalars
/// in the execution space's memory, so nothing waits for the host. One launch (kamp::quantize_fp8).
///
/// The cast saturates (an infinity becomes the largest value), so an overflow check belongs on
/// the high-precision data; amax is +inf when the input held an infinity or NaN.
template <class ExecutionSpace, class Out, class In, class... OutProps, class... InProps>
void quantize_fp8(const ExecutionSpace& space, const Kokkos::View<Out*, OutProps...>& out,
                  const Kokkos::View<In*, InProps...>& in,
                  const Kokkos::View<const float, typename ExecutionSpace::memory_space>& scale,
                  const Kokkos::View<fp8_cast_stats, typename ExecutionSpace::memory_space>& stats) {
  static_assert(is_float8_v<Out>, "kamp::quantize_fp8: the output is an FP8 view");
  detail::check_fp8_input(in);
  if (out.extent(0) != in.extent(0))
    throw std::invalid_argument("kamp::quantize_fp8: output '" + out.label() + "' has " +
                                std::to_string(out.extent(0)) + " elements, input '" + in.label() + "' has " +
                                std::to_string(in.extent(0)));
  detail::require_row_major("kamp::quantize_fp8", "out", out);
  detail::require_row_major("kamp::quantize_fp8", "in", in);
  using in_t = std::remove_const_t<In>;
  const std::size_t n = in.extent(0);
  detail::report_traffic("kamp::quantize_fp8", double(n) * (sizeof(Out) + sizeof(in_t)));
  const detail::quantize_items<ExecutionSpace, Out, in_t, typename ExecutionSpace::memory_space> items{
      out.data(), in.data(), n, scale};
  Kokkos::parallel_reduce("kamp::quantize_fp8",
                          detail::work_item_policy<ExecutionSpace>(space, 0, detail::work_items<ExecutionSpace>(n)),
                          items, stats);
}

/// \brief amax = max |in(i)| (+inf when `in` holds an infinity or NaN), written on the device:
/// current scaling's first pass. One launch (kamp::amax).
template <class ExecutionSpace, class In, class... InProps>
void amax(const ExecutionSpace& space, const Kokkos::View<In*, InProps...>& in,
          const Kokkos::View<float, typename ExecutionSpace::memory_space>& result) {
  detail::check_fp8_input(in);
  detail::require_row_major("kamp::amax", "in", in);
  using in_t = std::remove_const_t<In>;
  const std::size_t n = in.extent(0);
  detail::report_traffic("kamp::amax", double(n) * sizeof(in_t));
  Kokkos::parallel_reduce("kamp::amax",
                          detail::work_item_policy<ExecutionSpace>(space, 0, detail::work_items<ExecutionSpace>(n)),
                          detail::amax_items<ExecutionSpace, in_t>{in.data(), n}, result);
}

/// \brief Current scaling, for a group of tensors of one format: scale(t) = fp8_max /
/// max(amax(t), epsilon), from each tensor's own amax (kamp::amax). 1 where amax is 0, inf or NaN,
/// FLT_MAX where the division overflows (Transformer Engine's compute_scale_from_amax). One launch.
template <class Format, class ExecutionSpace>
void fp8_current_scale(const ExecutionSpace& space,
                       const Kokkos::View<const float*, typename ExecutionSpace::memory_space>& amax,
                       const Kokkos::View<float*, typename ExecutionSpace::memory_space>& scale,
                       const fp8_scaling_options& options = {}) {
  static_assert(is_float8_v<Format>, "kamp::fp8_current_scale: Format is an FP8 type");
  if (amax.extent(0) != scale.extent(0))
    throw std::invalid_argument("kamp::fp8_current_scale: " + std::to_string(amax.extent(0)) + " amaxes for " +
                                std::to_string(scale.extent(0)) + " scales");
  constexpr float fp8_max = float(format_traits<Format>::max());
  Kokkos::parallel_for(
      "kamp::fp8_current_scale", Kokkos::RangePolicy<ExecutionSpace>(space, 0, scale.extent(0)), KOKKOS_LAMBDA(int t) {
        const float a = amax(t) < options.amax_epsilon ? options.amax_epsilon : amax(t);
        scale(t) = detail::scale_from_amax(a, fp8_max, options, 1.0f);
      });
}

/// \brief Delayed scaling, after a step's casts, for a group of tensors of one format: writes
/// each cast's amax into slot `slot` of its amax history (row t of `history`, a ring: the slot is
/// the number of updates so far modulo its length, which the host knows), then scale(t) =
/// fp8_max / (max over row t) / 2^margin. One launch for the group (Transformer Engine's bulk
/// update).
///
/// As in Transformer Engine the previous scale is kept while that max is 0 (no data yet), and a
/// scale that overflows becomes FLT_MAX. Unlike it, a non-finite amax (the step's data held an
/// infinity or NaN, which the high-precision overflow check skips) enters the history as 0: one
/// bad step does not pin the scale for the whole window.
template <class Format, class ExecutionSpace>
void fp8_delayed_update(
    const ExecutionSpace& space,
    const Kokkos::View<float**, Kokkos::LayoutRight, typename ExecutionSpace::memory_space>& history, std::int64_t slot,
    const Kokkos::View<const fp8_cast_stats*, typename ExecutionSpace::memory_space>& last,
    const Kokkos::View<float*, typename ExecutionSpace::memory_space>& scale, const fp8_scaling_options& options = {}) {
  static_assert(is_float8_v<Format>, "kamp::fp8_delayed_update: Format is an FP8 type");
  if (history.extent(1) == 0) throw std::invalid_argument("kamp::fp8_delayed_update: the amax history is empty");
  if (history.extent(0) != scale.extent(0) || last.extent(0) != scale.extent(0))
    throw std::invalid_argument("kamp::fp8_delayed_update: " + std::to_string(history.extent(0)) + " histories, " +
                                std::to_string(last.extent(0)) + " casts and " + std::to_string(scale.extent(0)) +
                                " scales; one each per tensor");
  constexpr float fp8_max = float(format_traits<Format>::max());
  const auto length = static_cast<std::int64_t>(history.extent(1));
  const std::int64_t at = slot % length;
  Kokkos::parallel_for(
      "kamp::fp8_delayed_update", Kokkos::RangePolicy<ExecutionSpace>(space, 0, scale.extent(0)), KOKKOS_LAMBDA(int t) {
        const float a = last(t).amax;
        history(t, at) = a < detail::bits_to_float(0x7f800000u) ? a : 0.0f;  // NaN compares false too
        float window = 0.0f;
        for (std::int64_t i = 0; i < length; ++i) window = history(t, i) > window ? history(t, i) : window;
        scale(t) = detail::scale_from_amax(window, fp8_max, options, scale(t));
      });
}

/// \brief The scale_inv a cast wrote, as the scalar view kamp::gemm_fp8 reads.
template <class MemorySpace>
Kokkos::View<const float, MemorySpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> scale_inv_of(
    const Kokkos::View<fp8_cast_stats, MemorySpace>& stats) {
  return Kokkos::View<const float, MemorySpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(&stats.data()->scale_inv);
}

}  // namespace kamp

#endif
