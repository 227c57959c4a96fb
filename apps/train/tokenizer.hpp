#ifndef KAMP_APPS_TRAIN_TOKENIZER_HPP
#define KAMP_APPS_TRAIN_TOKENIZER_HPP

#include <memory>
#include <string>
#include <vector>

namespace kamp::app {

/// \brief A SentencePiece model (spm_train's PREFIX.model): kamp-train encodes --data text with
/// it, kamp-generate encodes prompts and decodes what it draws. Optional: a kamp built without
/// libsentencepiece-dev refuses to load one, saying so.
class tokenizer {
 public:
  /// Loads `path`; std::runtime_error naming the file when it cannot be read or is not a
  /// SentencePiece model, or when kamp was built without SentencePiece.
  explicit tokenizer(const std::string& path);
  ~tokenizer();
  tokenizer(tokenizer&&) noexcept;
  tokenizer& operator=(tokenizer&&) noexcept;

  /// Pieces in the model: the vocabulary a model trained on its ids needs.
  int vocab() const;
  std::vector<int> encode(const std::string& text) const;
  std::string decode(const std::vector<int>& ids) const;
  const std::string& path() const { return path_; }
  /// What identifies the file's content: "fnv1a64:" and 16 hex digits of its bytes.
  const std::string& digest() const { return digest_; }

 private:
  struct model;
  std::unique_ptr<model> model_;
  std::string path_, digest_;
};

}  // namespace kamp::app

#endif
