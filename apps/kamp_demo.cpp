// kamp-demo: what the number formats do, shown on the default execution space.
// 1. the formats' properties; 2. why low-precision weights need care: 10000 updates of 1e-4
// added to a weight of 1.0 are swallowed by bf16 round-to-nearest-even, kept by stochastic
// rounding in expectation, and kept exactly by an fp32 master weight.
#include <kamp/kamp.hpp>

#include "train/output_checks.hpp"

#include <cstdio>
#include <cstring>
#include <optional>

namespace {

template <class T>
void print_format() {
  using t = kamp::format_traits<T>;
  std::printf(
      "  %-5s %2d exponent bits %2d mantissa bits  max %-12.6g min normal %-12.6g min subnormal %-12.6g epsilon "
      "%-10.6g ~%d digits\n",
      t::name, t::exponent_bits, t::mantissa_bits, t::max(), t::min_normal(), t::min_subnormal(), t::epsilon(),
      t::digits10);
}

// Each of `weights` independent weights starts at 1 and receives `steps` updates of `delta`,
// stored in bf16 after every update: nearest-even, or stochastic with its own random stream.
float mean_after_updates(bool stochastic, int weights, int steps, float delta) {
  Kokkos::View<kamp::bf16*> w("kamp::demo::weights", weights);
  Kokkos::parallel_for(
      "kamp::demo::updates", weights, KOKKOS_LAMBDA(int i) {
        kamp::bf16 x = kamp::from_float<kamp::bf16>(1.0f);
        for (int s = 0; s < steps; ++s) {
          const float updated = kamp::to_float(x) + delta;
          x = stochastic ? kamp::from_float_stochastic<kamp::bf16>(updated, kamp::counter_random(i, s))
                         : kamp::from_float<kamp::bf16>(updated);
        }
        w(i) = x;
      });
  float sum = 0;
  Kokkos::parallel_reduce(
      "kamp::demo::mean", weights, KOKKOS_LAMBDA(int i, float& acc) { acc += kamp::to_float(w(i)); }, sum);
  return sum / weights;
}

// kamp-demo has no options of its own; Kokkos takes its --kokkos-* ones out of argv (and prints
// its help for --help). What is left is refused with CLI11's code for an unexpected argument
// (109), as kamp-train and kamp-generate refuse it. Returns the exit status; none: run the demo.
std::optional<int> check_arguments(int argc, char* argv[]) {
  if (argc < 2) return std::nullopt;
  if (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    std::printf(
        "kamp-demo: the number formats, and what bf16 rounding does to small weight updates. Options: Kokkos' "
        "--kokkos-* only\n");
    return 0;
  }
  std::fprintf(stderr,
               "kamp-demo: error: the argument '%s' was not expected: kamp-demo takes Kokkos' --kokkos-* options "
               "only (e.g. --kokkos-threads=2)\n",
               argv[1]);
  return 109;
}

}  // namespace

int main(int argc, char* argv[]) {
  Kokkos::ScopeGuard kokkos(argc, argv);
  if (const std::optional<int> status = check_arguments(argc, argv))
    return kamp::app::exit_status("kamp-demo", *status);
  std::printf("kamp %s on Kokkos execution space %s\n\nFormats:\n", KAMP_VERSION_STRING,
              Kokkos::DefaultExecutionSpace::name());
  print_format<float>();
  print_format<kamp::fp16>();
  print_format<kamp::bf16>();

  constexpr int weights = 4096, steps = 10000;
  constexpr float delta = 1e-4f;
  float master = 1.0f;
  for (int s = 0; s < steps; ++s) master += delta;
  const float nearest = mean_after_updates(false, weights, steps, delta);
  const float stochastic = mean_after_updates(true, weights, steps, delta);
  std::printf("\n%d updates of %g to a weight of 1 (exact result 2):\n", steps, delta);
  std::printf("  fp32 master weight           %.6f\n", master);
  std::printf("  bf16, round-to-nearest-even  %.6f   (every update is below half an ulp: all swallowed)\n", nearest);
  std::printf("  bf16, stochastic rounding    %.6f   (mean of %d weights)\n", stochastic, weights);
  const bool as_expected = nearest == 1.0f && stochastic > 1.95f && stochastic < 2.05f;
  std::printf("\n%s\n", as_expected ? "demo OK" : "demo FAILED: unexpected rounding behaviour");
  return kamp::app::exit_status("kamp-demo", as_expected ? 0 : 1);
}
