#ifndef KAMP_TESTS_SUPPORT_DATA_HPP
#define KAMP_TESTS_SUPPORT_DATA_HPP

#include <kamp/numeric/convert.hpp>

#include <cstddef>
#include <random>
#include <vector>

namespace kamp::test {

/// n values from N(0, sd^2), reproducible from `seed`.
inline std::vector<float> normal_values(std::size_t n, float sd, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, sd);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

/// Each value rounded to T (nearest even).
template <class T>
std::vector<T> narrowed(const std::vector<float>& x) {
  std::vector<T> out(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) out[i] = kamp::from_float<T>(x[i]);
  return out;
}

}  // namespace kamp::test

#endif
