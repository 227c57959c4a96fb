// The kernels that move data rather than compute it, against host index arithmetic: the
// embedding's device-built token index, and the attention heads layout.
#include <kamp/kernels/nn.hpp>
#include <kamp/kernels/nn/attention_heads.hpp>
#include <kamp/kernels/nn/residual.hpp>

#include "../support/catch.hpp"

#include "../support/execution_spaces.hpp"
#include "../support/views.hpp"

#include <cstdint>
#include <vector>

TEMPLATE_TEST_CASE("the token index is a stable counting sort, built on the device", "[nn]",
                   KAMP_TEST_EXECUTION_SPACES) {
  using Space = TestType;
  using memory = typename Space::memory_space;
  // Several sort blocks, one partly filled; a vocabulary with unused and repeated tokens.
  for (const std::size_t n : {std::size_t(1), std::size_t(255), std::size_t(256), std::size_t(1000)}) {
    const int vocab = 300;
    std::vector<int> tokens(n);
    for (std::size_t i = 0; i < n; ++i) tokens[i] = int((i * 7919 + i * i) % 97) * 3 % vocab;
    // Reference: rows in ascending order per token, tokens in ascending order.
    std::vector<int> offsets(vocab + 1, 0), rows;
    for (int v = 0; v < vocab; ++v) {
      offsets[v] = int(rows.size());
      for (std::size_t i = 0; i < n; ++i)
        if (tokens[i] == v) rows.push_back(int(i));
    }
    offsets[vocab] = int(n);
    kamp::token_rows<memory> index(n, vocab);
    const auto device = kamp::test::to_device<int, Space>(tokens, "tokens");
    index.assign(Space(), Kokkos::View<const int*, memory>(device));
    // Rebuilt in place for another batch, then for this one again: nothing is left over.
    std::vector<int> other(n, 5);
    index.assign(Space(), Kokkos::View<const int*, memory>(kamp::test::to_device<int, Space>(other, "other")));
    index.assign(Space(), Kokkos::View<const int*, memory>(device));
    INFO(n << " tokens");
    CHECK(kamp::test::to_host(index.offsets) == offsets);
    CHECK(kamp::test::to_host(index.rows) == rows);
  }
}

TEMPLATE_TEST_CASE("split_heads and merge_heads move (B·T, k·C) rows to (k, B, H, T, D) and back", "[nn]",
                   KAMP_TEST_EXECUTION_SPACES) {
  using Space = TestType;
  using memory = typename Space::memory_space;
  const int batch = 3, t = 5, heads = 4, d = 3, c = heads * d;
  for (const int parts : {1, 3}) {
    std::vector<float> rows(std::size_t(batch) * t * parts * c);
    for (std::size_t i = 0; i < rows.size(); ++i) rows[i] = float(i);
    Kokkos::View<float**, Kokkos::LayoutRight, memory> x("x", batch * t, parts * c);
    Kokkos::deep_copy(x, Kokkos::View<const float**, Kokkos::LayoutRight, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(
                             rows.data(), batch * t, parts * c));
    Kokkos::View<float*, memory> split("split", rows.size());
    kamp::split_heads(Space(), Kokkos::View<const float**, Kokkos::LayoutRight, memory>(x), batch, heads, parts, split);
    const auto h = kamp::test::to_host(split);
    int wrong = 0;
    for (int p = 0; p < parts; ++p)
      for (int b = 0; b < batch; ++b)
        for (int hh = 0; hh < heads; ++hh)
          for (int s = 0; s < t; ++s)
            for (int i = 0; i < d; ++i) {
              const std::size_t at = (((std::size_t(p) * batch + b) * heads + hh) * t + s) * d + i;
              const std::size_t from = (std::size_t(b) * t + s) * parts * c + p * c + hh * d + i;
              wrong += h[at] != rows[from];
            }
    CHECK(wrong == 0);
    Kokkos::View<float**, Kokkos::LayoutRight, memory> back("back", batch * t, parts * c);
    kamp::merge_heads(Space(), Kokkos::View<const float*, memory>(split), batch, heads, parts, back);
    const auto b = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), back);
    CHECK(std::vector<float>(b.data(), b.data() + b.size()) == rows);
  }
  CHECK_THROWS_WITH(kamp::split_heads(Space(), Kokkos::View<float**, Kokkos::LayoutRight, memory>("x", 7, c), 2, heads,
                                      1, Kokkos::View<float*, memory>("s", 7 * c)),
                    kamp::test::contains("7 rows do not split into 2 sequences"));
}

TEMPLATE_TEST_CASE("residual_with_bias adds the bias to every row of the skip connection", "[nn]",
                   KAMP_TEST_EXECUTION_SPACES) {
  using Space = TestType;
  using memory = typename Space::memory_space;
  const int n = 6, c = 17;
  std::vector<float> x(n * c), bias(c);
  for (int i = 0; i < n * c; ++i) x[i] = 0.25f * float(i) - 3.0f;
  for (int j = 0; j < c; ++j) bias[j] = 0.5f * float(j);
  Kokkos::View<float**, Kokkos::LayoutRight, memory> xd("x", n, c), out("out", n, c);
  Kokkos::deep_copy(
      xd, Kokkos::View<const float**, Kokkos::LayoutRight, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(x.data(), n, c));
  kamp::residual_with_bias(Space(), xd, kamp::test::to_device<float, Space>(bias, "bias"), out);
  const auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), out);
  int wrong = 0;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < c; ++j) wrong += h(i, j) != x[i * c + j] + bias[j];  // sums of multiples of 1/4: exact
  CHECK(wrong == 0);
}
