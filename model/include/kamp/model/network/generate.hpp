#ifndef KAMP_MODEL_NETWORK_GENERATE_HPP
#define KAMP_MODEL_NETWORK_GENERATE_HPP

#include <kamp/kernels/execution_spaces.hpp>
#include <kamp/model/network/decoder.hpp>
#include <kamp/model/network/sampling.hpp>

#include <functional>
#include <string>
#include <vector>

namespace kamp {

/// Feeds `prompt` (token ids; at least one) to `decoder` from position 0, then draws `tokens`
/// more, each fed back; calls `emit` with each drawn id as it comes. When the cache is full the
/// decoder restarts on the last context/2 tokens (a sliding window), so any length works.
/// Returns the ids drawn.
template <class ExecutionSpace>
std::vector<int> generate_tokens(gpt_decoder<ExecutionSpace>& decoder, const std::vector<int>& prompt, int tokens,
                                 const sampling_options& options, const std::function<void(int)>& emit = {});

/// generate_tokens for a byte-level model (vocabulary 256; std::invalid_argument else): the
/// prompt's bytes are its tokens, and `emit` gets and the result holds the bytes drawn.
template <class ExecutionSpace>
std::string generate(gpt_decoder<ExecutionSpace>& decoder, const std::string& prompt, int tokens,
                     const sampling_options& options, const std::function<void(char)>& emit = {});

#define KAMP_GENERATE_DECLARE_(Space)                                                                         \
  extern template std::vector<int> generate_tokens(gpt_decoder<Space>&, const std::vector<int>&, int,         \
                                                   const sampling_options&, const std::function<void(int)>&); \
  extern template std::string generate(gpt_decoder<Space>&, const std::string&, int, const sampling_options&, \
                                       const std::function<void(char)>&);
KAMP_FOR_EACH_EXECUTION_SPACE(KAMP_GENERATE_DECLARE_)

}  // namespace kamp

#endif
