#include "checkpoint.hpp"

#include <kamp/model/network/gpt_parameters.hpp>
#include <kamp/model/state/checkpoint.hpp>
#include <kamp/model/training/trainer.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <stdexcept>

namespace kamp::bench {

namespace {

// The reference: the state's bytes written to one file and fsync'ed, then read back.
void raw_write(const std::string& path, const training_state& s) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) throw std::runtime_error("kamp-bench: cannot write " + path);
  for (const auto& t : s.tensors) std::fwrite(t.bytes.data(), 1, t.bytes.size(), f);
  std::fflush(f);
  ::fsync(::fileno(f));
  std::fclose(f);
}

std::size_t raw_read(const std::string& path, std::vector<unsigned char>& buffer) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw std::runtime_error("kamp-bench: cannot read " + path);
  const std::size_t n = std::fread(buffer.data(), 1, buffer.size(), f);
  std::fclose(f);
  return n;
}

}  // namespace

void checkpoints(report& out, int repeat, const std::string& directory) {
  namespace fs = std::filesystem;
  const fs::path scratch = fs::path(directory) / ("kamp-bench-checkpoints-" + std::to_string(::getpid()));
  fs::create_directories(scratch);
  const gpt_config config;  // the reference model
  const token_dataset data(default_corpus(), 0.1, config.context, "built-in corpus");
  train_options options;
  options.steps = 1;
  std::printf("  checkpoints of the reference GPT (%zu parameters) in %s\n", parameter_table(config).parameter_count(),
              scratch.c_str());
  for (const auto mode : precision_modes()) {
    precision_policy policy;
    policy.mode = mode;
    trainer t(config, policy, options, data);
    t.step();
    const training_state state = t.state();
    const std::string file = (scratch / "checkpoint.h5").string(), raw = (scratch / "raw.bin").string();
    std::size_t payload = 0;
    for (const auto& x : state.tensors) payload += x.bytes.size();
    std::vector<unsigned char> buffer(payload);

    const auto write = time_against(
        repeat, [&] { write_checkpoint(file, state); }, [&] { raw_write(raw, state); });
    const auto read = time_against(
        repeat, [&] { read_checkpoint(file); }, [&] { raw_read(raw, buffer); });
    const double restore = fenced_seconds([&] { t.restore(read_checkpoint(file)); });
    const double bytes = double(fs::file_size(file));
    const std::string name = std::string("checkpoint_") + kamp::name(mode);
    out.value(name, {{"file_bytes", bytes},
                     {"state_bytes", payload},
                     {"write_seconds", write.seconds},
                     {"write_speed_vs_raw_fsync", write.speed_ratio},
                     {"read_seconds", read.seconds},
                     {"read_speed_vs_raw_fread", read.speed_ratio},
                     {"read_and_restore_seconds", restore}});
    std::printf(
        "  %-22s %6.1f MB (state %6.1f MB)  write %6.3f s (%4.2f x raw+fsync)  read %6.3f s (%4.2f x raw)  "
        "read+restore %6.3f s\n",
        name.c_str(), bytes / 1e6, double(payload) / 1e6, write.seconds, write.speed_ratio, read.seconds,
        read.speed_ratio, restore);
  }
  fs::remove_all(scratch);
}

}  // namespace kamp::bench
