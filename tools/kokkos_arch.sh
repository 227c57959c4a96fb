# Which Kokkos host arch fits this machine, and what to do with a cached build. Sourced by
# tools/kokkos.sh, and by tests/setup/test_kokkos_arch.sh with made-up CPU flag lists.

# kamp_host_arch FLAGS VENDOR: the Kokkos arch name for a CPU's /proc/cpuinfo flags and vendor.
# SKX (-march=skylake-avx512) also runs on AMD Zen 4 and later, which have its AVX-512 subsets.
kamp_host_arch() {
  local flags=" $1 " vendor=$2
  if [[ $flags == *" avx512bw "* && $flags == *" avx512vl "* && $flags == *" avx512dq "* ]]; then echo SKX
  elif [[ $vendor == *AuthenticAMD* && $flags == *" avx2 "* ]]; then echo ZEN2
  elif [[ $flags == *" avx2 "* ]]; then echo HSW
  else echo none
  fi
}

# kamp_arch_runs_here ARCH FLAGS: whether code built for Kokkos arch ARCH runs on a CPU with these
# flags (the instruction sets its -march implies are all present).
kamp_arch_runs_here() {
  local arch=$1 flags=" $2 " need f
  case "$arch" in
    SKX) need="avx2 fma avx512f avx512bw avx512vl avx512dq" ;;
    ZEN2) need="avx2 fma bmi2 sha_ni" ;;
    HSW) need="avx2 fma bmi2" ;;
    none|"") need="" ;;
    *) return 0 ;;  # an arch kamp does not pick itself (a user's override): trusted
  esac
  for f in $need; do [[ $flags == *" $f "* ]] || return 1; done
}

# kamp_kokkos_cache_decision WANTED CACHED FLAGS: what to do with a cached Kokkos built for arch
# CACHED ("" when there is none) when this machine wants WANTED. Prints "reuse", "build"
# (nothing cached, or built for another CPU kind: a build for an AVX-512 host would die of
# SIGILL on an AVX2 one, and one for AVX2 would leave AVX-512 unused), or "refuse: REASON" when
# the wanted arch itself cannot run here (an override naming an instruction set this CPU lacks).
kamp_kokkos_cache_decision() {
  local wanted=$1 cached=$2 flags=$3
  if ! kamp_arch_runs_here "$wanted" "$flags"; then
    echo "refuse: Kokkos arch $wanted needs instructions this CPU lacks (its flags lack some of what -march for $wanted implies); unset KAMP_KOKKOS_HOST_ARCH or name this CPU's arch"
  elif [ "$cached" = "$wanted" ]; then echo reuse
  else echo build
  fi
}
