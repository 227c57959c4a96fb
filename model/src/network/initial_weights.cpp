#include <kamp/model/network/gpt_parameters.hpp>
#include <kamp/model/network/initial_weights.hpp>
#include <kamp/numeric/counter_random.hpp>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace kamp {

std::vector<float> gpt2_initial_weights(const gpt_config& config, std::uint64_t seed) {
  return gpt2_initial_weights(config, seed, element_range{0, parameter_table(config).flat_size()});
}

std::vector<float> gpt2_initial_weights(const gpt_config& config, std::uint64_t seed, const element_range& range) {
  const gpt_parameters p(config);
  if (range.first > range.last || range.last > p.table.flat_size())
    throw std::invalid_argument("kamp::gpt2_initial_weights: the range is not inside the parameter table");
  std::vector<float> w(range.size(), 0.0f);
  // Residual output projections get N(0, 0.02/√(2L)), as in GPT-2.
  std::vector<bool> residual(p.table.count(), false);
  for (const auto& b : p.blocks) residual[b.attn_proj.weight] = residual[b.mlp_proj.weight] = true;
  const double residual_std = 0.02 / std::sqrt(2.0 * config.layers);
  for (std::size_t t = 0; t < p.table.count(); ++t) {
    const auto& e = p.table[t];
    const element_range part = overlap(e.range(), range);
    if (part.empty()) continue;
    float* out = w.data() + (part.first - range.first);
    switch (p.kind(t)) {
      case parameter_kind::linear_bias:
      case parameter_kind::norm_bias:
        continue;
      case parameter_kind::norm_gain:
        std::fill(out, out + part.size(), 1.0f);
        continue;
      case parameter_kind::embedding:
      case parameter_kind::linear_weight:
        break;
    }
    const double sd = residual[t] ? residual_std : 0.02;
    // wte's padded rows (padded_vocab()) stay zero: no token reads them, no loss trains them.
    const std::size_t last =
        t == p.wte ? std::min(part.last, e.offset + std::size_t(config.vocab) * config.d_model) : part.last;
    for (std::size_t i = part.first; i < last; ++i) {
      // Box-Muller on two counter-based uniforms in (0, 1], keyed by the flat position.
      const std::uint64_t k = 2 * i;
      const double u1 = (counter_random(seed, k) + 1.0) / 4294967296.0, u2 = counter_random(seed, k + 1) / 4294967296.0;
      w[i - range.first] = float(sd * std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
    }
  }
  return w;
}

}  // namespace kamp
