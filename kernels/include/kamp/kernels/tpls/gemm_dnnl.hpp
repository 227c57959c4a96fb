#ifndef KAMP_KERNELS_TPLS_GEMM_DNNL_HPP
#define KAMP_KERNELS_TPLS_GEMM_DNNL_HPP

// bf16 x bf16 -> fp32 or bf16, and fp32 x fp32 -> fp32, on the host through oneDNN's matmul
// primitive (fp32 accumulation, optional fp32 bias, any strides; on CPUs with AVX512-BF16 or AMX
// it uses the native bf16 dot products, elsewhere its jit sgemm, which on AVX2 outruns OpenBLAS).
// oneDNN decides whether it serves a problem: no implementation for the types on this CPU (bf16
// in oneDNN 2.6 below AVX-512), or only its reference one, and the problem goes to the next path.
// A strided batch (attention's heads inside projection rows) that oneDNN serves only off its AMX
// kernel is packed into dense copies first (dnnl_packing).
#include <kamp/config.hpp>
#include <kamp/kernels/detail/fence.hpp>
#include <kamp/kernels/detail/gemm_portable.hpp>
#include <kamp/kernels/tpls/gemm_tpl_avail.hpp>
#include <kamp/numeric/dtype.hpp>
#include <kamp/numeric/format.hpp>

#ifdef KAMP_ENABLE_DNNL
#include <oneapi/dnnl/dnnl.hpp>

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <unordered_map>

namespace kamp::detail {

// The places where oneDNN 2's and 3's APIs differ for kamp (CMake accepts only those majors).
/// alpha in C = alpha·AB + beta·C: oneDNN 2's output scale; oneDNN 3 dropped those and scales the
/// weights instead, with the value passed at execution (dnnl_alpha_argument). Both multiply the
/// fp32 accumulator once, before the sum post-op.
inline void dnnl_set_alpha(dnnl::primitive_attr& attr, float alpha) {
#if DNNL_VERSION_MAJOR >= 3
  static_cast<void>(alpha);
  attr.set_scales_mask(DNNL_ARG_WEIGHTS, 0);
#else
  attr.set_output_scales(0, {alpha});
#endif
}
/// Adds alpha's execution argument where oneDNN takes one; `alpha` must outlive the execution.
inline void dnnl_alpha_argument(std::unordered_map<int, dnnl::memory>& args, const dnnl::engine& engine, float* alpha) {
#if DNNL_VERSION_MAJOR >= 3
  args.emplace(DNNL_ARG_ATTR_SCALES | DNNL_ARG_WEIGHTS,
               dnnl::memory({{1}, dnnl::memory::data_type::f32, {1}}, engine, alpha));
#else
  static_cast<void>(args), static_cast<void>(engine), static_cast<void>(alpha);
#endif
}
/// A descriptor's dims and element type (oneDNN 3 renamed the accessors).
inline dnnl::memory::dims dnnl_dims(const dnnl::memory::desc& d) {
#if DNNL_VERSION_MAJOR >= 3
  return d.get_dims();
#else
  return d.dims();
#endif
}
inline dnnl::memory::data_type dnnl_data_type(const dnnl::memory::desc& d) {
#if DNNL_VERSION_MAJOR >= 3
  return d.get_data_type();
#else
  return d.data_type();
#endif
}
/// A matmul primitive descriptor for src a, weights b, optional bias and dst c; throws
/// dnnl::error where oneDNN has no implementation.
inline dnnl::matmul::primitive_desc dnnl_matmul_desc(const dnnl::engine& engine, const dnnl::memory::desc& a,
                                                     const dnnl::memory::desc& b, const dnnl::memory::desc* bias,
                                                     const dnnl::memory::desc& c,
                                                     const dnnl::primitive_attr& attr = dnnl::primitive_attr()) {
#if DNNL_VERSION_MAJOR >= 3
  if (bias != nullptr) return {engine, a, b, *bias, c, attr};
  return {engine, a, b, c, attr};
#else
  return {bias != nullptr ? dnnl::matmul::desc(a, b, *bias, c) : dnnl::matmul::desc(a, b, c), attr, engine};
#endif
}

/// Whether a strided batch is multiplied on dense copies of its operands. oneDNN's brgemm, its
/// only AMX kernel, takes batched operands only in dense or exactly permuted layouts, so heads
/// read in place from (B, T, 3C) rows run on gemm:jit, which has no AMX code: on an AMX Xeon
/// 7-15x slower than the AMX kernel on the same heads packed. `automatic` packs exactly where
/// the dense form gets an AMX kernel and the in-place form does not; elsewhere (AVX512-BF16 and
/// AVX2 hosts) gemm:jit in place is as fast as brgemm on copies, and the copies would only cost.
/// The rule reads oneDNN's implementation names, not a timing, so every process on a machine
/// takes the same path and a resumed run repeats an uninterrupted one bit for bit. `always` and
/// `never` are for tests and benchmarks.
enum class dnnl_packing { automatic, always, never };

/// One oneDNN engine and stream per process, and primitives cached by shape: creating a matmul
/// primitive costs far more than a small GEMM.
class dnnl_context {
 public:
  static dnnl_context& instance() {
    static dnnl_context context;
    return context;
  }
  using key =
      std::tuple<int, int, int, int, bool, bool, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t,
                 std::int64_t, float, float, bool, dtype, dtype, dtype, int, std::int64_t, std::int64_t, std::int64_t>;

  /// The whole (strided-batched) problem as one matmul where oneDNN has an optimized batched
  /// kernel for its strides, else one 2-D matmul per batch (oneDNN's reference batched kernel
  /// is orders of magnitude slower than a loop of optimized ones).
  template <class TA, class TB, class TC>
  void matmul(const gemm_problem<TA, TB, TC>& p) {
    std::lock_guard<std::mutex> lock(mutex_);
    entry& e = find(p);
    float alpha = p.alpha;
    for (int b = 0; b < (e.per_batch ? p.batch : 1); ++b) {
      dnnl::memory a(e.a, engine_, const_cast<TA*>(p.a_of(b)));
      dnnl::memory bm(e.b, engine_, const_cast<TB*>(p.b_of(b)));
      dnnl::memory c(e.c, engine_, p.c_of(b));
      if (e.pack) {
        e.pack->a.in(stream_, a);
        e.pack->b.in(stream_, bm);
        if (p.beta != 0.0f) e.pack->c.in(stream_, c);
      }
      std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, e.pack ? e.pack->a.operand(a) : a},
                                                 {DNNL_ARG_WEIGHTS, e.pack ? e.pack->b.operand(bm) : bm},
                                                 {DNNL_ARG_DST, e.pack ? e.pack->c.operand(c) : c}};
      if (p.bias != nullptr) args.emplace(DNNL_ARG_BIAS, dnnl::memory(e.bias, engine_, const_cast<float*>(p.bias)));
      if (p.alpha != 1.0f) dnnl_alpha_argument(args, engine_, &alpha);
      e.primitive->execute(stream_, args);
      if (e.pack) e.pack->c.out(stream_, c);
    }
    stream_.wait();
  }

  /// Sets the packing rule (tests and benchmarks); primitives made under another are dropped.
  void set_packing(dnnl_packing packing) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (packing != packing_) cache_.clear();
    packing_ = packing;
  }

  /// oneDNN's name for the kernel that runs this problem, "packed" where it runs on dense copies.
  template <class TA, class TB, class TC>
  std::string implementation(const gemm_problem<TA, TB, TC>& p) {
    std::lock_guard<std::mutex> lock(mutex_);
    const entry& e = find(p);
    return e.implementation + (e.pack ? " packed" : "") + (e.per_batch ? " per batch" : "");
  }

  /// Whether oneDNN has an optimized (not reference) matmul for this problem on this CPU.
  template <class TA, class TB, class TC>
  bool serves(const gemm_problem<TA, TB, TC>& p) {
    std::lock_guard<std::mutex> lock(mutex_);
    return find(p).primitive.has_value();
  }

  /// The implementation oneDNN chose for this problem, or why there is none.
  template <class TA, class TB, class TC>
  std::string explain(const gemm_problem<TA, TB, TC>& p) {
    std::lock_guard<std::mutex> lock(mutex_);
    const entry& e = find(p);
    const dnnl_version_t* v = dnnl_version();
    const std::string library =
        "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
    const std::string cpu = "this CPU (oneDNN's ISA: " + isa_name() + ")";
    const std::string types =
        std::string(name(dtype_of<TA>())) + " x " + name(dtype_of<TB>()) + " -> " + name(dtype_of<TC>());
    if (e.pack)
      return library + " matmul " + e.implementation + " on " + cpu +
             ", on dense copies of the operands (in place: " + e.pack->in_place + ")";
    if (e.primitive) return library + " matmul " + e.implementation + " on " + cpu;
    if (e.implementation.empty()) return library + " has no " + types + " matmul on " + cpu;
    return library + " has only its reference " + types + " matmul (" + e.implementation + ") on " + cpu;
  }

 private:
  /// One operand's dense copy where its strides are not dense: reorders into and out of a
  /// buffer oneDNN owns (a reorder copies; it never rounds).
  struct dense_copy {
    std::optional<dnnl::memory> copy;
    std::optional<dnnl::reorder> to_copy, from_copy;
    dense_copy(const dnnl::engine& engine, const dnnl::memory::desc& strided, const dnnl::memory::desc& dense,
               bool written) {
      if (strided == dense) return;
      copy.emplace(dense, engine);
      to_copy.emplace(dnnl::reorder::primitive_desc(engine, strided, engine, dense));
      if (written) from_copy.emplace(dnnl::reorder::primitive_desc(engine, dense, engine, strided));
    }
    void in(dnnl::stream& stream, dnnl::memory& user) {
      if (to_copy) to_copy->execute(stream, user, *copy);
    }
    void out(dnnl::stream& stream, dnnl::memory& user) {
      if (from_copy) from_copy->execute(stream, *copy, user);
    }
    dnnl::memory operand(const dnnl::memory& user) const { return copy ? *copy : user; }
  };
  struct packing {
    dense_copy a, b, c;
    std::string in_place;  ///< oneDNN's kernel for the operands in place
  };
  struct entry {
    dnnl::memory::desc a, b, c, bias;
    std::optional<dnnl::matmul> primitive;  ///< none: oneDNN does not serve the problem
    bool per_batch;                         ///< the descriptors are one batch's; the call loops over batches
    std::string implementation;             ///< oneDNN's name for it; empty where it has none at all
    std::optional<packing> pack;            ///< the primitive multiplies dense copies (dnnl_packing)
  };
  dnnl_context() : engine_(dnnl::engine::kind::cpu, 0), stream_(engine_) {}

  template <class TA, class TB, class TC>
  entry& find(const gemm_problem<TA, TB, TC>& p) {
    const key k{p.m,
                p.n,
                p.k,
                p.batch,
                p.trans_a,
                p.trans_b,
                p.lda,
                p.ldb,
                p.ldc,
                p.stride_a,
                p.stride_b,
                p.stride_c,
                p.alpha,
                p.beta,
                p.bias != nullptr,
                dtype_of<TA>(),
                dtype_of<TB>(),
                dtype_of<TC>(),
                p.inner,
                p.inner_stride_a,
                p.inner_stride_b,
                p.inner_stride_c};
    auto it = cache_.find(k);
    if (it == cache_.end()) it = cache_.emplace(k, make(p)).first;
    return it->second;
  }

  static bool is_reference(const std::string& implementation) { return implementation.rfind("ref", 0) == 0; }

  static bool on_amx(const std::string& implementation) { return implementation.find("amx") != std::string::npos; }

  template <class TA, class TB, class TC>
  entry make(const gemm_problem<TA, TB, TC>& p) {
    if (p.batch > 1) {
      entry batched = make(p, p.batch);
      entry packed = make_packed(p, batched);
      if (packed.primitive) return packed;
      if (batched.primitive) return batched;
    }
    entry single = make(p, 1);
    single.per_batch = p.batch > 1;
    return single;
  }

  static std::string isa_name() {
    switch (dnnl::get_effective_cpu_isa()) {
      case dnnl::cpu_isa::sse41:
        return "sse41";
      case dnnl::cpu_isa::avx:
        return "avx";
      case dnnl::cpu_isa::avx2:
        return "avx2";
      case dnnl::cpu_isa::avx512_core:
        return "avx512_core";
      case dnnl::cpu_isa::avx512_core_vnni:
        return "avx512_core_vnni";
      case dnnl::cpu_isa::avx512_core_bf16:
        return "avx512_core_bf16";
      case dnnl::cpu_isa::avx512_core_amx:
        return "avx512_core_amx";
      default:
        return "other";
    }
  }

  template <class T>
  static dnnl::memory::data_type type_of() {
    return std::is_same_v<T, bf16> ? dnnl::memory::data_type::bf16 : dnnl::memory::data_type::f32;
  }

  template <class TA, class TB, class TC>
  entry make(const gemm_problem<TA, TB, TC>& p, int batch) {
    using dims = dnnl::memory::dims;
    using dt = dnnl::memory::data_type;
    // Row-major with leading dimensions, and (for batch > 1) one or two leading batch
    // dimensions with their strides; a transposed operand is the same memory read with swapped
    // strides.
    const int inner = batch == 1 ? 1 : p.inner;
    const auto desc = [batch, inner](dnnl::memory::dim rows, dnnl::memory::dim cols, dt type, std::int64_t ld,
                                     std::int64_t stride, std::int64_t inner_stride, bool transposed) {
      const dims matrix = transposed ? dims{1, ld} : dims{ld, 1};
      if (batch == 1) return dnnl::memory::desc({rows, cols}, type, matrix);
      if (inner == 1) return dnnl::memory::desc({batch, rows, cols}, type, dims{stride, matrix[0], matrix[1]});
      return dnnl::memory::desc({batch / inner, inner, rows, cols}, type,
                                dims{stride, inner_stride, matrix[0], matrix[1]});
    };
    const dnnl::memory::desc a = desc(p.m, p.k, type_of<TA>(), p.lda, p.stride_a, p.inner_stride_a, p.trans_a);
    const dnnl::memory::desc b = desc(p.k, p.n, type_of<TB>(), p.ldb, p.stride_b, p.inner_stride_b, p.trans_b);
    const dnnl::memory::desc c = desc(p.m, p.n, type_of<TC>(), p.ldc, p.stride_c, p.inner_stride_c, false);
    const auto bias_desc = [&] {
      if (p.bias == nullptr) return dnnl::memory::desc();
      if (batch == 1) return dnnl::memory::desc({1, p.n}, dt::f32, dims{p.n, 1});
      if (inner == 1) return dnnl::memory::desc({1, 1, p.n}, dt::f32, dims{p.n, p.n, 1});
      return dnnl::memory::desc({1, 1, 1, p.n}, dt::f32, dims{p.n, p.n, p.n, 1});
    };
    const dnnl::memory::desc bias = bias_desc();
    const dnnl::primitive_attr attr = attributes(p.alpha, p.beta);
    entry e{a, b, c, bias, std::nullopt, false, {}, std::nullopt};
    build(e, p.bias != nullptr, attr);
    return e;
  }

  /// alpha as oneDNN takes it; beta as its sum post-op.
  static dnnl::primitive_attr attributes(float alpha, float beta) {
    dnnl::primitive_attr attr;
    if (alpha != 1.0f) dnnl_set_alpha(attr, alpha);
    if (beta != 0.0f) {
      dnnl::post_ops ops;
      ops.append_sum(beta);
      attr.set_post_ops(ops);
    }
    return attr;
  }

  /// The matmul of e's descriptors and attributes, where oneDNN has an optimized one.
  void build(entry& e, bool with_bias, const dnnl::primitive_attr& attr) {
    if (const auto pd = describe(e, with_bias, attr)) e.primitive = dnnl::matmul(*pd);
  }
  /// oneDNN's optimized matmul descriptor for e (its name in e.implementation), without the
  /// primitive, whose creation compiles the kernel.
  std::optional<dnnl::matmul::primitive_desc> describe(entry& e, bool with_bias, const dnnl::primitive_attr& attr) {
    try {
      dnnl::matmul::primitive_desc pd = dnnl_matmul_desc(engine_, e.a, e.b, with_bias ? &e.bias : nullptr, e.c, attr);
      e.implementation = pd.impl_info_str();
      if (!is_reference(e.implementation)) return pd;
    } catch (const dnnl::error&) {
      // No implementation for these types on this CPU: the problem takes the next path.
    }
    return std::nullopt;
  }

  /// `in_place` (a whole-batch entry) on dense row-major copies of the operands whose strides
  /// are not dense, where the packing rule takes them (else an entry without a primitive); the
  /// descriptors stay the caller's, the primitive is the copies'. The rule is read from the
  /// descriptor's name before the primitive is compiled or the copies allocated.
  template <class TA, class TB, class TC>
  entry make_packed(const gemm_problem<TA, TB, TC>& p, const entry& in_place) {
    const auto dense = [](const dnnl::memory::desc& d) {
      const dnnl::memory::dims dims = dnnl_dims(d);
      dnnl::memory::dims strides(dims.size(), 1);
      for (std::size_t i = dims.size() - 1; i > 0; --i) strides[i - 1] = strides[i] * dims[i];
      return dnnl::memory::desc(dims, dnnl_data_type(d), strides);
    };
    entry e{in_place.a, in_place.b, in_place.c, in_place.bias, std::nullopt, false, {}, std::nullopt};
    if (packing_ == dnnl_packing::never) return e;
    entry copies{dense(e.a), dense(e.b), dense(e.c), e.bias, std::nullopt, false, {}, std::nullopt};
    const auto pd = describe(copies, p.bias != nullptr, attributes(p.alpha, p.beta));
    if (!pd) return e;
    if (packing_ == dnnl_packing::automatic && !(on_amx(copies.implementation) && !on_amx(in_place.implementation)))
      return e;
    try {
      e.pack.emplace(packing{dense_copy(engine_, e.a, copies.a, false), dense_copy(engine_, e.b, copies.b, false),
                             dense_copy(engine_, e.c, copies.c, true), in_place.implementation});
    } catch (const dnnl::error&) {
      return e;  // no reorder between the layouts: the problem stays in place
    }
    e.primitive = dnnl::matmul(*pd);
    e.implementation = copies.implementation;
    return e;
  }

  dnnl::engine engine_;
  dnnl::stream stream_;
  std::mutex mutex_;
  std::map<key, entry> cache_;
  dnnl_packing packing_ = dnnl_packing::automatic;
};

template <class TA, class TB, class TC>
struct gemm_tpl_dnnl {
  using problem = gemm_problem<TA, TB, TC>;
  static constexpr bool available = true;
  static constexpr const char* name = "dnnl";
  /// oneDNN's sum post-op reads C, so beta != 0 with NaN in C behaves as BLAS does. oneDNN
  /// scales (AB + bias) by alpha where kamp computes alpha·AB + bias: with a bias, alpha must be 1.
  /// A 16-bit C is written here only where oneDNN need not read it (beta = 0): whether its sum
  /// post-op adds a bf16 C to the fp32 accumulator before the one rounding is not documented for
  /// every ISA's kernel, so the widened path sums such a C in fp32 and rounds it once itself.
  static bool accepts(const problem& p) {
    return p.k > 0 && (p.bias == nullptr || p.alpha == 1.0f) && (std::is_same_v<TC, float> || p.beta == 0.0f) &&
           dnnl_context::instance().serves(p);
  }
  static std::string explain(const problem& p) {
    if (p.k == 0) return "oneDNN is not called for K = 0";
    if (p.bias != nullptr && p.alpha != 1.0f) return "oneDNN 2 scales the bias by alpha (kept off oneDNN 3 too)";
    if (!std::is_same_v<TC, float> && p.beta != 0.0f) return "a 16-bit C with beta != 0 is summed in fp32 first";
    return dnnl_context::instance().explain(p);
  }
  static std::string implementation(const problem& p) { return dnnl_context::instance().implementation(p); }
  static void run(const Kokkos::DefaultHostExecutionSpace& space, const problem& p) {
    fence_for_host_library(space, "oneDNN reads A and B on threads of its own");
    dnnl_context::instance().matmul(p);
  }
};
template <>
struct gemm_tpl<dnnl_path, Kokkos::DefaultHostExecutionSpace, bf16, bf16, float> : gemm_tpl_dnnl<bf16, bf16, float> {};
template <>
struct gemm_tpl<dnnl_path, Kokkos::DefaultHostExecutionSpace, bf16, bf16, bf16> : gemm_tpl_dnnl<bf16, bf16, bf16> {};
template <>
struct gemm_tpl<dnnl_path, Kokkos::DefaultHostExecutionSpace, float, float, float>
    : gemm_tpl_dnnl<float, float, float> {};

}  // namespace kamp::detail

#endif
#endif
