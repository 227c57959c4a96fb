#ifndef KAMP_KERNELS_NN_ROWS_HPP
#define KAMP_KERNELS_NN_ROWS_HPP

// The row-wise nn kernels (LayerNorm, softmax, cross-entropy, embedding) are written once over
// rows of an (N, C) activation, and this trait decides per execution space how a row is spread
// over threads: a CPU thread takes a whole row, whose loops vectorize; a GPU gives each row a
// group of `lanes` threads (a warp, a wavefront) that read the row coalesced and reduce it
// together, `rows` rows per team.
#include <kamp/kernels/detail/chunked_range.hpp>
#include <kamp/kernels/detail/kokkos_compat.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace kamp::detail {

template <class ExecutionSpace>
struct row_team {
  static constexpr int rows = 1, lanes = 1;
};
#ifdef KOKKOS_ENABLE_CUDA
template <>
struct row_team<Kokkos::Cuda> {
  static constexpr int rows = 4, lanes = 32;
};
#endif
#ifdef KOKKOS_ENABLE_HIP
template <>
struct row_team<hip_space> {
  static constexpr int rows = 4, lanes = 64;
};
#endif

/// Calls f(member, row) for each of n rows, with row_team's shape; f's loops over the row go
/// through row_for, row_sum and row_max.
template <class ExecutionSpace, class F>
void for_each_row(const char* label, const ExecutionSpace& space, std::int64_t n, const F& f) {
  using shape = row_team<ExecutionSpace>;
  using member = typename Kokkos::TeamPolicy<ExecutionSpace>::member_type;
  const std::int64_t teams = (n + shape::rows - 1) / shape::rows;
  Kokkos::parallel_for(
      label, Kokkos::TeamPolicy<ExecutionSpace>(space, teams, shape::rows, shape::lanes),
      KOKKOS_LAMBDA(const member& m) {
        Kokkos::parallel_for(Kokkos::TeamThreadRange(m, shape::rows), [&](int k) {
          const std::int64_t row = std::int64_t(m.league_rank()) * shape::rows + k;
          if (row < n) f(m, row);
        });
      });
}

/// body(i) for i in [0, c): vectorized on a CPU, spread over the row's lanes on a GPU.
template <class Member, class Body>
KOKKOS_INLINE_FUNCTION void row_for(const Member& m, std::int64_t c, const Body& body) {
  if constexpr (row_team<typename Member::execution_space>::lanes == 1) {
    KAMP_SIMD()
    for (std::int64_t i = 0; i < c; ++i) body(i);
  } else {
    Kokkos::parallel_for(Kokkos::ThreadVectorRange(m, c), [&](std::int64_t i) { body(i); });
  }
}

/// Σ term(i) for i in [0, c), in Acc; every lane of the row gets the sum.
template <class Acc, class Member, class Term>
KOKKOS_INLINE_FUNCTION Acc row_sum(const Member& m, std::int64_t c, const Term& term) {
  Acc s = 0;
  if constexpr (row_team<typename Member::execution_space>::lanes == 1) {
    KAMP_SIMD(reduction(+ : s))
    for (std::int64_t i = 0; i < c; ++i) s += term(i);
  } else {
    Kokkos::parallel_reduce(
        Kokkos::ThreadVectorRange(m, c), [&](std::int64_t i, Acc& x) { x += term(i); }, s);
  }
  return s;
}

/// max of value(i) for i in [0, c), c >= 1; every lane of the row gets it.
template <class Acc, class Member, class Value>
KOKKOS_INLINE_FUNCTION Acc row_max(const Member& m, std::int64_t c, const Value& value) {
  Acc best = value(0);
  if constexpr (row_team<typename Member::execution_space>::lanes == 1) {
    for (std::int64_t i = 1; i < c; ++i) {
      const Acc v = value(i);
      best = v > best ? v : best;
    }
  } else {
    Kokkos::parallel_reduce(
        Kokkos::ThreadVectorRange(m, c),
        [&](std::int64_t i, Acc& x) {
          const Acc v = value(i);
          x = v > x ? v : x;
        },
        Kokkos::Max<Acc>(best));
  }
  return best;
}

/// Runs body() once per row (one lane), for the row's scalar outputs.
template <class Member, class Body>
KOKKOS_INLINE_FUNCTION void row_once(const Member& m, const Body& body) {
  Kokkos::single(Kokkos::PerThread(m), body);
}

}  // namespace kamp::detail

#endif
