// When kamp-train calls the precision doctor by itself: fed synthetic step reports.
#include "../../apps/train/loss_watch.hpp"

#include "../support/catch.hpp"

#include <cmath>
#include <limits>

namespace {

kamp::step_report step(std::int64_t n, double loss, bool skipped = false) {
  return {n, loss, skipped, 1.0f, 1.0f, 1e-3f, 0.01, 64};
}

}  // namespace

TEST_CASE("a falling loss never calls the doctor", "[app]") {
  kamp::app::loss_watch watch(10);
  for (int n = 1; n <= 200; ++n) CHECK(watch.update(step(n, 5.0 / n)).empty());
}

TEST_CASE("a loss that stops falling calls the doctor once, after two windows", "[app]") {
  kamp::app::loss_watch watch(10);
  for (int n = 1; n <= 19; ++n) CHECK(watch.update(step(n, 3.0 + 0.01 * (n % 3))).empty());
  const std::string why = watch.update(step(20, 3.02));
  CHECK_THAT(why, kamp::test::contains("the loss stopped falling") && kamp::test::contains("last 10 steps"));
  for (int n = 21; n <= 60; ++n) CHECK(watch.update(step(n, 3.0)).empty());
}

TEST_CASE("a NaN loss or three skipped steps in a row call the doctor", "[app]") {
  kamp::app::loss_watch nan_watch;
  CHECK(nan_watch.update(step(1, 5.0)).empty());
  CHECK_THAT(nan_watch.update(step(2, std::nan(""), true)), kamp::test::contains("the loss is NaN at step 2"));
  CHECK(nan_watch.update(step(3, std::nan(""), true)).empty());

  kamp::app::loss_watch skips;
  CHECK(skips.update(step(1, 5.0, true)).empty());
  CHECK(skips.update(step(2, 5.0, true)).empty());
  CHECK(skips.update(step(3, 5.0)).empty());  // a clean step resets the count
  CHECK(skips.update(step(4, 5.0, true)).empty());
  CHECK(skips.update(step(5, 5.0, true)).empty());
  CHECK_THAT(skips.update(step(6, 5.0, true)), kamp::test::contains("3 steps in a row had inf/NaN gradients (step 6)"));
  CHECK_THAT(kamp::app::loss_watch().update(step(1, std::numeric_limits<double>::infinity())),
             kamp::test::contains("infinite"));
}
