#ifndef KAMP_KERNELS_IMPL_GEMM_PORTABLE_HPP
#define KAMP_KERNELS_IMPL_GEMM_PORTABLE_HPP

#include <kamp/numeric/element_access.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>

namespace kamp::detail {

/// One (strided-batched) GEMM on raw row-major pointers: for each batch b,
/// C_b = alpha * op(A_b) * op(B_b) + beta * C_b (+ bias broadcast over rows).
/// op(A) is M x K, op(B) is K x N; ld* are row strides, stride_* batch strides (elements).
template <class TA, class TB, class TC>
struct gemm_problem {
  int m, n, k, batch;
  bool trans_a, trans_b;
  float alpha, beta;
  const TA* a;
  std::int64_t lda, stride_a;
  const TB* b;
  std::int64_t ldb, stride_b;
  TC* c;
  std::int64_t ldc, stride_c;
  const float* bias;  ///< (N) or nullptr
};

/// Tile sizes of the portable kernel per execution space. CPU threads work alone on a tile
/// (team size 1) with a register block that vectorizes over columns; GPU teams share tiles in
/// scratch and give each thread a small register block.
template <class ExecutionSpace>
struct gemm_tiles {
  static constexpr int tile_m = 64, tile_n = 64, tile_k = 64;
  static constexpr int reg_m = 4, reg_n = 16;
  static constexpr int team_size = 1;
};
#ifdef KOKKOS_ENABLE_CUDA
template <>
struct gemm_tiles<Kokkos::Cuda> {
  static constexpr int tile_m = 64, tile_n = 64, tile_k = 16;
  static constexpr int reg_m = 4, reg_n = 4;
  static constexpr int team_size = 256;
};
#endif
#ifdef KOKKOS_ENABLE_HIP
template <>
struct gemm_tiles<Kokkos::Experimental::HIP> {
  static constexpr int tile_m = 64, tile_n = 64, tile_k = 16;
  static constexpr int reg_m = 4, reg_n = 4;
  static constexpr int team_size = 256;
};
#endif

/// The portable tiled kernel: one team per (batch, tile of C). Per K-tile the team loads op(A)
/// and op(B) tiles into scratch, converted to fp32 as they are loaded, and accumulates in an
/// fp32 C tile in scratch through register blocks; the store applies alpha, beta, the bias and
/// one rounding to C's type. beta == 0 never reads C, so NaN in C cannot leak.
template <class ExecutionSpace, class TA, class TB, class TC>
void gemm_portable(const ExecutionSpace& space, const gemm_problem<TA, TB, TC>& p) {
  using tiles = gemm_tiles<ExecutionSpace>;
  constexpr int TM = tiles::tile_m, TN = tiles::tile_n, TK = tiles::tile_k, RM = tiles::reg_m, RN = tiles::reg_n;
  static_assert(TM % RM == 0 && TN % RN == 0, "kamp::gemm: register blocks must tile the scratch tile");
  using policy = Kokkos::TeamPolicy<ExecutionSpace>;
  using member = typename policy::member_type;
  using scratch = Kokkos::View<float*, typename ExecutionSpace::scratch_memory_space, Kokkos::MemoryUnmanaged>;

  const int tiles_m = (p.m + TM - 1) / TM, tiles_n = (p.n + TN - 1) / TN;
  const int league = tiles_m * tiles_n * p.batch;
  if (league == 0) return;
  const std::size_t scratch_bytes = scratch::shmem_size(TM * TK) + scratch::shmem_size(TK * TN) + scratch::shmem_size(TM * TN);
  const policy pol = policy(space, league, tiles::team_size).set_scratch_size(0, Kokkos::PerTeam(scratch_bytes));

  Kokkos::parallel_for(
      "kamp::gemm::portable", pol, KOKKOS_LAMBDA(const member& team) {
        const int tile = team.league_rank();
        const int batch = tile / (tiles_m * tiles_n);
        const int row0 = (tile / tiles_n) % tiles_m * TM, col0 = tile % tiles_n * TN;
        const TA* a = p.a + batch * p.stride_a;
        const TB* b = p.b + batch * p.stride_b;
        TC* c = p.c + batch * p.stride_c;
        scratch as(team.team_scratch(0), TM * TK), bs(team.team_scratch(0), TK * TN), cs(team.team_scratch(0), TM * TN);
        const int rank = team.team_rank(), size = team.team_size();

        for (int i = rank; i < TM * TN; i += size) cs(i) = 0.0f;
        for (int k0 = 0; k0 < p.k; k0 += TK) {
          team.team_barrier();
          for (int i = rank; i < TM * TK; i += size) {
            const int r = i / TK, kk = i % TK, row = row0 + r, col = k0 + kk;
            const bool inside = row < p.m && col < p.k;
            as(i) = inside ? load_float(p.trans_a ? a + col * p.lda + row : a + row * p.lda + col) : 0.0f;
          }
          for (int i = rank; i < TK * TN; i += size) {
            const int kk = i / TN, cc = i % TN, row = k0 + kk, col = col0 + cc;
            const bool inside = row < p.k && col < p.n;
            bs(i) = inside ? load_float(p.trans_b ? b + col * p.ldb + row : b + row * p.ldb + col) : 0.0f;
          }
          team.team_barrier();
          for (int blk = rank; blk < (TM / RM) * (TN / RN); blk += size) {
            const int r0 = blk / (TN / RN) * RM, c0 = blk % (TN / RN) * RN;
            float acc[RM][RN];
            for (int r = 0; r < RM; ++r)
              for (int cc = 0; cc < RN; ++cc) acc[r][cc] = cs((r0 + r) * TN + c0 + cc);
            for (int kk = 0; kk < TK; ++kk) {
              float bv[RN];
              for (int cc = 0; cc < RN; ++cc) bv[cc] = bs(kk * TN + c0 + cc);
              for (int r = 0; r < RM; ++r) {
                const float av = as((r0 + r) * TK + kk);
                for (int cc = 0; cc < RN; ++cc) acc[r][cc] += av * bv[cc];
              }
            }
            for (int r = 0; r < RM; ++r)
              for (int cc = 0; cc < RN; ++cc) cs((r0 + r) * TN + c0 + cc) = acc[r][cc];
          }
        }
        team.team_barrier();
        for (int i = rank; i < TM * TN; i += size) {
          const int row = row0 + i / TN, col = col0 + i % TN;
          if (row >= p.m || col >= p.n) continue;
          TC* out = c + row * p.ldc + col;
          float v = p.alpha * cs(i);
          if (p.beta != 0.0f) v += p.beta * load_float(out);
          if (p.bias != nullptr) v += p.bias[col];
          store_nearest(out, v);
        }
      });
}

}  // namespace kamp::detail

#endif
