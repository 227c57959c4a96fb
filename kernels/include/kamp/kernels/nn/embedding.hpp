#ifndef KAMP_KERNELS_NN_EMBEDDING_HPP
#define KAMP_KERNELS_NN_EMBEDDING_HPP

#include <kamp/kernels/detail/fence.hpp>
#include <kamp/kernels/nn/detail/nn_common.hpp>
#include <kamp/kernels/nn/rows.hpp>
#include <kamp/tools/traffic.hpp>

#include <stdexcept>
#include <string>

namespace kamp {

namespace detail {

template <class ExecutionSpace, class P, class O>
void embedding_forward_kernel(const ExecutionSpace& space, const int* tok, const P* te, const P* pe, O* o,
                              std::int64_t rows, std::int64_t t, std::int64_t c, std::int64_t first) {
  report_traffic("kamp::embedding_forward", elements_bytes<P, P, O>(rows * c) + elements_bytes<int>(rows));
  using acc = common_accum_t<P, O>;
  using member = typename Kokkos::TeamPolicy<ExecutionSpace>::member_type;
  for_each_row(
      "kamp::embedding_forward", space, rows, KOKKOS_LAMBDA(const member& m, std::int64_t r) {
        const P* KAMP_RESTRICT e = te + std::int64_t(tok[r]) * c;
        const P* KAMP_RESTRICT p = pe + (first + r % t) * c;
        O* KAMP_RESTRICT dst = o + r * c;
        row_for(m, c, [&](std::int64_t i) { store_nearest(dst + i, load_as<acc>(e + i) + load_as<acc>(p + i)); });
      });
}

template <class ExecutionSpace, class D, class G>
void embedding_backward_kernel(const ExecutionSpace& space, const int* offsets, const int* rows, const D* d, G* te,
                               G* pe, std::int64_t vocab, std::int64_t n, std::int64_t t, std::int64_t c) {
  report_traffic("kamp::embedding_backward::tokens",
                 elements_bytes<D>(n * c) + elements_bytes<G, G>(vocab * c) + elements_bytes<int, int>(n));
  report_traffic("kamp::embedding_backward::positions", elements_bytes<D>(n * c) + elements_bytes<G, G>(t * c));
  using acc = common_accum_t<D, G>;
  using member = typename Kokkos::TeamPolicy<ExecutionSpace>::member_type;
  // One row of the embedding per row of work: its gradient rows are added in ascending order.
  for_each_row(
      "kamp::embedding_backward::tokens", space, vocab, KOKKOS_LAMBDA(const member& m, std::int64_t v) {
        G* KAMP_RESTRICT dst = te + v * c;
        for (int k = offsets[v]; k < offsets[v + 1]; ++k) {
          const D* KAMP_RESTRICT src = d + std::int64_t(rows[k]) * c;
          row_for(m, c, [&](std::int64_t i) { store_nearest(dst + i, load_as<acc>(dst + i) + load_as<acc>(src + i)); });
        }
      });
  for_each_row(
      "kamp::embedding_backward::positions", space, t, KOKKOS_LAMBDA(const member& m, std::int64_t p) {
        G* KAMP_RESTRICT dst = pe + p * c;
        for (std::int64_t r = p; r < n; r += t) {
          const D* KAMP_RESTRICT src = d + r * c;
          row_for(m, c, [&](std::int64_t i) { store_nearest(dst + i, load_as<acc>(dst + i) + load_as<acc>(src + i)); });
        }
      });
}

}  // namespace detail

/// \brief out(b·T + t, :) = wte(tokens(b, t), :) + wpe(first_position + t, :): token plus
/// learned position embeddings, added in the compute type. A sequence's tokens sit at positions
/// first_position.. (a decoder feeding one token at a time gives its position). Label
/// `kamp::embedding_forward`.
template <class ExecutionSpace, class P, class O, class... TP, class... PP, class... OP>
void embedding_forward(const ExecutionSpace& space, const Kokkos::View<const int**, TP...>& tokens,
                       const Kokkos::View<P**, PP...>& wte, const Kokkos::View<P**, PP...>& wpe,
                       const Kokkos::View<O**, OP...>& out, std::int64_t first_position = 0) {
  const std::int64_t batch = tokens.extent(0), t = tokens.extent(1), c = wte.extent(1);
  detail::check_extent("kamp::embedding_forward", "out rows", out.extent(0), batch * t);
  detail::check_extent("kamp::embedding_forward", "out columns", out.extent(1), c);
  detail::check_extent("kamp::embedding_forward", "wpe columns", wpe.extent(1), c);
  if (first_position < 0 || std::int64_t(wpe.extent(0)) < first_position + t)
    throw std::invalid_argument("kamp::embedding_forward: positions " + std::to_string(first_position) + ".." +
                                std::to_string(first_position + t - 1) + " but wpe has " +
                                std::to_string(wpe.extent(0)));
  detail::require_row_major("kamp::embedding_forward", "tokens", tokens);
  detail::require_row_major("kamp::embedding_forward", "wte", wte);
  detail::require_row_major("kamp::embedding_forward", "wpe", wpe);
  detail::require_row_major("kamp::embedding_forward", "out", out);
  detail::embedding_forward_kernel(space, tokens.data(), wte.data(), wpe.data(), out.data(), batch * t, t, c,
                                   first_position);
}

/// \brief Rows of a token batch grouped by token id (CSR), so the embedding's backward pass
/// sums each vocabulary row's gradient in a fixed order (no atomics; deterministic).
///
/// Built on the device by a stable counting sort in three launches: each block of
/// `block_rows` rows counts its tokens, one scan over (token, block) turns the counts into
/// start positions, and each block places its rows in order. Nothing waits for the host.
template <class MemorySpace>
struct token_rows {
  static constexpr std::int64_t block_rows = 256;
  Kokkos::View<int*, MemorySpace> offsets;  ///< (V+1): rows of token v are rows[offsets[v]..offsets[v+1])
  Kokkos::View<int*, MemorySpace> rows;     ///< (N) row indices, ascending within each token
  Kokkos::View<int**, MemorySpace> cursor;  ///< (blocks, V): the sort's per-block counts, then positions

  /// Bytes Kokkos allocates for the index for n rows and a vocabulary of `vocab` (the memory
  /// planner's figure): its three Views, each in whole 8-byte units as Kokkos allocates.
  static std::size_t bytes(std::size_t n, int vocab) {
    const auto allocated = [](std::size_t ints) { return (ints * sizeof(int) + 7) / 8 * 8; };
    return allocated(std::size_t(vocab) + 1) + allocated(n) + allocated(blocks(n) * std::size_t(vocab));
  }

  /// An index for batches of n tokens; assign() fills it.
  token_rows(std::size_t n, int vocab)
      : offsets("kamp::token_rows::offsets", vocab + 1),
        rows("kamp::token_rows::rows", n),
        cursor("kamp::token_rows::cursor", blocks(n), vocab) {}

  /// Builds the index from host tokens (b·T + t order); throws on a token outside [0, vocab).
  token_rows(const int* tokens, std::size_t n, int vocab) : token_rows(n, vocab) {
    for (std::size_t i = 0; i < n; ++i)
      if (tokens[i] < 0 || tokens[i] >= vocab)
        throw std::invalid_argument("kamp::token_rows: token " + std::to_string(tokens[i]) + " at position " +
                                    std::to_string(i) + " is outside the vocabulary [0, " + std::to_string(vocab) +
                                    ")");
    Kokkos::View<int*, MemorySpace> device("kamp::token_rows::tokens", n);
    Kokkos::deep_copy(device, Kokkos::View<const int*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(tokens, n));
    const typename MemorySpace::execution_space space;
    assign(space, device);
    detail::fence(space, "the host's tokens may change after this call");
  }

  /// Rebuilds the index for the next batch of the same size, in the same memory, on `space`.
  /// Tokens must lie in [0, vocab): checked where they enter (the host constructor, the data).
  template <class ExecutionSpace>
  void assign(const ExecutionSpace& space, const Kokkos::View<const int*, MemorySpace>& tokens) const {
    detail::check_extent("kamp::token_rows::assign", "tokens", tokens.extent(0), rows.extent(0));
    const std::int64_t n = rows.extent(0), vocab = cursor.extent(1), nb = cursor.extent(0), s = block_rows;
    const auto count = cursor;
    const auto first = offsets;
    const auto order = rows;
    using policy = Kokkos::RangePolicy<ExecutionSpace, Kokkos::IndexType<std::int64_t>>;
    Kokkos::parallel_for(
        "kamp::token_rows::count", policy(space, 0, nb), KOKKOS_LAMBDA(std::int64_t b) {
          for (std::int64_t v = 0; v < vocab; ++v) count(b, v) = 0;
          const std::int64_t end = (b + 1) * s < n ? (b + 1) * s : n;
          for (std::int64_t i = b * s; i < end; ++i) ++count(b, tokens(i));
        });
    // Token-major order: token v's rows come after every row of smaller tokens, and within v
    // block b's after those of earlier blocks.
    Kokkos::parallel_scan(
        "kamp::token_rows::scan", policy(space, 0, vocab * nb),
        KOKKOS_LAMBDA(std::int64_t k, int& before, const bool final) {
          const std::int64_t v = k / nb, b = k % nb;
          const int c = count(b, v);
          if (final) {
            count(b, v) = before;
            if (b == 0) first(v) = before;
            if (k == vocab * nb - 1) first(vocab) = before + c;
          }
          before += c;
        });
    Kokkos::parallel_for(
        "kamp::token_rows::place", policy(space, 0, nb), KOKKOS_LAMBDA(std::int64_t b) {
          const std::int64_t end = (b + 1) * s < n ? (b + 1) * s : n;
          for (std::int64_t i = b * s; i < end; ++i) order(count(b, tokens(i))++) = int(i);
        });
  }

 private:
  static std::size_t blocks(std::size_t n) { return (n + block_rows - 1) / block_rows; }
};

/// \brief dwte(v, :) += Σ dout(rows of token v, :), dwpe(t, :) += Σ_b dout(b·T + t, :), each sum
/// in ascending row order. Labels `kamp::embedding_backward::tokens`, `...::positions`.
template <class ExecutionSpace, class D, class G, class... DP, class... GP>
void embedding_backward(const ExecutionSpace& space, const token_rows<typename ExecutionSpace::memory_space>& index,
                        int positions, const Kokkos::View<D**, DP...>& dout, const Kokkos::View<G**, GP...>& dwte,
                        const Kokkos::View<G**, GP...>& dwpe) {
  const std::int64_t n = dout.extent(0), c = dout.extent(1), t = positions;
  detail::check_extent("kamp::embedding_backward", "token index", index.rows.extent(0), n);
  detail::check_extent("kamp::embedding_backward", "dwte rows", dwte.extent(0) + 1, index.offsets.extent(0));
  detail::check_extent("kamp::embedding_backward", "dwte columns", dwte.extent(1), c);
  detail::check_extent("kamp::embedding_backward", "dwpe columns", dwpe.extent(1), c);
  detail::require_row_major("kamp::embedding_backward", "dout", dout);
  detail::require_row_major("kamp::embedding_backward", "dwte", dwte);
  detail::require_row_major("kamp::embedding_backward", "dwpe", dwpe);
  detail::embedding_backward_kernel(space, index.offsets.data(), index.rows.data(), dout.data(), dwte.data(),
                                    dwpe.data(), std::int64_t(dwte.extent(0)), n, t, c);
}

}  // namespace kamp

#endif
