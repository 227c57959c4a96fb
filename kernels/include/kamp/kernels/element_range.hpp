#ifndef KAMP_KERNELS_ELEMENT_RANGE_HPP
#define KAMP_KERNELS_ELEMENT_RANGE_HPP

#include <algorithm>
#include <cstddef>
#include <utility>

namespace kamp {

/// \brief Elements [first, last) of a flat buffer, or of one tensor in it: a rank's shard, a
/// tensor's place, the part of a tensor that a shard holds. The one range type of kamp.
///
/// Where a range is optional (training_state::slice, read_checkpoint), the default (0, 0)
/// means every element: whole() and within() say so.
struct element_range {
  std::size_t first = 0, last = 0;

  /// Elements in the range (0 for an empty one).
  std::size_t size() const { return last > first ? last - first : 0; }
  bool empty() const { return last <= first; }
  bool contains(std::size_t i) const { return i >= first && i < last; }
  /// The same elements counted from `origin` (which must not lie past `first`): a tensor's part
  /// in the tensor's own elements, a shard's piece in the shard's.
  element_range relative_to(std::size_t origin) const { return {first - origin, last - origin}; }
  /// (first, last), the form Kokkos::subview takes.
  std::pair<std::size_t, std::size_t> pair() const { return {first, last}; }

  /// The default range, which stands for all elements where a range is optional.
  bool whole() const { return last == 0; }
  /// The range itself, or [0, flat_size) when it is whole().
  element_range within(std::size_t flat_size) const { return whole() ? element_range{0, flat_size} : *this; }

  friend bool operator==(const element_range& a, const element_range& b) {
    return a.first == b.first && a.last == b.last;
  }
  friend bool operator!=(const element_range& a, const element_range& b) { return !(a == b); }
};

/// The elements `a` and `b` share: empty (first == last, never whole()) when they share none.
inline element_range overlap(const element_range& a, const element_range& b) {
  const std::size_t lo = std::max(a.first, b.first), hi = std::min(a.last, b.last);
  return lo < hi ? element_range{lo, hi} : element_range{lo + 1, lo + 1};
}

}  // namespace kamp

#endif
