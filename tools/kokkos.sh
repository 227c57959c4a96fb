#!/usr/bin/env bash
# Build Kokkos 3.4.01 (+ Kokkos Kernels 3.4.01) from Debian's own trilinos source package into the cache.
#   tools/kokkos.sh host   Serial + OpenMP, Kokkos Kernels with the OpenBLAS TPL   (what tests and apps use)
#   tools/kokkos.sh hip    Serial + HIP (hipcc, VEGA908)                          (compile checks)
#   tools/kokkos.sh cuda   Serial + OpenMP + CUDA (nvcc, AMPERE80, patched for CUDA 13)  (compile checks, GPU runs)
# OpenBLAS uses the gfortran symbol convention (name_); giving it spares Kokkos Kernels from
# probing a Fortran compiler.
# Writes the install prefixes to $KAMP_CACHE_DIR/kokkos-<backend>.prefix (and kokkoskernels-host.prefix). Reuses a build whose version stamp matches.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

backend=${1:-host}
case "$backend" in host|hip|cuda) ;; *) kamp_die "unknown backend '$backend'" "use one of: host, hip, cuda" ;; esac

src_root="$KAMP_CACHE_DIR/src/kokkos-$KAMP_KOKKOS_VERSION"
prefix="$KAMP_CACHE_DIR/install/kokkos-$KAMP_KOKKOS_VERSION-$backend"
source "$(dirname "${BASH_SOURCE[0]}")/kokkos_arch.sh"
# Kokkos passes its host arch flags (-march=...) on to everything built against it; without
# them the 16-bit conversions compile to SSE2 only. KAMP_KOKKOS_HOST_ARCH overrides the guess
# (a Kokkos arch name such as SKX, ZEN2, HSW, or "none").
host_arch=
if [ "$backend" = host ]; then
  cpu_flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null | cut -d: -f2- || true)
  host_arch=${KAMP_KOKKOS_HOST_ARCH:-$(kamp_host_arch "$cpu_flags" "$(grep -m1 '^vendor_id' /proc/cpuinfo 2>/dev/null || true)")}
  # One prefix per arch: a cache shared between CPU kinds (a home directory on a cluster whose
  # login and compute nodes differ) keeps one build for each instead of rebuilding in turn.
  prefix+="-$host_arch"
fi
# Kokkos Kernels goes into a prefix of its own, as on clusters where modules install each package
# apart: every kamp build then proves that kamp (and its installed package) finds it there.
kernels_prefix="$prefix/kokkos-kernels"
record_prefixes() {
  echo "$prefix" > "$KAMP_CACHE_DIR/kokkos-$backend.prefix"
  [ "$backend" = host ] && echo "$kernels_prefix" > "$KAMP_CACHE_DIR/kokkoskernels-$backend.prefix"
  return 0
}
# The stamp changes whenever the build recipe does, so an old cache is rebuilt rather than trusted.
stamp_text="kokkos=$KAMP_KOKKOS_VERSION backend=$backend recipe=7"
[ "$backend" = host ] && stamp_text+=" arch=$host_arch"
[ "$backend" = cuda ] && stamp_text+=" patch=$(sha256sum "$KAMP_REPO_DIR/tools/patches/kokkos-3.4.01-cuda13.patch" | cut -c1-16)"

fetch_sources() {
  [ -f "$src_root/.extracted" ] && return 0
  kamp_step "fetching Debian's trilinos source package (only packages/kokkos and packages/kokkos-kernels are kept)"
  command -v apt-get >/dev/null || kamp_die "apt-get not found" "this script needs Debian 12; on other systems build Kokkos yourself and pass -DKokkos_ROOT"
  if ! grep -rqs '^Types:.*deb-src' /etc/apt/sources.list.d/ && ! grep -qs '^deb-src' /etc/apt/sources.list; then
    [ "$(id -u)" -eq 0 ] || kamp_die "no deb-src entry in apt's sources" "run as root once, or add a 'deb-src http://deb.debian.org/debian bookworm main' line"
    cat > /etc/apt/sources.list.d/kamp-deb-src.sources <<SRC
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
    apt-get update -qq
  fi
  local dl="$KAMP_CACHE_DIR/download"
  mkdir -p "$dl"
  if ! ls "$dl"/trilinos_*.orig.tar.* >/dev/null 2>&1; then
    (cd "$dl" && apt-get source --download-only trilinos) \
      || kamp_die "apt-get source trilinos failed" "check that Debian's mirror is reachable and that dpkg-dev is installed"
  fi
  local tarball
  tarball=$(ls "$dl"/trilinos_*.orig.tar.* | head -n1)
  rm -rf "$src_root.tmp" && mkdir -p "$src_root.tmp"
  tar -xf "$tarball" -C "$src_root.tmp" --strip-components=2 --wildcards '*/packages/kokkos/*' '*/packages/kokkos-kernels/*'
  grep -q "KOKKOS_VERSION_MINOR 4" "$src_root.tmp/kokkos/CMakeLists.txt" 2>/dev/null \
    || grep -q "set(Kokkos_VERSION_MINOR 4)" "$src_root.tmp/kokkos/CMakeLists.txt" \
    || kamp_die "the trilinos source does not contain Kokkos 3.4" "remove $KAMP_CACHE_DIR/download and retry"
  rm -rf "$src_root" && mv "$src_root.tmp" "$src_root"
  touch "$src_root/.extracted"
}

# Kokkos 3.4.01 predates CUDA 13; kamp keeps its own small patch (see docs/dependencies.md).
patched_source() {
  local variant="$KAMP_CACHE_DIR/src/kokkos-$KAMP_KOKKOS_VERSION-$1"
  if [ "$1" = cuda ]; then
    if [ ! -f "$variant/.patched" ]; then
      rm -rf "$variant" && cp -r "$src_root" "$variant"
      patch -d "$variant/kokkos" -p1 < "$KAMP_REPO_DIR/tools/patches/kokkos-3.4.01-cuda13.patch" >&2
      touch "$variant/.patched"
    fi
    echo "$variant"
  else
    echo "$src_root"
  fi
}

# Concurrent setups (two CI jobs, a user's second shell) share the cache: one builds, the other waits.
mkdir -p "$KAMP_CACHE_DIR"
exec 9>"$KAMP_CACHE_DIR/.lock"
flock 9

decision=reuse
if [ "$backend" = host ]; then
  cached_arch=$(sed -n 's/.* arch=\([A-Za-z0-9_]*\).*/\1/p' "$prefix/.kamp-stamp" 2>/dev/null || true)
  decision=$(kamp_kokkos_cache_decision "$host_arch" "$cached_arch" "$cpu_flags")
  case "$decision" in
    refuse:*) kamp_die "${decision#refuse: }" "KAMP_KOKKOS_HOST_ARCH=$host_arch was given on a CPU that cannot run it" ;;
  esac
fi
if [ "$decision" = reuse ] && [ -f "$prefix/.kamp-stamp" ] && [ "$(cat "$prefix/.kamp-stamp")" = "$stamp_text" ]; then
  echo "Kokkos $KAMP_KOKKOS_VERSION ($backend${host_arch:+, arch $host_arch}) already built in $prefix"
  record_prefixes
  exit 0
fi

fetch_sources
src=$(patched_source "$backend")
build="$KAMP_CACHE_DIR/build/kokkos-$backend"
rm -rf "$build" "$prefix"
mkdir -p "$build"

common=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$prefix" -DCMAKE_CXX_STANDARD=17
        -DCMAKE_CXX_EXTENSIONS=OFF -DKokkos_ENABLE_SERIAL=ON -DBUILD_SHARED_LIBS=OFF
        -DCMAKE_POSITION_INDEPENDENT_CODE=ON)
case "$backend" in
  host) backend_flags=(-DKokkos_ENABLE_OPENMP=ON)
        [ "$host_arch" != none ] && backend_flags+=("-DKokkos_ARCH_$host_arch=ON") ;;
  hip)
    command -v hipcc >/dev/null || kamp_die "hipcc not found" "install Debian's hipcc package (tools/gpu-compile-check.sh hip does this)"
    export HIP_PLATFORM=${HIP_PLATFORM:-amd}  # else hipcc uses nvcc whenever a CUDA toolkit is present
    backend_flags=(-DCMAKE_CXX_COMPILER=hipcc -DKokkos_ENABLE_HIP=ON -DKokkos_ARCH_VEGA908=ON) ;;
  cuda)
    nvcc_dir=${CUDA_HOME:-/usr/local/cuda}/bin
    [ -x "$nvcc_dir/nvcc" ] || kamp_die "nvcc not found in $nvcc_dir" "set CUDA_HOME to your CUDA toolkit"
    export PATH="$nvcc_dir:$PATH"
    # nvcc_wrapper's default arch (sm_35) is rejected by CUDA 13, so the arch is passed explicitly.
    # OpenMP too, so host-side tests (the exhaustive conversions) use every core of a GPU node.
    backend_flags=(-DCMAKE_CXX_COMPILER="$src/kokkos/bin/nvcc_wrapper" -DKokkos_ENABLE_CUDA=ON -DKokkos_ENABLE_OPENMP=ON
                   -DKokkos_ENABLE_CUDA_LAMBDA=ON -DKokkos_ARCH_AMPERE80=ON -DCMAKE_CXX_FLAGS=-arch=sm_80) ;;
esac

kamp_step "building Kokkos $KAMP_KOKKOS_VERSION ($backend) into $prefix"
t0=$(date +%s)
cmake -S "$src/kokkos" -B "$build/kokkos" "${common[@]}" "${backend_flags[@]}" >"$build.kokkos.log" 2>&1 \
  || { tail -n 30 "$build.kokkos.log"; kamp_die "configuring Kokkos failed (log: $build.kokkos.log)" "read the log; a missing compiler is the usual cause"; }
cmake --build "$build/kokkos" -j "$KAMP_JOBS" >>"$build.kokkos.log" 2>&1 && cmake --install "$build/kokkos" >>"$build.kokkos.log" 2>&1 \
  || { tail -n 30 "$build.kokkos.log"; kamp_die "building Kokkos failed (log: $build.kokkos.log)" "read the log"; }
echo "Kokkos built in $(( $(date +%s) - t0 )) s"

if [ "$backend" = host ]; then
  kamp_step "building Kokkos Kernels $KAMP_KOKKOS_VERSION (BLAS TPL: OpenBLAS) into $kernels_prefix"
  cmake -S "$src/kokkos-kernels" -B "$build/kernels" "${common[@]}" -DKokkos_ROOT="$prefix" \
      -DCMAKE_INSTALL_PREFIX="$kernels_prefix" \
      -DKokkosKernels_ENABLE_TPL_BLAS=ON -DBLAS_LIBRARIES=openblas -DLAPACK_LIBRARIES=openblas \
      "-DF77_BLAS_MANGLE=(name,NAME) name ## _" -DKokkosKernels_INST_DOUBLE=OFF \
      -DKokkosKernels_INST_FLOAT=ON -DKokkosKernels_ADD_DEFAULT_ETI=OFF >"$build.kernels.log" 2>&1 \
    || { tail -n 30 "$build.kernels.log"; kamp_die "configuring Kokkos Kernels failed (log: $build.kernels.log)" "is libopenblas-dev installed?"; }
  cmake --build "$build/kernels" -j "$KAMP_JOBS" >>"$build.kernels.log" 2>&1 && cmake --install "$build/kernels" >>"$build.kernels.log" 2>&1 \
    || { tail -n 30 "$build.kernels.log"; kamp_die "building Kokkos Kernels failed (log: $build.kernels.log)" "read the log"; }
fi

echo "$stamp_text" > "$prefix/.kamp-stamp"
rm -rf "$build"
record_prefixes
