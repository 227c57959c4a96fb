#include <kamp/kernels/element_range.hpp>

#include "../support/catch.hpp"

#include <set>

namespace {

std::set<std::size_t> elements_of(const kamp::element_range& r) {
  std::set<std::size_t> out;
  for (std::size_t i = r.first; i < r.last; ++i) out.insert(i);
  return out;
}

}  // namespace

TEST_CASE("overlap holds exactly the elements both ranges hold, for every pair of small ranges", "[kernels]") {
  // Every range with ends in [0, 9], empty and inverted ones included, against set intersection.
  constexpr std::size_t n = 10;
  for (std::size_t a0 = 0; a0 < n; ++a0)
    for (std::size_t a1 = 0; a1 < n; ++a1)
      for (std::size_t b0 = 0; b0 < n; ++b0)
        for (std::size_t b1 = 0; b1 < n; ++b1) {
          const kamp::element_range a{a0, a1}, b{b0, b1};
          std::set<std::size_t> both;
          for (const std::size_t i : elements_of(a))
            if (elements_of(b).count(i)) both.insert(i);
          const kamp::element_range o = kamp::overlap(a, b);
          INFO("[" << a0 << ", " << a1 << ") and [" << b0 << ", " << b1 << ")");
          REQUIRE(elements_of(o) == both);
          REQUIRE(o.size() == both.size());
          REQUIRE(o.empty() == both.empty());
          // An empty overlap must not read as the default range, which stands for "all elements".
          REQUIRE_FALSE(o.whole());
          REQUIRE(kamp::overlap(b, a).size() == o.size());
        }
}

TEST_CASE("element_range counts, contains, shifts and resolves the whole-buffer default", "[kernels]") {
  const kamp::element_range r{64, 100};
  CHECK(r.size() == 36);
  CHECK_FALSE(r.empty());
  CHECK(r.contains(64));
  CHECK(r.contains(99));
  CHECK_FALSE(r.contains(100));
  CHECK_FALSE(r.contains(63));
  CHECK(r.relative_to(64) == kamp::element_range{0, 36});
  CHECK(r.relative_to(50) == kamp::element_range{14, 50});
  CHECK(r.pair() == std::pair<std::size_t, std::size_t>{64, 100});
  CHECK(kamp::element_range{5, 3}.size() == 0);
  CHECK(kamp::element_range{5, 3}.empty());
  CHECK(kamp::element_range{}.whole());
  CHECK(kamp::element_range{}.within(1000) == kamp::element_range{0, 1000});
  CHECK(r.within(1000) == r);
  CHECK_FALSE(r.whole());
  CHECK(r != kamp::element_range{64, 101});
}
