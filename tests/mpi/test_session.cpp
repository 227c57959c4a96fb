// A training session on N ranks: each rank's batch of B rows trains the weights one process gets
// from the N x B rows, every rank holds the same weights, and a checkpoint written by rank 0
// loads on every rank.
#include <kamp/model/training/session.hpp>

#include "../support/catch.hpp"

#include "world.hpp"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

using memory = Kokkos::DefaultExecutionSpace::memory_space;

// Rows first..first+rows of a deterministic batch of step k: 4 inputs, 2 labels.
void rows_of_batch(int k, int first, int rows, Kokkos::View<float**, memory>& x, Kokkos::View<float**, memory>& y) {
  x = Kokkos::View<float**, memory>("x", rows, 4);
  y = Kokkos::View<float**, memory>("y", rows, 2);
  const auto hx = Kokkos::create_mirror_view(x);
  const auto hy = Kokkos::create_mirror_view(y);
  for (int i = 0; i < rows; ++i) {
    const int r = first + i;
    for (int d = 0; d < 4; ++d) hx(i, d) = float(std::sin(0.37 * (r + 1) * (d + 1) + k));
    hy(i, 0) = hx(i, 0) * hx(i, 1);
    hy(i, 1) = std::cos(hx(i, 2)) - hx(i, 3);
  }
  Kokkos::deep_copy(x, hx);
  Kokkos::deep_copy(y, hy);
}

// Whether every rank holds rank 0's values bit for bit.
bool same_on_every_rank(const std::vector<float>& w) {
  const auto& world = kamp::test::world();
  std::vector<unsigned char> bytes(w.size() * sizeof(float));
  std::memcpy(bytes.data(), w.data(), bytes.size());
  world.broadcast(bytes, 0);
  return world.all(std::memcmp(bytes.data(), w.data(), bytes.size()) == 0);
}

}  // namespace

TEST_CASE("a session on N ranks with batch B takes the steps of one process with batch N x B", "[mpi][session]") {
  const auto& world = kamp::test::world();
  const int ranks = world.size(), rank = world.rank(), b = 12;
  for (const char* mode : {"fp32", "amp_bf16"}) {
    INFO("precision " << mode);
    const auto config = kamp::session_config::parse(
        "model: {type: mlp, parameters: {layer_sizes: [4, 16, 2], layernorm: true}}\n"
        "optimizer: {type: adamw, parameters: {learning_rate: 1e-2}, general: {grad_accumulation_steps: 2}}\n"
        "precision: " +
        std::string(mode));
    kamp::session<> one(config), parallel(config, Kokkos::DefaultExecutionSpace(), world);
    Kokkos::View<float**, memory> x, y, xs, ys;
    for (int k = 0; k < 8; ++k) {
      rows_of_batch(k, 0, ranks * b, x, y);
      one.train_step(x, y);
      rows_of_batch(k, rank * b, b, xs, ys);
      parallel.train_step(xs, ys);
    }
    const auto w1 = one.weights(), wn = parallel.weights();
    double worst = 0;
    for (std::size_t i = 0; i < w1.size(); ++i)
      worst = std::max(worst, std::fabs(double(w1[i]) - wn[i]) / (1.0 + std::fabs(w1[i])));
    // Sums over N x B rows against sums of N sums over B rows: fp32 rounding, then 4 AdamW steps.
    const double tolerance = std::string(mode) == "fp32" ? 1e-5 : 1e-2;
    INFO("largest difference from one process " << worst);
    CHECK(world.all(worst < tolerance));
    CHECK(same_on_every_rank(wn));
    CHECK(parallel.report().optimizer_steps == 4);

    // Rank 0 writes, every rank reads the same file.
    const std::string path = "kamp_mpi_session_" + std::string(mode) + ".h5";
    parallel.save(path);
    kamp::session<> resumed(config, Kokkos::DefaultExecutionSpace(), world);
    resumed.load(path);
    CHECK(world.all(resumed.weights() == wn));
    world.all(true);
    if (rank == 0) std::remove(path.c_str());
  }
}
