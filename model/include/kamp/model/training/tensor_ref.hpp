#ifndef KAMP_MODEL_TRAINING_TENSOR_REF_HPP
#define KAMP_MODEL_TRAINING_TENSOR_REF_HPP

#include <kamp/numeric/format.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <type_traits>

namespace kamp {

/// The element types a session reads from a caller's memory (and, the floating ones, writes).
enum class element_kind { fp64, fp32, bf16, fp16, int32, int64 };
const char* name(element_kind k);
int size_of(element_kind k);

/// Where a caller's memory lies: the host, or the device of the session's backend.
enum class memory_kind { host, device };

/// \brief A caller's array described by address, shape and strides, as C, Fortran and DLPack
/// describe one: what kamp's C API and Fortran module hand to a session. Nothing is copied:
/// a session reads (and predict writes) the elements where they lie.
///
/// The shape is in C order (the last dimension varies fastest in a contiguous array); strides
/// count elements and may be any value, zero or negative included (outputs must not overlap
/// themselves). The session sees the array as a (batch, features) matrix: `batch_dims` > 0 takes
/// the first that many dimensions as the batch, < 0 the last -batch_dims; the other dimensions
/// are the features, and both are flattened in C order.
struct tensor_ref {
  static constexpr int max_rank = 8;
  const void* data = nullptr;
  element_kind type = element_kind::fp32;
  memory_kind memory = memory_kind::host;
  int rank = 0;
  std::int64_t shape[max_rank] = {};
  std::int64_t strides[max_rank] = {};
  int batch_dims = 1;
};

/// A Kokkos view of any rank and layout as a tensor_ref (its indices in the order written, so
/// `batch_dims` = 2 makes (i, j) of a view v(i, j, c) the sample and c the feature).
template <class View>
tensor_ref as_tensor(const View& v, int batch_dims = 1) {
  using T = typename View::non_const_value_type;
  static_assert(View::rank >= 1 && View::rank <= tensor_ref::max_rank, "kamp::as_tensor: views of rank 1 to 8");
  tensor_ref t;
  t.data = v.data();
  t.type = std::is_same_v<T, double>         ? element_kind::fp64
           : std::is_same_v<T, float>        ? element_kind::fp32
           : std::is_same_v<T, bf16>         ? element_kind::bf16
           : std::is_same_v<T, fp16>         ? element_kind::fp16
           : std::is_same_v<T, std::int32_t> ? element_kind::int32
                                             : element_kind::int64;
  static_assert(std::is_same_v<T, double> || std::is_same_v<T, float> || std::is_same_v<T, bf16> ||
                    std::is_same_v<T, fp16> || std::is_same_v<T, std::int32_t> || std::is_same_v<T, std::int64_t>,
                "kamp::as_tensor: views of fp64, fp32, bf16, fp16, int32 or int64");
  t.memory = Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename View::memory_space>::accessible
                 ? memory_kind::host
                 : memory_kind::device;
  t.rank = int(View::rank);
  for (int d = 0; d < t.rank; ++d) {
    t.shape[d] = std::int64_t(v.extent(d));
    t.strides[d] = std::int64_t(v.stride(d));
  }
  t.batch_dims = batch_dims;
  return t;
}

namespace detail {

/// One side of a tensor_ref's matrix: dimensions merged where their strides allow (a contiguous
/// side is one dimension), the slowest first.
struct strided_index {
  int dims = 0;
  std::int64_t extent[tensor_ref::max_rank] = {};
  std::int64_t stride[tensor_ref::max_rank] = {};

  /// The element offset of flat index i (C order over the dimensions).
  KOKKOS_INLINE_FUNCTION std::int64_t offset(std::int64_t i) const {
    if (dims == 1) return i * stride[0];
    std::int64_t off = 0;
    for (int d = dims - 1; d >= 0; --d) {
      off += (i % extent[d]) * stride[d];
      i /= extent[d];
    }
    return off;
  }
};

/// A validated tensor_ref as a (rows, cols) matrix.
struct tensor_matrix {
  const void* data = nullptr;
  element_kind type = element_kind::fp32;
  memory_kind memory = memory_kind::host;
  std::int64_t rows = 0, cols = 0;
  strided_index row, col;
};

/// Checks `t` (rank 1 to 8, positive extents, 1 to rank batch dimensions (none left: one
/// feature), an aligned address, and for `written` no two elements at one address) and returns its matrix; any
/// problem throws std::invalid_argument naming `api` and `what`.
tensor_matrix as_matrix(const tensor_ref& t, const char* api, const char* what, bool written);

}  // namespace detail

}  // namespace kamp

#endif
