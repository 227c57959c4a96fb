#ifndef KAMP_MODEL_NETWORK_SAMPLING_HPP
#define KAMP_MODEL_NETWORK_SAMPLING_HPP

#include <cstdint>

namespace kamp {

/// \brief How the next token is drawn from the logits.
struct sampling_options {
  float temperature = 1.0f;  ///< logits are divided by it; 0: greedy (the most likely token)
  int top_k = 0;             ///< draw among the k most likely tokens only; 0: all
  std::uint64_t seed = 0;    ///< draw n uses counter_random(seed, 2n) and (seed, 2n + 1): the same everywhere

  /// Throws std::invalid_argument naming the bad field and its range.
  void validate(int vocab) const;
};

/// The token drawn from `logits` (host, `vocab` of them) as draw number `draw` of a run:
/// softmax(logits / temperature) in fp64 over the top_k most likely (ties: the lower id), then
/// inverse-CDF sampling with one 53-bit uniform from the words (seed, 2·draw), (seed, 2·draw + 1). Greedy when
/// temperature is 0.
int sample_token(const float* logits, int vocab, const sampling_options& options, std::uint64_t draw);

}  // namespace kamp

#endif
