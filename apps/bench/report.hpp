#ifndef KAMP_APPS_BENCH_REPORT_HPP
#define KAMP_APPS_BENCH_REPORT_HPP

#include <Kokkos_Core.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

namespace kamp::bench {

/// Median wall time of `repeat` runs of `body` (after one warm-up), each fenced.
template <class Body>
double median_seconds(int repeat, const Body& body) {
  body();
  Kokkos::fence();
  std::vector<double> t;
  for (int r = 0; r < repeat; ++r) {
    Kokkos::Timer timer;
    body();
    Kokkos::fence();
    t.push_back(timer.seconds());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

/// Collects results; every figure is also given as a ratio to the reference measured in the same run.
class report {
 public:
  explicit report(nlohmann::json context) : doc_{{"context", std::move(context)}, {"results", nlohmann::json::array()}} {}

  /// A bandwidth result: bytes read + written per run.
  void bandwidth(const std::string& name, double bytes, double seconds, double reference_gbs, const std::string& note = "") {
    const double gbs = bytes / seconds / 1e9;
    doc_["results"].push_back({{"name", name}, {"kind", "bandwidth"}, {"bytes", bytes}, {"seconds", seconds},
                               {"gb_per_s", gbs}, {"ratio_to_triad", gbs / reference_gbs}, {"note", note}});
    std::printf("  %-44s %8.2f GB/s  %5.2f x triad  %8.3f ms  %s\n", name.c_str(), gbs, gbs / reference_gbs, seconds * 1e3,
                note.c_str());
  }
  void value(const std::string& name, const nlohmann::json& v) { doc_["results"].push_back({{"name", name}, {"value", v}}); }
  nlohmann::json& doc() { return doc_; }

 private:
  nlohmann::json doc_;
};

}  // namespace kamp::bench

#endif
