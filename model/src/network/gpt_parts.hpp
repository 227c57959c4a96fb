#ifndef KAMP_MODEL_SRC_NETWORK_GPT_PARTS_HPP
#define KAMP_MODEL_SRC_NETWORK_GPT_PARTS_HPP

// What the training model (gpt) and the generation model (gpt_decoder) share: typed views of
// byte buffers, reading the bound weights, and the Linear layer. One definition, so that a
// token decoded with a KV cache goes through the same arithmetic as the training forward.
#include <kamp/kernels/cast.hpp>
#include <kamp/kernels/gemm.hpp>
#include <kamp/kernels/nn/residual.hpp>
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

/// \brief The bound weights as typed views: the exact weights (P), the weights a layer
/// computing in T reads for its GEMMs (the low-precision copy, or the exact weights when T is
/// Real, the type of the exact activations), and biases as the kernels read them (Real).
template <class Real, class MemorySpace>
struct weight_reader {
  using v = views<MemorySpace>;
  const tensor_table& table;
  const weight_addresses& at;

  template <class P>
  typename v::template vector<const P> exact(std::size_t i) const {
    using view = typename v::template vector<const P>;
    return view(static_cast<const P*>(at.exact[i]), table[i].size);
  }
  template <class P>
  typename v::template matrix<const P> exact_matrix(std::size_t i) const {
    using view = typename v::template matrix<const P>;
    return view(static_cast<const P*>(at.exact[i]), table[i].shape.at(0), table[i].shape.at(1));
  }
  template <class P, class T>
  auto gemm(std::size_t i) const {
    const auto& e = table[i];
    if constexpr (std::is_same_v<T, Real>) {
      return exact_matrix<P>(i);
    } else {
      return typename v::template matrix<const T>(static_cast<const T*>(at.copy[i]), e.shape.at(0), e.shape.at(1));
    }
  }
  /// The exact bias when it has type Real, else (pure bf16) widened exactly into `scratch`.
  template <class P, class ES>
  typename v::template vector<const Real> bias(std::size_t i, const ES& space, const typename v::bytes& scratch) const {
    const auto b = exact<P>(i);
    if constexpr (std::is_same_v<P, Real>) {
      return b;
    } else {
      const auto wide = v::template as_vector<Real>(scratch, b.extent(0));
      cast(space, wide, b, rounding_options{}, Kokkos::View<std::size_t, MemorySpace>());
      return wide;
    }
  }
};

/// A Linear layer whose weight is (out, in): C = A W^T + bias.
template <class ES, class A, class W, class C, class B>
void linear(const ES& space, const A& a, const W& w, const C& c, const B& bias) {
  gemm(space, op::none, op::transpose, 1.0f, a, w, 0.0f, c, bias);
}

/// A Linear whose output joins the residual stream: out = x + A W^T + bias, the bias added with
/// the skip connection so that the GEMM has none.
template <class ES, class A, class W, class B, class X, class O>
void residual_linear(const ES& space, const A& a, const W& w, const B& bias, const X& x, const O& out) {
  residual_with_bias(space, x, bias, out);
  gemm(space, op::none, op::transpose, 1.0f, a, w, 1.0f, out);
}

}  // namespace kamp::detail

#endif
