// Writes kamp checkpoints whose 16-bit tensors hold every bf16/fp16 bit pattern, with the raw
// bits beside them, for check_standard_readers.py to compare against h5py and h5dump.
#include <kamp/model/network/gpt_parameters.hpp>
#include <kamp/model/state/checkpoint.hpp>

#include "../support/gpt_shapes.hpp"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>

namespace {

// Raw element bits: 16-bit tensors count through all 65536 patterns; fp32 tensors get
// scattered patterns (a multiplicative hash) that include infinities, NaNs and subnormals.
void fill(kamp::state_tensor& t, const kamp::tensor_table& table) {
  std::uint64_t j = 0;
  for (const auto& e : table.entries())
    for (std::size_t i = 0; i < e.size; ++i, ++j) {
      unsigned char* at = t.bytes.data() + (e.offset + i) * kamp::size_of(t.type);
      if (kamp::size_of(t.type) == 2) {
        const std::uint16_t bits = std::uint16_t(j % 65536);
        std::memcpy(at, &bits, 2);
      } else {
        const std::uint32_t bits = std::uint32_t((j * 0x9e3779b97f4a7c15ull) >> 32);
        std::memcpy(at, &bits, 4);
      }
    }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUTPUT_DIRECTORY\n", argv[0]);
    return 2;
  }
  const std::string out = argv[1];
  const kamp::gpt_config model = kamp::test::gpt_shape(16, 1, 2, 64, 256);
  const kamp::tensor_table table = parameter_table(model);
  if (table.parameter_count() < 65536) return 3;
  for (const auto mode : {kamp::precision_mode::amp_bf16, kamp::precision_mode::amp_fp16}) {
    kamp::training_state s;
    s.model = model;
    s.policy.mode = mode;
    s.scaler = {65536.0f, 0, 1, 0, 0, 0};
    for (const auto& [role, type] : kamp::state_layout(s.policy)) {
      kamp::state_tensor t{role, type, std::vector<unsigned char>(table.flat_size() * kamp::size_of(type), 0)};
      fill(t, table);
      s.tensors.push_back(std::move(t));
    }
    const std::string base = out + "/" + kamp::name(mode);
    kamp::write_checkpoint(base + ".h5", s);
    std::ofstream manifest(base + ".manifest"), raw(base + ".bin", std::ios::binary);
    for (const auto& t : s.tensors)
      for (const auto& e : table.entries()) {
        manifest << t.role << "/" << e.name << ' ' << kamp::name(t.type) << ' ' << e.size << '\n';
        raw.write(reinterpret_cast<const char*>(t.bytes.data() + e.offset * kamp::size_of(t.type)),
                  std::streamsize(e.size * kamp::size_of(t.type)));
      }
  }
  return 0;
}
