#ifndef KAMP_TESTS_SUPPORT_FINITE_DIFFERENCES_HPP
#define KAMP_TESTS_SUPPORT_FINITE_DIFFERENCES_HPP

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <random>
#include <vector>

namespace kamp::test {

/// Normwise relative error ||g - g_fd|| / ||g_fd|| of an analytic gradient against central
/// differences (f(x + h e_i) - f(x - h e_i)) / 2h, over the sampled coordinates `indices`;
/// f reads x (which this perturbs and restores).
template <class F>
double gradient_error(F&& f, std::vector<double>& x, const std::vector<double>& grad,
                      const std::vector<std::size_t>& indices, double h = 1e-5) {
  double diff = 0, norm = 0;
  for (std::size_t i : indices) {
    const double saved = x[i];
    x[i] = saved + h;
    const double up = f();
    x[i] = saved - h;
    const double down = f();
    x[i] = saved;
    const double fd = (up - down) / (2 * h);
    diff += (grad[i] - fd) * (grad[i] - fd);
    norm += fd * fd;
  }
  return std::sqrt(diff / norm);
}

/// Up to `count` distinct coordinates of [first, first + size), in a reproducible order.
inline std::vector<std::size_t> sample_indices(std::size_t first, std::size_t size, std::size_t count, unsigned seed) {
  std::vector<std::size_t> all(size);
  for (std::size_t i = 0; i < size; ++i) all[i] = first + i;
  if (size <= count) return all;
  std::mt19937 rng(seed);
  std::shuffle(all.begin(), all.end(), rng);
  all.resize(count);
  return all;
}

inline std::vector<double> normal_doubles(std::size_t n, double sd, unsigned seed, double mean = 0) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> d(mean, sd);
  std::vector<double> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

}  // namespace kamp::test

#endif
