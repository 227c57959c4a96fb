#include "tokenizer.hpp"

#include <kamp/model/state/file_rules.hpp>

#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <vector>

#ifdef KAMP_HAVE_SENTENCEPIECE
#include <sentencepiece_processor.h>
#endif

namespace kamp::app {

#ifdef KAMP_HAVE_SENTENCEPIECE
namespace {

// FNV-1a, 64 bits: tells one file from another, which is all a run's record needs.
std::string digest_of(const std::string& bytes) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (const char c : bytes) h = (h ^ std::uint8_t(c)) * 0x100000001b3ull;
  char text[32];
  std::snprintf(text, sizeof text, "fnv1a64:%016llx", static_cast<unsigned long long>(h));
  return text;
}

}  // namespace

struct tokenizer::model {
  sentencepiece::SentencePieceProcessor processor;
};
#else
struct tokenizer::model {};
#endif

tokenizer::tokenizer(const std::string& path) : path_(path) {
#ifdef KAMP_HAVE_SENTENCEPIECE
  // Read once under the input rule, then parsed from memory: the digest is of the bytes loaded.
  const std::string bytes = read_input_file({"tokenizer:", path, "a SentencePiece model file"});
  digest_ = digest_of(bytes);
  model_ = std::make_unique<model>();
  const auto status = model_->processor.LoadFromSerializedProto(bytes);
  if (!status.ok())
    throw std::runtime_error("tokenizer: '" + path + "' is not a SentencePiece model (" + status.ToString() +
                             "); give the PREFIX.model file spm_train wrote");
#else
  throw std::runtime_error("tokenizer: this kamp was built without SentencePiece, so '" + path +
                           "' cannot be read: install libsentencepiece-dev (tools/setup.sh does) and build again");
#endif
}

tokenizer::~tokenizer() = default;
tokenizer::tokenizer(tokenizer&&) noexcept = default;
tokenizer& tokenizer::operator=(tokenizer&&) noexcept = default;

int tokenizer::vocab() const {
#ifdef KAMP_HAVE_SENTENCEPIECE
  return model_->processor.GetPieceSize();
#else
  return 0;
#endif
}

std::vector<int> tokenizer::encode(const std::string& text) const {
  std::vector<int> ids;
#ifdef KAMP_HAVE_SENTENCEPIECE
  const auto status = model_->processor.Encode(text, &ids);
  if (!status.ok()) throw std::runtime_error("tokenizer '" + path_ + "': encoding failed: " + status.ToString());
#else
  (void)text;
#endif
  return ids;
}

std::string tokenizer::decode(const std::vector<int>& ids) const {
  std::string text;
#ifdef KAMP_HAVE_SENTENCEPIECE
  const auto status = model_->processor.Decode(ids, &text);
  if (!status.ok()) throw std::runtime_error("tokenizer '" + path_ + "': decoding failed: " + status.ToString());
#else
  (void)ids;
#endif
  return text;
}

}  // namespace kamp::app
