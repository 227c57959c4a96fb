#include <kamp/model/training/tensor_ref.hpp>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace kamp {

const char* name(element_kind k) {
  switch (k) {
    case element_kind::fp64:
      return "fp64";
    case element_kind::fp32:
      return "fp32";
    case element_kind::bf16:
      return "bf16";
    case element_kind::fp16:
      return "fp16";
    case element_kind::int32:
      return "int32";
    case element_kind::int64:
      return "int64";
  }
  return "?";
}

int size_of(element_kind k) {
  switch (k) {
    case element_kind::fp64:
    case element_kind::int64:
      return 8;
    case element_kind::fp32:
    case element_kind::int32:
      return 4;
    default:
      return 2;
  }
}

namespace detail {
namespace {

// Dimensions [begin, end) of t, merged where one steps over the next exactly (C order).
strided_index merged(const tensor_ref& t, int begin, int end) {
  strided_index s;
  for (int d = begin; d < end; ++d) {
    if (t.shape[d] == 1) continue;  // a unit dimension adds nothing, whatever its stride
    if (s.dims > 0 && s.stride[s.dims - 1] == t.strides[d] * t.shape[d]) {
      s.extent[s.dims - 1] *= t.shape[d];
      s.stride[s.dims - 1] = t.strides[d];
    } else {
      s.extent[s.dims] = t.shape[d];
      s.stride[s.dims] = t.strides[d];
      ++s.dims;
    }
  }
  if (s.dims == 0) s.extent[0] = 1, s.dims = 1;
  return s;
}

// Whether two elements share an address: sorted by |stride|, each dimension must step past the
// whole span of the ones below it.
bool overlaps(const tensor_ref& t) {
  std::vector<std::pair<std::int64_t, std::int64_t>> dims;  // (|stride|, extent)
  for (int d = 0; d < t.rank; ++d)
    if (t.shape[d] > 1) dims.emplace_back(std::llabs(t.strides[d]), t.shape[d]);
  std::sort(dims.begin(), dims.end());
  std::int64_t span = 1;
  for (const auto& [stride, extent] : dims) {
    if (stride < span) return true;
    span = stride * extent;
  }
  return false;
}

}  // namespace

tensor_matrix as_matrix(const tensor_ref& t, const char* api, const char* what, bool written) {
  // Built only on failure: a step pays for no string.
  const auto where = [&] { return std::string(api) + ": " + what; };
  if (t.data == nullptr) throw std::invalid_argument(where() + " has a null data pointer");
  if (t.rank < 1 || t.rank > tensor_ref::max_rank)
    throw std::invalid_argument(where() + " has rank " + std::to_string(t.rank) + "; kamp reads ranks 1 to " +
                                std::to_string(tensor_ref::max_rank));
  if (t.batch_dims == 0 || std::abs(t.batch_dims) > t.rank)
    throw std::invalid_argument(where() + ": batch_dims " + std::to_string(t.batch_dims) + " for rank " +
                                std::to_string(t.rank) + "; use 1 to " + std::to_string(t.rank) +
                                " (the leading dimensions) or -1 to -" + std::to_string(t.rank) +
                                " (the trailing ones)");
  std::int64_t elements = 1;
  for (int d = 0; d < t.rank; ++d) {
    if (t.shape[d] < 1)
      throw std::invalid_argument(where() + " has extent " + std::to_string(t.shape[d]) + " in dimension " +
                                  std::to_string(d) + "; every extent must be at least 1");
    if (t.shape[d] > (std::int64_t(1) << 40) / elements)
      throw std::invalid_argument(where() + " has over 2^40 elements");
    elements *= t.shape[d];
    if (std::llabs(t.strides[d]) > (std::int64_t(1) << 40))
      throw std::invalid_argument(where() + " has stride " + std::to_string(t.strides[d]) + " in dimension " +
                                  std::to_string(d) + " (over 2^40 elements)");
  }
  if (reinterpret_cast<std::uintptr_t>(t.data) % std::uintptr_t(size_of(t.type)) != 0)
    throw std::invalid_argument(where() + ": the address of its " + name(t.type) + " elements is not a multiple of " +
                                std::to_string(size_of(t.type)) + " bytes");
  if (written && (t.type == element_kind::int32 || t.type == element_kind::int64))
    throw std::invalid_argument(where() + " holds " + name(t.type) + "; outputs are fp64, fp32, bf16 or fp16");
  if (written && overlaps(t))
    throw std::invalid_argument(where() +
                                ": its strides put several elements at one address; an output needs one "
                                "address per element");
  const int batch_end = t.batch_dims > 0 ? t.batch_dims : t.rank;
  const int batch_begin = t.batch_dims > 0 ? 0 : t.rank + t.batch_dims;
  tensor_matrix m;
  m.data = t.data;
  m.type = t.type;
  m.memory = t.memory;
  m.row = merged(t, batch_begin, batch_end);
  // The features: the dimensions outside the batch, in C order.
  tensor_ref rest = t;
  int k = 0;
  for (int d = 0; d < t.rank; ++d)
    if (d < batch_begin || d >= batch_end) rest.shape[k] = t.shape[d], rest.strides[k] = t.strides[d], ++k;
  m.col = merged(rest, 0, k);
  m.rows = m.cols = 1;
  for (int d = 0; d < m.row.dims; ++d) m.rows *= m.row.extent[d];
  for (int d = 0; d < m.col.dims; ++d) m.cols *= m.col.extent[d];
  return m;
}

}  // namespace detail

}  // namespace kamp
