#ifndef KAMP_KERNELS_IMPL_GEMM_DISPATCH_HPP
#define KAMP_KERNELS_IMPL_GEMM_DISPATCH_HPP

// How gemm picks its path: each vendor path in gemm_vendor_order is asked in turn whether it
// serves the problem on this machine; the first that does runs it, else the portable kernel.
#include <kamp/config.hpp>
#include <kamp/kernels/impl/gemm_portable.hpp>
#include <kamp/kernels/tpls/gemm_cublas.hpp>
#include <kamp/kernels/tpls/gemm_dnnl.hpp>
#include <kamp/kernels/tpls/gemm_kokkosblas.hpp>
#include <kamp/kernels/tpls/gemm_tpl_avail.hpp>
#include <kamp/numeric/dtype.hpp>

#include <Kokkos_Core.hpp>

#include <string>
#include <string_view>

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

template <class TA, class TB, class TC>
std::string gemm_region_name(const char* path) {
  return std::string("kamp::gemm[") + path + "," + dtype_name<TA>() + "," + dtype_name<TB>() + "," +
         dtype_name<TC>() + "]";
}

/// Where one problem runs: the first vendor path that accepts it, else the portable kernel.
template <class ExecutionSpace, class TA, class TB, class TC>
struct gemm_route {
  using problem = gemm_problem<TA, TB, TC>;
  const char* path = "portable";
  void (*run)(const ExecutionSpace&, const problem&) = &gemm_portable<ExecutionSpace, TA, TB, TC>;
  const std::string* region = portable_region();

  /// Region names are built once per path and type combination.
  static const std::string* portable_region() {
    static const std::string name = gemm_region_name<TA, TB, TC>("portable");
    return &name;
  }

  template <class Path>
  bool offer(const problem& p) {
    using tpl = gemm_tpl<Path, ExecutionSpace, TA, TB, TC>;
    if constexpr (tpl::available) {
      if (tpl::accepts(p)) {
        static const std::string name = gemm_region_name<TA, TB, TC>(tpl::name);
        path = tpl::name;
        run = &tpl::run;
        region = &name;
        return true;
      }
    }
    return false;
  }
  template <class... Paths>
  gemm_route(const problem& p, gemm_algorithm algorithm, gemm_path_list<Paths...>) {
    if (algorithm == gemm_algorithm::automatic) (offer<Paths>(p) || ...);
  }
};

template <class ExecutionSpace, class TA, class TB, class TC>
void gemm_dispatch(const ExecutionSpace& space, const gemm_problem<TA, TB, TC>& p, gemm_algorithm algorithm) {
  const gemm_route<ExecutionSpace, TA, TB, TC> route(p, algorithm, gemm_vendor_order());
  Kokkos::Profiling::pushRegion(*route.region);
  route.run(space, p);
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
      why += std::string(tpl::name) + (std::string_view(tpl::name) == chosen ? ": " : " declines: ") +
             tpl::explain(p);
      return std::string_view(tpl::name) == chosen;
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
