#include "dist/packing.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace kamp::detail {

packing::packing(std::vector<element_range> r, const std::vector<element_range>& shards, int rank)
    : ranges(std::move(r)) {
  for (const auto& x : ranges) size += x.size();
  std::size_t cursor = 0;
  for (std::size_t q = 0; q < shards.size(); ++q) {
    std::size_t count = 0;
    for (const auto& x : ranges) {
      const element_range held = overlap(x, shards[q]);
      if (held.empty()) continue;
      if (int(q) == rank) mine.push_back({position(held.first), held.first - shards[q].first, held.size()});
      count += held.size();
    }
    parts.push_back({cursor, cursor + count});
    cursor += count;
  }
  if (cursor != size || (!mine.empty() && mine.front().packed != parts[rank].first))
    throw std::logic_error("kamp: the shards do not split the packed tensors into ranges in rank order");
}

std::size_t packing::position(std::size_t flat) const {
  std::size_t before = 0;
  for (const auto& x : ranges) {
    if (x.contains(flat)) return before + (flat - x.first);
    before += x.size();
  }
  throw std::logic_error("kamp: element " + std::to_string(flat) + " is not among the packed tensors");
}

std::vector<std::size_t> packing::counts() const {
  std::vector<std::size_t> c;
  for (const auto& p : parts) c.push_back(p.size());
  return c;
}

std::vector<element_range> tensor_ranges(const tensor_table& table, const std::vector<std::size_t>& tensors,
                                         const std::vector<bool>& keep) {
  std::vector<element_range> out;
  for (const std::size_t t : tensors)
    if (keep[t]) out.push_back(table[t].range());
  std::sort(out.begin(), out.end(), [](const element_range& a, const element_range& b) { return a.first < b.first; });
  std::vector<element_range> merged;
  for (const auto& r : out) {
    if (!merged.empty() && merged.back().last == r.first) {
      merged.back().last = r.last;
    } else {
      merged.push_back(r);
    }
  }
  return merged;
}

}  // namespace kamp::detail
