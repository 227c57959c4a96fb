#include <kamp/kamp.hpp>

#include <cstdio>

int main(int argc, char* argv[]) {
  Kokkos::ScopeGuard kokkos(argc, argv);
  Kokkos::View<kamp::bf16*> x("x", 4);
  Kokkos::parallel_for(
      "kamp_consumer::fill", 4, KOKKOS_LAMBDA(int i) { x(i) = kamp::from_float<kamp::bf16>(1.0f + 0.25f * i); });
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), x);
  float sum = 0;
  for (int i = 0; i < 4; ++i) sum += kamp::to_float(h(i));
  std::printf("kamp %s consumer: sum = %g\n", KAMP_VERSION_STRING, sum);
  return sum == 5.5f ? 0 : 1;
}
