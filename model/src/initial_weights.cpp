#include <kamp/model/gpt_parameters.hpp>
#include <kamp/model/trainer.hpp>
#include <kamp/numeric/counter_random.hpp>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace kamp {

std::vector<float> gpt2_initial_weights(const gpt_config& config, std::uint64_t seed) {
  return gpt2_initial_weights(config, seed, 0, config.parameter_table().flat_size());
}

std::vector<float> gpt2_initial_weights(const gpt_config& config, std::uint64_t seed, std::size_t first,
                                        std::size_t last) {
  const gpt_parameters p(config);
  if (first > last || last > p.table.flat_size())
    throw std::invalid_argument("kamp::gpt2_initial_weights: the range is not inside the parameter table");
  std::vector<float> w(last - first, 0.0f);
  // Residual output projections get N(0, 0.02/√(2L)), as in GPT-2.
  std::vector<bool> residual(p.table.count(), false);
  for (const auto& b : p.blocks) residual[b.attn_proj.weight] = residual[b.mlp_proj.weight] = true;
  const double residual_std = 0.02 / std::sqrt(2.0 * config.layers);
  for (std::size_t t = 0; t < p.table.count(); ++t) {
    const auto& e = p.table[t];
    if (e.offset + e.size <= first || e.offset >= last) continue;
    // The tensor's elements [lo, end) that lie inside [first, last).
    const std::size_t lo = std::max(e.offset, first) - e.offset, end = std::min(e.offset + e.size, last) - e.offset;
    switch (p.kind(t)) {
      case parameter_kind::linear_bias:
      case parameter_kind::norm_bias:
        continue;
      case parameter_kind::norm_gain:
        std::fill(w.begin() + (e.offset + lo - first), w.begin() + (e.offset + end - first), 1.0f);
        continue;
      case parameter_kind::embedding:
      case parameter_kind::linear_weight:
        break;
    }
    const double sd = residual[t] ? residual_std : 0.02;
    for (std::size_t i = lo; i < end; ++i) {
      // Box-Muller on two counter-based uniforms in (0, 1].
      const std::uint64_t k = 2 * (e.offset + i);
      const double u1 = (counter_random(seed, k) + 1.0) / 4294967296.0, u2 = counter_random(seed, k + 1) / 4294967296.0;
      w[e.offset + i - first] = float(sd * std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
    }
  }
  return w;
}

}  // namespace kamp
