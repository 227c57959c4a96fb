#ifndef KAMP_TESTS_SUPPORT_CATCH_HPP
#define KAMP_TESTS_SUPPORT_CATCH_HPP

// Catch2 2 (one header) and Catch2 3 (a library, headers per concept) behind one include, so
// every test source compiles against either. KAMP_CATCH2_MAJOR comes from the Catch2 package
// CMake found (tests/CMakeLists.txt).
#include <iostream>
#include <string>

#if KAMP_CATCH2_MAJOR >= 3
#include <catch2/catch_approx.hpp>
#include <catch2/catch_template_test_macros.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/generators/catch_generators_range.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#ifdef CATCH_CONFIG_RUNNER  // the test mains
#include <catch2/catch_session.hpp>
#endif
using Catch::Approx;
#else
#include <catch2/catch.hpp>
#endif

namespace kamp::test {

/// Exit status of a test that could not run (CTest's SKIP_RETURN_CODE on every kamp test): it
/// shows as "Skipped" with its reason, never as a pass, and CI fails on it (tools/common.sh).
inline constexpr int skipped_exit_code = 77;

/// Whether a test case of this process called `skip`.
inline bool& skipped() {
  static bool s = false;
  return s;
}

/// Marks the running test case as skipped and says why; the caller returns from it.
inline void skip(const std::string& reason) {
  skipped() = true;
  std::cout << "kamp test skipped: " << reason << std::endl;
}

/// Matcher: the string contains `part` (Catch2 2's Contains, Catch2 3's ContainsSubstring).
inline auto contains(const std::string& part) {
#if KAMP_CATCH2_MAJOR >= 3
  return Catch::Matchers::ContainsSubstring(part);
#else
  return Catch::Contains(part);
#endif
}

#ifdef CATCH_CONFIG_RUNNER  // the test mains (Catch2 2 declares ConfigData for them only)
/// Whether the command line only asks Catch2 to list things (CTest's test discovery does).
inline bool only_lists(const Catch::ConfigData& config) {
#if KAMP_CATCH2_MAJOR >= 3
  return config.listTests || config.listTags || config.listReporters || config.listListeners;
#else
  return config.listTests || config.listTestNamesOnly || config.listTags || config.listReporters;
#endif
}
#endif

}  // namespace kamp::test

#endif
