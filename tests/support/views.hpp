#ifndef KAMP_TESTS_SUPPORT_VIEWS_HPP
#define KAMP_TESTS_SUPPORT_VIEWS_HPP

#include <kamp/numeric/format.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <cstring>

#include <string>
#include <vector>

namespace kamp::test {

/// A device view of the execution space's memory, filled from a host vector.
template <class T, class ExecSpace>
Kokkos::View<T*, typename ExecSpace::memory_space> to_device(const std::vector<T>& host, const std::string& label) {
  Kokkos::View<T*, typename ExecSpace::memory_space> v(label, host.size());
  Kokkos::deep_copy(v, Kokkos::View<const T*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(host.data(), host.size()));
  return v;
}

/// The contents of any 1-D view, on the host.
template <class View>
std::vector<typename View::non_const_value_type> to_host(const View& v) {
  const auto mirror = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  return std::vector<typename View::non_const_value_type>(mirror.data(), mirror.data() + mirror.extent(0));
}

/// A device scalar's value on the host.
template <class T, class... Props>
T scalar_to_host(const Kokkos::View<T, Props...>& v) {
  typename Kokkos::View<T, Props...>::non_const_value_type h;
  Kokkos::deep_copy(h, v);
  return h;
}

/// The bit pattern of a float or a kamp 16-bit value, for bitwise comparisons.
inline std::uint32_t raw_bits(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}
template <int E>
std::uint32_t raw_bits(kamp::float16<E> x) {
  return x.bits;
}

}  // namespace kamp::test

#endif
