#ifndef KAMP_KERNELS_GEMM_HPP
#define KAMP_KERNELS_GEMM_HPP

#include <kamp/config.hpp>
#include <kamp/kernels/detail/chunked_range.hpp>
#include <kamp/kernels/impl/gemm_portable.hpp>
#include <kamp/kernels/tpls/gemm_cublas.hpp>
#include <kamp/kernels/tpls/gemm_dnnl.hpp>
#include <kamp/kernels/tpls/gemm_kokkosblas.hpp>
#include <kamp/kernels/tpls/gemm_tpl_avail.hpp>
#include <kamp/numeric/format.hpp>

#include <Kokkos_Core.hpp>

#include <stdexcept>
#include <string>
#include <type_traits>

namespace kamp {

/// op(X) of a GEMM operand.
enum class op { none, transpose };

/// Which implementation runs: the vendor library when one exists for the types (and accepts
/// the shapes), else the portable kernel; or the portable kernel always.
enum class gemm_algorithm { automatic, portable };

namespace detail {

template <class T>
const char* dtype_name() {
  if constexpr (std::is_same_v<T, float>) {
    return "fp32";
  } else {
    return format_traits<T>::name;
  }
}

template <class View>
void check_gemm_operand(const View& v, const char* what) {
  static_assert(std::is_same_v<typename View::array_layout, Kokkos::LayoutRight> ||
                    std::is_same_v<typename View::array_layout, Kokkos::LayoutStride>,
                "kamp::gemm: operands are row-major (LayoutRight, or LayoutStride sub-views of it)");
  if (v.extent(0) > 0 && v.extent(v.rank - 1) > 1 && v.stride(v.rank - 1) != 1)
    throw std::invalid_argument(std::string("kamp::gemm: ") + what + " '" + v.label() +
                                "' must have contiguous rows (unit stride along its last dimension)");
}

template <class ExecutionSpace, class TA, class TB, class TC>
void gemm_dispatch(const ExecutionSpace& space, const gemm_problem<TA, TB, TC>& p, gemm_algorithm algorithm) {
  using tpl = gemm_tpl<ExecutionSpace, TA, TB, TC>;
  std::string path = "portable";
  if constexpr (tpl::available) {
    if (algorithm == gemm_algorithm::automatic && tpl::accepts(p)) path = tpl::name;
  }
  const std::string region =
      "kamp::gemm[" + path + "," + dtype_name<TA>() + "," + dtype_name<TB>() + "," + dtype_name<TC>() + "]";
  Kokkos::Profiling::pushRegion(region);
  if constexpr (tpl::available) {
    if (path != "portable") {
      tpl::run(space, p);
      Kokkos::Profiling::popRegion();
      return;
    }
  }
  gemm_portable(space, p);
  Kokkos::Profiling::popRegion();
}

}  // namespace detail

/// \brief The implementation `gemm` picks for these types, shapes aside ("portable", "kokkosblas",
/// "dnnl", "cublas"); also the first word of its Kokkos Tools region `kamp::gemm[path,...]`.
template <class ExecutionSpace, class TA, class TB, class TC>
const char* gemm_path() {
  using tpl = detail::gemm_tpl<ExecutionSpace, TA, TB, TC>;
  if constexpr (tpl::available) {
    return tpl::name;
  } else {
    return "portable";
  }
}

/// \brief C = alpha * op(A) * op(B) + beta * C (+ bias on every row), row-major.
///
/// \param A (M,K), or (K,M) when op_a is transpose; fp32, bf16 or fp16
/// \param B (K,N), or (N,K) when op_b is transpose; fp32, bf16 or fp16
/// \param C (M,N); fp32, bf16 or fp16. beta == 0 never reads C.
/// \param bias (N) fp32 added after scaling, or an empty view
/// Products accumulate in fp32 whatever the types; C is rounded once (nearest even).
/// Operands may be sub-views with a leading dimension (LayoutStride, unit column stride).
template <class ExecutionSpace, class AView, class BView, class CView>
void gemm(const ExecutionSpace& space, op op_a, op op_b, float alpha, const AView& A, const BView& B, float beta,
          const CView& C, const Kokkos::View<const float*, typename ExecutionSpace::memory_space>& bias = {},
          gemm_algorithm algorithm = gemm_algorithm::automatic) {
  static_assert(AView::rank == 2 && BView::rank == 2 && CView::rank == 2,
                "kamp::gemm: A, B and C must be rank-2 views");
  static_assert(!std::is_const_v<typename CView::value_type>, "kamp::gemm: C must be writable");
  detail::check_gemm_operand(A, "A");
  detail::check_gemm_operand(B, "B");
  detail::check_gemm_operand(C, "C");
  const bool ta = op_a == op::transpose, tb = op_b == op::transpose;
  const int m = int(ta ? A.extent(1) : A.extent(0)), k = int(ta ? A.extent(0) : A.extent(1));
  const int kb = int(tb ? B.extent(1) : B.extent(0)), n = int(tb ? B.extent(0) : B.extent(1));
  if (k != kb || int(C.extent(0)) != m || int(C.extent(1)) != n)
    throw std::invalid_argument("kamp::gemm: op(A) is " + std::to_string(m) + "x" + std::to_string(k) + ", op(B) is " +
                                std::to_string(kb) + "x" + std::to_string(n) + ", C is " + std::to_string(C.extent(0)) +
                                "x" + std::to_string(C.extent(1)) + "; need op(A) MxK, op(B) KxN, C MxN");
  if (bias.data() != nullptr && int(bias.extent(0)) != n)
    throw std::invalid_argument("kamp::gemm: bias has " + std::to_string(bias.extent(0)) + " elements, C has " +
                                std::to_string(n) + " columns");
  using TA = typename AView::non_const_value_type;
  using TB = typename BView::non_const_value_type;
  using TC = typename CView::non_const_value_type;
  const detail::gemm_problem<TA, TB, TC> p{m,
                                           n,
                                           k,
                                           1,
                                           ta,
                                           tb,
                                           alpha,
                                           beta,
                                           A.data(),
                                           std::int64_t(A.stride(0)),
                                           0,
                                           B.data(),
                                           std::int64_t(B.stride(0)),
                                           0,
                                           C.data(),
                                           std::int64_t(C.stride(0)),
                                           0,
                                           bias.data()};
  if (m == 0 || n == 0) return;
  detail::gemm_dispatch(space, p, algorithm);
}

/// \brief C[b] = alpha * op(A[b]) * op(B[b]) + beta * C[b] for every b, on rank-3 views
/// (batch, rows, cols) whose batch stride may be anything (sub-views of attention heads).
template <class ExecutionSpace, class AView, class BView, class CView>
void gemm_strided_batched(const ExecutionSpace& space, op op_a, op op_b, float alpha, const AView& A, const BView& B,
                          float beta, const CView& C, gemm_algorithm algorithm = gemm_algorithm::automatic) {
  static_assert(AView::rank == 3 && BView::rank == 3 && CView::rank == 3,
                "kamp::gemm_strided_batched: A, B and C must be rank-3 views (batch, rows, cols)");
  detail::check_gemm_operand(A, "A");
  detail::check_gemm_operand(B, "B");
  detail::check_gemm_operand(C, "C");
  const bool ta = op_a == op::transpose, tb = op_b == op::transpose;
  const int batch = int(C.extent(0));
  const int m = int(ta ? A.extent(2) : A.extent(1)), k = int(ta ? A.extent(1) : A.extent(2));
  const int kb = int(tb ? B.extent(2) : B.extent(1)), n = int(tb ? B.extent(1) : B.extent(2));
  if (int(A.extent(0)) != batch || int(B.extent(0)) != batch || k != kb || int(C.extent(1)) != m ||
      int(C.extent(2)) != n)
    throw std::invalid_argument("kamp::gemm_strided_batched: batches " + std::to_string(A.extent(0)) + "/" +
                                std::to_string(B.extent(0)) + "/" + std::to_string(batch) + ", op(A) " +
                                std::to_string(m) + "x" + std::to_string(k) + ", op(B) " + std::to_string(kb) + "x" +
                                std::to_string(n) + ", C " + std::to_string(C.extent(1)) + "x" +
                                std::to_string(C.extent(2)) + "; need equal batches and op(A) MxK, op(B) KxN, C MxN");
  using TA = typename AView::non_const_value_type;
  using TB = typename BView::non_const_value_type;
  using TC = typename CView::non_const_value_type;
  const detail::gemm_problem<TA, TB, TC> p{m,
                                           n,
                                           k,
                                           batch,
                                           ta,
                                           tb,
                                           alpha,
                                           beta,
                                           A.data(),
                                           std::int64_t(A.stride(1)),
                                           std::int64_t(A.stride(0)),
                                           B.data(),
                                           std::int64_t(B.stride(1)),
                                           std::int64_t(B.stride(0)),
                                           C.data(),
                                           std::int64_t(C.stride(1)),
                                           std::int64_t(C.stride(0)),
                                           nullptr};
  if (m == 0 || n == 0 || batch == 0) return;
  detail::gemm_dispatch(space, p, algorithm);
}

}  // namespace kamp

#endif
