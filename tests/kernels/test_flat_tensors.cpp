#include <kamp/kernels/flat_tensors.hpp>

#include "../support/catch.hpp"

TEST_CASE("tensor_table packs tensors at aligned offsets", "[kernels]") {
  kamp::tensor_table table(64);
  CHECK(table.add("wte", {256, 64}) == 0);
  CHECK(table.add("ln.bias", {7}) == 1);
  CHECK(table.add("fc", {3, 5}) == 2);
  CHECK(table[0].offset == 0);
  CHECK(table[0].size == 256 * 64);
  CHECK(table[1].offset == 256 * 64);
  CHECK(table[2].offset == 256 * 64 + 64);  // 7 elements rounded up to the alignment
  CHECK(table.flat_size() == 256 * 64 + 64 + 15);
  CHECK(table.parameter_count() == 256 * 64 + 7 + 15);
  CHECK(table.index_of("fc") == 2);
  CHECK_THROWS_WITH(table.add("fc", {1}), kamp::test::contains("duplicate tensor name 'fc'"));
  CHECK_THROWS_WITH(table.index_of("nope"), kamp::test::contains("no tensor named 'nope'"));
}

TEST_CASE("tensor views alias the flat buffer", "[kernels]") {
  kamp::tensor_table table(4);
  table.add("a", {3});
  table.add("b", {2, 2});
  Kokkos::View<float*, Kokkos::HostSpace> flat("flat", table.flat_size());
  auto b = kamp::tensor_view(flat, table, 1);
  CHECK(b.extent(0) == 4);
  b(3) = 42.0f;
  CHECK(flat(4 + 3) == 42.0f);
  Kokkos::View<float*, Kokkos::HostSpace> small("small", 5);
  CHECK_THROWS_WITH(kamp::tensor_view(small, table, 1),
                    kamp::test::contains("'small' has 5 elements, the table needs 8"));
}

TEST_CASE("shards are contiguous, aligned, disjoint and cover the buffer", "[kernels]") {
  kamp::tensor_table table(64);
  for (int i = 0; i < 37; ++i) table.add("t" + std::to_string(i), {std::size_t(100 + 13 * i)});
  for (int ranks : {1, 2, 3, 4, 7}) {
    std::size_t next = 0;
    for (int r = 0; r < ranks; ++r) {
      const auto [begin, end] = table.shard(r, ranks);
      CHECK(begin == next);
      CHECK((begin % 64 == 0 || begin == table.flat_size()));
      next = end;
    }
    CHECK(next == table.flat_size());
  }
  CHECK_THROWS(table.shard(2, 2));
}
