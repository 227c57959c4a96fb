// Catch2 entry point that keeps Kokkos initialized while the tests run.
#define CATCH_CONFIG_RUNNER
#include "catch.hpp"

#include <Kokkos_Core.hpp>

#include <optional>

int main(int argc, char* argv[]) {
  Catch::Session session;
  if (const int rc = session.applyCommandLine(argc, argv); rc != 0) return rc;
  // CTest discovers test cases by listing them; Kokkos stays uninitialized then, because its
  // start-up warnings on stdout would be read as test names.
  std::optional<Kokkos::ScopeGuard> kokkos;
  if (!kamp::test::only_lists(session.configData())) kokkos.emplace(argc, argv);
  const int failed = session.run();
  return failed == 0 && kamp::test::skipped() ? kamp::test::skipped_exit_code : failed;
}
