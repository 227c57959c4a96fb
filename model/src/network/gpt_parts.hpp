#ifndef KAMP_MODEL_SRC_NETWORK_GPT_PARTS_HPP
#define KAMP_MODEL_SRC_NETWORK_GPT_PARTS_HPP

// What the training model (gpt) and the generation model (gpt_decoder) share: typed views of
// byte buffers, reading the bound weights, and the Linear layer. One definition, so that a
// token decoded with a KV cache goes through the same arithmetic as the training forward.
#include <kamp/kernels/cast.hpp>
#include <kamp/kernels/gemm.hpp>
#include <kamp/kernels/gemm_epilogue.hpp>
#include <kamp/model/network/gpt.hpp>

#include <Kokkos_Core.hpp>

#include <string>
#include <vector>

namespace kamp::detail {

template <class M>
struct views {
  template <class T>
  using matrix = Kokkos::View<T**, Kokkos::LayoutRight, M, Kokkos::MemoryUnmanaged>;
  template <class T>
  using batched = Kokkos::View<T***, Kokkos::LayoutRight, M, Kokkos::MemoryUnmanaged>;
  /// (B, H, rows, cols): attention's per-head matrices, contiguous (scores) or inside rows (heads)
  template <class T>
  using scores = Kokkos::View<T****, Kokkos::LayoutRight, M, Kokkos::MemoryUnmanaged>;
  template <class T>
  using heads = Kokkos::View<T****, Kokkos::LayoutStride, M, Kokkos::MemoryUnmanaged>;
  template <class T>
  using vector = Kokkos::View<T*, M, Kokkos::MemoryUnmanaged>;
  using bytes = Kokkos::View<char*, M>;

  // Activations whose type depends on the layer's compute dtype live in byte buffers sized for
  // that type and are viewed with the type of the moment.
  template <class T>
  static matrix<T> as_matrix(const bytes& b, std::size_t rows, std::size_t cols) {
    return matrix<T>(reinterpret_cast<T*>(b.data()), rows, cols);
  }
  template <class T>
  static vector<T> as_vector(const bytes& b, std::size_t n) {
    return vector<T>(reinterpret_cast<T*>(b.data()), n);
  }
  template <class T>
  static batched<T> as_batched(T* data, std::size_t batch, std::size_t rows, std::size_t cols) {
    return batched<T>(data, batch, rows, cols);
  }
};

/// Checks that `binding` fits a model of `config` in `policy` computing in fp32 (or fp64 when
/// `fp64`), and returns where each parameter's weights are. `api` names the caller in messages.
weight_addresses bound_addresses(const char* api, const gpt_config& config, const precision_policy& policy, bool fp64,
                                 const weight_binding& binding);

/// A view of the same elements, read-only: what an op's inputs are (the type views<M> names, so
/// that a kernel is instantiated once for its const inputs).
template <class V>
auto read_only(const V& v) {
  return Kokkos::View<typename V::const_data_type, typename V::array_layout, typename V::memory_space,
                      typename V::memory_traits>(v);
}

/// A contiguous matrix's elements as one vector, the form element-wise kernels take.
template <class V>
auto flat(const V& m) {
  return Kokkos::View<typename V::value_type*, typename V::memory_space, Kokkos::MemoryUnmanaged>(m.data(), m.size());
}

/// \brief The bound weights as one layer reads them, as typed views: a layer computing in T,
/// in a model whose exact weights are P and exact activations Real. Its GEMMs read the
/// low-precision copy, or the exact weights when T is Real; biases are read as Real (pure bf16
/// biases widened exactly into `bias_scratch`). Each op of the training and the generation
/// model builds one, so both read weights through the same code.
template <class Real, class P, class T, class ES>
struct layer_weights {
  using v = views<typename ES::memory_space>;
  /// The element type of the weights its GEMMs read.
  using gemm_type = std::conditional_t<std::is_same_v<T, Real>, P, T>;

  const tensor_table& table;
  const weight_addresses& at;
  const ES& space;
  typename v::bytes bias_scratch;

  typename v::template vector<const P> exact(std::size_t i) const {
    return typename v::template vector<const P>(static_cast<const P*>(at.exact[i]), table[i].size);
  }
  typename v::template matrix<const P> exact_matrix(std::size_t i) const {
    return typename v::template matrix<const P>(static_cast<const P*>(at.exact[i]), table[i].shape.at(0),
                                                table[i].shape.at(1));
  }
  typename v::template matrix<const gemm_type> gemm(std::size_t i) const {
    if constexpr (std::is_same_v<T, Real>) {
      return exact_matrix(i);
    } else {
      return typename v::template matrix<const T>(static_cast<const T*>(at.copy[i]), table[i].shape.at(0),
                                                  table[i].shape.at(1));
    }
  }
  typename v::template vector<const Real> bias(std::size_t i) const {
    const auto b = exact(i);
    if constexpr (std::is_same_v<P, Real>) {
      return b;
    } else {
      const auto wide = v::template as_vector<Real>(bias_scratch, b.extent(0));
      cast(space, wide, b, rounding_options{}, Kokkos::View<std::size_t, typename ES::memory_space>());
      return wide;
    }
  }
};

/// A Linear layer whose weight is (out, in): C = A W^T + bias.
template <class ES, class A, class W, class C, class B>
void linear(const ES& space, const A& a, const W& w, const C& c, const B& bias) {
  gemm(space, op::none, op::transpose, 1.0f, a, w, 0.0f, c, bias);
}

}  // namespace kamp::detail

#endif
