#ifndef KAMP_KERNELS_DETAIL_GEMM_DISPATCH_HPP
#define KAMP_KERNELS_DETAIL_GEMM_DISPATCH_HPP

// How gemm picks its path: each vendor path in gemm_vendor_order is asked in turn whether it
// serves the problem on this machine; the first that does runs it, else the portable kernel.
#include <kamp/config.hpp>
#include <kamp/kernels/detail/gemm_portable.hpp>
#include <kamp/kernels/tpls/gemm_cublas.hpp>
#include <kamp/kernels/tpls/gemm_dnnl.hpp>
#include <kamp/kernels/tpls/gemm_kokkosblas.hpp>
#include <kamp/kernels/tpls/gemm_tpl_avail.hpp>
#include <kamp/numeric/dtype.hpp>
#include <kamp/numeric/element_access.hpp>
#include <kamp/tools/traffic.hpp>

#include <Kokkos_Core.hpp>

#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace kamp {

/// op(X) of a GEMM operand.
enum class op { none, transpose };

/// Which implementation runs: the vendor library when one exists for the types (and accepts
/// the shapes), else the portable kernel; or the portable kernel always.
enum class gemm_algorithm { automatic, portable };

namespace detail {

template <class T>
const char* dtype_name() {
  return name(dtype_of<T>());
}

/// "kamp::gemm[path,A,B,C]" (or `api`'s name in place of kamp::gemm).
template <class TA, class TB, class TC>
std::string gemm_region_name(const char* path, const char* api = "kamp::gemm") {
  return std::string(api) + "[" + path + "," + dtype_name<TA>() + "," + dtype_name<TB>() + "," + dtype_name<TC>() + "]";
}

/// The problem a vendor without a bias epilogue runs after bias_prologue: C already holds
/// beta·C + bias, so the vendor adds alpha·op(A)op(B) to it.
template <class TA, class TB, class TC>
gemm_problem<TA, TB, TC> without_bias(gemm_problem<TA, TB, TC> p) {
  p.beta = 1.0f;
  p.bias = nullptr;
  return p;
}

/// C = beta·C + bias on every row (C is not read for beta = 0), rounded to C's type: the bias
/// part of a GEMM whose vendor adds none (cublasGemmEx, KokkosBlas). For an fp32 C and beta = 0
/// the result is the fused epilogue's, fl(alpha·AB + bias); otherwise beta·C + bias is rounded
/// once more first, as PyTorch's addmm does with a bias in the output.
template <class ExecutionSpace, class TA, class TB, class TC>
void bias_prologue(const ExecutionSpace& space, const gemm_problem<TA, TB, TC>& p) {
  using acc = typename gemm_problem<TA, TB, TC>::accum;
  TC* c = p.c;
  const acc* bias = p.bias;
  const std::int64_t ldc = p.ldc, n = p.n;
  const acc beta = p.beta;
  Kokkos::parallel_for(
      "kamp::gemm::bias_prologue", Kokkos::RangePolicy<ExecutionSpace, Kokkos::IndexType<std::int64_t>>(space, 0, p.m),
      KOKKOS_LAMBDA(std::int64_t i) {
        TC* KAMP_RESTRICT row = c + i * ldc;
        if (beta == acc(0)) {
          for (std::int64_t j = 0; j < n; ++j) store_nearest(row + j, bias[j]);
        } else {
          for (std::int64_t j = 0; j < n; ++j) store_nearest(row + j, beta * load_as<acc>(row + j) + bias[j]);
        }
      });
}

template <class Tpl, class ExecutionSpace, class TA, class TB, class TC>
void run_after_bias_prologue(const ExecutionSpace& space, const gemm_problem<TA, TB, TC>& p) {
  bias_prologue(space, p);
  Tpl::run(space, without_bias(p));
}

/// The vendor's own name for the kernel that runs `p` where the path says (Tpl::implementation),
/// else the path's name.
template <class Tpl, class P>
auto vendor_implementation(const P& p, int) -> decltype(Tpl::implementation(p)) {
  return Tpl::implementation(p);
}
template <class Tpl, class P>
std::string vendor_implementation(const P&, long) {
  return Tpl::name;
}

/// Where one problem runs: the first vendor path that accepts it, else the portable kernel. A
/// vendor that declines only the bias (one matrix, not a batch) still runs it, after kamp's
/// bias_prologue: every Linear takes the vendor GEMM where one exists.
template <class ExecutionSpace, class TA, class TB, class TC>
struct gemm_route {
  using problem = gemm_problem<TA, TB, TC>;
  const char* path = "portable";
  void (*run)(const ExecutionSpace&, const problem&) = &gemm_portable<ExecutionSpace, TA, TB, TC>;
  const std::string* region = portable_region();
  std::string (*implementation)(const problem&) = [](const problem&) { return std::string("portable"); };

  /// Region names are built once per path and type combination.
  static const std::string* portable_region() {
    static const std::string name = gemm_region_name<TA, TB, TC>("portable");
    return &name;
  }

  template <class Path>
  bool offer(const problem& p) {
    using tpl = gemm_tpl<Path, ExecutionSpace, TA, TB, TC>;
    if constexpr (tpl::available) {
      static const std::string name = gemm_region_name<TA, TB, TC>(tpl::name);
      if (tpl::accepts(p)) {
        path = tpl::name;
        run = &tpl::run;
        region = &name;
        implementation = [](const problem& q) { return vendor_implementation<tpl>(q, 0); };
        return true;
      }
      if (bias_prologue_serves<tpl>(p)) {
        path = tpl::name;
        run = &run_after_bias_prologue<tpl, ExecutionSpace, TA, TB, TC>;
        region = &name;
        implementation = [](const problem& q) { return vendor_implementation<tpl>(without_bias(q), 0); };
        return true;
      }
    }
    return false;
  }
  /// Only into an fp32 C: a 16-bit C holding beta·C + bias, read back by the vendor, would be
  /// rounded twice (on AMX hosts this cost several bf16 ulps); the widened path stages such a
  /// C in fp32 instead.
  template <class Tpl>
  static bool bias_prologue_serves(const problem& p) {
    return std::is_same_v<TC, typename problem::accum> && p.bias != nullptr && p.batch == 1 &&
           Tpl::accepts(without_bias(p));
  }
  template <class... Paths>
  gemm_route(const problem& p, gemm_algorithm algorithm, gemm_path_list<Paths...>) {
    if (algorithm == gemm_algorithm::automatic) (offer<Paths>(p) || ...);
  }
};

/// What a traffic listener is told of a problem. Field by field: nvcc 13 misparses a braced
/// list that holds `dtype_of<T>()` calls.
template <class TA, class TB, class TC>
gemm_record gemm_record_of(const gemm_problem<TA, TB, TC>& p, const char* path, std::string implementation) {
  gemm_record r;
  r.m = p.m, r.n = p.n, r.k = p.k, r.batch = p.batch;
  r.trans_a = p.trans_a, r.trans_b = p.trans_b;
  r.alpha = p.alpha, r.beta = p.beta;
  r.bias = p.bias != nullptr;
  r.a = dtype_of<TA>(), r.b = dtype_of<TB>(), r.c = dtype_of<TC>();
  r.path = path;
  r.lda = p.lda, r.ldb = p.ldb, r.ldc = p.ldc;
  r.stride_a = p.stride_a, r.stride_b = p.stride_b, r.stride_c = p.stride_c;
  r.inner = p.inner;
  r.inner_stride_a = p.inner_stride_a, r.inner_stride_b = p.inner_stride_b, r.inner_stride_c = p.inner_stride_c;
  r.implementation = std::move(implementation);
  return r;
}

/// Runs `p` on its route. An epilogue is applied by the portable kernel as it writes C (the
/// epilogue is its store), and after a vendor GEMM by one element-wise pass (`epilogue.after`).
template <class ExecutionSpace, class TA, class TB, class TC, class Epilogue = no_epilogue>
void gemm_dispatch(const ExecutionSpace& space, const gemm_problem<TA, TB, TC>& p, gemm_algorithm algorithm,
                   const Epilogue& epilogue = {}) {
  const gemm_route<ExecutionSpace, TA, TB, TC> route(p, algorithm, gemm_vendor_order());
  if (traffic_listener* listener = traffic_slot())
    listener->gemm(gemm_record_of(p, route.path, route.implementation(p)));
  Kokkos::Profiling::pushRegion(*route.region);
  if (std::string_view(route.path) == "portable") {
    gemm_portable_storing(space, p, epilogue);
  } else {
    route.run(space, p);
    epilogue.after(space, p);
  }
  Kokkos::Profiling::popRegion();
}

/// Why each vendor path takes or leaves problem `p`, in the order they are tried.
template <class ExecutionSpace, class TA, class TB, class TC, class... Paths>
std::string gemm_explanation(const gemm_problem<TA, TB, TC>& p, const char* chosen, gemm_path_list<Paths...>) {
  std::string why;
  const auto explain = [&](auto tag) {
    using tpl = gemm_tpl<decltype(tag), ExecutionSpace, TA, TB, TC>;
    if constexpr (tpl::available) {
      if (!why.empty()) why += "; ";
      const bool taken = std::string_view(tpl::name) == chosen;
      const bool prologue = taken && !tpl::accepts(p);
      why += std::string(tpl::name) + (taken ? ": " : " declines: ") + tpl::explain(prologue ? without_bias(p) : p) +
             (prologue ? " (the bias added first by kamp's bias prologue)" : "");
      return taken;
    }
    return false;
  };
  (explain(Paths()) || ...);
  if (std::string_view(chosen) == "portable")
    why += std::string(why.empty() ? "" : "; ") + "portable: kamp's own tiled kernel" +
           (why.empty() ? " (no vendor library for these types was compiled in)" : "");
  return why;
}

}  // namespace detail
}  // namespace kamp

#endif
