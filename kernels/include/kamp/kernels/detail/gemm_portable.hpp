#ifndef KAMP_KERNELS_DETAIL_GEMM_PORTABLE_HPP
#define KAMP_KERNELS_DETAIL_GEMM_PORTABLE_HPP

#include <kamp/kernels/detail/chunked_range.hpp>
#include <kamp/kernels/detail/kokkos_compat.hpp>
#include <kamp/numeric/accum_type.hpp>
#include <kamp/numeric/element_access.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>

namespace kamp::detail {

/// One (strided-batched) GEMM on raw row-major pointers: for each batch b,
/// C_b = alpha * op(A_b) * op(B_b) + beta * C_b (+ bias broadcast over rows).
/// op(A) is M x K, op(B) is K x N; ld* are row strides, stride_* batch strides (elements).
/// Batches may have two dimensions, (batch / inner) x inner, as attention heads read in place
/// from a (B, T, 3, H, D) projection: batch b's operand X starts at
/// (b / inner)·stride_x + (b % inner)·inner_stride_x.
template <class TA, class TB, class TC>
struct gemm_problem {
  /// fp32, or fp64 when an operand is fp64 (reference builds): products, sums, alpha, beta, bias
  using accum = common_accum_t<TA, TB, TC>;
  int m, n, k, batch;
  bool trans_a, trans_b;
  float alpha, beta;
  const TA* a;
  std::int64_t lda, stride_a;
  const TB* b;
  std::int64_t ldb, stride_b;
  TC* c;
  std::int64_t ldc, stride_c;
  const accum* bias;  ///< (N) or nullptr
  int inner = 1;      ///< batches of the inner batch dimension; 1 for one batch dimension
  std::int64_t inner_stride_a = 0, inner_stride_b = 0, inner_stride_c = 0;

  KOKKOS_INLINE_FUNCTION std::int64_t offset(int batch_index, std::int64_t stride, std::int64_t inner_stride) const {
    return std::int64_t(batch_index / inner) * stride + std::int64_t(batch_index % inner) * inner_stride;
  }
  KOKKOS_INLINE_FUNCTION const TA* a_of(int i) const { return a + offset(i, stride_a, inner_stride_a); }
  KOKKOS_INLINE_FUNCTION const TB* b_of(int i) const { return b + offset(i, stride_b, inner_stride_b); }
  KOKKOS_INLINE_FUNCTION TC* c_of(int i) const { return c + offset(i, stride_c, inner_stride_c); }
  /// Whether one batch stride per operand reaches every batch (cublasGemmStridedBatchedEx's
  /// form): the inner stride, where the outer one is `inner` inner strides.
  bool one_batch_stride() const {
    return inner == 1 || (inner_stride_a * inner == stride_a && inner_stride_b * inner == stride_b &&
                          inner_stride_c * inner == stride_c);
  }
};

/// One m x n x k problem, no transposes, alpha 1, beta 0: the operands named field by field
/// where it is used.
template <class TA, class TB, class TC>
gemm_problem<TA, TB, TC> shaped_problem(int m, int n, int k) {
  gemm_problem<TA, TB, TC> p{};
  p.m = m;
  p.n = n;
  p.k = k;
  p.batch = 1;
  p.alpha = 1.0f;
  return p;
}
/// An s x s x s problem with no operands: what a path is asked about (gemm_path_on_this_machine).
template <class TA, class TB, class TC>
gemm_problem<TA, TB, TC> square_problem(int s) {
  auto p = shaped_problem<TA, TB, TC>(s, s, s);
  p.lda = p.ldb = p.ldc = s;
  return p;
}

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
struct gemm_tiles<hip_space> {
  static constexpr int tile_m = 64, tile_n = 64, tile_k = 16;
  static constexpr int reg_m = 4, reg_n = 4;
  static constexpr int team_size = 256;
};
#endif

/// Copies a rows x cols block whose source rows are contiguous (src + r*ld + c) into Acc
/// scratch, at dst[r*cols + c] or, when Transposed, dst[c*rows + r]; zeros outside
/// (valid_rows, valid_cols), so edge tiles need no special case later. One thread walks rows
/// with a contiguous inner loop (vectorizable); a GPU team strides over elements (coalesced).
template <bool Transposed, int TeamSize, class Member, class Acc, class T>
KOKKOS_INLINE_FUNCTION void load_tile(const Member& team, Acc* dst, const T* src, std::int64_t ld, int rows, int cols,
                                      int valid_rows, int valid_cols) {
  const auto at = [&](int r, int c) -> Acc& { return Transposed ? dst[c * rows + r] : dst[r * cols + c]; };
  if constexpr (TeamSize == 1) {
    for (int r = 0; r < rows; ++r) {
      const T* KAMP_RESTRICT row = src + r * ld;
      const int n = r < valid_rows ? valid_cols : 0;
      for (int c = 0; c < n; ++c) at(r, c) = load_as<Acc>(row + c);
      for (int c = n; c < cols; ++c) at(r, c) = Acc(0);
    }
  } else {
    for (int i = team.team_rank(); i < rows * cols; i += team.team_size()) {
      const int r = i / cols, c = i % cols;
      at(r, c) = (r < valid_rows && c < valid_cols) ? load_as<Acc>(src + r * ld + c) : Acc(0);
    }
  }
}

/// A GEMM with nothing after its one rounding of C: as the portable kernel's store, C's element
/// (row, col) rounded once from its fp32 (fp64) value; after a vendor GEMM, nothing.
struct no_epilogue {
  template <class TC, class Acc>
  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t, std::int64_t, TC* out, Acc v) const {
    store_nearest(out, v);
  }
  template <class ExecutionSpace, class Problem>
  void after(const ExecutionSpace&, const Problem&) const {}
};

/// The portable tiled kernel: one team per (batch, tile of C). Per K-tile the team loads op(A)
/// and op(B) tiles into scratch, converted to fp32 (fp64 for fp64 data) as they are loaded, and
/// accumulates in a C tile in scratch through register blocks; the store applies alpha, beta, the bias and
/// one rounding to C's type. beta == 0 never reads C, so NaN in C cannot leak. `store` writes
/// each element: plain, or with an epilogue that also writes a function of it elsewhere.
template <class ExecutionSpace, class TA, class TB, class TC, class Store>
void gemm_portable_storing(const ExecutionSpace& space, const gemm_problem<TA, TB, TC>& p, const Store& store) {
  using tiles = gemm_tiles<ExecutionSpace>;
  constexpr int TM = tiles::tile_m, TN = tiles::tile_n, TK = tiles::tile_k, RM = tiles::reg_m, RN = tiles::reg_n;
  static_assert(TM % RM == 0 && TN % RN == 0, "kamp::gemm: register blocks must tile the scratch tile");
  using member = typename Kokkos::TeamPolicy<ExecutionSpace>::member_type;
  using acc_t = typename gemm_problem<TA, TB, TC>::accum;
  using scratch = Kokkos::View<acc_t*, typename ExecutionSpace::scratch_memory_space, Kokkos::MemoryUnmanaged>;

  const int tiles_m = (p.m + TM - 1) / TM, tiles_n = (p.n + TN - 1) / TN;
  const int league = tiles_m * tiles_n * p.batch;
  if (league == 0) return;
  const std::size_t scratch_bytes =
      scratch::shmem_size(TM * TK) + scratch::shmem_size(TK * TN) + scratch::shmem_size(TM * TN);
  // fp32 CPU tiles (48 KiB) exceed Kokkos' 32 KiB level-0 limit on host spaces and take level 1
  // there, which on CPUs is the same per-thread memory.
  const int level = team_scratch_level<ExecutionSpace>(scratch_bytes, "kamp::gemm::portable");

  const auto kernel = KOKKOS_LAMBDA(const member& team) {
    const int tile = team.league_rank();
    const int batch = tile / (tiles_m * tiles_n);
    const int row0 = (tile / tiles_n) % tiles_m * TM, col0 = tile % tiles_n * TN;
    const TA* a = p.a_of(batch);
    const TB* b = p.b_of(batch);
    TC* c = p.c_of(batch);
    scratch as(team.team_scratch(level), TM * TK), bs(team.team_scratch(level), TK * TN),
        cs(team.team_scratch(level), TM * TN);
    const int rank = team.team_rank(), size = team.team_size();

    for (int i = rank; i < TM * TN; i += size) cs(i) = acc_t(0);
    for (int k0 = 0; k0 < p.k; k0 += TK) {
      team.team_barrier();
      const int kv = p.k - k0 < TK ? p.k - k0 : TK, mv = p.m - row0 < TM ? p.m - row0 : TM,
                nv = p.n - col0 < TN ? p.n - col0 : TN;
      // A scratch: (row, k) at row*TK + k, or k*TM + row when A is transposed (its rows are
      // then the k index), so the copy always reads contiguous memory.
      if (p.trans_a)
        load_tile<false, tiles::team_size>(team, as.data(), a + k0 * p.lda + row0, p.lda, TK, TM, kv, mv);
      else
        load_tile<false, tiles::team_size>(team, as.data(), a + row0 * p.lda + k0, p.lda, TM, TK, mv, kv);
      // B scratch: (k, col) at k*TN + col, contiguous along the register block's columns.
      if (p.trans_b)
        load_tile<true, tiles::team_size>(team, bs.data(), b + col0 * p.ldb + k0, p.ldb, TN, TK, nv, kv);
      else
        load_tile<false, tiles::team_size>(team, bs.data(), b + k0 * p.ldb + col0, p.ldb, TK, TN, kv, nv);
      team.team_barrier();
      for (int blk = rank; blk < (TM / RM) * (TN / RN); blk += size) {
        const int r0 = blk / (TN / RN) * RM, c0 = blk % (TN / RN) * RN;
        acc_t acc[RM][RN];
        KAMP_UNROLL
        for (int r = 0; r < RM; ++r)
          for (int cc = 0; cc < RN; ++cc) acc[r][cc] = cs((r0 + r) * TN + c0 + cc);
        const int a_row_stride = p.trans_a ? 1 : TK, a_k_stride = p.trans_a ? TM : 1;
        const acc_t* KAMP_RESTRICT a_tile = as.data() + r0 * a_row_stride;
        const acc_t* KAMP_RESTRICT b_tile = bs.data() + c0;
        for (int kk = 0; kk < TK; ++kk) {
          // The vector dimension is the register block's columns (one SIMD register's worth
          // on CPUs); rows are unrolled, so acc stays in registers across the K loop.
          KAMP_UNROLL
          for (int r = 0; r < RM; ++r) {
            const acc_t av = a_tile[r * a_row_stride + kk * a_k_stride];
            KAMP_SIMD()
            for (int cc = 0; cc < RN; ++cc) acc[r][cc] += av * b_tile[kk * TN + cc];
          }
        }
        KAMP_UNROLL
        for (int r = 0; r < RM; ++r)
          for (int cc = 0; cc < RN; ++cc) cs((r0 + r) * TN + c0 + cc) = acc[r][cc];
      }
    }
    team.team_barrier();
    for (int i = rank; i < TM * TN; i += size) {
      const int row = row0 + i / TN, col = col0 + i % TN;
      if (row >= p.m || col >= p.n) continue;
      TC* out = c + row * p.ldc + col;
      acc_t v = p.alpha * cs(i);
      if (p.beta != 0.0f) v += p.beta * load_as<acc_t>(out);
      if (p.bias != nullptr) v += p.bias[col];
      store(row, col, out, v);
    }
  };
  Kokkos::parallel_for("kamp::gemm::portable",
                       bounded_team_policy(space, league, tiles::team_size, level, scratch_bytes, kernel), kernel);
}

template <class ExecutionSpace, class TA, class TB, class TC>
void gemm_portable(const ExecutionSpace& space, const gemm_problem<TA, TB, TC>& p) {
  gemm_portable_storing(space, p, no_epilogue{});
}

}  // namespace kamp::detail

#endif
