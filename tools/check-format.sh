#!/usr/bin/env bash
# CI leg: every git-tracked C++ file (*.cpp, *.hpp, *.h, *.cu; tools/patches left out) is formatted
# as .clang-format says, judged by Debian 12's clang-format 14 (`--dry-run -Werror`: nothing is
# rewritten). Other clang-format versions may format some lines differently: fix with this one.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
kamp_step "clang-format check"
kamp_apt_install clang-format
command -v clang-format >/dev/null || kamp_die "no clang-format on PATH" "apt-get install clang-format"
version=$(clang-format --version)
echo "$version"
[[ "$version" =~ version\ 14\. ]] \
  || echo "note: CI checks with clang-format 14 (Debian 12); this one may format some lines differently"

cd "$KAMP_REPO_DIR"
git rev-parse --is-inside-work-tree >/dev/null 2>&1 || kamp_die "$KAMP_REPO_DIR is not a git checkout" \
  "run the check in a clone: it reads the file list from git"
pathspec=('*.cpp' '*.hpp' '*.h' '*.cu' ':(exclude)tools/patches')
mapfile -t files < <(git ls-files -- "${pathspec[@]}")
differ=()
for f in "${files[@]}"; do
  clang-format --dry-run -Werror "$f" >/dev/null 2>&1 || differ+=("$f")
done
if [ ${#differ[@]} -gt 0 ]; then
  printf '\n%s of %s files differ from their clang-format form:\n' "${#differ[@]}" "${#files[@]}"
  printf '  %s\n' "${differ[@]}"
  echo "first differences in ${differ[0]}:"
  clang-format --dry-run "${differ[0]}" 2>&1 | head -n 20 || true
  kamp_die "C++ sources are not clang-formatted" \
    "in the clone's root, with clang-format 14:
  clang-format -i \$(git ls-files -- '*.cpp' '*.hpp' '*.h' '*.cu' ':(exclude)tools/patches')"
fi
echo "clang-format: ${#files[@]} files formatted as .clang-format says"
