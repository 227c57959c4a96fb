// detail::packing (model/src/dist/packing.hpp): how a sharded run packs tensors for its
// collectives, against a reference that enumerates every element.
#include <kamp/kernels/flat_tensors.hpp>

#include "../support/catch.hpp"
#include "dist/packing.hpp"

#include <random>
#include <vector>

namespace {

// The packed buffer element by element: the flat positions of `ranges` in order.
std::vector<std::size_t> enumerate(const std::vector<kamp::element_range>& ranges) {
  std::vector<std::size_t> out;
  for (const auto& r : ranges)
    for (std::size_t i = r.first; i < r.last; ++i) out.push_back(i);
  return out;
}

// Ascending disjoint ranges with gaps (some adjacent) inside [0, flat).
std::vector<kamp::element_range> random_ranges(std::mt19937& rng, std::size_t flat) {
  std::vector<kamp::element_range> out;
  std::size_t at = 0;
  while (true) {
    at += std::uniform_int_distribution<std::size_t>(0, 3)(rng) == 0 ? 0 : rng() % 20;
    const std::size_t length = 1 + rng() % 30;
    if (at + length > flat) break;
    if (!out.empty() && out.back().last == at) {
      out.back().last = at + length;  // adjacent ranges are one range, as tensor_ranges merges them
    } else {
      out.push_back({at, at + length});
    }
    at += length;
  }
  return out;
}

}  // namespace

TEST_CASE("packing puts every rank's elements in one part, in rank order, each element once", "[model][dist]") {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    const std::size_t flat = 64 + rng() % 400;
    const auto ranges = random_ranges(rng, flat);
    const int ranks = 1 + int(rng() % 5);
    kamp::tensor_table table(16);
    table.add("all", {flat});
    std::vector<kamp::element_range> shards;
    for (int r = 0; r < ranks; ++r) shards.push_back(table.shard(r, ranks));
    const std::vector<std::size_t> packed = enumerate(ranges);
    INFO("trial " << trial << ", " << ranks << " ranks, " << ranges.size() << " ranges");
    std::size_t cursor = 0;
    for (int r = 0; r < ranks; ++r) {
      const kamp::detail::packing p(ranges, shards, r);
      REQUIRE(p.size == packed.size());
      for (std::size_t i = 0; i < packed.size(); ++i) REQUIRE(p.position(packed[i]) == i);
      // Rank r's part: the packed positions of the elements inside its shard, contiguous.
      std::vector<std::size_t> mine;
      for (std::size_t i = 0; i < packed.size(); ++i)
        if (shards[r].contains(packed[i])) mine.push_back(i);
      REQUIRE(p.parts[r].first == cursor);
      REQUIRE(p.parts[r].size() == mine.size());
      for (std::size_t k = 0; k < mine.size(); ++k) REQUIRE(mine[k] == cursor + k);
      cursor += mine.size();
      // Its pieces copy exactly those elements from its shard.
      std::vector<std::size_t> copied;
      for (const auto& piece : p.mine)
        for (std::size_t k = 0; k < piece.size; ++k) {
          REQUIRE(packed[piece.packed + k] == shards[r].first + piece.shard + k);
          copied.push_back(piece.packed + k);
        }
      REQUIRE(copied == mine);
      std::size_t counted = 0;
      for (const std::size_t c : p.counts()) counted += c;
      REQUIRE(counted == packed.size());
    }
    REQUIRE(cursor == packed.size());
  }
}

TEST_CASE("tensor_ranges lists the kept tensors' ranges ascending, adjacent ones merged", "[model][dist]") {
  kamp::tensor_table table(4);
  table.add("a", {4});  // [0, 4)
  table.add("b", {3});  // [4, 7), then a gap to 8
  table.add("c", {2});  // [8, 10)
  table.add("d", {4});  // [12, 16)
  const std::vector<bool> keep{true, true, true, false};
  const auto ranges = kamp::detail::tensor_ranges(table, {2, 0, 1, 3}, keep);
  REQUIRE(ranges.size() == 2);
  CHECK(ranges[0] == kamp::element_range{0, 7});
  CHECK(ranges[1] == kamp::element_range{8, 10});
  CHECK_THROWS_AS(kamp::detail::packing(ranges, {kamp::element_range{0, 16}}, 0).position(7), std::logic_error);
}
