#!/usr/bin/env bash
# Every relative link in README.md, docs/*.md and configs/**/README.md points to a file (or
# folder) that exists, and its #anchor, if any, to a heading of that file; no link leads
# outside the repository (local addresses such as 127.0.0.1 in examples aside).
#   docs_links_test.sh SOURCE_DIR
set -u
cd "$1" || exit 2
python3 - README.md docs/*.md $(find configs -name README.md | sort) <<'PY'
import os, re, sys

def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    s = heading.strip().lower().replace("`", "")
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")

def strip_code(text):
    """The text without fenced code blocks (lines kept, so line numbers stay right)."""
    out, fenced = [], False
    for line in text.split("\n"):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            out.append("")
        else:
            out.append("" if fenced else re.sub(r"`[^`]*`", "``", line))
    return out

# Headings keep their code spans (strip_code blanks them), so they are read raw.
def heading_lines(path):
    fenced = False
    for line in open(path, encoding="utf-8").read().split("\n"):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced:
            yield line

def anchors(path, cache={}):
    if path not in cache:
        seen, result = {}, set()
        for line in heading_lines(path):
            m = re.match(r"#{1,6} (.*)", line)
            if m:
                base = slug(m.group(1))
                n = seen.get(base, 0)
                seen[base] = n + 1
                result.add(base if n == 0 else f"{base}-{n}")
        cache[path] = result
    return cache[path]

failures = checked = 0
def fail(msg):
    global failures
    failures += 1
    print("FAIL:", msg)

for doc in sys.argv[1:]:
    for number, line in enumerate(strip_code(open(doc, encoding="utf-8").read()), 1):
        for target in re.findall(r"\]\(([^)\s]+)\)", line):
            where = f"{doc}:{number}: {target}"
            checked += 1
            if re.match(r"[a-z][a-z0-9+.-]*:", target):
                if not re.match(r"https?://(127\.0\.0\.1|localhost)[:/]", target):
                    fail(f"{where}: links outside the repository")
                continue
            path, _, anchor = target.partition("#")
            file = os.path.normpath(os.path.join(os.path.dirname(doc), path)) if path else doc
            if not os.path.exists(file):
                fail(f"{where}: no such file")
            elif anchor and (not file.endswith(".md") or anchor not in anchors(file)):
                fail(f"{where}: no heading #{anchor} in {file}")
if checked < 50:
    fail(f"only {checked} links found")
if failures == 0:
    print(f"docs links: {checked} links checked in {len(sys.argv) - 1} files, all resolve")
sys.exit(1 if failures else 0)
PY
