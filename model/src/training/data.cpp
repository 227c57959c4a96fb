#include <kamp/model/training/data.hpp>
#include <kamp/model/training/device_batches.hpp>
#include <kamp/numeric/counter_random.hpp>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <set>
#include <stdexcept>

namespace kamp {

namespace {

class picker {
 public:
  explicit picker(std::uint64_t seed) : seed_(seed) {}
  std::uint32_t next(std::uint32_t n) { return counter_random(seed_, counter_++) % n; }
  template <std::size_t N>
  const char* pick(const char* const (&words)[N]) {
    return words[next(N)];
  }

 private:
  std::uint64_t seed_, counter_ = 0;
};

}  // namespace

std::string default_corpus(std::size_t bytes, std::uint64_t seed) {
  static const char* const subjects[] = {"the model", "a kernel",  "the optimizer", "my gpu",    "the scaler",
                                         "a tensor",  "the batch", "our cluster",   "the layer", "a student"};
  static const char* const verbs[] = {"computes", "rounds", "stores", "reads", "scales", "checks", "updates", "writes"};
  static const char* const objects[] = {"the weights",     "a gradient", "the loss",    "every block",
                                        "the master copy", "each value", "the moments", "a checkpoint"};
  static const char* const manners[] = {"in bfloat16",
                                        "in half precision",
                                        "in single precision",
                                        "with care",
                                        "on every rank",
                                        "without a sync",
                                        "twice",
                                        "at once"};
  static const char* const facts[] = {"bfloat16 keeps the range of float and drops precision.",
                                      "half precision has five exponent bits and ten fraction bits.",
                                      "a loss scale keeps small gradients above the underflow limit.",
                                      "master weights stay in float so that tiny updates are not lost.",
                                      "layer norm and softmax run in float for stable statistics.",
                                      "stochastic rounding keeps small updates in expectation."};
  picker p(seed);
  std::string text;
  text.reserve(bytes + 128);
  while (text.size() < bytes) {
    switch (p.next(4)) {
      case 0: {
        const unsigned a = p.next(50), b = p.next(50);
        text += std::to_string(a) + " plus " + std::to_string(b) + " is " + std::to_string(a + b) + ". ";
        break;
      }
      case 1:
        text += p.pick(facts);
        text += ' ';
        break;
      default:
        text += p.pick(subjects);
        text += ' ';
        text += p.pick(verbs);
        text += ' ';
        text += p.pick(objects);
        text += ' ';
        text += p.pick(manners);
        text += p.next(5) == 0 ? ".\n" : ". ";
    }
  }
  return text;
}

token_dataset::token_dataset(const std::string& text, double validation_fraction, int context, std::string source)
    : context_(context), source_(std::move(source)) {
  if (!(validation_fraction > 0.0 && validation_fraction < 1.0))
    throw std::invalid_argument("data: validation fraction must lie in (0, 1), got " +
                                std::to_string(validation_fraction));
  const std::size_t split_at = text.size() - std::size_t(double(text.size()) * validation_fraction);
  train_.assign(text.begin(), text.begin() + split_at);
  validation_.assign(text.begin() + split_at, text.end());
  const std::size_t need = std::size_t(context) + 1;
  if (train_.size() < need || validation_.size() < need)
    throw std::invalid_argument("data: " + source_ + " has " + std::to_string(text.size()) +
                                " bytes; with validation fraction " + std::to_string(validation_fraction) +
                                " each part needs at least context + 1 = " + std::to_string(need) +
                                " bytes. Use a longer text or a shorter context");
}

std::string special_file_kind(const std::string& path) {
  std::error_code error;
  switch (std::filesystem::status(path, error).type()) {
    case std::filesystem::file_type::fifo:
      return "a FIFO (named pipe)";
    case std::filesystem::file_type::character:
      return "a character device";
    case std::filesystem::file_type::block:
      return "a block device";
    case std::filesystem::file_type::socket:
      return "a socket";
    default:
      return "";
  }
}

namespace {

// The text of `path`, or none when it is binary (holds a NUL byte). Read in blocks: a large
// binary file is given up at its first NUL, not read whole.
std::optional<std::string> read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw std::runtime_error("data: cannot open '" + path.string() + "' for reading; check the path given to --data");
  std::string text;
  std::vector<char> block(1 << 20);
  while (in) {
    in.read(block.data(), std::streamsize(block.size()));
    const auto got = std::size_t(in.gcount());
    if (std::memchr(block.data(), '\0', got) != nullptr) return std::nullopt;
    text.append(block.data(), got);
  }
  if (in.bad()) throw std::runtime_error("data: reading '" + path.string() + "' failed");
  return text;
}

// A file named alone is refused when binary: in a directory it would be skipped, alone it would
// be all the data.
std::string text_file(const std::string& path) {
  std::optional<std::string> text = read_text(path);
  if (!text)
    throw std::runtime_error("--data '" + path +
                             "' holds NUL bytes: it is a binary file, not text; give --data a text file (or a "
                             "directory: its binary files are skipped)");
  return std::move(*text);
}

// The files under `dir` in path order (so that the text, and a run's batches, are the same on
// every file system), each once (a symbolic link beside its target, as Debian's fortunes have).
// Special files and dangling links have no text to read: left out.
std::vector<std::filesystem::path> files_under(const std::string& dir) {
  std::vector<std::filesystem::path> files;
  std::error_code error;
  for (auto it = std::filesystem::recursive_directory_iterator(
           dir, std::filesystem::directory_options::follow_directory_symlink, error);
       !error && it != std::filesystem::recursive_directory_iterator(); it.increment(error)) {
    std::error_code no_file;
    if (it->is_regular_file(no_file)) files.push_back(it->path());
  }
  if (error) throw std::runtime_error("data: cannot list the directory '" + dir + "': " + error.message());
  std::sort(files.begin(), files.end());
  std::set<std::filesystem::path> seen;
  files.erase(std::remove_if(files.begin(), files.end(),
                             [&](const std::filesystem::path& f) {
                               std::error_code unresolved;
                               const auto target = std::filesystem::weakly_canonical(f, unresolved);
                               return !seen.insert(unresolved ? f : target).second;
                             }),
              files.end());
  return files;
}

}  // namespace

token_dataset token_dataset::from_path(const std::string& path, double validation_fraction, int context) {
  // Before opening: a FIFO would block the open until a writer comes, a device never ends.
  if (const std::string kind = special_file_kind(path); !kind.empty())
    throw std::runtime_error("--data '" + path + "' is " + kind +
                             ", not a text file: give a text file or a directory of them");
  std::error_code error;
  if (!std::filesystem::is_directory(path, error))
    return token_dataset(text_file(path), validation_fraction, context, path);
  std::string text;
  std::vector<std::string> skipped;
  std::size_t used = 0;
  for (const auto& f : files_under(path)) {
    std::optional<std::string> content = read_text(f);
    if (!content) {
      skipped.push_back(f.string());
      continue;
    }
    text += *content;
    ++used;
  }
  if (used == 0)
    throw std::runtime_error("data: the directory '" + path + "' holds no text file (" +
                             std::to_string(skipped.size()) +
                             " binary files skipped); give --data a text file or a directory of them");
  token_dataset out(text, validation_fraction, context, path + " (" + std::to_string(used) + " files)");
  out.skipped_ = std::move(skipped);
  return out;
}

void token_dataset::sample(split part, std::uint64_t seed, std::uint64_t index, int batch, int* tokens,
                           int* targets) const {
  const auto& b = bytes(part);
  const std::uint64_t windows = b.size() - std::size_t(context_);
  for (int w = 0; w < batch; ++w) {
    const std::size_t start =
        detail::window_start(detail::split_stream(seed, part == split::train), index, batch, w, windows);
    for (int t = 0; t < context_; ++t) {
      tokens[w * context_ + t] = b[start + t];
      targets[w * context_ + t] = b[start + t + 1];
    }
  }
}

}  // namespace kamp
