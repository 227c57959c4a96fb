#ifndef KAMP_KERNELS_GEMM_HPP
#define KAMP_KERNELS_GEMM_HPP

#include <kamp/config.hpp>
#include <kamp/kernels/detail/gemm_dispatch.hpp>
#include <kamp/kernels/detail/gemm_portable.hpp>
#include <kamp/kernels/detail/gemm_widened.hpp>
#include <kamp/kernels/detail/view_access.hpp>
#include <kamp/numeric/dtype.hpp>
#include <kamp/numeric/format.hpp>

#include <Kokkos_Core.hpp>

#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace kamp {
namespace detail {

/// How a matrix operand lies in memory: row-major, `ld` elements between rows, or column-major,
/// `ld` elements between columns. A column-major matrix is its transpose row-major, so every
/// layout maps onto the row-major problem through transposes, as BLAS callers do.
struct matrix_storage {
  bool column_major;
  std::int64_t ld;
};

template <class View>
matrix_storage storage_of(const View& v, const char* api, const char* what) {
  constexpr int r = View::rank;
  using layout = typename View::array_layout;
  static_assert(supported_layout<View>,
                "kamp::gemm: this view's layout is not supported: pass LayoutRight, LayoutLeft or LayoutStride");
  static_assert(!std::is_same_v<layout, Kokkos::LayoutLeft> || r == 2,
                "kamp::gemm_strided_batched: LayoutLeft interleaves batches element by element (the batch index "
                "runs fastest), which no GEMM library takes: pass LayoutRight views, or LayoutStride views whose "
                "rows or columns are contiguous");
  if constexpr (std::is_same_v<layout, Kokkos::LayoutLeft>) {
    return {true, std::int64_t(v.stride(1))};
  } else {
    if (std::is_same_v<layout, Kokkos::LayoutRight> || v.extent(r - 1) <= 1 || v.stride(r - 1) == 1)
      return {false, std::int64_t(v.stride(r - 2))};
    if (v.extent(r - 2) <= 1 || v.stride(r - 2) == 1) return {true, std::int64_t(v.stride(r - 1))};
    throw std::invalid_argument(std::string(api) + ": " + what + " '" + v.label() +
                                "' has neither contiguous rows nor contiguous columns (strides " +
                                std::to_string(v.stride(r - 2)) + ", " + std::to_string(v.stride(r - 1)) +
                                "); GEMM libraries need one of them: copy it into a LayoutRight or LayoutLeft view");
  }
}

template <class AView, class BView, class CView>
using gemm_accum_t = common_accum_t<typename AView::non_const_value_type, typename BView::non_const_value_type,
                                    typename CView::non_const_value_type>;

/// Checks op(A) op(B) against C and describes the problem in raw pointers and strides. Works for
/// rank-2 views (one matrix), rank-3 views (batch, rows, cols) and rank-4 views (batch, inner
/// batch, rows, cols) alike.
/// A column-major C is computed as Cᵀ = op(B)ᵀ op(A)ᵀ, row-major: A and B trade places, which
/// needs them of one type and no bias (a bias runs along Cᵀ's columns); a caller whose epilogue
/// or scales are tied to A and B passes `column_major_c = false` and gets an error instead.
template <class AView, class BView, class CView>
auto make_gemm_problem(const char* api, op op_a, op op_b, float alpha, const AView& A, const BView& B, float beta,
                       const CView& C, const gemm_accum_t<AView, BView, CView>* bias, std::size_t bias_size,
                       bool column_major_c = true) {
  constexpr int r = CView::rank;  // matrix dimensions are r-2 (rows) and r-1 (columns)
  const matrix_storage sa = storage_of(A, api, "A"), sb = storage_of(B, api, "B"), sc = storage_of(C, api, "C");
  const bool ta = op_a == op::transpose, tb = op_b == op::transpose;
  const auto batches = [](const auto& v) {
    std::string s;
    for (int d = 0; d < r - 2; ++d) s += (d ? "x" : "") + std::to_string(v.extent(d));
    return s;
  };
  const auto batches_of = [](const auto& v, int d) { return d < r - 2 ? int(v.extent(d)) : 1; };
  const int inner = r == 4 ? int(C.extent(1)) : 1;
  const int batch = batches_of(C, 0) * inner;
  const int m = int(A.extent(ta ? r - 1 : r - 2)), k = int(A.extent(ta ? r - 2 : r - 1));
  const int kb = int(B.extent(tb ? r - 1 : r - 2)), n = int(B.extent(tb ? r - 2 : r - 1));
  bool batches_agree = true;
  for (int d = 0; d < r - 2; ++d)
    batches_agree = batches_agree && batches_of(A, d) == batches_of(C, d) && batches_of(B, d) == batches_of(C, d);
  if (!batches_agree || k != kb || int(C.extent(r - 2)) != m || int(C.extent(r - 1)) != n)
    throw std::invalid_argument(
        std::string(api) + ": " +
        (r > 2 ? "batches " + batches(A) + "/" + batches(B) + "/" + batches(C) + ", " : std::string()) + "op(A) is " +
        std::to_string(m) + "x" + std::to_string(k) + ", op(B) is " + std::to_string(kb) + "x" + std::to_string(n) +
        ", C is " + std::to_string(C.extent(r - 2)) + "x" + std::to_string(C.extent(r - 1)) + "; need " +
        (r > 2 ? "equal batches and " : "") + "op(A) MxK, op(B) KxN, C MxN");
  if (bias != nullptr && int(bias_size) != n)
    throw std::invalid_argument(std::string(api) + ": bias has " + std::to_string(bias_size) + " elements, C has " +
                                std::to_string(n) + " columns");
  const auto batch_stride = [](const auto& v) { return r > 2 ? std::int64_t(v.stride(0)) : std::int64_t(0); };
  const auto inner_stride = [](const auto& v) { return r == 4 ? std::int64_t(v.stride(1)) : std::int64_t(0); };
  using TA = typename AView::non_const_value_type;
  using TB = typename BView::non_const_value_type;
  using TC = typename CView::non_const_value_type;
  gemm_problem<TA, TB, TC> p{};
  p.m = m;
  p.n = n;
  p.k = k;
  p.batch = batch;
  // op(X) of a column-major X is the other op of its row-major transpose.
  p.trans_a = ta != sa.column_major;
  p.trans_b = tb != sb.column_major;
  p.alpha = alpha;
  p.beta = beta;
  p.a = A.data();
  p.lda = sa.ld;
  p.stride_a = batch_stride(A);
  p.b = B.data();
  p.ldb = sb.ld;
  p.stride_b = batch_stride(B);
  p.c = C.data();
  p.ldc = sc.ld;
  p.stride_c = batch_stride(C);
  p.bias = bias;
  p.inner = inner;
  p.inner_stride_a = inner_stride(A);
  p.inner_stride_b = inner_stride(B);
  p.inner_stride_c = inner_stride(C);
  if (sc.column_major) {
    static_assert(std::is_same_v<TA, TB> || !std::is_same_v<typename CView::array_layout, Kokkos::LayoutLeft>,
                  "kamp::gemm: a LayoutLeft C needs A and B of one type (it is computed as C^T = op(B)^T op(A)^T)");
    if (!column_major_c || bias != nullptr || !std::is_same_v<TA, TB>)
      throw std::invalid_argument(std::string(api) + ": C '" + C.label() +
                                  "' is column-major (LayoutLeft, or strided with contiguous columns), which this call "
                                  "takes only without a bias or epilogue and with A and B of one type: pass C as "
                                  "LayoutRight");
    if constexpr (std::is_same_v<TA, TB>) {
      std::swap(p.m, p.n);
      std::swap(p.a, p.b);
      std::swap(p.lda, p.ldb);
      std::swap(p.stride_a, p.stride_b);
      std::swap(p.inner_stride_a, p.inner_stride_b);
      const bool trans_a = p.trans_a;
      p.trans_a = !p.trans_b;
      p.trans_b = !trans_a;
    }
  }
  return p;
}

}  // namespace detail

/// \brief Which path a GEMM takes and why.
struct gemm_path_info {
  std::string path;    ///< "portable", "kokkosblas", "dnnl", "cublas": the first word of `kamp::gemm[path,...]`
  std::string reason;  ///< what each vendor path said of the problem, in the order they are tried
};

/// \brief The path `gemm` takes on this machine for (A, B, C) element types on this execution
/// space, decided as for a 256 x 256 x 256 problem (contiguous, no bias, alpha 1, beta 0).
/// Vendor paths are asked whether they serve it here (oneDNN's own answer, the device's compute
/// capability), so the answer can differ between machines running one binary.
template <class ExecutionSpace, class TA, class TB, class TC>
gemm_path_info gemm_path_on_this_machine() {
  constexpr int s = 256;
  const auto p = detail::square_problem<TA, TB, TC>(s);
  const detail::gemm_route<ExecutionSpace, TA, TB, TC> route(p, gemm_algorithm::automatic, detail::gemm_vendor_order());
  return {route.path, detail::gemm_explanation<ExecutionSpace>(p, route.path, detail::gemm_vendor_order())};
}

/// \brief The path one particular call of `gemm` takes (its shapes, strides, bias, alpha, beta).
template <class ExecutionSpace, class AView, class BView, class CView>
std::string gemm_path_for(op op_a, op op_b, float alpha, const AView& A, const BView& B, float beta, const CView& C,
                          const Kokkos::View<const detail::gemm_accum_t<AView, BView, CView>*,
                                             typename ExecutionSpace::memory_space>& bias = {}) {
  const auto p =
      detail::make_gemm_problem("kamp::gemm_path_for", op_a, op_b, alpha, A, B, beta, C, bias.data(), bias.extent(0));
  return detail::gemm_route<ExecutionSpace, typename AView::non_const_value_type, typename BView::non_const_value_type,
                            typename CView::non_const_value_type>(p, gemm_algorithm::automatic,
                                                                  detail::gemm_vendor_order())
      .path;
}

/// \brief C = alpha * op(A) * op(B) + beta * C (+ bias on every row).
///
/// \param A (M,K), or (K,M) when op_a is transpose; fp32, bf16 or fp16
/// \param B (K,N), or (N,K) when op_b is transpose; fp32, bf16 or fp16
/// \param C (M,N); fp32, bf16 or fp16. beta == 0 never reads C.
/// \param bias (N) fp32 added after scaling, or an empty view
/// Products accumulate in fp32 whatever the types; C is rounded once (nearest even). fp64
/// operands (all three) run the portable kernel in fp64, for references and gradient checks.
/// Operands may be LayoutRight, LayoutLeft (mapped onto transposes, nothing copied) or
/// LayoutStride sub-views whose rows or columns are contiguous; a LayoutLeft C takes no bias.
template <class ExecutionSpace, class AView, class BView, class CView>
void gemm(const ExecutionSpace& space, op op_a, op op_b, float alpha, const AView& A, const BView& B, float beta,
          const CView& C,
          const Kokkos::View<const detail::gemm_accum_t<AView, BView, CView>*, typename ExecutionSpace::memory_space>&
              bias = {},
          gemm_algorithm algorithm = gemm_algorithm::automatic) {
  static_assert(AView::rank == 2 && BView::rank == 2 && CView::rank == 2,
                "kamp::gemm: A, B and C must be rank-2 views");
  static_assert(!std::is_const_v<typename CView::value_type>, "kamp::gemm: C must be writable");
  const auto p = detail::make_gemm_problem("kamp::gemm", op_a, op_b, alpha, A, B, beta, C, bias.data(), bias.extent(0));
  if (p.m == 0 || p.n == 0) return;
  detail::gemm_dispatch(space, p, algorithm);
}

/// \brief C[b] = alpha * op(A[b]) * op(B[b]) + beta * C[b] for every batch b, on rank-3 views
/// (batch, rows, cols) or rank-4 views (batch, inner batch, rows, cols) whose batch strides may
/// be anything. Rank 4 lets attention read its heads in place: the (B, H) matrices of one head
/// width inside (B, T, k·C) projection rows, strides (T·k·C, D, k·C, 1), with no copy to a
/// head-major layout and none back.
template <class ExecutionSpace, class AView, class BView, class CView>
void gemm_strided_batched(const ExecutionSpace& space, op op_a, op op_b, float alpha, const AView& A, const BView& B,
                          float beta, const CView& C, gemm_algorithm algorithm = gemm_algorithm::automatic) {
  constexpr int rank = CView::rank;
  static_assert(int(AView::rank) == rank && int(BView::rank) == rank && (rank == 3 || rank == 4),
                "kamp::gemm_strided_batched: A, B and C must be rank-3 views (batch, rows, cols) or rank-4 views "
                "(batch, inner batch, rows, cols)");
  const auto p = detail::make_gemm_problem("kamp::gemm_strided_batched", op_a, op_b, alpha, A, B, beta, C, nullptr, 0);
  if (p.m == 0 || p.n == 0 || p.batch == 0) return;
  detail::gemm_dispatch(space, p, algorithm);
}

}  // namespace kamp

#endif
