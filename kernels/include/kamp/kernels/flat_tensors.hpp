#ifndef KAMP_KERNELS_FLAT_TENSORS_HPP
#define KAMP_KERNELS_FLAT_TENSORS_HPP

#include <kamp/kernels/element_range.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstddef>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace kamp {

/// \brief The layout of many tensors packed into one flat buffer per role and dtype.
///
/// Parameters, gradients, master weights and moments all share this table, so every
/// multi-tensor operation (cast, unscale + check, optimizer step) is one kernel over one range,
/// the Kokkos form of Apex's multi_tensor_apply. Each tensor starts on a multiple of
/// `alignment` elements; the gaps are zero and stay zero under every kamp kernel.
class tensor_table {
 public:
  struct entry {
    std::string name;
    std::vector<std::size_t> shape;
    std::size_t offset;  ///< first element in the flat buffer
    std::size_t size;    ///< number of elements (product of shape)
    /// Its elements of the flat buffer.
    element_range range() const { return {offset, offset + size}; }
  };

  explicit tensor_table(std::size_t alignment = 64) : alignment_(alignment) {
    if (alignment == 0) throw std::invalid_argument("kamp::tensor_table: alignment must be positive");
  }

  /// Appends a tensor and returns its index. Names must be unique (checked through an index, so
  /// a table of n tensors costs O(n log n) to build, whatever a checkpoint's config claims).
  std::size_t add(std::string name, std::vector<std::size_t> shape) {
    if (index_.count(name) != 0)
      throw std::invalid_argument("kamp::tensor_table: duplicate tensor name '" + name + "'");
    std::size_t size = 1;
    for (const auto d : shape) size *= d;
    const std::size_t offset = (total_ + alignment_ - 1) / alignment_ * alignment_;
    index_.emplace(name, entries_.size());
    entries_.push_back({std::move(name), std::move(shape), offset, size});
    total_ = offset + size;
    return entries_.size() - 1;
  }

  std::size_t count() const { return entries_.size(); }
  const entry& operator[](std::size_t i) const { return entries_.at(i); }
  const std::vector<entry>& entries() const { return entries_; }
  bool contains(const std::string& name) const { return index_.count(name) != 0; }
  std::size_t index_of(const std::string& name) const {
    const auto it = index_.find(name);
    if (it == index_.end()) throw std::out_of_range("kamp::tensor_table: no tensor named '" + name + "'");
    return it->second;
  }
  /// Elements a flat buffer needs (including alignment gaps).
  std::size_t flat_size() const { return total_; }
  /// Elements that belong to tensors (excluding gaps).
  std::size_t parameter_count() const {
    std::size_t n = 0;
    for (const auto& e : entries_) n += e.size;
    return n;
  }

  /// The contiguous range of the flat buffer that rank `rank` of `ranks` owns when optimizer
  /// state is sharded: equal parts, rounded to `alignment`.
  element_range shard(int rank, int ranks) const {
    if (ranks <= 0 || rank < 0 || rank >= ranks)
      throw std::invalid_argument("kamp::tensor_table::shard: rank must be in [0, ranks)");
    const std::size_t per = ((total_ + ranks - 1) / ranks + alignment_ - 1) / alignment_ * alignment_;
    const std::size_t begin = std::min(total_, per * rank);
    return {begin, std::min(total_, begin + per)};
  }

 private:
  std::size_t alignment_;
  std::size_t total_ = 0;
  std::vector<entry> entries_;
  std::map<std::string, std::size_t> index_;  ///< name -> position in entries_
};

/// \brief Tensor `i` of a flat buffer, as an unmanaged 1-D view into it.
template <class T, class... Props>
auto tensor_view(const Kokkos::View<T*, Props...>& flat, const tensor_table& table, std::size_t i) {
  const auto& e = table[i];
  if (flat.extent(0) < table.flat_size())
    throw std::invalid_argument("kamp::tensor_view: flat buffer '" + flat.label() + "' has " +
                                std::to_string(flat.extent(0)) + " elements, the table needs " +
                                std::to_string(table.flat_size()));
  return Kokkos::View<T*, typename Kokkos::View<T*, Props...>::memory_space, Kokkos::MemoryUnmanaged>(
      flat.data() + e.offset, e.size);
}

}  // namespace kamp

#endif
