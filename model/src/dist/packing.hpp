#ifndef KAMP_MODEL_SRC_DIST_PACKING_HPP
#define KAMP_MODEL_SRC_DIST_PACKING_HPP

#include <kamp/kernels/element_range.hpp>
#include <kamp/kernels/flat_tensors.hpp>

#include <cstddef>
#include <vector>

namespace kamp::detail {

/// \brief Ranges of the flat buffers packed one after the other into one buffer, and how that
/// buffer splits over the ranks: shards are contiguous and in rank order, so each rank's
/// elements form one contiguous part of the packed buffer, also in rank order — the layout an
/// in-place all-gather and reduce-scatter expect. A sharded run packs each unit's tensors this
/// way (FSDP), and the AMP trainer the master values the model reads exactly (ZeRO-1).
struct packing {
  struct piece {
    std::size_t packed, shard, size;  ///< offset in the packed buffer, in this rank's shard; length
  };
  std::vector<element_range> ranges;  ///< of the flat buffers, ascending, disjoint
  std::size_t size = 0;               ///< elements of the packed buffer
  std::vector<element_range> parts;   ///< every rank's part of the packed buffer
  std::vector<piece> mine;            ///< this rank's elements, from its shard

  packing() = default;
  packing(std::vector<element_range> ranges, const std::vector<element_range>& shards, int rank);
  /// Where element `flat` of the flat buffers is in the packed buffer (it must be in a range).
  std::size_t position(std::size_t flat) const;
  std::vector<std::size_t> counts() const;
};

/// The flat-buffer ranges of `table`'s tensors `tensors` for which `keep` is true, ascending,
/// adjacent ones merged: what a packing of those tensors holds.
std::vector<element_range> tensor_ranges(const tensor_table& table, const std::vector<std::size_t>& tensors,
                                         const std::vector<bool>& keep);

}  // namespace kamp::detail

#endif
