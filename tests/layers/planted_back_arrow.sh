#!/usr/bin/env bash
# The layer check must fail on a back arrow: a copy of the checked folders with one include planted
# that points up (network -> training) is refused, by file and line; the unchanged copy passes.
set -euo pipefail
src=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r "$src/kernels" "$src/model" "$src/apps" "$tmp/"
"${PYTHON3:-python3}" "$src/tools/check-layers.py" "$tmp" >/dev/null || { echo "FAIL: the unchanged copy was refused"; exit 1; }
target=$tmp/model/include/kamp/model/network/gpt.hpp
sed -i '0,/^#include </s||#include <kamp/model/training/trainer.hpp>\n#include <|' "$target"
line=$(grep -n 'kamp/model/training/trainer.hpp' "$target" | cut -d: -f1)
if out=$("${PYTHON3:-python3}" "$src/tools/check-layers.py" "$tmp" 2>&1); then
  echo "FAIL: the planted include network -> training passed the check"; exit 1
fi
grep -q "model/include/kamp/model/network/gpt.hpp:$line: network includes kamp/model/training/trainer.hpp" <<<"$out" \
  || { echo "FAIL: the refusal does not name the planted include:"; echo "$out"; exit 1; }
echo "planted back arrow refused: $(head -n1 <<<"$out")"
