#ifndef KAMP_TOOLS_TRAFFIC_HPP
#define KAMP_TOOLS_TRAFFIC_HPP

// What the work asks of the memory and the math units, as the launchers know it: each kernel
// reports the bytes it must move at least (every element it reads and writes, once), by its
// Kokkos label; each GEMM its problem and path. A roofline (kamp-bench --suite train) turns
// them into the time a step cannot beat. The facts live beside the kernels that move the bytes,
// so a changed kernel changes its bound. Costs one null check per launch while nobody listens.
#include <kamp/numeric/dtype.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

namespace kamp {

/// One GEMM as a roofline and a profile need it: the problem, the memory it reads and writes
/// (leading dimensions and batch strides in elements, as gemm_problem has them), and where it ran.
struct gemm_record {
  int m, n, k, batch;
  bool trans_a, trans_b;
  float alpha, beta;
  bool bias;
  dtype a, b, c;
  std::string path;  ///< "dnnl", "widened", "portable", ...
  std::int64_t lda = 0, ldb = 0, ldc = 0, stride_a = 0, stride_b = 0, stride_c = 0;
  int inner = 1;  ///< batches of the inner batch dimension (attention's heads); 1 for one
  std::int64_t inner_stride_a = 0, inner_stride_b = 0, inner_stride_c = 0;
  std::string implementation;  ///< the library's own name for the kernel that ran (oneDNN's, cuBLAS' call)
};

/// The arithmetic a launch asks of the cores, counted in element operations (a 16-lane FMA is
/// 16) by the kinds whose rates kamp-bench measures on this machine: `simple` single
/// instructions (add, multiply, FMA, compare, select, the integer steps of a 16-bit conversion),
/// `exp` (kamp's exp_of), `divide`, `sqrt` and `log`. Counted from each kernel's source, as its
/// bytes are; kernels whose arithmetic is a few simple operations per element leave it empty.
struct kernel_arithmetic {
  double simple = 0, exp = 0, divide = 0, sqrt = 0, log = 0;
  constexpr kernel_arithmetic& operator+=(const kernel_arithmetic& o) {
    simple += o.simple, exp += o.exp, divide += o.divide, sqrt += o.sqrt, log += o.log;
    return *this;
  }
  friend constexpr kernel_arithmetic operator+(kernel_arithmetic a, const kernel_arithmetic& b) { return a += b; }
  /// `count` times the arithmetic of one element (or one row).
  friend constexpr kernel_arithmetic operator*(double count, kernel_arithmetic a) {
    a.simple *= count, a.exp *= count, a.divide *= count, a.sqrt *= count, a.log *= count;
    return a;
  }
};

/// Receives the reports while installed (`traffic_scope`).
class traffic_listener {
 public:
  virtual ~traffic_listener() = default;
  virtual void kernel(const char* label, double bytes, const kernel_arithmetic& work) = 0;
  virtual void gemm(const gemm_record& record) = 0;
};

namespace detail {

inline traffic_listener*& traffic_slot() {
  static traffic_listener* listener = nullptr;
  return listener;
}

/// `bytes`: what the launch reads plus what it writes, each element once; `work`: its arithmetic.
inline void report_traffic(const char* label, double bytes, const kernel_arithmetic& work = {}) {
  if (traffic_listener* l = traffic_slot()) l->kernel(label, bytes, work);
}

/// Simple operations to widen a T to fp32 (a shift for bf16) and to round fp32 to T (add the
/// rounding bias, shift, and the NaN and overflow selects; fp16 and FP8 also place subnormals).
template <class T>
constexpr double widen_ops() {
  return std::is_same_v<T, float> || std::is_same_v<T, double> ? 0 : dtype_of<T>() == dtype::bf16 ? 1 : 6;
}
template <class T>
constexpr double round_ops() {
  return std::is_same_v<T, float> || std::is_same_v<T, double> ? 0 : dtype_of<T>() == dtype::bf16 ? 5 : 12;
}

/// Bytes of `n` elements of each of the types Ts, summed: the traffic of an element-wise pass.
template <class... Ts>
constexpr double elements_bytes(double n) {
  return n * double((sizeof(Ts) + ... + 0));
}

}  // namespace detail

/// Installs `listener` for the scope's life (one at a time; not thread-safe, as Kokkos Tools).
class traffic_scope {
 public:
  explicit traffic_scope(traffic_listener& listener) : previous_(std::exchange(detail::traffic_slot(), &listener)) {}
  ~traffic_scope() { detail::traffic_slot() = previous_; }
  traffic_scope(const traffic_scope&) = delete;
  traffic_scope& operator=(const traffic_scope&) = delete;

 private:
  traffic_listener* previous_;
};

}  // namespace kamp

#endif
