// The whole model's backward pass (every layer, tied embedding included) against central
// finite differences of its loss, in fp64: kamp::gpt<double> runs every op in fp64.
#include <kamp/model/network/gpt.hpp>

#include "../support/catch.hpp"

#include "../support/execution_spaces.hpp"
#include "../support/finite_differences.hpp"
#include "../support/fixtures.hpp"
#include "../support/gpt_shapes.hpp"
#include "../support/views.hpp"

#include <random>
#include <vector>

namespace {

// Weights large enough that every path (attention, GELU curvature, LayerNorm scales) matters.
std::vector<double> random_weights(const kamp::gpt_parameters& p, unsigned seed) {
  std::vector<double> w(p.table.flat_size(), 0.0);
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  for (std::size_t t = 0; t < p.table.count(); ++t) {
    const auto& e = p.table[t];
    const kamp::parameter_kind kind = p.kind(t);
    const bool is_bias = kind == kamp::parameter_kind::linear_bias || kind == kamp::parameter_kind::norm_bias;
    for (std::size_t i = 0; i < e.size; ++i)
      w[e.offset + i] =
          kind == kamp::parameter_kind::norm_gain ? 1.0 + 0.3 * normal(rng) : (is_bias ? 0.1 : 0.3) * normal(rng);
  }
  return w;
}

// `n` random tokens, then `n` random targets, from one generator seeded with `seed`.
struct token_batch {
  std::vector<int> tokens, targets;
};
token_batch random_batch(std::size_t n, unsigned seed, int vocab = 256) {
  std::mt19937 rng(seed);
  token_batch b{std::vector<int>(n), std::vector<int>(n)};
  for (auto& t : b.tokens) t = int(rng() % unsigned(vocab));
  for (auto& t : b.targets) t = int(rng() % unsigned(vocab));
  return b;
}

// A vocabulary of 300 is padded to 384 rows of wte; the padded rows get nonzero weights here,
// and still the loss does not depend on them: their gradient is exactly 0 and finite differences
// agree. Tokens and targets reach the last real class.
template <class TestType>
void check_finite_differences(int vocab) {
  using model_type = kamp::gpt<double, TestType>;
  kamp::gpt_config config = kamp::test::gpt_shape(8, 2, 2, 16, 32);
  config.vocab = vocab;
  const kamp::precision_policy policy = kamp::test::policy(kamp::precision_mode::fp32);
  const int batch = 2;
  model_type model(config, policy, batch, TestType());
  const auto& table = model.table();

  auto weights = random_weights(model.parameters(), 7);
  Kokkos::View<double*, typename model_type::memory_space> device("weights", weights.size());
  const auto upload = [&] {
    Kokkos::deep_copy(device, Kokkos::View<const double*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(weights.data(),
                                                                                                      weights.size()));
  };
  upload();
  model.bind_weights({kamp::dtype::fp64, device.data()}, {kamp::dtype::fp64, device.data()});

  token_batch in = random_batch(std::size_t(batch) * config.context, 3, vocab);
  in.targets[1] = in.tokens[2] = vocab - 1;

  Kokkos::deep_copy(model.grads(), 0.0);
  const double loss = model.forward_backward(in.tokens.data(), in.targets.data(), 1.0);
  CHECK(loss == Approx(model.evaluate(in.tokens.data(), in.targets.data())).epsilon(1e-15));
  const auto grads = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), model.grads());
  const std::vector<double> g(grads.data(), grads.data() + grads.extent(0));
  const auto& wte = table[model.parameters().wte];
  REQUIRE(wte.shape.at(0) == std::size_t(config.padded_vocab()));
  int padding_gradients = 0;
  for (std::size_t i = std::size_t(vocab) * config.d_model; i < wte.size; ++i)
    padding_gradients += g[wte.offset + i] != 0;
  CHECK(padding_gradients == 0);

  const auto f = [&] {
    upload();
    return model.evaluate(in.tokens.data(), in.targets.data());
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

}  // namespace

TEMPLATE_TEST_CASE("the fp64 GPT's gradient of every tensor matches finite differences", "[model]",
                   KAMP_TEST_EXECUTION_SPACES) {
  SECTION("byte-level vocabulary") { check_finite_differences<TestType>(256); }
  SECTION("a vocabulary padded from 300 to 384 rows") { check_finite_differences<TestType>(300); }
}

TEMPLATE_TEST_CASE("the fp32 GPT's loss and gradients agree with the fp64 model on every execution space", "[model]",
                   KAMP_TEST_EXECUTION_SPACES) {
  const kamp::gpt_config config = kamp::test::gpt_shape(8, 2, 2, 16, 32);
  const kamp::precision_policy policy = kamp::test::policy(kamp::precision_mode::fp32);
  const int batch = 2;
  kamp::gpt<double, TestType> reference(config, policy, batch, TestType());
  kamp::gpt<float, TestType> model(config, policy, batch, TestType());
  const auto weights = random_weights(reference.parameters(), 11);
  const std::vector<float> narrow(weights.begin(), weights.end());
  const std::vector<double> exact(narrow.begin(), narrow.end());  // the same values in both
  const auto wide = kamp::test::to_device<double, TestType>(exact, "wide");
  const auto single = kamp::test::to_device<float, TestType>(narrow, "single");
  reference.bind_weights({kamp::dtype::fp64, wide.data()}, {kamp::dtype::fp64, wide.data()});
  model.bind_weights({kamp::dtype::fp32, single.data()}, {kamp::dtype::fp32, single.data()});
  const token_batch in = random_batch(std::size_t(batch) * config.context, 5);
  Kokkos::deep_copy(reference.grads(), 0.0);
  Kokkos::deep_copy(model.grads(), 0.0f);
  const double want = reference.forward_backward(in.tokens.data(), in.targets.data(), 1.0);
  const double got = model.forward_backward(in.tokens.data(), in.targets.data(), 1.0);
  CHECK(got == Approx(want).epsilon(1e-5));
  const auto g64 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), reference.grads());
  const auto g32 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), model.grads());
  double worst = 0, scale = 0;
  for (std::size_t i = 0; i < g64.extent(0); ++i) {
    worst = std::max(worst, std::abs(double(g32(i)) - g64(i)));
    scale = std::max(scale, std::abs(g64(i)));
  }
  INFO("largest gradient " << scale << ", largest difference " << worst);
  CHECK(worst < 1e-4 * scale);
}
