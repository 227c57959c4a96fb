// Trains a small session a few steps, saves it to argv[1], and prints its weights as JSON
// ({"name": [shape, [values...]]}) for check_session_h5py.py to compare with what h5py reads.
#include <kamp/model/training/session.hpp>

#include <cstdio>

int main(int argc, char* argv[]) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: kamp_write_session FILE.h5\n");
    return 2;
  }
  Kokkos::ScopeGuard kokkos;
  kamp::session<> s(kamp::session_config::parse(
      "model: {type: mlp, parameters: {layer_sizes: [3, 5, 2], layernorm: true}}\nprecision: amp_bf16\n"));
  Kokkos::View<double**, Kokkos::LayoutLeft> x("x", 8, 3), y("y", 8, 2);
  Kokkos::deep_copy(x, 0.5);
  Kokkos::deep_copy(y, -0.25);
  for (int step = 0; step < 3; ++step) s.train_step(x, y);
  s.save(argv[1]);
  const auto w = s.weights();
  std::printf("{");
  const auto& t = s.parameters();
  for (std::size_t i = 0; i < t.count(); ++i) {
    std::printf("%s\"%s\": [[", i ? ", " : "", t[i].name.c_str());
    for (std::size_t d = 0; d < t[i].shape.size(); ++d) std::printf("%s%zu", d ? ", " : "", t[i].shape[d]);
    std::printf("], [");
    for (std::size_t k = 0; k < t[i].size; ++k) std::printf("%s%.9g", k ? ", " : "", w[t[i].offset + k]);
    std::printf("]]");
  }
  std::printf("}\n");
  return 0;
}
