// Token files as --data reads them: llm.c's shards (llmc/dataloader.h: 256 int32 of header,
// magic 20240520, version 1, token count, then uint16 ids) and nanoGPT's raw uint16 files,
// written here byte by byte from those definitions; their splits, their refusals, and the
// windows drawn from several files on the host and by the device kernel.
#include <kamp/model/training/data.hpp>
#include <kamp/model/training/device_batches.hpp>

#include "../support/catch.hpp"

#include "../support/scratch_dir.hpp"

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
using split = kamp::token_dataset::split;

using kamp::test::scratch_dir;

void write_bytes(const std::string& file, const std::vector<unsigned char>& bytes) {
  std::ofstream(file, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}

// Little-endian, as numpy writes them on x86 and ARM.
void put16(std::vector<unsigned char>& out, unsigned v) {
  out.push_back(static_cast<unsigned char>(v & 0xff));
  out.push_back(static_cast<unsigned char>(v >> 8));
}
void put32(std::vector<unsigned char>& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<unsigned char>(v >> (8 * i)));
}

std::vector<unsigned char> raw_file(const std::vector<unsigned>& tokens) {
  std::vector<unsigned char> out;
  for (const unsigned t : tokens) put16(out, t);
  return out;
}

std::vector<unsigned char> llmc_shard(const std::vector<unsigned>& tokens, std::uint32_t magic = 20240520,
                                      std::uint32_t version = 1, std::int64_t claimed = -1) {
  std::vector<unsigned char> out;
  put32(out, magic);
  put32(out, version);
  put32(out, std::uint32_t(claimed < 0 ? std::int64_t(tokens.size()) : claimed));
  for (int i = 3; i < 256; ++i) put32(out, 0);
  for (const unsigned t : tokens) put16(out, t);
  return out;
}

// Token `file` x 1000 + position: every id says where it came from, so a window shows whether
// it stays inside one file and runs in order.
std::vector<unsigned> numbered(unsigned file, unsigned count) {
  std::vector<unsigned> out(count);
  for (unsigned i = 0; i < count; ++i) out[i] = file * 1000 + i;
  return out;
}

std::vector<unsigned> tokens_of(const kamp::token_dataset& d, split part) {
  std::vector<unsigned> out;
  for (const kamp::token_segment& s : d.segments(part)) out.insert(out.end(), s.tokens, s.tokens + s.size);
  return out;
}

}  // namespace

TEST_CASE("llm.c shards and raw uint16 files are read as their definitions say", "[model][data]") {
  const scratch_dir dir("kamp_token_files");
  write_bytes(dir / "shard.bin", llmc_shard(numbered(1, 300)));
  write_bytes(dir / "raw.bin", raw_file(numbered(2, 300)));
  for (const std::string name : {"shard.bin", "raw.bin"}) {
    INFO(name);
    const unsigned file = name == "shard.bin" ? 1 : 2;
    const auto d = kamp::token_dataset::from_path(
        dir / name, 0.25, 8, 50257, file == 1 ? kamp::token_file_format::llmc : kamp::token_file_format::raw_uint16);
    std::vector<unsigned> all = tokens_of(d, split::train), held = tokens_of(d, split::validation);
    CHECK(all.size() == 225);
    CHECK(held.size() == 75);
    all.insert(all.end(), held.begin(), held.end());
    CHECK(all == numbered(file, 300));
    CHECK_FALSE(d.byte_level());
    CHECK(d.max_token() == int(file * 1000 + 299));
    CHECK_THAT(d.source(), kamp::test::contains(name == "shard.bin" ? "llm.c shards" : "raw uint16"));
  }
  // Nothing in a raw file says what it is: read as one only on request, and a shard never so.
  CHECK_THROWS_WITH(kamp::token_dataset::from_path(dir / "raw.bin", 0.25, 8, 50257),
                    kamp::test::contains("not an llm.c shard") && kamp::test::contains("--token-format raw_uint16"));
  CHECK_THROWS_WITH(
      kamp::token_dataset::from_path(dir / "shard.bin", 0.25, 8, 50257, kamp::token_file_format::raw_uint16),
      kamp::test::contains("would read its header as tokens"));
}

TEST_CASE("files named *val* are the validation part, the others training, in name order", "[model][data]") {
  const scratch_dir dir("kamp_token_files");
  // llm.c's names for FineWeb shards.
  write_bytes(dir / "fineweb_train_000002.bin", llmc_shard(numbered(3, 50)));
  write_bytes(dir / "fineweb_train_000001.bin", llmc_shard(numbered(2, 40)));
  write_bytes(dir / "fineweb_val_000000.bin", llmc_shard(numbered(1, 30)));
  write_bytes(dir / "notes.txt", {'h', 'i'});  // not a token file: left out
  const auto by_dir = kamp::token_dataset::from_path(dir.path.string(), 0.5, 8, 50257);
  std::vector<unsigned> train = numbered(2, 40), extra = numbered(3, 50);
  train.insert(train.end(), extra.begin(), extra.end());
  CHECK(tokens_of(by_dir, split::train) == train);
  CHECK(tokens_of(by_dir, split::validation) == numbered(1, 30));
  CHECK(by_dir.segments(split::train).size() == 2);
  CHECK_THAT(by_dir.source(), kamp::test::contains("3 token files") && kamp::test::contains("by file name"));
  // A glob pattern of the training shards alone: the tail fraction is held out, across files.
  const auto by_glob = kamp::token_dataset::from_path(dir / "fineweb_train_*.bin", 0.2, 8, 50257);
  CHECK(tokens_of(by_glob, split::train) == std::vector<unsigned>(train.begin(), train.begin() + 72));
  CHECK(tokens_of(by_glob, split::validation) == std::vector<unsigned>(train.begin() + 72, train.end()));
  CHECK_THROWS_WITH(kamp::token_dataset::from_path(dir / "nothing_*.bin", 0.2, 8, 50257),
                    kamp::test::contains("no file matches the pattern"));
  CHECK_THROWS_WITH(kamp::token_dataset::from_path(dir / "*.txt", 0.2, 8, 50257),
                    kamp::test::contains("not a token file (*.bin)"));
}

TEST_CASE("bad token files are refused with the file, the offset and the fix", "[model][data]") {
  const scratch_dir dir("kamp_token_files");
  std::vector<unsigned> tokens = numbered(0, 100);
  tokens[37] = 50257;
  write_bytes(dir / "outside.bin", llmc_shard(tokens));
  // Header (1024 bytes) + 2 x 37: the byte offset of the bad id in the file.
  CHECK_THROWS_WITH(kamp::token_dataset::from_path(dir / "outside.bin", 0.25, 8, 50257),
                    kamp::test::contains("token 50257 at byte offset 1098 of '") &&
                        kamp::test::contains("outside the model's vocabulary [0, 50257)") &&
                        kamp::test::contains("--vocab"));
  write_bytes(dir / "raw_outside.bin", raw_file({1, 2, 300, 4}));
  CHECK_THROWS_WITH(
      kamp::token_dataset::from_path(dir / "raw_outside.bin", 0.25, 1, 256, kamp::token_file_format::raw_uint16),
      kamp::test::contains("token 300 at byte offset 4"));
  auto truncated = llmc_shard(numbered(0, 100));
  truncated.resize(truncated.size() - 2);
  write_bytes(dir / "truncated.bin", truncated);
  CHECK_THROWS_WITH(
      kamp::token_dataset::from_path(dir / "truncated.bin", 0.25, 8, 50257),
      kamp::test::contains("claiming 100 tokens (1224 bytes") && kamp::test::contains("holds 1222 bytes"));
  write_bytes(dir / "version7.bin", llmc_shard(numbered(0, 100), 20240520, 7));
  CHECK_THROWS_WITH(kamp::token_dataset::from_path(dir / "version7.bin", 0.25, 8, 50257),
                    kamp::test::contains("version 7; kamp reads version 1"));
  write_bytes(dir / "odd.bin", {1, 2, 3});
  CHECK_THROWS_WITH(
      kamp::token_dataset::from_path(dir / "odd.bin", 0.25, 1, 50257, kamp::token_file_format::raw_uint16),
      kamp::test::contains("an odd number"));
  CHECK_THROWS_WITH(kamp::token_dataset::from_path(dir / "odd.bin", 0.25, 1, 50257),
                    kamp::test::contains("holds 3 bytes, fewer than llm.c's 1024-byte shard header"));
  write_bytes(dir / "empty.bin", {});
  CHECK_THROWS_WITH(kamp::token_dataset::from_path(dir / "empty.bin", 0.25, 1, 50257),
                    kamp::test::contains("is empty"));
  write_bytes(dir / "short.bin", raw_file(numbered(0, 20)));
  CHECK_THROWS_WITH(
      kamp::token_dataset::from_path(dir / "short.bin", 0.25, 8, 50257, kamp::token_file_format::raw_uint16),
      kamp::test::contains("validation part has 5 tokens") && kamp::test::contains("shorter --context"));
  // Byte-level text against a smaller vocabulary.
  std::ofstream(dir / "text.txt") << std::string(100, 'z');
  CHECK_THROWS_WITH(kamp::token_dataset::from_path(dir / "text.txt", 0.25, 8, 100),
                    kamp::test::contains("holds byte 122") && kamp::test::contains("--vocab 256"));
}

TEMPLATE_TEST_CASE("windows over several files stay inside one file, and the device draws the host's", "[model][data]",
                   Kokkos::DefaultExecutionSpace) {
  const scratch_dir dir("kamp_token_files");
  // Files of 9 (one window at context 8), 8 (none), 40 and 200 tokens: 1 + 0 + 32 + 192 windows.
  const std::vector<unsigned> sizes{9, 8, 40, 200};
  for (unsigned f = 0; f < sizes.size(); ++f)
    write_bytes(dir / ("part" + std::to_string(f) + ".bin"), raw_file(numbered(f + 1, sizes[f])));
  write_bytes(dir / "val.bin", raw_file(numbered(9, 30)));
  const int context = 8, batch = 16, batches = 400;
  const auto d =
      kamp::token_dataset::from_path(dir.path.string(), 0.1, context, 50257, kamp::token_file_format::raw_uint16);
  REQUIRE(d.windows(split::train) == 1 + 0 + 32 + 192);
  kamp::device_batches<TestType> device(d, batch);
  std::vector<int> tokens(batch * context), targets(tokens.size());
  std::map<unsigned, int> per_file;
  std::set<unsigned> starts;
  int crossing = 0, differ = 0;
  for (int b = 0; b < batches; ++b) {
    d.sample(split::train, 5, std::uint64_t(b), batch, tokens.data(), targets.data());
    device.sample(split::train, 5, std::uint64_t(b));
    const auto dt = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), device.tokens());
    const auto dg = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), device.targets());
    for (int w = 0; w < batch; ++w) {
      const unsigned first = unsigned(tokens[w * context]);
      const unsigned file = first / 1000 - 1;
      ++per_file[file];
      starts.insert(first);
      for (int t = 0; t < context; ++t) {
        const unsigned want = first + unsigned(t);
        crossing += unsigned(tokens[w * context + t]) != want || unsigned(targets[w * context + t]) != want + 1 ||
                    want % 1000 + 1 >= sizes.at(file);
        differ += dt(w, t) != tokens[w * context + t] || dg(w, t) != targets[w * context + t];
      }
    }
  }
  CHECK(crossing == 0);
  CHECK(differ == 0);
  CHECK(per_file.count(1) == 0);  // 8 tokens hold no window of 8 + 1
  // Each window equally likely: the files get draws in proportion to their windows (6400 draws;
  // binomial standard deviations ~ 11 and ~ 23 around 183 and 5461).
  CHECK(std::abs(per_file[2] - 6400.0 * 32 / 225) < 60);
  CHECK(std::abs(per_file[3] - 6400.0 * 192 / 225) < 100);
  CHECK(starts.size() > 200);  // nearly all 225 windows seen
}
