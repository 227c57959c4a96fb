# shellcheck shell=bash
# Shared helpers for the checks that run in Debian chroots kept in the setup cache
# (tools/check-hdf5-fallback.sh, tools/check-newest-toolchain.sh). Sourced after
# common.sh, never run. They need root: debootstrap, chroot, mount.

# sid's Release file is past its Valid-Until date on this registry; the others' are not, and
# the option does them no harm.
kamp_chroot_apt_opts=(-o Acquire::Check-Valid-Until=false -o APT::Install-Recommends=false -y -qq)

# What kamp_bind and kamp_overlay mounted, in order; kamp_unmount_all undoes it (set it as an EXIT trap).
kamp_chroot_mounts=()
kamp_unmount_all() {
  local i
  for ((i = ${#kamp_chroot_mounts[@]} - 1; i >= 0; i--)); do
    umount "${kamp_chroot_mounts[$i]}" 2>/dev/null || umount -l "${kamp_chroot_mounts[$i]}" || true
  done
  kamp_chroot_mounts=()
}
kamp_bind() {  # kamp_bind SOURCE TARGET [ro]
  mkdir -p "$2"
  mount --bind "$1" "$2"
  kamp_chroot_mounts+=("$2")
  [ "${3:-}" = ro ] && mount -o remount,bind,ro "$2"
  return 0
}
# kamp_overlay LOWER SCRATCH: LOWER (a chroot) seen at SCRATCH/root, its writes kept in SCRATCH,
# so a check can install or remove packages and the cached chroot stays as built. Fails (status 1)
# where the kernel has no overlayfs.
kamp_overlay() {
  mkdir -p "$2/upper" "$2/work" "$2/root"
  mount -t overlay overlay -o "lowerdir=$1,upperdir=$2/upper,workdir=$2/work" "$2/root" 2>/dev/null || return 1
  kamp_chroot_mounts+=("$2/root")
}
# kamp_in_root ROOT [NAME=VALUE...] COMMAND...: COMMAND inside the chroot ROOT, in a clean environment.
kamp_in_root() {
  local root=$1
  shift
  chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
    DEBIAN_FRONTEND=noninteractive "$@"
}
# Mounts below DIR, deepest first (a killed run leaves its bind mounts behind).
kamp_mounts_below() { awk -v r="$1/" 'index($5, r) == 1 { print $5 }' /proc/self/mountinfo | sort -r; }
kamp_unmount_below() {
  local m
  for m in $(kamp_mounts_below "$1"); do umount "$m" 2>/dev/null || umount -l "$m"; done
}
# Removing a chroot with /proc or /dev still bound below it would delete the host's.
kamp_remove_root() {
  kamp_unmount_below "$1"
  if [ -n "$(kamp_mounts_below "$1")" ]; then
    kamp_die "something is still mounted below $1" "unmount it (grep $1 /proc/self/mountinfo), then rerun"
  fi
  rm -rf --one-file-system "$1"
}

# kamp_chroot_build ROOT SUITE MIRROR LOG PACKAGES...: a fresh minbase chroot of Debian SUITE in
# ROOT with PACKAGES installed (without recommends), logging to LOG. Leaves /proc and /dev bound
# in it for the caller's further steps (kamp_unmount_all ends them); the caller then records its
# recipe in ROOT. When Debian cannot be fetched, removes ROOT, sets kamp_chroot_error and
# returns 1.
kamp_chroot_build() {
  local root=$1 suite=$2 mirror=$3 log=$4
  shift 4
  kamp_chroot_error=
  (kamp_apt_install debootstrap) >/dev/null || { kamp_chroot_error="debootstrap could not be installed"; return 1; }
  kamp_remove_root "$root"
  if ! debootstrap --variant=minbase "$suite" "$root" "$mirror" >"$log" 2>&1; then
    kamp_remove_root "$root"
    kamp_chroot_error="debootstrap of Debian $suite from $mirror failed"
    return 1
  fi
  kamp_bind /proc "$root/proc"
  kamp_bind /dev "$root/dev"
  if ! { kamp_in_root "$root" apt-get "${kamp_chroot_apt_opts[@]}" update \
         && kamp_in_root "$root" apt-get "${kamp_chroot_apt_opts[@]}" install "$@"; } >>"$log" 2>&1; then
    kamp_unmount_all
    kamp_remove_root "$root"
    kamp_chroot_error="apt-get could not install Debian $suite's packages"
    return 1
  fi
}
