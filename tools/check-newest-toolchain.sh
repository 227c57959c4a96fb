#!/usr/bin/env bash
# The newest-toolchain CI leg: Debian sid's own packages (Kokkos 5.2.2 OpenMP-only C++20, g++ 16,
# CMake 4, Catch2 3, oneDNN 3, HDF5 2, Open MPI) in a chroot kept in the setup cache (built when
# missing or when the package list changes). Builds this clone there, runs every test except
# `long` and `stress`, then the main job; then builds it against Kokkos 4.5.1 + Kokkos Kernels
# 4.5.1 (Trilinos 16.1's packages, Serial only, C++17, unpacked into a prefix of their own since
# they install the same paths as libkokkos-dev) and runs its numeric, kernel and model tests. If
# sid cannot be fetched, one loud line says so and the leg ends with success, except in CI
# (KAMP_CI=1), where it fails; once the chroot is ready, any configure, build or test failure
# fails, and in CI so does a test that skipped itself. Needs root (debootstrap, chroot, mounts).
# Arguments go to ctest.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname "${BASH_SOURCE[0]}")/chroot.sh"

[ "$(id -u)" -eq 0 ] || kamp_die "the newest-toolchain leg needs root (debootstrap, chroot)" "run it as root, as CI does"
root="$KAMP_CACHE_DIR/sid-root"
mirror=${KAMP_SID_MIRROR:-http://deb.debian.org/debian}
log="$KAMP_CACHE_DIR/sid.log"
packages=(g++ cmake ninja-build pkg-config binutils ccache libkokkos-dev libhdf5-dev libhdf5-openmpi-dev hdf5-tools catch2 libdnnl-dev
          libopenblas-dev libopenmpi-dev openmpi-bin libcli11-dev nlohmann-json3-dev libyaml-cpp-dev libbenchmark-dev python3-h5py
          gfortran libdlpack-dev make)
# Kokkos 4: Trilinos' Kokkos and Kokkos Kernels with their runtime libraries and the TPL files
# (trilinos-dev) their CMake packages include; only unpacked, never installed.
kokkos4_debs=(libtrilinos-kokkos-16.1 libtrilinos-kokkos-dev libtrilinos-kokkos-kernels-16.1
              libtrilinos-kokkos-kernels-dev trilinos-dev)
kokkos4=/opt/kokkos4
recipe="sid recipe=3 packages=${packages[*]} kokkos4=${kokkos4_debs[*]}"

skip() {
  echo "CI: ######## NEWEST-TOOLCHAIN LEG NOT RUN: $1 (log: $log) ########"
  [ "${KAMP_CI:-0}" = 1 ] && kamp_die "CI must run the newest-toolchain leg, and it could not start" \
    "check that the Debian mirror ($mirror) is reachable from the CI machine"
  exit 0
}
trap kamp_unmount_all EXIT
in_root() { kamp_in_root "$root" CCACHE_DIR=/ccache "$@"; }

# One run at a time per cache: CI jobs may share it, and a run unmounts and rebuilds in place.
mkdir -p "$KAMP_CACHE_DIR"
exec 8>"$KAMP_CACHE_DIR/.sid.lock"
flock 8
kamp_unmount_below "$root"

if [ ! -f "$root/.kamp-recipe" ] || [ "$(cat "$root/.kamp-recipe")" != "$recipe" ]; then
  kamp_step "building the Debian sid chroot in $root (once; kept in the setup cache)"
  t0=$(date +%s)
  kamp_chroot_build "$root" sid "$mirror" "$log" "${packages[@]}" || skip "$kamp_chroot_error"
  in_root sh -ec "mkdir -p /tmp/debs $kokkos4; cd /tmp/debs; apt-get ${kamp_chroot_apt_opts[*]} download ${kokkos4_debs[*]};
                  for deb in *.deb; do dpkg -x \$deb $kokkos4; done; rm -rf /tmp/debs" >>"$log" 2>&1 \
    || { kamp_unmount_all; kamp_remove_root "$root"; skip "apt-get could not fetch Trilinos' Kokkos 4 packages"; }
  kamp_unmount_all
  echo "$recipe" >"$root/.kamp-recipe"
  echo "sid chroot ready in $(( $(date +%s) - t0 )) s"
fi

# Debian's libkokkos-dev 5.2.2 names two static archives in its CMake package that it does not
# ship; empty ones let find_package(Kokkos) load (README: Supported versions).
for archive in libkokkosalgorithms.a libkokkossimd.a; do
  [ -e "$root/usr/lib/x86_64-linux-gnu/$archive" ] || in_root ar rcs "/usr/lib/x86_64-linux-gnu/$archive"
done
in_root sh -c 'echo "sid toolchain: $(g++ --version | head -n1); $(cmake --version | head -n1); Kokkos $(dpkg-query -W -f="\${Version}" libkokkos-dev), Catch2 $(dpkg-query -W -f="\${Version}" libcatch2-dev), oneDNN $(dpkg-query -W -f="\${Version}" libdnnl-dev), HDF5 $(dpkg-query -W -f="\${Version}" libhdf5-dev), Open MPI $(dpkg-query -W -f="\${Version}" libopenmpi-dev)"'

kamp_bind /proc "$root/proc"
kamp_bind /dev "$root/dev"
kamp_bind /sys "$root/sys" ro  # libgomp reads the CPU topology there (OMP_PLACES)
kamp_bind "$KAMP_REPO_DIR" "$root/src/kamp" ro
# One ccache for every CPU kind: neither build below compiles for this CPU (common.sh says why).
mkdir -p "$KAMP_CACHE_DIR/ccache-sid"
kamp_bind "$KAMP_CACHE_DIR/ccache-sid" "$root/ccache"

# build_and_test NAME WHAT LIBRARY-PATH CMAKE-ARGS...: a clean build of this clone in /build/NAME
# (the targets in build_targets, all if empty), then the tests test_selection picks (and the
# ctest arguments given to this script), with LIBRARY-PATH (may be empty) as LD_LIBRARY_PATH, as a
# cluster's module would set it; a test that skipped itself fails it in CI.
build_and_test() {
  local name=$1 what=$2
  local library_path=$3
  shift 3
  rm -rf "$root/build/$name"
  kamp_step "building kamp with $what"
  in_root cmake -S /src/kamp -B "/build/$name" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_COMPILE_WARNING_AS_ERROR=ON "$@" \
    || kamp_die "configuring kamp with $what failed" "read CMake's message above"
  in_root env LD_LIBRARY_PATH="$library_path" cmake --build "/build/$name" -j "$KAMP_JOBS" \
    ${build_targets[@]+--target "${build_targets[@]}"} \
    || kamp_die "building kamp with $what failed" "read the compiler's message above"
  kamp_step "running the tests with $what (ctest ${test_selection[*]} ${ctest_args[*]})"
  in_root env LD_LIBRARY_PATH="$library_path" OMP_PROC_BIND=spread OMP_PLACES=threads \
    ctest --test-dir "/build/$name" --output-on-failure --no-tests=error "${test_selection[@]}" "${ctest_args[@]}" \
    || kamp_die "tests failed with $what" "rerun: bash tools/check-newest-toolchain.sh -R <test>"
  kamp_report_skips "$root/build/$name"
}
ctest_args=("$@")

# Everything, and every test but `long` (the exhaustive conversions: the README leg runs them),
# `stress`, `slurm` (run on the host with Debian 12's Slurm: they test the job scripts and the
# scheduler, not the toolchain, and one node runs one test cluster at a time), app.plot_metrics
# (a Python tool's test; sid's chroot has no matplotlib) and app.tokenizer (sid's
# libsentencepiece-dev names protobuf-lite in its pkg-config file without depending on
# libprotobuf-dev, so kamp builds without --tokenizer there; the README leg runs the test).
build_targets=()
test_selection=(-LE 'long|stress|slurm' -E '^app[.](plot_metrics|tokenizer)$')
build_and_test kamp "sid's toolchain and Kokkos 5.2.2" ""
kamp_step "the main job with sid's toolchain and Kokkos 5.2.2"
in_root sh -c 'rm -rf /build/main-job && mkdir /build/main-job && cd /build/main-job &&
  OMP_PROC_BIND=spread OMP_PLACES=threads exec /build/kamp/apps/kamp-train' \
  || kamp_die "the main job failed with sid's toolchain" "read its message above"

# Debian builds both Kokkos packages without a host arch; the Kokkos 4 build takes kamp's advice
# and names one (-march=x86-64-v3: AVX2, FMA, F16C, which every CI machine runs), so both kinds of
# build run; a fixed arch rather than this CPU's keeps the leg's ccache warm when the CPU kind
# changes (the host legs compile for this CPU's arch). It is the Kokkos API check: the libraries
# and the numeric, kernel and model tests (the applications use no Kokkos API those do not).
cmake_dir=$kokkos4/usr/lib/x86_64-linux-gnu/cmake
build_targets=(kamp_test_numeric kamp_test_kernels kamp_test_nn kamp_test_model)
test_selection=(-R '^(numeric|kernels|nn|model):')
# Trilinos' Kokkos Kernels library needs Kokkos' at run time: found through LD_LIBRARY_PATH.
build_and_test kokkos4 "Kokkos 4.5.1 and Kokkos Kernels 4.5.1 (Trilinos 16.1, Serial)" \
  "$kokkos4/usr/lib/x86_64-linux-gnu" -DKokkos_DIR="$cmake_dir/Kokkos" -DKokkosKernels_DIR="$cmake_dir/KokkosKernels" \
  -DCMAKE_CXX_FLAGS=-march=x86-64-v3 -DKAMP_ENABLE_APPS=OFF
