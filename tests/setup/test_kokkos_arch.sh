#!/usr/bin/env bash
# The setup's choice of Kokkos host arch and what it does with a cached build, on made-up CPU
# flag lists for an AVX-512 host (Zen 4) and an AVX2 one (Zen 3): a cache built on one kind is
# rebuilt on the other, and an arch the CPU cannot run is refused, so no build dies of SIGILL.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../../tools/kokkos_arch.sh"
zen4="fpu sse2 avx avx2 fma bmi2 sha_ni f16c avx512f avx512dq avx512bw avx512vl avx512_bf16"
zen3="fpu sse2 avx avx2 fma bmi2 sha_ni f16c"
haswell="fpu sse2 avx avx2 fma bmi2 f16c"
old="fpu sse2 sse4_2"
passed=0 failed=0
expect() {
  if [ "$2" = "$3" ]; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAILED: $1: got '$2', want '$3'"; fi
}
expect "Zen 4 arch" "$(kamp_host_arch "$zen4" AuthenticAMD)" SKX
expect "Zen 3 arch" "$(kamp_host_arch "$zen3" AuthenticAMD)" ZEN2
expect "Haswell arch" "$(kamp_host_arch "$haswell" GenuineIntel)" HSW
expect "pre-AVX2 arch" "$(kamp_host_arch "$old" GenuineIntel)" none
expect "AVX-512 cache on an AVX2 host" "$(kamp_kokkos_cache_decision ZEN2 SKX "$zen3")" build
expect "AVX2 cache on an AVX-512 host" "$(kamp_kokkos_cache_decision SKX ZEN2 "$zen4")" build
expect "same kind" "$(kamp_kokkos_cache_decision ZEN2 ZEN2 "$zen3")" reuse
expect "nothing cached" "$(kamp_kokkos_cache_decision SKX "" "$zen4")" build
expect "SKX forced on an AVX2 host" "$(kamp_kokkos_cache_decision SKX "" "$zen3" | cut -c1-7)" refuse:
expect "SKX forced on an AVX2 host, cached" "$(kamp_kokkos_cache_decision SKX SKX "$zen3" | cut -c1-7)" refuse:
expect "ZEN2 forced on Haswell (no sha_ni)" "$(kamp_kokkos_cache_decision ZEN2 "" "$haswell" | cut -c1-7)" refuse:
expect "no arch anywhere" "$(kamp_kokkos_cache_decision none SKX "$old")" build
# What this machine would choose runs on it.
flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null | cut -d: -f2-)
if [ -n "$flags" ]; then
  here=$(kamp_host_arch "$flags" "$(grep -m1 '^vendor_id' /proc/cpuinfo)")
  expect "this CPU's own arch ($here) runs here" "$(kamp_kokkos_cache_decision "$here" "$here" "$flags")" reuse
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
