#include <kamp/model/gpt_parameters.hpp>
#include <kamp/model/trainer.hpp>
#include <kamp/numeric/counter_random.hpp>

#include <algorithm>
#include <cmath>

namespace kamp {

std::vector<float> gpt2_initial_weights(const gpt_config& config, std::uint64_t seed) {
  const gpt_parameters p(config);
  std::vector<float> w(p.table.flat_size(), 0.0f);
  // Residual output projections get N(0, 0.02/√(2L)), as in GPT-2.
  std::vector<bool> residual(p.table.count(), false);
  for (const auto& b : p.blocks) residual[b.attn_proj.weight] = residual[b.mlp_proj.weight] = true;
  const double residual_std = 0.02 / std::sqrt(2.0 * config.layers);
  for (std::size_t t = 0; t < p.table.count(); ++t) {
    const auto& e = p.table[t];
    switch (p.kind(t)) {
      case parameter_kind::linear_bias:
      case parameter_kind::norm_bias:
        continue;
      case parameter_kind::norm_gain:
        std::fill(w.begin() + e.offset, w.begin() + e.offset + e.size, 1.0f);
        continue;
      case parameter_kind::embedding:
      case parameter_kind::linear_weight:
        break;
    }
    const double sd = residual[t] ? residual_std : 0.02;
    for (std::size_t i = 0; i < e.size; ++i) {
      // Box-Muller on two counter-based uniforms in (0, 1].
      const std::uint64_t k = 2 * (e.offset + i);
      const double u1 = (counter_random(seed, k) + 1.0) / 4294967296.0, u2 = counter_random(seed, k + 1) / 4294967296.0;
      w[e.offset + i] = float(sd * std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
    }
  }
  return w;
}

}  // namespace kamp
