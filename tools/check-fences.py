#!/usr/bin/env python3
"""Every fence in kamp's library code (kernels/, model/, bindings/) goes through
kamp::detail::fence or fence_for_host_library (kernels/include/kamp/kernels/detail/fence.hpp):
on Kokkos 3.4, which reports no fence to its Tools callbacks, those are the fences
kamp::count_launches sees, so a direct `.fence()` or `Kokkos::fence()` would be a fence the step
tests cannot find there. Usage: check-fences.py REPO-ROOT. Exit 1 naming each direct fence."""
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1])
wrapper = root / "kernels/include/kamp/kernels/detail/fence.hpp"
direct = re.compile(r"(\.fence\s*\(|Kokkos::fence\s*\()")
found = []
for part in ("kernels", "model", "bindings"):
    for path in sorted((root / part).rglob("*")):
        if path.suffix not in (".hpp", ".cpp", ".h", ".c") or path == wrapper:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            code = line.split("//", 1)[0]
            if direct.search(code):
                found.append(f"{path.relative_to(root)}:{number}: {line.strip()}")
if found:
    print("direct fences (use kamp::detail::fence(space, why) or fence_for_host_library):")
    print("\n".join(found))
    sys.exit(1)
print("every fence in kernels/, model/ and bindings/ goes through kamp::detail::fence")
