// The whole model's backward pass (every layer, tied embedding included) against central
// finite differences of its loss, in fp64: kamp::gpt<double> runs every op in fp64.
#include <kamp/model/gpt.hpp>

#include "../support/catch.hpp"

#include "../support/finite_differences.hpp"
#include "../support/gpt_shapes.hpp"

#include <random>

namespace {

// Weights large enough that every path (attention, GELU curvature, LayerNorm scales) matters.
std::vector<double> random_weights(const kamp::tensor_table& table, unsigned seed) {
  std::vector<double> w(table.flat_size(), 0.0);
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  for (const auto& e : table.entries()) {
    const bool is_norm = e.name.find("ln") != std::string::npos;
    const bool is_bias = e.name.size() > 5 && e.name.compare(e.name.size() - 5, 5, ".bias") == 0;
    for (std::size_t i = 0; i < e.size; ++i)
      w[e.offset + i] = is_norm && !is_bias ? 1.0 + 0.3 * normal(rng) : (is_bias ? 0.1 : 0.3) * normal(rng);
  }
  return w;
}

}  // namespace

TEST_CASE("the fp64 GPT's gradient of every tensor matches finite differences", "[model]") {
  const kamp::gpt_config config = kamp::test::gpt_shape(8, 2, 2, 16, 32);
  kamp::precision_policy policy;
  policy.mode = kamp::precision_mode::fp32;
  const int batch = 2;
  kamp::gpt<double> model(config, policy, batch);
  const auto& table = model.table();

  auto weights = random_weights(table, 7);
  Kokkos::View<double*, kamp::gpt<double>::memory_space> device("weights", weights.size());
  const auto upload = [&] {
    Kokkos::deep_copy(device,
                      Kokkos::View<const double*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(weights.data(), weights.size()));
  };
  upload();
  model.bind_weights({kamp::dtype::fp64, device.data()}, {kamp::dtype::fp64, device.data()});

  std::mt19937 rng(3);
  std::vector<int> tokens(batch * config.context), targets(tokens.size());
  for (auto& t : tokens) t = int(rng() % 256);
  for (auto& t : targets) t = int(rng() % 256);

  Kokkos::deep_copy(model.grads(), 0.0);
  const double loss = model.forward_backward(tokens.data(), targets.data(), 1.0);
  CHECK(loss == Approx(model.evaluate(tokens.data(), targets.data())).epsilon(1e-15));
  const auto grads = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), model.grads());
  const std::vector<double> g(grads.data(), grads.data() + grads.extent(0));

  const auto f = [&] {
    upload();
    return model.evaluate(tokens.data(), targets.data());
  };
  std::vector<std::size_t> all;
  for (std::size_t i = 0; i < table.count(); ++i) {
    const auto& e = table[i];
    const auto indices = kamp::test::sample_indices(e.offset, e.size, 12, unsigned(i));
    const double error = kamp::test::gradient_error(f, weights, g, indices);
    INFO(e.name << ": relative error " << error);
    CHECK(error < 1e-6);
    all.insert(all.end(), indices.begin(), indices.end());
  }
  upload();
  INFO("whole model");
  CHECK(kamp::test::gradient_error(f, weights, g, all) < 1e-6);
}
