#ifndef KAMP_KERNELS_TPLS_GEMM_TPL_AVAIL_HPP
#define KAMP_KERNELS_TPLS_GEMM_TPL_AVAIL_HPP

#include <string>

namespace kamp::detail {

/// Tags of the vendor GEMM paths. gemm tries them in `gemm_vendor_order` and runs the first
/// that accepts the problem, else the portable kernel.
struct cublas_path {};
struct dnnl_path {};
struct kokkosblas_path {};
struct widened_path {};  ///< not a vendor: 16-bit operands widened to fp32 for an fp32 vendor path
template <class... Paths>
struct gemm_path_list {};
using gemm_vendor_order = gemm_path_list<cublas_path, dnnl_path, kokkosblas_path, widened_path>;

/// Whether vendor `Path` computes C = alpha op(A) op(B) + beta C for these element types on
/// this execution space. False in general; each tpls/gemm_<vendor>.hpp specializes it when that
/// vendor was enabled at configure time, with
///   - `name`: the path's word in the region `kamp::gemm[name,...]`,
///   - `accepts(problem)`: whether the library serves this problem on this machine, by its own
///     answer where it has one (cached per shape: called on every GEMM, it must be cheap),
///   - `explain(problem)`: why it does or does not (for the startup report; may be slow),
///   - `run(space, problem)`: never throws for a problem it accepted, short of a device error,
///   - optionally `implementation(problem)`: the library's own name for the kernel it runs (the
///     profile's per-call table; the path's name where absent).
template <class Path, class ExecutionSpace, class TA, class TB, class TC>
struct gemm_tpl {
  static constexpr bool available = false;
};

}  // namespace kamp::detail

#endif
