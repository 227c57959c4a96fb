#ifndef KAMP_KERNELS_TPLS_GEMM_DNNL_HPP
#define KAMP_KERNELS_TPLS_GEMM_DNNL_HPP

// bf16 x bf16 -> fp32 or bf16 on the host through oneDNN's matmul primitive (fp32 accumulation,
// optional fp32 bias; on CPUs with AVX512-BF16 or AMX it uses the native bf16 dot products).
#include <kamp/config.hpp>
#include <kamp/kernels/impl/gemm_portable.hpp>
#include <kamp/kernels/tpls/gemm_tpl_avail.hpp>
#include <kamp/numeric/format.hpp>

#ifdef KAMP_ENABLE_DNNL
#include <oneapi/dnnl/dnnl.hpp>

#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <vector>

namespace kamp::detail {

/// One oneDNN engine and stream per process, and primitives cached by shape: creating a matmul
/// primitive costs far more than a small GEMM.
class dnnl_context {
 public:
  static dnnl_context& instance() {
    static dnnl_context context;
    return context;
  }
  using key = std::tuple<int, int, int, int, bool, bool, std::int64_t, std::int64_t, std::int64_t, std::int64_t,
                         std::int64_t, std::int64_t, float, float, bool, bool>;

  /// The whole (strided-batched) problem as one matmul where oneDNN has an optimized batched
  /// kernel for its strides, else one 2-D matmul per batch (oneDNN's reference batched kernel
  /// is orders of magnitude slower than a loop of optimized ones).
  template <class TC>
  void matmul(const gemm_problem<bf16, bf16, TC>& p) {
    std::lock_guard<std::mutex> lock(mutex_);
    const key k{p.m,        p.n,        p.k,       p.batch, p.trans_a, p.trans_b,        p.lda,
                p.ldb,      p.ldc,      p.stride_a, p.stride_b, p.stride_c, p.alpha, p.beta, p.bias != nullptr,
                std::is_same_v<TC, bf16>};
    auto it = cache_.find(k);
    if (it == cache_.end()) it = cache_.emplace(k, make(p)).first;
    auto& e = it->second;
    for (int b = 0; b < (e.per_batch ? p.batch : 1); ++b) {
      dnnl::memory a(e.a, engine_, const_cast<bf16*>(p.a + b * p.stride_a));
      dnnl::memory bm(e.b, engine_, const_cast<bf16*>(p.b + b * p.stride_b));
      dnnl::memory c(e.c, engine_, p.c + b * p.stride_c);
      std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, c}};
      if (p.bias != nullptr) args.emplace(DNNL_ARG_BIAS, dnnl::memory(e.bias, engine_, const_cast<float*>(p.bias)));
      e.primitive.execute(stream_, args);
    }
    stream_.wait();
  }

 private:
  struct entry {
    dnnl::memory::desc a, b, c, bias;
    dnnl::matmul primitive;
    bool per_batch;  ///< the descriptors are one batch's; the call loops over batches
    std::string implementation;
  };
  dnnl_context() : engine_(dnnl::engine::kind::cpu, 0), stream_(engine_) {}

  template <class TC>
  entry make(const gemm_problem<bf16, bf16, TC>& p) {
    if (p.batch > 1) {
      entry batched = make(p, p.batch);
      if (batched.implementation.rfind("ref", 0) != 0) return batched;
    }
    entry single = make(p, 1);
    single.per_batch = p.batch > 1;
    return single;
  }

  template <class TC>
  entry make(const gemm_problem<bf16, bf16, TC>& p, int batch) {
    using dims = dnnl::memory::dims;
    using dt = dnnl::memory::data_type;
    // Row-major with leading dimensions, and (for batch > 1) a leading batch dimension with its
    // stride; a transposed operand is the same memory read with swapped strides.
    const auto desc = [batch](dnnl::memory::dim rows, dnnl::memory::dim cols, dt type, std::int64_t ld,
                              std::int64_t stride, bool transposed) {
      const dims matrix = transposed ? dims{1, ld} : dims{ld, 1};
      if (batch == 1) return dnnl::memory::desc({rows, cols}, type, matrix);
      return dnnl::memory::desc({batch, rows, cols}, type, dims{stride, matrix[0], matrix[1]});
    };
    const dnnl::memory::desc a = desc(p.m, p.k, dt::bf16, p.lda, p.stride_a, p.trans_a);
    const dnnl::memory::desc b = desc(p.k, p.n, dt::bf16, p.ldb, p.stride_b, p.trans_b);
    const dnnl::memory::desc c = desc(p.m, p.n, std::is_same_v<TC, bf16> ? dt::bf16 : dt::f32, p.ldc, p.stride_c, false);
    const dnnl::memory::desc bias = p.bias == nullptr ? dnnl::memory::desc()
                                    : batch == 1      ? dnnl::memory::desc({1, p.n}, dt::f32, dims{p.n, 1})
                                                      : dnnl::memory::desc({1, 1, p.n}, dt::f32, dims{p.n, p.n, 1});
    dnnl::primitive_attr attr;
    if (p.alpha != 1.0f) attr.set_output_scales(0, std::vector<float>{p.alpha});
    if (p.beta != 0.0f) {
      dnnl::post_ops ops;
      ops.append_sum(p.beta);
      attr.set_post_ops(ops);
    }
    const dnnl::matmul::primitive_desc pd(
        p.bias != nullptr ? dnnl::matmul::desc(a, b, bias, c) : dnnl::matmul::desc(a, b, c), attr, engine_);
    return {a, b, c, bias, dnnl::matmul(pd), false, pd.impl_info_str()};
  }

  dnnl::engine engine_;
  dnnl::stream stream_;
  std::mutex mutex_;
  std::map<key, entry> cache_;
};

template <class TC>
struct gemm_tpl_dnnl {
  static constexpr bool available = true;
  static constexpr const char* name = "dnnl";
  /// oneDNN's sum post-op reads C, so beta != 0 with NaN in C behaves as BLAS does. oneDNN
  /// scales (AB + bias) by alpha where kamp computes alpha·AB + bias: with a bias, alpha must be 1.
  static bool accepts(const gemm_problem<bf16, bf16, TC>& p) {
    return p.k > 0 && (p.bias == nullptr || p.alpha == 1.0f);
  }
  static void run(const Kokkos::DefaultHostExecutionSpace& space, const gemm_problem<bf16, bf16, TC>& p) {
    space.fence();  // oneDNN runs on its own threads, after Kokkos work that produced A and B
    dnnl_context::instance().matmul(p);
  }
};
template <>
struct gemm_tpl<Kokkos::DefaultHostExecutionSpace, bf16, bf16, float> : gemm_tpl_dnnl<float> {};
template <>
struct gemm_tpl<Kokkos::DefaultHostExecutionSpace, bf16, bf16, bf16> : gemm_tpl_dnnl<bf16> {};

}  // namespace kamp::detail

#endif
#endif
