// kamp::gemm in a user's Kokkos code: C = A·B with A and B in bf16 or fp16 and products summed
// in fp32, against the same product in fp64 of the same (rounded) inputs. Prints the error and
// the path each GEMM took on this machine (a vendor library or kamp's portable kernel).
#include <kamp/kamp.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>

namespace {

using space = Kokkos::DefaultExecutionSpace;
using matrix = Kokkos::View<float**, Kokkos::LayoutRight>;

// One M x K x N product with inputs of type T. Returns the largest error relative to the fp64
// result's scale, Σ_k |a_ik b_kj|.
template <class T>
double run(const char* type, int m, int k, int n) {
  Kokkos::View<T**, Kokkos::LayoutRight> a("a", m, k), b("b", k, n);
  matrix c("c", m, n);
  // Inputs rounded to T from values in [-1, 1), on the device.
  Kokkos::parallel_for(
      "example::fill", Kokkos::MDRangePolicy<Kokkos::Rank<2>>({0, 0}, {m, k}), KOKKOS_LAMBDA(int i, int j) {
        a(i, j) = kamp::from_float<T>(float(kamp::counter_random(1, std::uint64_t(i) * k + j) >> 8) * 0x1p-23f - 1.0f);
      });
  Kokkos::parallel_for(
      "example::fill", Kokkos::MDRangePolicy<Kokkos::Rank<2>>({0, 0}, {k, n}), KOKKOS_LAMBDA(int i, int j) {
        b(i, j) = kamp::from_float<T>(float(kamp::counter_random(2, std::uint64_t(i) * n + j) >> 8) * 0x1p-23f - 1.0f);
      });
  kamp::gemm(space(), kamp::op::none, kamp::op::none, 1.0f, a, b, 0.0f, c);
  const std::string path = kamp::gemm_path_for<space>(kamp::op::none, kamp::op::none, 1.0f, a, b, 0.0f, c);

  // The fp64 reference on the host, from the exact values of the T inputs.
  const auto ha = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a);
  const auto hb = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), b);
  const auto hc = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), c);
  double worst = 0;
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double exact = 0, scale = 0;
      for (int p = 0; p < k; ++p) {
        const double x = kamp::to_float(ha(i, p)), y = kamp::to_float(hb(p, j));
        exact += x * y;
        scale += std::abs(x * y);
      }
      worst = std::max(worst, std::abs(hc(i, j) - exact) / scale);
    }
  std::printf("%-4s x %-4s -> fp32, %d x %d x %d, path %-10s: max error %.2e of Σ|a·b| (fp32 summation allows %.1e)\n",
              type, type, m, k, n, path.c_str(), worst, k * 0x1p-24);
  return worst / (k * 0x1p-24);
}

}  // namespace

int main(int argc, char* argv[]) {
  Kokkos::ScopeGuard kokkos(argc, argv);
  std::printf("kamp::gemm on %s\n", space::name());
  // Products of two 16-bit values are exact in fp32, so the only error is fp32 summation:
  // at most K units of 2^-24 of Σ|a·b| (the standard bound; real errors are far below it).
  const double bf16 = run<kamp::bf16>("bf16", 256, 512, 192);
  const double fp16 = run<kamp::fp16>("fp16", 256, 512, 192);
  const bool ok = bf16 <= 1.0 && fp16 <= 1.0;
  std::printf("%s\n", ok ? "within the fp32 summation bound" : "FAILED: an error exceeds the fp32 summation bound");
  return ok ? 0 : 1;
}
