#include "tokenizer.hpp"

#include <kamp/model/training/data.hpp>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <vector>

#ifdef KAMP_HAVE_SENTENCEPIECE
#include <sentencepiece_processor.h>
#endif

namespace kamp::app {

#ifdef KAMP_HAVE_SENTENCEPIECE
namespace {

std::string file_digest(const std::string& path) {
  if (const std::string kind = special_file_kind(path); !kind.empty())
    throw std::runtime_error("tokenizer: '" + path + "' is " + kind + ", not a SentencePiece model file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("tokenizer: cannot open '" + path + "' for reading");
  // FNV-1a, 64 bits: tells one file from another, which is all a run's record needs.
  std::uint64_t h = 0xcbf29ce484222325ull;
  std::vector<char> block(1 << 16);
  while (in) {
    in.read(block.data(), std::streamsize(block.size()));
    for (std::streamsize i = 0; i < in.gcount(); ++i) h = (h ^ std::uint8_t(block[std::size_t(i)])) * 0x100000001b3ull;
  }
  if (in.bad()) throw std::runtime_error("tokenizer: reading '" + path + "' failed");
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
  digest_ = file_digest(path);
  model_ = std::make_unique<model>();
  const auto status = model_->processor.Load(path);
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
