#include <kamp/model/network/generate.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace kamp {

template <class ES>
std::vector<int> generate_tokens(gpt_decoder<ES>& decoder, const std::vector<int>& prompt, int tokens,
                                 const sampling_options& options, const std::function<void(int)>& emit) {
  const int vocab = decoder.config().vocab, context = decoder.config().context;
  options.validate(vocab);
  if (prompt.empty()) throw std::invalid_argument("generate: the prompt needs at least one token to start from");
  if (tokens < 0)
    throw std::invalid_argument("generate: the number of tokens must be >= 0, got " + std::to_string(tokens));
  std::vector<int> fed;
  typename gpt_decoder<ES>::logits_view logits;
  const auto feed = [&](int token) {
    if (decoder.position() == context) {
      // A sliding window: restart on the newest half of the context, then go on.
      decoder.reset();
      for (std::size_t i = fed.size() - std::size_t(context / 2); i < fed.size(); ++i) decoder.advance(fed[i]);
    }
    logits = decoder.advance(token);
    fed.push_back(token);
  };
  decoder.reset();
  for (const int token : prompt) feed(token);
  const Kokkos::View<float*, Kokkos::HostSpace> host("kamp::generate::logits", std::size_t(vocab));
  std::vector<int> out;
  for (int i = 0; i < tokens; ++i) {
    Kokkos::deep_copy(host, logits);
    const int next = sample_token(host.data(), vocab, options, std::uint64_t(i));
    out.push_back(next);
    if (emit) emit(next);
    if (i + 1 < tokens) feed(next);
  }
  return out;
}

template <class ES>
std::string generate(gpt_decoder<ES>& decoder, const std::string& prompt, int tokens, const sampling_options& options,
                     const std::function<void(char)>& emit) {
  const int vocab = decoder.config().vocab;
  if (vocab != 256)
    throw std::invalid_argument("generate: the model's vocabulary has " + std::to_string(vocab) +
                                " tokens; generate() reads and writes bytes and so serves byte-level models "
                                "(vocabulary 256) only: encode and decode with the model's tokenizer and "
                                "generate_tokens()");
  if (prompt.empty()) throw std::invalid_argument("generate: the prompt needs at least one byte to start from");
  std::vector<int> ids;
  for (const unsigned char byte : prompt) ids.push_back(byte);
  const std::vector<int> drawn = generate_tokens(decoder, ids, tokens, options, [&](int t) {
    if (emit) emit(char(t));
  });
  return std::string(drawn.begin(), drawn.end());
}

#define KAMP_GENERATE_INSTANTIATE_(Space)                                                              \
  template std::vector<int> generate_tokens(gpt_decoder<Space>&, const std::vector<int>&, int,         \
                                            const sampling_options&, const std::function<void(int)>&); \
  template std::string generate(gpt_decoder<Space>&, const std::string&, int, const sampling_options&, \
                                const std::function<void(char)>&);
KAMP_FOR_EACH_EXECUTION_SPACE(KAMP_GENERATE_INSTANTIATE_)

}  // namespace kamp
