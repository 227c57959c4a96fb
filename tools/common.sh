# Shared helpers for kamp's setup scripts. Sourced, never run.
# KAMP_CACHE_DIR holds downloaded sources and Kokkos builds outside the clone, so a fresh clone reuses them.
KAMP_CACHE_DIR=${KAMP_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kamp}
KAMP_KOKKOS_VERSION=3.4.01
KAMP_REPO_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
KAMP_JOBS=${KAMP_JOBS:-$(nproc)}

# kamp's own builds go through ccache. Each flag that selects instructions is explicit (Kokkos'
# host arch gives -march=skylake-avx512 or -march=znver2, never -march=native), and ccache keys
# objects by their flags, so all CPU kinds share one cache: an AVX-512 Xeon reuses what a Zen 4
# compiled for the same Kokkos arch, and an AVX2 host gets entries of its own. What depends on no
# host CPU has a cache of its own, warm whatever the CPU kind: the GPU compile checks
# (ccache-gpu) and the sid leg (ccache-sid, tools/check-newest-toolchain.sh). CI clones anew each
# run; the base directory (the clone) makes paths inside the clone relative, so clones share entries.
kamp_ccache_launcher_in() {  # kamp_ccache_launcher_in DIR: the CMake argument that compiles through ccache in DIR
  echo "-DCMAKE_CXX_COMPILER_LAUNCHER=env;CCACHE_DIR=$1;CCACHE_BASEDIR=$KAMP_REPO_DIR;CCACHE_MAXSIZE=20G;ccache"
}
# The caches kept before, one per CPU kind (ccache-<hash>, ccache-sid-<hash>), become these; the
# GPU checks' objects were in the first, so it seeds ccache-gpu.
for kamp_old_cache in "$KAMP_CACHE_DIR"/ccache-sid-* "$KAMP_CACHE_DIR"/ccache-[0-9a-f]*; do
  [ -d "$kamp_old_cache" ] || continue
  if [[ $kamp_old_cache == */ccache-sid-* ]]; then
    [ -e "$KAMP_CACHE_DIR/ccache-sid" ] || mv "$kamp_old_cache" "$KAMP_CACHE_DIR/ccache-sid"
  elif [ ! -e "$KAMP_CACHE_DIR/ccache" ]; then
    [ -e "$KAMP_CACHE_DIR/ccache-gpu" ] || cp -a "$kamp_old_cache" "$KAMP_CACHE_DIR/ccache-gpu"
    mv "$kamp_old_cache" "$KAMP_CACHE_DIR/ccache"
  fi
done
kamp_ccache_launcher=("$(kamp_ccache_launcher_in "$KAMP_CACHE_DIR/ccache")")

kamp_step() { printf '\n==> %s\n' "$*"; }

# kamp_report_skips BUILD-DIR: after a ctest run in BUILD-DIR, names each test that skipped itself
# (exit 77, shown by CTest as "Skipped": a tool or CPU feature missing, or the placeholder
# registered where a tool was missing at configure time) with its reason. With KAMP_CI=1
# (.ci/run; CI installs every tool) any skip fails the leg.
kamp_report_skips() {
  local reasons
  reasons=$(awk '/^[0-9]+\/[0-9]+ Test: / { test = $0; sub(/^[0-9]+\/[0-9]+ Test: /, "", test) } /kamp test skipped: / { sub(/.*kamp test skipped: /, ""); print "  " test ": " $0 }' \
    "$1/Testing/Temporary/LastTest.log" 2>/dev/null | sort -u || true)
  [ -n "$reasons" ] || return 0
  printf 'tests that did not run here, and why:\n%s\n' "$reasons"
  [ "${KAMP_CI:-0}" = 1 ] || return 0
  kamp_die "CI must run every test, and the tests above skipped themselves" \
    "install what each reason names through tools/setup.sh (or the leg's chroot recipe), so CI runs them"
}
kamp_die() {
  printf '\nkamp setup error: %s\n' "$1" >&2
  [ -n "${2:-}" ] && printf 'fix: %s\n' "$2" >&2
  exit 1
}

# Install the Debian packages given as arguments that are not installed yet.
kamp_apt_install() {
  local missing=()
  local p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    echo "all ${#} packages already installed"
    return 0
  fi
  echo "installing: ${missing[*]}"
  if [ "$(id -u)" -ne 0 ]; then
    kamp_die "missing Debian packages: ${missing[*]}" \
      "run this script as root, or ask an administrator to run: apt-get install ${missing[*]}"
  fi
  export DEBIAN_FRONTEND=noninteractive
  mkdir -p "$KAMP_CACHE_DIR"
  local log="$KAMP_CACHE_DIR/apt.log"
  { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >"$log" 2>&1 \
    || { tail -n 20 "$log"; kamp_die "apt-get failed installing: ${missing[*]} (log: $log)" \
           "read apt's message above; check network access to Debian's mirror (package names are bookworm's)"; }
  echo "installed ${#missing[@]} packages (apt log: $log)"
}

# After tools/setup.sh: the CMake arguments that point kamp at the setup's Kokkos and Kokkos Kernels.
kamp_read_kokkos_args() {
  kamp_kokkos_args=(-DKokkos_ROOT="$(cat "$KAMP_CACHE_DIR/kokkos-host.prefix")"
                    -DKokkosKernels_ROOT="$(cat "$KAMP_CACHE_DIR/kokkoskernels-host.prefix")")
}

# kamp_configure_check NAME WHAT CMAKE-ARGS...: setup, then configures a check build of kamp in
# build/checks/NAME against the setup's Kokkos and sets check_build to it. Inside the clone: a
# CMake build tree belongs to one source tree, and CI clones anew.
kamp_configure_check() {
  local name=$1 what=$2
  shift 2
  "$KAMP_REPO_DIR/tools/setup.sh" >/dev/null
  kamp_read_kokkos_args
  check_build="$KAMP_REPO_DIR/build/checks/$name"
  mkdir -p "$(dirname "$check_build")"
  kamp_step "building kamp $what in $check_build"
  cmake -S "$KAMP_REPO_DIR" -B "$check_build" -G Ninja -DCMAKE_BUILD_TYPE=Release "${kamp_ccache_launcher[@]}" \
    "${kamp_kokkos_args[@]}" "$@" >/dev/null \
    || kamp_die "configuring kamp $what failed" "read CMake's message above"
}
