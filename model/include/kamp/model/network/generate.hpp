#ifndef KAMP_MODEL_NETWORK_GENERATE_HPP
#define KAMP_MODEL_NETWORK_GENERATE_HPP

#include <kamp/kernels/execution_spaces.hpp>
#include <kamp/model/network/decoder.hpp>
#include <kamp/model/network/sampling.hpp>

#include <functional>
#include <string>

namespace kamp {

/// Feeds `prompt` (byte tokens; at least one) to `decoder` from position 0, then draws `tokens`
/// more, each fed back; calls `emit` with each drawn byte as it comes. When the cache is full,
/// the decoder restarts on the last context/2 tokens (a sliding window), so any length works.
/// Returns the bytes drawn. Byte-level models only (vocabulary 256): std::invalid_argument else.
template <class ExecutionSpace>
std::string generate(gpt_decoder<ExecutionSpace>& decoder, const std::string& prompt, int tokens,
                     const sampling_options& options, const std::function<void(char)>& emit = {});

#define KAMP_GENERATE_DECLARE_(Space)                                                                         \
  extern template std::string generate(gpt_decoder<Space>&, const std::string&, int, const sampling_options&, \
                                       const std::function<void(char)>&);
KAMP_FOR_EACH_EXECUTION_SPACE(KAMP_GENERATE_DECLARE_)

}  // namespace kamp

#endif
