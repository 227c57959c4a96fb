// The fence count that the step tests assert to be zero can see a fence: one planted through
// kamp::detail::fence is counted on every Kokkos (3.4 reports none to its Tools callbacks, so
// kamp tells the counter itself), a host-library fence counts apart only on a host space, and
// the Kokkos fences kamp does not make are counted where Kokkos reports them (3.5 on).
#include <kamp/kernels/detail/fence.hpp>
#include <kamp/tools/launch_counter.hpp>

#include "../support/catch.hpp"

#include "../support/execution_spaces.hpp"

#include <string>
#include <type_traits>

TEMPLATE_TEST_CASE("fences: a fence planted in counted work is seen on every Kokkos", "[kernels][fences]",
                   KAMP_TEST_EXECUTION_SPACES) {
  const TestType space;
  const kamp::launch_tally planted = kamp::count_launches([&] {
    Kokkos::parallel_for("kamp::test::before_the_fence", Kokkos::RangePolicy<TestType>(space, 0, 4),
                         KOKKOS_LAMBDA(int){});
    kamp::detail::fence(space, "planted");
  });
  CHECK(planted.launches == 1);
  REQUIRE(planted.fences == 1);
  CHECK(planted.fence_names.at(0) == "kamp::fence[planted]");
  CHECK(planted.host_fences == 0);

  const kamp::launch_tally none = kamp::count_launches([&] {
    Kokkos::parallel_for("kamp::test::no_fence", Kokkos::RangePolicy<TestType>(space, 0, 4), KOKKOS_LAMBDA(int){});
  });
  CHECK(none.fences == 0);
  // Counting ends with count_launches: a fence after it is nobody's.
  kamp::detail::fence(space, "after counting");
  CHECK(kamp::count_launches([] {}).fences == 0);
}

TEMPLATE_TEST_CASE("fences: a host library's fence counts apart on a host space only", "[kernels][fences]",
                   KAMP_TEST_EXECUTION_SPACES) {
  const TestType space;
  const kamp::launch_tally t = kamp::count_launches([&] { kamp::detail::fence_for_host_library(space, "a BLAS"); });
  if constexpr (std::is_same_v<typename TestType::memory_space, Kokkos::HostSpace>) {
    CHECK(t.host_fences == 1);
    CHECK(t.fences == 0);
  } else {
    CHECK(t.host_fences == 0);
    CHECK(t.fences == 1);
  }
}

TEST_CASE("fences: Kokkos' own fences are counted where Kokkos reports them", "[kernels][fences]") {
  const kamp::launch_tally t = kamp::count_launches([] { Kokkos::DefaultExecutionSpace().fence(); });
  // Kokkos 3.4 calls no fence callback: there only kamp's own fences are seen (above), and the
  // newest-toolchain legs (Kokkos 4.5, 5.2) are where a fence Kokkos makes inside a step shows.
  CHECK(t.fences == (kamp::detail::kokkos_reports_fences ? 1 : 0));
}
