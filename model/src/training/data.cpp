#include <kamp/model/training/data.hpp>
#include <kamp/model/training/device_batches.hpp>
#include <kamp/numeric/counter_random.hpp>

#include <fcntl.h>
#include <glob.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
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

namespace {

// The text of `path`, or none when it is binary (holds a NUL byte). Read in blocks: a large
// binary file is given up at its first NUL, not read whole.
std::optional<std::string> read_text_file(const std::filesystem::path& path) {
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
  std::optional<std::string> text = read_text_file(path);
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

const char* name(token_file_format f) { return f == token_file_format::llmc ? "llmc" : "raw_uint16"; }

token_file_format parse_token_file_format(const std::string& text) {
  for (const token_file_format f : {token_file_format::llmc, token_file_format::raw_uint16})
    if (text == name(f)) return f;
  throw std::invalid_argument("token file format '" + text + "': kamp reads llmc (llm.c shards) and raw_uint16");
}

// Token files are mapped, not read: a GPT-2 shard is 200 MB, a dataset many of them, and a run
// touches the windows it draws. The mappings live as long as any copy of the dataset.
struct token_dataset::storage {
  std::vector<std::uint16_t> owned;  ///< byte-level text, one token per byte
  std::vector<std::pair<void*, std::size_t>> mappings;
  storage() = default;
  storage(const storage&) = delete;
  storage& operator=(const storage&) = delete;
  ~storage() {
    for (const auto& [address, bytes] : mappings) munmap(address, bytes);
  }
};

namespace {

constexpr std::int32_t llmc_shard_magic = 20240520, llmc_shard_version = 1;
// llm.c's other files of the same header layout (dev/data/data_common.py): never token ids kamp reads.
constexpr std::int32_t llmc_llama3_magic = 20240801, llmc_eval_magic = 20240522;
constexpr std::size_t llmc_header_bytes = 256 * sizeof(std::int32_t);

std::string errno_text() { return std::strerror(errno); }

std::int32_t byte_swapped(std::int32_t x) { return std::int32_t(__builtin_bswap32(std::uint32_t(x))); }

struct token_file {
  const std::uint16_t* tokens;
  std::size_t count, header_bytes;
};

// Why a file of `bytes` bytes beginning with `header` is no llm.c GPT-2 shard, or "" when it is
// one (llmc/dataloader.h: header[0] magic, [1] version, [2] token count, then uint16 ids; the
// file is exactly header + 2 x count bytes).
std::string shard_problem(const std::int32_t* header, std::size_t bytes) {
  const std::string raw_hint =
      ". A file of headerless uint16 ids (nanoGPT's train.bin) is read with --token-format raw_uint16";
  if (bytes < llmc_header_bytes)
    return "holds " + std::to_string(bytes) + " bytes, fewer than llm.c's 1024-byte shard header: not an llm.c shard" +
           raw_hint;
  const std::int32_t magic = header[0], version = header[1];
  if (magic == llmc_llama3_magic)
    return "is an llm.c llama-3 shard (magic 20240801): its token ids are uint32, for a vocabulary beyond kamp's "
           "16-bit ids; tokenize the text with a vocabulary of at most 65536 (GPT-2's) into a version-1 shard";
  if (magic == llmc_eval_magic)
    return "is an llm.c evaluation file (magic 20240522: HellaSwag or MMLU examples), not training tokens";
  for (const std::int32_t known : {llmc_shard_magic, llmc_llama3_magic, llmc_eval_magic})
    if (byte_swapped(magic) == known)
      return "has llm.c's magic " + std::to_string(known) +
             " in big-endian byte order: kamp reads the little-endian files llm.c writes; convert it (numpy: "
             "np.fromfile(f, '>i4', 256) for the header, '>u2' for the ids, then .astype('<...').tofile)";
  if (magic != llmc_shard_magic)
    return "begins with the int32 " + std::to_string(magic) + ", not llm.c's shard magic 20240520: not an llm.c shard" +
           raw_hint;
  if (version != llmc_shard_version)
    return "is an llm.c token shard of version " + std::to_string(version) +
           "; kamp reads version 1 (GPT-2's 16-bit token ids): write the shard with llm.c's GPT-2 tokenizer";
  const std::int64_t count = header[2];
  const std::uint64_t want = llmc_header_bytes + 2 * std::uint64_t(std::max<std::int64_t>(count, 0));
  if (count <= 0 || want != bytes)
    return "has an llm.c shard header claiming " + std::to_string(count) + " tokens (" + std::to_string(want) +
           " bytes with the header) but the file holds " + std::to_string(bytes) +
           " bytes: it is truncated or damaged; write it again";
  return "";
}

// Maps `path` read-only into `st` and finds its tokens as `format` says. Ids are little-endian,
// as every writer of these files (numpy on x86 and ARM) leaves them.
token_file map_token_file(token_dataset::storage& st, const std::filesystem::path& path, token_file_format format) {
  const std::string name = path.string();
  const int fd = open_input_file({"--data", name, "a token file"});
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    const std::string why = errno_text();
    ::close(fd);
    throw std::runtime_error("--data: cannot read the size of '" + name + "': " + why);
  }
  const std::size_t bytes = std::size_t(info.st_size);
  if (bytes == 0) {
    ::close(fd);
    throw std::runtime_error("--data: the token file '" + name + "' is empty");
  }
  void* address = ::mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE, fd, 0);
  const std::string why = errno_text();
  ::close(fd);
  if (address == MAP_FAILED) throw std::runtime_error("--data: cannot map the token file '" + name + "': " + why);
  st.mappings.emplace_back(address, bytes);
  const auto* base = static_cast<const unsigned char*>(address);
  std::int32_t header[3] = {0, 0, 0};
  if (bytes >= sizeof header) std::memcpy(header, base, sizeof header);
  if (format == token_file_format::raw_uint16) {
    if (header[0] == llmc_shard_magic || header[0] == llmc_llama3_magic || header[0] == llmc_eval_magic)
      throw std::runtime_error("--data: '" + name + "' begins with llm.c's magic " + std::to_string(header[0]) +
                               ", but --token-format raw_uint16 would read its header as tokens: leave "
                               "--token-format out for llm.c files");
    if (bytes % 2 != 0)
      throw std::runtime_error("--data: '" + name + "' holds " + std::to_string(bytes) +
                               " bytes, an odd number: raw uint16 ids are 2 bytes each, so it is no such file");
    return {reinterpret_cast<const std::uint16_t*>(base), bytes / 2, 0};
  }
  if (const std::string problem = shard_problem(header, bytes); !problem.empty())
    throw std::runtime_error("--data: '" + name + "' " + problem);
  return {reinterpret_cast<const std::uint16_t*>(base + llmc_header_bytes), std::size_t(header[2]), llmc_header_bytes};
}

// The largest id (0 for none): one pass over a file is both its vocabulary check and its share
// of max_token().
std::uint16_t largest(const std::uint16_t* tokens, std::size_t count) {
  std::uint16_t top = 0;
  for (std::size_t i = 0; i < count; ++i) top = std::max(top, tokens[i]);
  return top;
}

int largest(const std::vector<token_segment>& segments) {
  std::uint16_t top = 0;
  for (const token_segment& s : segments) top = std::max(top, largest(s.tokens, s.size));
  return top;
}

// The token files `path` names: a *.bin file, a directory's *.bin files, or a glob pattern's
// matches. Empty when `path` is text: another file or a directory without *.bin files.
std::vector<std::filesystem::path> token_files(const std::string& path) {
  const auto is_bin = [](const std::filesystem::path& f) { return f.extension() == ".bin"; };
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) {
    std::vector<std::filesystem::path> files = files_under(path);
    files.erase(std::remove_if(files.begin(), files.end(), [&](const auto& f) { return !is_bin(f); }), files.end());
    return files;
  }
  if (std::filesystem::exists(path, error))
    return is_bin(path) ? std::vector<std::filesystem::path>{path} : std::vector<std::filesystem::path>{};
  if (path.find_first_of("*?[") == std::string::npos)
    throw std::runtime_error(
        "--data '" + path + "' " + input_file_problem(path, "a file") +
        ": give a text file, a token file (*.bin), a directory of either, or a quoted glob pattern "
        "of token files");
  glob_t matches{};
  const int found = ::glob(path.c_str(), 0, nullptr, &matches);
  std::vector<std::filesystem::path> files;
  for (std::size_t i = 0; found == 0 && i < matches.gl_pathc; ++i) files.emplace_back(matches.gl_pathv[i]);
  globfree(&matches);
  if (files.empty()) throw std::runtime_error("--data: no file matches the pattern '" + path + "'");
  for (const auto& f : files) {
    if (!is_bin(f))
      throw std::runtime_error("--data: the pattern '" + path + "' matches '" + f.string() +
                               "', not a token file (*.bin): a pattern names token files only");
    require_input_file({"--data", f.string(), "a token file"});
  }
  std::sort(files.begin(), files.end());
  return files;
}

bool names_validation(const std::filesystem::path& f) { return f.filename().string().find("val") != std::string::npos; }

// Segments split at token `at` of their concatenation: those before, and those from it on.
std::pair<std::vector<token_segment>, std::vector<token_segment>> split_at(const std::vector<token_segment>& all,
                                                                           std::size_t at) {
  std::pair<std::vector<token_segment>, std::vector<token_segment>> out;
  std::size_t first = 0;
  for (const token_segment& s : all) {
    if (first + s.size <= at)
      out.first.push_back(s);
    else if (first >= at)
      out.second.push_back(s);
    else {
      out.first.push_back({s.tokens, at - first});
      out.second.push_back({s.tokens + (at - first), s.size - (at - first)});
    }
    first += s.size;
  }
  return out;
}

std::size_t token_count(const std::vector<token_segment>& segments) {
  std::size_t n = 0;
  for (const token_segment& s : segments) n += s.size;
  return n;
}

void check_fraction(double validation_fraction) {
  if (!(validation_fraction > 0.0 && validation_fraction < 1.0))
    throw std::invalid_argument("data: validation fraction must lie in (0, 1), got " +
                                std::to_string(validation_fraction));
}

}  // namespace

token_dataset::token_dataset(const std::string& text, double validation_fraction, int context, std::string source)
    : context_(context), source_(std::move(source)) {
  std::vector<std::uint16_t> bytes(text.size());
  std::transform(text.begin(), text.end(), bytes.begin(), [](char c) { return std::uint16_t(std::uint8_t(c)); });
  split_owned(std::move(bytes), validation_fraction, "bytes");
}

token_dataset::token_dataset(std::vector<std::uint16_t> tokens, double validation_fraction, int context,
                             std::string source)
    : context_(context), byte_level_(false), source_(std::move(source)) {
  split_owned(std::move(tokens), validation_fraction, "tokens");
}

void token_dataset::split_owned(std::vector<std::uint16_t> tokens, double validation_fraction, const char* unit) {
  check_fraction(validation_fraction);
  auto st = std::make_shared<storage>();
  st->owned = std::move(tokens);
  storage_ = st;
  const std::size_t n = st->owned.size(), at = n - std::size_t(double(n) * validation_fraction);
  std::tie(train_, validation_) = split_at({{st->owned.data(), n}}, at);
  const std::size_t need = std::size_t(context_) + 1;
  if (size(split::train) < need || size(split::validation) < need)
    throw std::invalid_argument("data: " + source_ + " has " + std::to_string(n) + " " + unit +
                                "; with validation fraction " + std::to_string(validation_fraction) +
                                " each part needs at least context + 1 = " + std::to_string(need) + " " + unit +
                                ". Use a longer text or a shorter context");
  max_token_ = std::max(largest(train_), largest(validation_));
}

token_dataset token_dataset::from_path(const std::string& path, double validation_fraction, int context, int vocab,
                                       token_file_format format) {
  // Before opening: a FIFO would block the open until a writer comes, a device never ends.
  if (const std::string kind = special_file_kind(path); !kind.empty())
    throw std::runtime_error("--data '" + path + "' is " + kind +
                             ", not a text file or a token file: give a regular file or a directory of them");
  const std::vector<std::filesystem::path> files = token_files(path);
  if (files.empty()) {
    text_files files = read_text(path);
    token_dataset text(files.text, validation_fraction, context, files.source);
    text.skipped_ = std::move(files.skipped);
    if (text.max_token() >= vocab)
      throw std::runtime_error("--data '" + path + "' is text, read as bytes, and holds byte " +
                               std::to_string(text.max_token()) + ", outside the model's vocabulary of " +
                               std::to_string(vocab) + ": byte-level text needs --vocab 256");
    return text;
  }
  token_dataset out;
  out.context_ = context;
  out.byte_level_ = false;
  auto st = std::make_shared<storage>();
  std::vector<token_segment> named_train, named_validation;
  for (const auto& f : files) {
    const token_file t = map_token_file(*st, f, format);
    const std::uint16_t top = largest(t.tokens, t.count);
    out.max_token_ = std::max(out.max_token_, int(top));
    if (top >= vocab) {
      const std::size_t bad = std::size_t(
          std::find_if(t.tokens, t.tokens + t.count, [&](std::uint16_t id) { return id >= vocab; }) - t.tokens);
      throw std::runtime_error("--data: token " + std::to_string(t.tokens[bad]) + " at byte offset " +
                               std::to_string(t.header_bytes + 2 * bad) + " of '" + f.string() +
                               "' is outside the model's vocabulary [0, " + std::to_string(vocab) +
                               "): give --vocab as the tokenizer's size (50257 for GPT-2's, or --preset gpt2-124m)");
    }
    (names_validation(f) ? named_validation : named_train).push_back({t.tokens, t.count});
  }
  out.storage_ = st;
  const bool by_name = !named_train.empty() && !named_validation.empty();
  if (by_name) {
    out.train_ = std::move(named_train);
    out.validation_ = std::move(named_validation);
  } else {
    check_fraction(validation_fraction);
    std::vector<token_segment> all = named_train.empty() ? std::move(named_validation) : std::move(named_train);
    const std::size_t n = token_count(all);
    std::tie(out.train_, out.validation_) = split_at(all, n - std::size_t(double(n) * validation_fraction));
  }
  const std::string kind = format == token_file_format::llmc ? "llm.c shards" : "raw uint16";
  out.source_ = path + " (" + std::to_string(files.size()) + " token file" + (files.size() == 1 ? "" : "s") + ", " +
                kind + "; validation " + (by_name ? "by file name" : "the last fraction") + ")";
  for (const split part : {split::train, split::validation})
    if (out.windows(part) == 0)
      throw std::runtime_error("--data '" + path + "': the " + (part == split::train ? "training" : "validation") +
                               " part has " + std::to_string(out.size(part)) +
                               " tokens and no file in it holds context + 1 = " + std::to_string(context + 1) +
                               " of them: give more data" + (by_name ? "" : ", a larger --validation-fraction") +
                               " or a shorter --context");
  return out;
}

token_dataset::text_files token_dataset::read_text(const std::string& path) {
  if (const std::string kind = special_file_kind(path); !kind.empty())
    throw std::runtime_error("--data '" + path + "' is " + kind +
                             ", not a text file or a token file: give a regular file or a directory of them");
  std::error_code error;
  if (!std::filesystem::is_directory(path, error)) return {text_file(path), path, {}};
  std::string text;
  std::vector<std::string> skipped;
  std::size_t used = 0;
  for (const auto& f : files_under(path)) {
    std::optional<std::string> content = read_text_file(f);
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
  return {std::move(text), path + " (" + std::to_string(used) + " files)", std::move(skipped)};
}

std::size_t token_dataset::size(split part) const { return token_count(segments(part)); }

std::uint64_t token_dataset::windows(split part) const {
  std::uint64_t n = 0;
  for (const token_segment& s : segments(part)) n += s.size > std::size_t(context_) ? s.size - context_ : 0;
  return n;
}

void token_dataset::sample(split part, std::uint64_t seed, std::uint64_t index, int batch, int* tokens,
                           int* targets) const {
  std::vector<std::uint64_t> first_window{0};
  std::vector<const std::uint16_t*> bases;
  for (const token_segment& s : segments(part))
    if (s.size > std::size_t(context_)) {
      bases.push_back(s.tokens);
      first_window.push_back(first_window.back() + (s.size - context_));
    }
  const std::uint64_t stream = detail::split_stream(seed, part == split::train);
  for (int w = 0; w < batch; ++w) {
    const std::uint64_t g = detail::window_start(stream, index, batch, w, first_window.back());
    const int s = detail::segment_of(first_window.data(), int(bases.size()), g);
    const std::uint16_t* b = bases[s] + (g - first_window[s]);
    for (int t = 0; t < context_; ++t) {
      tokens[w * context_ + t] = b[t];
      targets[w * context_ + t] = b[t + 1];
    }
  }
}

}  // namespace kamp
