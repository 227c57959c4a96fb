#ifndef KAMP_APPS_BENCH_REPORT_HPP
#define KAMP_APPS_BENCH_REPORT_HPP

#include <Kokkos_Core.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

namespace kamp::bench {

/// Times `body` against `reference` in alternation (one warm-up each, then `repeat` pairs),
/// so both see the same machine state on a shared, noisy host. Returns the median of the
/// per-pair ratios (reference time / body time) and the median body time.
struct paired_timing {
  double seconds;
  double speed_ratio;  ///< how many times faster body ran than reference, per pair, median
};

template <class Body>
double fenced_seconds(const Body& body) {
  Kokkos::Timer timer;
  body();
  Kokkos::fence();
  return timer.seconds();
}

/// Median seconds of `repeat` fenced runs of `body` alone, after one warm-up run.
template <class Body>
double median_seconds(int repeat, const Body& body) {
  fenced_seconds(body);
  std::vector<double> t;
  for (int r = 0; r < repeat; ++r) t.push_back(fenced_seconds(body));
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

template <class Body, class Reference>
paired_timing time_against(int repeat, const Body& body, const Reference& reference) {
  fenced_seconds(reference);
  fenced_seconds(body);
  std::vector<double> t, ratio;
  for (int r = 0; r < repeat; ++r) {
    const double ref = fenced_seconds(reference);
    const double s = fenced_seconds(body);
    t.push_back(s);
    ratio.push_back(ref / s);
  }
  std::sort(t.begin(), t.end());
  std::sort(ratio.begin(), ratio.end());
  return {t[t.size() / 2], ratio[ratio.size() / 2]};
}

/// Collects results; every figure is also given as a ratio to the reference measured in the same run.
class report {
 public:
  explicit report(nlohmann::json context)
      : doc_{{"context", std::move(context)}, {"results", nlohmann::json::array()}} {}

  /// A bandwidth result: `bytes` read + written per run; `triad` ran in alternation with it.
  void bandwidth(const std::string& name, double bytes, const paired_timing& t, double triad_bytes,
                 const std::string& note = "") {
    const double gbs = bytes / t.seconds / 1e9;
    // GB/s ratio = (bytes / t) / (triad_bytes / t_triad) = speed ratio * bytes / triad_bytes
    const double ratio = t.speed_ratio * bytes / triad_bytes;
    doc_["results"].push_back({{"name", name},
                               {"kind", "bandwidth"},
                               {"bytes", bytes},
                               {"seconds", t.seconds},
                               {"gb_per_s", gbs},
                               {"ratio_to_triad", ratio},
                               {"note", note}});
    std::printf("  %-44s %8.2f GB/s  %5.2f x triad  %8.3f ms  %s\n", name.c_str(), gbs, ratio, t.seconds * 1e3,
                note.c_str());
  }
  void value(const std::string& name, const nlohmann::json& v) {
    doc_["results"].push_back({{"name", name}, {"value", v}});
  }
  nlohmann::json& doc() { return doc_; }

 private:
  nlohmann::json doc_;
};

}  // namespace kamp::bench

#endif
