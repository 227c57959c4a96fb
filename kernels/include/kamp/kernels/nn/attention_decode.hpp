#ifndef KAMP_KERNELS_NN_ATTENTION_DECODE_HPP
#define KAMP_KERNELS_NN_ATTENTION_DECODE_HPP

// Causal attention for one new position of one sequence, against the keys and values of the
// positions before it (a KV cache): what generation runs per token instead of the whole
// context. The arithmetic is the training forward's: scores alpha·q·k accumulated in fp32,
// softmax in fp32, probabilities rounded to the compute type, then P·V accumulated in fp32.
#include <kamp/kernels/nn/detail/nn_common.hpp>
#include <kamp/kernels/nn/rows.hpp>

namespace kamp {

namespace detail {

template <class ExecutionSpace, class T>
void kv_cache_append_kernel(const ExecutionSpace& space, const T* qkv, T* keys, T* values, std::int64_t heads,
                            std::int64_t capacity, std::int64_t d, std::int64_t position) {
  const std::int64_t c = heads * d;
  Kokkos::parallel_for(
      "kamp::kv_cache_append", Kokkos::RangePolicy<ExecutionSpace, Kokkos::IndexType<std::int64_t>>(space, 0, c),
      KOKKOS_LAMBDA(std::int64_t i) {
        const std::int64_t at = ((i / d) * capacity + position) * d + i % d;
        keys[at] = qkv[c + i];
        values[at] = qkv[2 * c + i];
      });
}

template <class ExecutionSpace, class T>
void attention_decode_kernel(const ExecutionSpace& space, const T* qkv, const T* keys, const T* values,
                             std::int64_t heads, std::int64_t capacity, std::int64_t d, std::int64_t position,
                             float alpha, float* scores, T* probs, T* out) {
  using acc = common_accum_t<T, float>;
  using member = typename Kokkos::TeamPolicy<ExecutionSpace>::member_type;
  const std::int64_t visible = position + 1;
  // One row of work per head. Each lane writes and reads back only its own positions j, so the
  // row needs no barrier; the values pass below reads all of them in a second launch.
  for_each_row(
      "kamp::attention_decode::scores", space, heads, KOKKOS_LAMBDA(const member& m, std::int64_t h) {
        const T* KAMP_RESTRICT q = qkv + h * d;
        const T* KAMP_RESTRICT k = keys + h * capacity * d;
        float* KAMP_RESTRICT s = scores + h * capacity;
        T* KAMP_RESTRICT p = probs + h * capacity;
        const auto score = [&](std::int64_t j) {
          acc dot = 0;
          for (std::int64_t i = 0; i < d; ++i) dot += load_as<acc>(q + i) * load_as<acc>(k + j * d + i);
          return float(alpha * dot);
        };
        const float top = row_max<float>(m, visible, score);
        const float sum = row_sum<float>(m, visible, [&](std::int64_t j) {
          s[j] = exp_of(score(j) - top);
          return s[j];
        });
        const float inv = 1.0f / sum;
        row_for(m, visible, [&](std::int64_t j) { store_nearest(p + j, s[j] * inv); });
      });
  Kokkos::parallel_for(
      "kamp::attention_decode::values",
      Kokkos::RangePolicy<ExecutionSpace, Kokkos::IndexType<std::int64_t>>(space, 0, heads * d),
      KOKKOS_LAMBDA(std::int64_t i) {
        const std::int64_t h = i / d, col = i % d;
        const T* KAMP_RESTRICT p = probs + h * capacity;
        const T* KAMP_RESTRICT v = values + h * capacity * d + col;
        acc y = 0;
        for (std::int64_t j = 0; j < visible; ++j) y += load_as<acc>(p + j) * load_as<acc>(v + j * d);
        store_nearest(out + i, y);
      });
}

}  // namespace detail

/// \brief Writes the keys and values of `qkv` (one row of 3·C = q | k | v, each C = heads · D,
/// head h at columns h·D) into the caches at `position`. The caches are (heads, capacity, D),
/// the qkv row's type. Label `kamp::kv_cache_append`.
template <class ExecutionSpace, class Q, class T, class... QP, class... KP>
void kv_cache_append(const ExecutionSpace& space, const Kokkos::View<Q*, QP...>& qkv,
                     const Kokkos::View<T***, KP...>& keys, const Kokkos::View<T***, KP...>& values,
                     std::int64_t position) {
  static_assert(std::is_same_v<std::remove_const_t<Q>, T>, "kamp::kv_cache_append: the caches hold qkv's type");
  const std::int64_t heads = keys.extent(0), capacity = keys.extent(1), d = keys.extent(2);
  detail::check_extent("kamp::kv_cache_append", "qkv", qkv.extent(0), 3 * heads * d);
  detail::check_extent("kamp::kv_cache_append", "values", values.extent(0) * values.extent(1) * values.extent(2),
                       heads * capacity * d);
  if (position < 0 || position >= capacity)
    throw std::out_of_range("kamp::kv_cache_append: position " + std::to_string(position) + " is outside the cache's " +
                            std::to_string(capacity) + " positions");
  detail::require_row_major("kamp::kv_cache_append", "qkv", qkv);
  detail::require_row_major("kamp::kv_cache_append", "keys", keys);
  detail::require_row_major("kamp::kv_cache_append", "values", values);
  detail::kv_cache_append_kernel(space, qkv.data(), keys.data(), values.data(), heads, capacity, d, position);
}

/// \brief out(h·D + i) = Σ_{j ≤ position} softmax_j(alpha · q_h · keys(h, j, :)) · values(h, j, i):
/// the attention of the query in `qkv` (as for kv_cache_append, whose keys and values for
/// `position` must already be in the caches) over positions 0..position, every head.
/// `scores` (heads, capacity) fp32 and `probs` (heads, capacity) in the compute type are
/// scratch. Labels `kamp::attention_decode::scores`, `kamp::attention_decode::values`.
template <class ExecutionSpace, class Q, class T, class O, class... QP, class... KP, class... SP, class... PP,
          class... OP>
void attention_decode(const ExecutionSpace& space, const Kokkos::View<Q*, QP...>& qkv,
                      const Kokkos::View<T***, KP...>& keys, const Kokkos::View<T***, KP...>& values,
                      std::int64_t position, float alpha, const Kokkos::View<float**, SP...>& scores,
                      const Kokkos::View<O**, PP...>& probs, const Kokkos::View<O*, OP...>& out) {
  static_assert(
      std::is_same_v<std::remove_const_t<Q>, std::remove_const_t<T>> && std::is_same_v<O, std::remove_const_t<T>>,
      "kamp::attention_decode: q, the caches, the probabilities and the output share the compute type");
  const std::int64_t heads = keys.extent(0), capacity = keys.extent(1), d = keys.extent(2);
  detail::check_extent("kamp::attention_decode", "qkv", qkv.extent(0), 3 * heads * d);
  detail::check_extent("kamp::attention_decode", "scores", scores.extent(0) * scores.extent(1), heads * capacity);
  detail::check_extent("kamp::attention_decode", "probs", probs.extent(0) * probs.extent(1), heads * capacity);
  detail::check_extent("kamp::attention_decode", "out", out.extent(0), heads * d);
  if (position < 0 || position >= capacity)
    throw std::out_of_range("kamp::attention_decode: position " + std::to_string(position) +
                            " is outside the cache's " + std::to_string(capacity) + " positions");
  detail::require_row_major("kamp::attention_decode", "qkv", qkv);
  detail::require_row_major("kamp::attention_decode", "keys", keys);
  detail::require_row_major("kamp::attention_decode", "values", values);
  detail::require_row_major("kamp::attention_decode", "scores", scores);
  detail::require_row_major("kamp::attention_decode", "probs", probs);
  detail::require_row_major("kamp::attention_decode", "out", out);
  detail::attention_decode_kernel(space, qkv.data(), keys.data(), values.data(), heads, capacity, d, position, alpha,
                                  scores.data(), probs.data(), out.data());
}

}  // namespace kamp

#endif
