#!/usr/bin/env bash
# One-time (idempotent) setup on Debian 12: Debian packages, then Kokkos + Kokkos Kernels for the host.
# Both README commands call this; a second run only checks and returns.
#   tools/setup.sh --example-text   also installs Debian's fortunes (a text to train on, README)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

kamp_step "Debian packages"
[ -r /etc/debian_version ] || kamp_die "this is not a Debian system" \
  "on other systems install Kokkos, HDF5, Catch2 2, MPI and OpenBLAS yourself and follow README's 'Building on a cluster'"
kamp_apt_install build-essential ccache cmake ninja-build pkg-config dpkg-dev xz-utils patch ca-certificates \
  libhdf5-dev libhdf5-openmpi-dev hdf5-tools libopenmpi-dev openmpi-bin \
  catch2 libopenblas-dev libdnnl-dev ocl-icd-opencl-dev libcli11-dev nlohmann-json3-dev libyaml-cpp-dev libbenchmark-dev python3-h5py \
  gfortran libdlpack-dev \
  python3-matplotlib procps clang-format libsentencepiece-dev sentencepiece \
  slurmctld slurmd slurm-client munge
if [ "${1:-}" = "--example-text" ]; then
  kamp_step "an example text to train on: Debian's fortunes (/usr/share/games/fortunes)"
  kamp_apt_install fortunes
fi

kamp_step "Kokkos $KAMP_KOKKOS_VERSION for the host (Serial + OpenMP)"
"$KAMP_REPO_DIR/tools/kokkos.sh" host
