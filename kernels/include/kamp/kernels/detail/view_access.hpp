#ifndef KAMP_KERNELS_DETAIL_VIEW_ACCESS_HPP
#define KAMP_KERNELS_DETAIL_VIEW_ACCESS_HPP

// How a kernel reaches the elements of whatever view a caller hands over: LayoutRight,
// LayoutLeft (Kokkos' default on GPUs, and Fortran's order) and LayoutStride (sub-views such as
// a column of a matrix). Kernels are written once over "element addresses": `v + i` is the
// address of element i of a vector, `m.row(r) + c` that of element (r, c) of a matrix. Where
// elements are adjacent that address comes from a raw pointer, so the contiguous case compiles
// to exactly the loop it always was; elsewhere from a `stepped` address, which multiplies by the
// stride. Nothing is copied.
#include <kamp/kernels/detail/chunked_range.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace kamp::detail {

/// Element i of a vector whose elements lie `step` apart: `p + i` is its address, `p[i]` the element.
template <class T>
struct stepped {
  T* p;
  std::int64_t step;
  KOKKOS_INLINE_FUNCTION T* operator+(std::int64_t i) const { return p + i * step; }
  KOKKOS_INLINE_FUNCTION T& operator[](std::int64_t i) const { return p[i * step]; }
};

/// The element type an address type reaches (`const float` for `const float*` and
/// `stepped<const float>`).
template <class Address>
using element_of = std::remove_pointer_t<decltype(std::declval<Address>() + std::int64_t(0))>;
template <class Address>
using value_of = std::remove_cv_t<element_of<Address>>;

/// A raw pointer restrict-qualified (host compilers vectorize the bandwidth-bound loops on it);
/// a stepped address as it is.
template <class Address>
struct restricted {
  using type = Address;
};
template <class T>
struct restricted<T*> {
  using type = T* KAMP_RESTRICT;
};
template <class Address>
using restrict_t = typename restricted<Address>::type;

/// Rows of a matrix: `row(r)` is the address type of row r, a raw pointer when its columns are
/// adjacent (AdjacentColumns) and a stepped address otherwise.
template <class T, bool AdjacentColumns>
struct matrix_rows {
  using value_type = std::remove_cv_t<T>;
  T* p;
  std::int64_t row_step, column_step;
  KOKKOS_INLINE_FUNCTION auto row(std::int64_t r) const {
    if constexpr (AdjacentColumns)
      return p + r * row_step;
    else
      return stepped<T>{p + r * row_step, column_step};
  }
  KOKKOS_INLINE_FUNCTION T* at(std::int64_t r, std::int64_t c) const { return row(r) + c; }
};

template <class View>
inline constexpr bool has_run_time_strides = std::is_same_v<typename View::array_layout, Kokkos::LayoutStride>;

/// The layouts kamp's kernels take. Any other (LayoutTiled, a user's own) is refused at compile time.
template <class View>
inline constexpr bool supported_layout =
    std::is_same_v<typename View::array_layout, Kokkos::LayoutRight> ||
    std::is_same_v<typename View::array_layout, Kokkos::LayoutLeft> || has_run_time_strides<View>;

/// Whether the elements a kernel walks innermost (a vector's, a row's) are adjacent in memory.
template <class View>
bool adjacent_elements(const View& v) {
  constexpr int last = int(View::rank) - 1;
  if constexpr (View::rank == 0) {
    return true;
  } else if constexpr (std::is_same_v<typename View::array_layout, Kokkos::LayoutLeft> && View::rank > 1) {
    return v.extent(last) <= 1;
  } else {
    return v.extent(last) <= 1 || v.stride(last) == 1;
  }
}

/// The address form of a rank-1 or rank-2 view. Adjacent: the LayoutStride views of this call
/// were found to have adjacent elements at run time.
template <bool Adjacent, class View>
auto access(const View& v) {
  using T = typename View::value_type;
  static_assert(supported_layout<View>,
                "kamp: this view's layout is not supported: pass LayoutRight, LayoutLeft or LayoutStride");
  static_assert(View::rank == 1 || View::rank == 2, "kamp: access() takes vectors and matrices");
  constexpr bool left = std::is_same_v<typename View::array_layout, Kokkos::LayoutLeft>;
  constexpr bool run_time = has_run_time_strides<View>;
  if constexpr (View::rank == 1) {
    if constexpr (run_time && !Adjacent)
      return stepped<T>{v.data(), std::int64_t(v.stride(0))};
    else
      return v.data();
  } else {
    constexpr bool adjacent_columns = !left && (!run_time || Adjacent);
    return matrix_rows<T, adjacent_columns>{v.data(), std::int64_t(v.stride(0)), std::int64_t(v.stride(1))};
  }
}

/// Calls f with the address form of each view. Views whose strides are known only at run time
/// (LayoutStride) take the raw-pointer form when all their innermost elements are adjacent and
/// the stepped form otherwise, so a kernel is compiled at most twice per set of view types.
template <class F, class... Views>
void with_access(const F& f, const Views&... views) {
  if constexpr ((has_run_time_strides<Views> || ...)) {
    if (((!has_run_time_strides<Views> || adjacent_elements(views)) && ...)) {
      f(access<true>(views)...);
      return;
    }
  }
  f(access<false>(views)...);
}

/// For the kernels that take tensors exactly as kamp's own networks lay them out (attention,
/// embedding, the FP8 scaling passes): a row-major view whose elements are contiguous. LayoutLeft
/// matrices are refused at compile time, a strided view at run time, each with what to pass.
template <class View>
void require_row_major(const char* api, const char* what, const View& v) {
  static_assert(supported_layout<View>, "kamp: this view's layout is not supported: pass LayoutRight");
  static_assert(View::rank <= 1 || !std::is_same_v<typename View::array_layout, Kokkos::LayoutLeft>,
                "kamp: the attention, embedding and FP8-scaling kernels take row-major views (LayoutRight), "
                "not LayoutLeft");
  if constexpr (has_run_time_strides<View>) {
    std::size_t expected = 1;
    for (int d = int(View::rank) - 1; d >= 0; --d) {
      if (v.extent(d) > 1 && std::size_t(v.stride(d)) != expected)
        throw std::invalid_argument(std::string(api) + ": " + what + " '" + v.label() +
                                    "' is strided; this kernel takes contiguous row-major views: copy it into a "
                                    "LayoutRight view");
      expected *= v.extent(d);
    }
  }
}

}  // namespace kamp::detail

#endif
