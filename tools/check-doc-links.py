#!/usr/bin/env python3
"""Relative links (and anchors) in the repository's Markdown stay inside it and resolve.
    check-doc-links.py REPO FILE...   prints one line per problem; exit 1 if any."""
import os
import re
import sys

repo = os.path.realpath(sys.argv[1])
files = sys.argv[2:]
LINK = re.compile(r'!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+"[^"]*")?\)')
problems = []


def strip_code(text):
    """Drops fenced blocks and inline code, keeping line numbers."""
    out, fence = [], False
    for line in text.split("\n"):
        if line.lstrip().startswith("```"):
            fence = not fence
            out.append("")
            continue
        out.append("" if fence else re.sub(r"`[^`]*`", "", line))
    return out


def slug(heading):
    h = heading.strip().lower()
    h = "".join(c for c in h if c.isalnum() or c in " -_")
    return h.replace(" ", "-")


def anchors(path):
    result, seen, fence = set(), {}, False
    for line in open(path, encoding="utf-8").read().split("\n"):
        if line.lstrip().startswith("```"):
            fence = not fence
            continue
        m = None if fence else re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            s = slug(m.group(1))
            n = seen.get(s, 0)
            seen[s] = n + 1
            result.add(s if n == 0 else f"{s}-{n}")
    return result


for f in files:
    text = open(f, encoding="utf-8").read()
    for no, line in enumerate(text.split("\n"), 1):
        if "../shared" in line or re.search(r"(?<![\w.])/work/", line):
            problems.append(f"{f}:{no}: names a path outside the repository: {line.strip()[:80]}")
    for no, line in enumerate(strip_code(text), 1):
        for m in LINK.finditer(line):
            target = m.group(1)
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            dest = os.path.realpath(os.path.join(os.path.dirname(f), path)) if path else os.path.realpath(f)
            if not (dest == repo or dest.startswith(repo + os.sep)):
                problems.append(f"{f}:{no}: {target}: outside the repository")
                continue
            if not os.path.exists(dest):
                problems.append(f"{f}:{no}: {target}: no such file")
                continue
            if anchor:
                if not dest.endswith(".md"):
                    problems.append(f"{f}:{no}: {target}: an anchor into a non-Markdown file")
                elif anchor not in anchors(dest):
                    problems.append(f"{f}:{no}: {target}: no heading with that anchor")
print("\n".join(problems))
sys.exit(1 if problems else 0)
