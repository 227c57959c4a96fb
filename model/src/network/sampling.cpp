#include <kamp/model/network/sampling.hpp>
#include <kamp/numeric/counter_random.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace kamp {

void sampling_options::validate(int vocab) const {
  if (!(temperature >= 0.0f) || !std::isfinite(temperature))
    throw std::invalid_argument("sampling: the temperature must be finite and >= 0 (0: greedy), got " +
                                std::to_string(temperature));
  if (top_k < 0 || top_k > vocab)
    throw std::invalid_argument("sampling: top-k must lie in [0, " + std::to_string(vocab) +
                                "] (0: every token), got " + std::to_string(top_k));
}

int sample_token(const float* logits, int vocab, const sampling_options& options, std::uint64_t draw) {
  options.validate(vocab);
  for (int i = 0; i < vocab; ++i)
    if (!std::isfinite(logits[i]))
      throw std::runtime_error("sampling: logit " + std::to_string(i) + " is " + std::to_string(logits[i]) +
                               ": the model's weights give non-finite values; check the checkpoint with kamp-inspect");
  // Most likely first; equal logits in id order, so the choice does not depend on the sort.
  std::vector<int> order(vocab);
  std::iota(order.begin(), order.end(), 0);
  const auto before = [&](int a, int b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); };
  if (options.temperature == 0.0f) return *std::min_element(order.begin(), order.end(), before);
  const int k = options.top_k == 0 ? vocab : options.top_k;
  std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
  std::vector<double> weight(k);
  const double top = logits[order[0]];
  double sum = 0;
  for (int i = 0; i < k; ++i) sum += weight[i] = std::exp((double(logits[order[i]]) - top) / options.temperature);
  // One uniform in [0, 1) with 53 random bits, from two words of the counter-based stream.
  const std::uint64_t bits =
      (std::uint64_t(counter_random(options.seed, 2 * draw)) << 32) | counter_random(options.seed, 2 * draw + 1);
  const double target = double(bits >> 11) * 0x1p-53 * sum;
  double below = 0;
  for (int i = 0; i < k; ++i)
    if ((below += weight[i]) > target) return order[i];
  return order[k - 1];
}

}  // namespace kamp
