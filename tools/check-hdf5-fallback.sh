#!/usr/bin/env bash
# kamp's choice of MPI and HDF5 (cmake/kampHdf5.cmake) against Debian 12's packages (CMake 3.25,
# HDF5 1.10.8) and sid's (CMake 4, HDF5 2), with the serial HDF5 and an MPI (libhdf5-dev and
# libopenmpi-dev, not libhdf5-openmpi-dev): configures tests/setup/hdf5_fallback, which includes
# the very files kamp's configure does, in two small chroots kept in the setup cache (built when
# missing or when their recipe changes). Expected: KAMP_ENABLE_MPI=AUTO warns and builds without
# MPI, =ON stops with kamp's message naming libhdf5-openmpi-dev, =OFF is quiet, and so is HDF5_ROOT
# pointing at the serial library. In a throwaway overlay of each chroot it then installs
# libhdf5-openmpi-dev from the chroot's own cache (AUTO and ON take the parallel library, also
# through HDF5_ROOT), and in another removes libhdf5-dev (configure stops with kamp's "no HDF5"
# message). A failing configure must fail with kamp's message only, never inside FindHDF5. Prints
# each case and each leg's time; exits non-zero on any mismatch. If Debian cannot be fetched, one
# loud line says so and that leg counts as passed, except in CI (KAMP_CI=1), where it fails.
# Needs root (debootstrap, chroot, mounts).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname "${BASH_SOURCE[0]}")/chroot.sh"

[ "$(id -u)" -eq 0 ] || kamp_die "the HDF5 fallback check needs root (debootstrap, chroot)" "run it as root, as CI does"
dir="$KAMP_CACHE_DIR/hdf5-fallback"
scratch="$dir/scratch"
mirror=${KAMP_DEBIAN_MIRROR:-http://deb.debian.org/debian}
packages=(gcc cmake make pkg-config libhdf5-dev libopenmpi-dev)
parallel=libhdf5-openmpi-dev  # only downloaded into the chroot's apt cache; installed in an overlay
src=/src/kamp/tests/setup/hdf5_fallback

cleanup() {
  kamp_unmount_all
  kamp_unmount_below "$scratch"
  [ -n "$(kamp_mounts_below "$scratch")" ] || rm -rf --one-file-system "$scratch"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# One run at a time per cache: CI jobs may share it, and a run unmounts and rebuilds in place.
mkdir -p "$dir"
exec 8>"$dir/.lock"
flock 8
cleanup
for suite in bookworm sid; do kamp_unmount_below "$dir/$suite-root"; done

failures=0
case_result() {  # case_result NAME SECONDS PROBLEM (empty: passed)
  if [ -z "$3" ]; then
    printf '  pass  %-72s %3s s\n' "$1" "$2"
  else
    printf '  FAIL  %-72s %3s s: %s\n' "$1" "$2" "$3"
    failures=$((failures + 1))
  fi
}
# run_case ROOT NAME WANT CMAKE-ARGS...: configures tests/setup/hdf5_fallback in the chroot ROOT.
# WANT is "fail REGEX" (configure fails with kamp's message matching REGEX) or "ok MPI PARALLEL
# WARNING" (configure succeeds with that outcome, the fallback warning present when WARNING is
# yes, and the probe builds and runs with a serial or parallel HDF5 as PARALLEL says). Any
# "CMake Error" not from kamp's file fails the case. CMake wraps messages, so REGEX is matched on
# the output with its whitespace squeezed.
run_case() {
  local root=$1 name=$2 want=$3
  shift 3
  local build=/tmp/hf-$((++case_no)) out="$scratch/case.log" t0=$SECONDS status=0 problem=
  kamp_in_root "$root" cmake -S "$src" -B "$build" "$@" >"$out" 2>&1 || status=$?
  local flat
  flat=$(tr -s ' \n' '  ' <"$out")
  local errors
  errors=$(grep -E '^CMake Error' "$out" | grep -v "/cmake/kampHdf5.cmake:" || true)
  if [ -n "$errors" ]; then
    problem="an error not kamp's: $(head -n1 <<<"$errors")"
  elif [ "${want%% *}" = fail ]; then
    local regex=${want#fail }
    if [ "$status" -eq 0 ]; then
      problem="configure succeeded, expected kamp's error"
    elif ! grep -q 'CMake Error at .*/cmake/kampHdf5.cmake:' "$out"; then
      problem="configure failed without kamp's error"
    elif ! grep -qE "$regex" <<<"$flat"; then
      problem="kamp's error does not match /$regex/"
    fi
  else
    local mpi parallel_want warning line
    read -r _ mpi parallel_want warning <<<"$want"
    line="kamp-hdf5-selection: KAMP_HAVE_MPI=$mpi KAMP_HAVE_PARALLEL_HDF5=$parallel_want HDF5_VERSION="
    if [ "$status" -ne 0 ]; then
      problem="configure failed (status $status)"
    elif ! grep -q -- "$line" "$out"; then
      problem="want KAMP_HAVE_MPI=$mpi KAMP_HAVE_PARALLEL_HDF5=$parallel_want, got: $(grep -o 'KAMP_HAVE_MPI=.*' "$out" || echo nothing)"
    elif [ "$warning" = yes ] && ! grep -q 'Building without MPI (one process only)' <<<"$flat"; then
      problem="no fallback warning"
    elif [ "$warning" = no ] && grep -q 'Building without MPI' <<<"$flat"; then
      problem="an unexpected fallback warning"
    else
      local kind=serial probe
      [ "$parallel_want" = ON ] && kind=parallel
      if ! kamp_in_root "$root" cmake --build "$build" >>"$out" 2>&1; then
        problem="the probe did not build with the HDF5 chosen"
      elif ! probe=$(kamp_in_root "$root" "$build/hdf5_probe" 2>&1) || [[ $probe != *", $kind"* ]]; then
        problem="the probe ran as '$probe', want $kind"
      else
        name="$name (${probe#hdf5_probe: })"
      fi
    fi
  fi
  rm -rf "${root:?}$build"
  case_result "$name" $((SECONDS - t0)) "$problem"
  [ -z "$problem" ] || sed 's/^/        | /' "$out" | tail -n 25
  return 0
}
case_no=0

# enter ROOT: binds what a configure needs into ROOT (a chroot or an overlay of one).
enter() {
  kamp_bind /proc "$1/proc"
  kamp_bind /dev "$1/dev"
  kamp_bind "$KAMP_REPO_DIR" "$1/src/kamp" ro
}
# new_view SUITE ROOT: a fresh throwaway overlay of the chroot ROOT, entered, in view; fails
# where the kernel has no overlayfs.
new_view() {
  kamp_unmount_all
  rm -rf --one-file-system "${scratch:?}/$1"
  kamp_overlay "$2" "$scratch/$1" || return 1
  view="$scratch/$1/root"
  enter "$view"
}

# not_run SUITE WHY: one loud line; in CI (KAMP_CI=1) the check then fails.
not_run() {
  echo "CI: ######## HDF5 FALLBACK CHECK ON DEBIAN $1 NOT RUN: $2 (log: $dir/$1.log) ########"
  [ "${KAMP_CI:-0}" = 1 ] && failures=$((failures + 1))
  return 0
}

leg() {  # leg SUITE
  local suite=$1 root="$dir/$1-root" log="$dir/$1.log" t_leg=$SECONDS
  local recipe="hdf5-fallback recipe=1 suite=$suite packages=${packages[*]} cached=$parallel"
  if [ ! -f "$root/.kamp-recipe" ] || [ "$(cat "$root/.kamp-recipe")" != "$recipe" ]; then
    kamp_step "building the Debian $suite chroot in $root (once; kept in the setup cache)"
    if ! kamp_chroot_build "$root" "$suite" "$mirror" "$log" "${packages[@]}"; then
      not_run "$suite" "$kamp_chroot_error"
      return 0
    fi
    # Keep only the parallel library's packages in apt's cache, for the overlay that installs it.
    if ! { kamp_in_root "$root" apt-get clean \
           && kamp_in_root "$root" apt-get "${kamp_chroot_apt_opts[@]}" install --download-only "$parallel"; } >>"$log" 2>&1; then
      kamp_unmount_all
      kamp_remove_root "$root"
      not_run "$suite" "apt-get could not download $parallel"
      return 0
    fi
    kamp_unmount_all
    echo "$recipe" >"$root/.kamp-recipe"
    echo "$suite chroot ready in $((SECONDS - t_leg)) s"
  fi
  local t_cases=$SECONDS
  kamp_step "Debian $suite: $(kamp_in_root "$root" sh -c 'echo "$(cmake --version | head -n1), HDF5 $(dpkg-query -W -f="\${Version}" libhdf5-dev), Open MPI $(dpkg-query -W -f="\${Version}" libopenmpi-dev)"')"
  local arch serial_root mpi_root
  arch=$(kamp_in_root "$root" gcc -print-multiarch)
  serial_root=/usr/lib/$arch/hdf5/serial
  mpi_root=/usr/lib/$arch/hdf5/openmpi
  local view overlays=yes
  mkdir -p "$scratch"
  if ! new_view "$suite" "$root"; then
    overlays=no view=$root  # configures in the cached chroot; the cases that change packages are left out
    enter "$view"
  fi

  echo "serial HDF5 (libhdf5-dev) and Open MPI (libopenmpi-dev):"
  run_case "$view" "AUTO: warning, then without MPI" "ok OFF OFF yes" -DKAMP_ENABLE_MPI=AUTO
  run_case "$view" "ON: kamp's error naming libhdf5-openmpi-dev" \
    "fail kamp: KAMP_ENABLE_MPI=ON, but .*is serial.*Debian: libhdf5-openmpi-dev" -DKAMP_ENABLE_MPI=ON
  run_case "$view" "OFF: serial HDF5, no warning" "ok OFF OFF no" -DKAMP_ENABLE_MPI=OFF
  run_case "$view" "AUTO, HDF5_ROOT=$serial_root: warning, then without MPI" "ok OFF OFF yes" \
    -DKAMP_ENABLE_MPI=AUTO -DHDF5_ROOT="$serial_root"
  kamp_unmount_all
  if [ $overlays = no ]; then
    not_run "$suite" "no overlayfs here: the cases with libhdf5-openmpi-dev installed and libhdf5-dev removed"
    echo "CI: HDF5 fallback check on Debian $suite took $((SECONDS - t_leg)) s (cases: $((SECONDS - t_cases)) s)"
    return 0
  fi

  echo "with $parallel installed too (from the chroot's apt cache, in an overlay):"
  new_view "$suite" "$root"
  if kamp_in_root "$view" apt-get "${kamp_chroot_apt_opts[@]}" --no-download install "$parallel" >"$scratch/apt.log" 2>&1; then
    run_case "$view" "AUTO: parallel HDF5, with MPI" "ok ON ON no" -DKAMP_ENABLE_MPI=AUTO
    run_case "$view" "ON: parallel HDF5, with MPI" "ok ON ON no" -DKAMP_ENABLE_MPI=ON
    run_case "$view" "AUTO, HDF5_ROOT=$mpi_root: parallel HDF5" "ok ON ON no" \
      -DKAMP_ENABLE_MPI=AUTO -DHDF5_ROOT="$mpi_root"
  else
    case_result "installing $parallel from the apt cache" 0 "apt-get failed: $(tail -n1 "$scratch/apt.log")"
  fi

  echo "with libhdf5-dev removed (in an overlay):"
  new_view "$suite" "$root"
  if kamp_in_root "$view" apt-get "${kamp_chroot_apt_opts[@]}" remove libhdf5-dev >"$scratch/apt.log" 2>&1; then
    run_case "$view" "AUTO: kamp's error naming libhdf5-dev" "fail kamp: no HDF5 found.*Debian: libhdf5-dev" \
      -DKAMP_ENABLE_MPI=AUTO
  else
    case_result "removing libhdf5-dev" 0 "apt-get failed: $(tail -n1 "$scratch/apt.log")"
  fi
  kamp_unmount_all
  rm -rf --one-file-system "${scratch:?}/$suite"
  echo "CI: HDF5 fallback check on Debian $suite took $((SECONDS - t_leg)) s (cases: $((SECONDS - t_cases)) s)"
}

leg bookworm
leg sid
[ "$failures" -eq 0 ] || kamp_die "$failures HDF5/MPI selection case(s) failed" \
  "read the case's CMake output above; the selection is cmake/kampHdf5.cmake"
