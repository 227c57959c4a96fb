// Generation: the KV-cache decoder against the training model's full-context forward and an
// fp64 attention, and the sampler against exact fp64 probabilities.
#include <kamp/kernels/nn/attention_decode.hpp>
#include <kamp/model/network/decoder.hpp>
#include <kamp/model/network/generate.hpp>
#include <kamp/model/network/sampling.hpp>
#include <kamp/model/state/state_weights.hpp>
#include <kamp/model/training/trainer.hpp>
#include <kamp/numeric.hpp>

#include "../support/catch.hpp"

#include "../support/fixtures.hpp"
#include "../support/gpt_shapes.hpp"
#include "../support/views.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

namespace {

using space = Kokkos::DefaultExecutionSpace;

// The decoder's logits for `tokens` fed one at a time, position after position.
std::vector<std::vector<float>> decoded_logits(kamp::gpt_decoder<>& decoder, const std::vector<int>& tokens) {
  std::vector<std::vector<float>> out;
  decoder.reset();
  for (const int t : tokens) {
    const auto logits = decoder.advance(t);
    const auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), logits);
    out.emplace_back(host.data(), host.data() + host.extent(0));
  }
  return out;
}

}  // namespace

// More positions than a GPU row has lanes (32 or 64), so lanes take several positions each.
TEMPLATE_TEST_CASE("attention over a KV cache equals fp64 attention over the same keys and values", "[model][decoder]",
                   float, kamp::bf16) {
  using T = TestType;
  const int heads = 3, d = 8, capacity = 70;
  using mem = space::memory_space;
  // q, k, v rows of every position, already in T: the reference reads the same values.
  Kokkos::View<T*, Kokkos::HostSpace> rows("rows", std::size_t(capacity) * 3 * heads * d);
  for (std::size_t i = 0; i < rows.extent(0); ++i)
    rows(i) = kamp::from_float<T>(float(std::sin(0.37 * double(i) + 0.1)));
  Kokkos::View<T***, Kokkos::LayoutRight, mem> keys("k", heads, capacity, d), values("v", heads, capacity, d);
  Kokkos::View<float**, Kokkos::LayoutRight, mem> scores("s", heads, capacity);
  Kokkos::View<T**, Kokkos::LayoutRight, mem> probs("p", heads, capacity);
  Kokkos::View<T*, mem> out("out", heads * d);
  const float alpha = 0.5f;
  // fp32 arithmetic rounds at ~6e-8; in bf16 the probabilities and the output are rounded to
  // 8 significant bits (2^-9 relative each) before and after the P·V sum (measured: 4.9e-3).
  const double tolerance = std::is_same_v<T, float> ? 1e-5 : 1e-2;
  const auto at = [&](int p, int part, int h, int i) {
    return double(kamp::to_float(rows(std::size_t(p) * 3 * heads * d + std::size_t(part) * heads * d + h * d + i)));
  };
  double worst = 0;
  for (int pos = 0; pos < capacity; ++pos) {
    const auto row = Kokkos::create_mirror_view_and_copy(
        mem(),
        Kokkos::subview(rows, std::make_pair(std::size_t(pos) * 3 * heads * d, std::size_t(pos + 1) * 3 * heads * d)));
    kamp::kv_cache_append(space(), Kokkos::View<const T*, mem>(row), keys, values, pos);
    kamp::attention_decode(space(), Kokkos::View<const T*, mem>(row), keys, values, pos, alpha, scores, probs, out);
    const auto got = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), out);
    for (int h = 0; h < heads; ++h) {
      std::vector<double> w(pos + 1);
      double top = -1e300, sum = 0;
      for (int j = 0; j <= pos; ++j) {
        for (int i = 0; i < d; ++i) w[j] += alpha * at(pos, 0, h, i) * at(j, 1, h, i);
        top = std::max(top, w[j]);
      }
      for (auto& x : w) sum += x = std::exp(x - top);
      for (int i = 0; i < d; ++i) {
        double y = 0, scale = 0;
        for (int j = 0; j <= pos; ++j) {
          y += w[j] / sum * at(j, 2, h, i);
          scale += w[j] / sum * std::abs(at(j, 2, h, i));
        }
        worst = std::max(worst, std::abs(double(kamp::to_float(got(h * d + i))) - y) / scale);
      }
    }
  }
  CAPTURE(worst);
  CHECK(worst <= tolerance);
}

namespace {
// amp_fp8 is a training format: the decoder reads its bf16 model copy and runs amp_bf16's
// arithmetic, which the amp_bf16 case checks.
std::vector<kamp::precision_mode> decoded_modes() {
  std::vector<kamp::precision_mode> modes;
  for (const auto m : kamp::precision_modes())
    if (m != kamp::precision_mode::amp_fp8) modes.push_back(m);
  return modes;
}
}  // namespace

TEST_CASE("the KV-cache decoder's logits equal the full-context forward at every position", "[model][decoder]") {
  const auto mode = GENERATE(from_range(decoded_modes()));
  CAPTURE(kamp::name(mode));
  const kamp::precision_policy policy = kamp::test::policy(mode);
  // 300 classes in wte's 384 padded rows: both hand back the classes alone.
  const auto shape = [] {
    auto s = kamp::test::gpt_shape(24, 2, 2, 32, 64);
    s.vocab = 300;
    return s;
  }();
  const kamp::token_dataset& data = kamp::test::corpus(shape, 1 << 15);
  const kamp::train_options o = kamp::test::run_options(2, 30, 3e-3f);
  kamp::trainer t(shape, policy, o, data);
  for (int i = 0; i < o.steps; ++i) t.advance();
  t.reports();

  std::vector<int> tokens(std::size_t(o.batch) * shape.context), targets(tokens.size());
  data.sample(kamp::token_dataset::split::validation, 7, 0, o.batch, tokens.data(), targets.data());
  t.model().evaluate(tokens.data(), targets.data());
  const std::vector<double> full = t.model().logits();

  kamp::gpt_decoder<> decoder(shape, policy);
  decoder.bind_weights(t.model().binding());
  // The second sequence of the batch: its rows in the full forward are not the first ones.
  const std::vector<int> sequence(tokens.begin() + shape.context, tokens.end());
  const auto decoded = decoded_logits(decoder, sequence);
  REQUIRE(decoded.at(0).size() == std::size_t(shape.vocab));
  // Both run the same kernels in the same types; they differ in the order the GEMMs sum in
  // (one row against a batch of rows), an fp32 rounding, and in 16-bit modes in the training
  // forward's rounding of its logits to the head's type (at most 2^-9 of their scale; the
  // decoder keeps fp32 logits). A summation difference can also flip the rounding of an
  // activation to bf16/fp16 and travel on: bf16's unit roundoff (2^-8, half its ulp at 1) of the
  // logits' scale bounds both.
  const double bound = mode == kamp::precision_mode::fp32 ? 1e-5 : 1.0 / 256;
  double scale = 0, worst = 0;
  for (int p = 0; p < shape.context; ++p)
    for (int v = 0; v < shape.vocab; ++v) {
      const double want = full[(std::size_t(shape.context) + p) * shape.vocab + v];
      scale = std::max(scale, std::abs(want));
      worst = std::max(worst, std::abs(double(decoded[p][v]) - want));
    }
  CAPTURE(scale, worst);
  CHECK(scale > 1.0);
  CHECK(worst <= bound * scale);
}

TEST_CASE("greedy decoding of a model trained on a repeating text reproduces the text", "[model][decoder]") {
  const std::string period = "kamp rounds to nearest even; ";
  std::string text;
  while (text.size() < 8192) text += period;
  const auto shape = kamp::test::gpt_shape(32, 2, 2, 64, 128);
  const kamp::token_dataset data(text, 0.1, shape.context, "repeating text");
  const kamp::precision_policy policy = kamp::test::policy(kamp::precision_mode::amp_bf16);
  const kamp::train_options o = kamp::test::run_options(8, 150, 3e-3f, 10);
  kamp::trainer t(shape, policy, o, data);
  for (int i = 0; i < o.steps; ++i) t.advance();
  CHECK(t.reports().back().loss < 0.05);

  kamp::gpt_decoder<> decoder(shape, policy);
  decoder.bind_weights(t.model().binding());
  kamp::sampling_options greedy;
  greedy.temperature = 0;
  const std::string prompt = "to nearest";
  // 80 tokens run past the 32-position cache: the sliding window restarts four times on its way.
  const std::string want = (text + text).substr(text.find(prompt) + prompt.size(), 80);
  CHECK(kamp::generate(decoder, prompt, 80, greedy) == want);
}

TEST_CASE("the sampler draws each token with its softmax probability", "[model][sampling]") {
  const std::vector<float> logits = {1.0f, 3.0f, 0.5f, 3.0f, -2.0f, 2.0f};
  const int vocab = int(logits.size());
  kamp::sampling_options o;

  SECTION("greedy: the most likely token, the lower id among equals") {
    o.temperature = 0;
    CHECK(kamp::sample_token(logits.data(), vocab, o, 0) == 1);
    o.temperature = 1;
    o.top_k = 1;
    CHECK(kamp::sample_token(logits.data(), vocab, o, 5) == 1);
  }
  SECTION("frequencies match fp64 probabilities, with temperature and top-k") {
    o.temperature = GENERATE(1.0f, 0.5f, 2.0f);
    o.top_k = GENERATE(0, 3);
    o.seed = 99;
    const int k = o.top_k == 0 ? vocab : o.top_k;
    std::vector<int> order = {1, 3, 5, 0, 2, 4};  // by logit, ties by id
    std::vector<double> p(vocab, 0.0);
    double sum = 0;
    for (int i = 0; i < k; ++i) sum += p[order[i]] = std::exp(double(logits[order[i]]) / o.temperature);
    for (auto& x : p) x /= sum;
    const int draws = 40000;
    std::vector<int> count(vocab, 0);
    for (int n = 0; n < draws; ++n) ++count[kamp::sample_token(logits.data(), vocab, o, std::uint64_t(n))];
    for (int v = 0; v < vocab; ++v) {
      CAPTURE(o.temperature, o.top_k, v, count[v], p[v]);
      if (p[v] == 0) {
        CHECK(count[v] == 0);
      } else {
        // Within 5 binomial standard deviations.
        CHECK(std::abs(count[v] - draws * p[v]) <= 5 * std::sqrt(draws * p[v] * (1 - p[v])) + 1);
      }
    }
  }
  SECTION("each draw is the inverse CDF at the uniform its (seed, draw) words make; bad input is refused") {
    o.seed = 5;
    o.temperature = 0.7f;
    const std::vector<int> order = {1, 3, 5, 0, 2, 4};
    double sum = 0;
    std::vector<double> weight;
    for (const int v : order) sum += weight.emplace_back(std::exp(double(logits[v]) / 0.7));
    for (std::uint64_t n = 0; n < 200; ++n) {
      const std::uint64_t bits =
          (std::uint64_t(kamp::counter_random(5, 2 * n)) << 32) | kamp::counter_random(5, 2 * n + 1);
      const double u = double(bits >> 11) / 9007199254740992.0;
      double below = 0;
      int want = order.back();
      for (std::size_t i = 0; i < order.size(); ++i)
        if ((below += weight[i] / sum) > u) {
          want = order[i];
          break;
        }
      CAPTURE(n, u);
      CHECK(kamp::sample_token(logits.data(), vocab, o, n) == want);
    }
    o.temperature = -1;
    CHECK_THROWS_WITH(kamp::sample_token(logits.data(), vocab, o, 0), kamp::test::contains("temperature"));
    o.temperature = 1;
    o.top_k = vocab + 1;
    CHECK_THROWS_WITH(kamp::sample_token(logits.data(), vocab, o, 0), kamp::test::contains("top-k"));
    o.top_k = 0;
    std::vector<float> bad = logits;
    bad[2] = std::nanf("");
    CHECK_THROWS_WITH(kamp::sample_token(bad.data(), vocab, o, 0), kamp::test::contains("non-finite"));
  }
}

TEST_CASE("the decoder refuses tokens outside the vocabulary and a full cache", "[model][decoder]") {
  const auto shape = kamp::test::gpt_shape(4, 1, 1, 8, 16);
  const kamp::precision_policy policy = kamp::test::policy(kamp::precision_mode::fp32);
  const auto w = kamp::gpt2_initial_weights(shape, 1);
  const auto weights = kamp::test::to_device<float, space>(w, "w");
  kamp::gpt_decoder<> decoder(shape, policy);
  CHECK_THROWS_WITH(decoder.advance(1), kamp::test::contains("bind_weights"));
  const kamp::weights_ref ref{kamp::dtype::fp32, weights.data()};
  decoder.bind_weights({ref, kamp::gpt_parameters(shape).table, ref});
  CHECK_THROWS_WITH(decoder.advance(256), kamp::test::contains("outside the vocabulary"));
  for (int i = 0; i < shape.context; ++i) decoder.advance(i);
  CHECK_THROWS_WITH(decoder.advance(0), kamp::test::contains("full"));
  decoder.reset();
  CHECK(decoder.position() == 0);
  kamp::sampling_options o;
  CHECK(kamp::generate(decoder, "abc", 9, o).size() == 9);  // past the 4-position cache
  CHECK_THROWS_WITH(kamp::generate(decoder, "", 3, o), kamp::test::contains("prompt"));
}
