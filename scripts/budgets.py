#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The size budgets of DESIGN.md, counted from a build:

  - collector/: non-blank, non-comment lines of its .c and .h files (budget 3,200);
  - the privileged binary's own source: collector/ plus the ipc/, shared/ and seccomp/
    files ember-collector links (each .c whose global symbols are in the binary, its .h,
    the .policy tables the build turns into C), as shipped: without the sanitized test
    build's #ifdef EMBER_SANITIZERS blocks (budget 5,500);
  - no function over 80 lines outside tests/ and bench/.

    scripts/budgets.py [--build DIR] [--check]

Prints the counts and the files; with --check exits 1 when one is over its budget
(the `budgets` test in CI)."""
import argparse
import os
import re
import subprocess
import sys

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLLECTOR_BUDGET = 3200
PRIVILEGED_BUDGET = 5500
FUNCTION_BUDGET = 80
# Libraries ember-collector links besides its own, and where their sources are.
LINKED_LIBS = {"libember_ipc.a": "ipc", "libember_shared.a": "shared",
               "libember_confine.a": "seccomp"}


def code_lines(path, shipped=False):
    """Lines that are neither blank nor comments, as the project's hook counts them (in a
    .policy table, comments start with #). shipped: not the lines of #ifdef EMBER_SANITIZERS
    blocks either, which only the sanitized test build compiles (no package has them)."""
    comment = r"^\s*($|#)" if path.endswith(".policy") else r"^\s*($|//|/\*|\*)"
    n, sanitizer_only = 0, False
    with open(path, errors="replace") as f:
        for line in f:
            if shipped and re.match(r"^#ifdef EMBER_SANITIZERS\b", line):
                sanitizer_only = True
            if not sanitizer_only and not re.match(comment, line):
                n += 1
            if sanitizer_only and re.match(r"^#endif", line):
                sanitizer_only = False
    return n


def defined_symbols(path):
    out = subprocess.run(["nm", "--defined-only", path], capture_output=True, text=True).stdout
    return {l.split()[-1] for l in out.splitlines() if len(l.split()) == 3 and l.split()[1] in "TDBR"}


def archive_members(path):
    """{member: its global symbols}."""
    out = subprocess.run(["nm", "--defined-only", path], capture_output=True, text=True).stdout
    members, current = {}, None
    for line in out.splitlines():
        if line.endswith(".o:"):
            current = line[:-1]
            members[current] = set()
        elif current and len(line.split()) == 3 and line.split()[1] in "TDBR":
            members[current].add(line.split()[2])
    return members


def linked_sources(build):
    """The ipc/, shared/, seccomp/ sources whose objects are in ember-collector."""
    binary = defined_symbols(os.path.join(build, "ember-collector"))
    files = []
    for lib, folder in LINKED_LIBS.items():
        archive = next((os.path.join(d, lib) for d, _, fs in os.walk(build) if lib in fs), None)
        if not archive:
            sys.exit(f"budgets: no {lib} under {build}: build first")
        for member, syms in sorted(archive_members(archive).items()):
            if not syms & binary:
                continue
            base = member[:-len(".c.o")]
            if base.endswith("_policy"):  # generated from seccomp/NAME.policy
                files.append(os.path.join("seccomp", base[:-len("_policy")] + ".policy"))
                continue
            for ext in (".c", ".h"):
                p = os.path.join(folder, base + ext)
                if os.path.exists(os.path.join(SRC, p)):
                    files.append(p)
    # Headers those files include from their own folders without a .c (shared/cleanup.h...).
    for folder in set(LINKED_LIBS.values()):
        for name in sorted(os.listdir(os.path.join(SRC, folder))):
            p = os.path.join(folder, name)
            if name.endswith(".h") and p not in files and \
                    not os.path.exists(os.path.join(SRC, p[:-2] + ".c")) and included(p):
                files.append(p)
    return files


def included(header):
    """Whether a collector/ file, or a file it links, includes header."""
    pattern = f'#include "{header}"'
    for folder in ("collector", "ipc", "shared", "seccomp"):
        for name in os.listdir(os.path.join(SRC, folder)):
            if name.endswith((".c", ".h")):
                with open(os.path.join(SRC, folder, name), errors="replace") as f:
                    if pattern in f.read():
                        return True
    return False


def long_functions():
    """(lines, file, first line) of each function body over the budget, outside tests."""
    out = []
    for folder in ("frontend", "collector", "symbolizer", "ipc", "shared", "seccomp", "bpf"):
        for d, _, names in os.walk(os.path.join(SRC, folder)):
            for name in names:
                if not name.endswith((".c", ".h")):
                    continue
                path = os.path.join(d, name)
                with open(path, errors="replace") as f:
                    lines = f.read().split("\n")
                i = 0
                while i < len(lines):
                    # A function: a line "{" at column 0 after a signature (not "= {").
                    if lines[i] == "{" and i and "(" in " ".join(lines[max(0, i - 4):i]) and \
                            not lines[i - 1].rstrip().endswith(("=", ";")):
                        j = i + 1
                        while j < len(lines) and lines[j] != "}":
                            j += 1
                        if j - i - 1 > FUNCTION_BUDGET:
                            out.append((j - i - 1, os.path.relpath(path, SRC), lines[i - 1].strip()))
                        i = j
                    i += 1
    return sorted(out, reverse=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(SRC, "build"))
    ap.add_argument("--check", action="store_true", help="exit 1 when over a budget")
    a = ap.parse_args()
    collector = sorted(os.path.join("collector", n) for n in os.listdir(os.path.join(SRC, "collector"))
                       if n.endswith((".c", ".h")))
    ncollector = sum(code_lines(os.path.join(SRC, p)) for p in collector)
    linked = linked_sources(a.build)
    nlinked = sum(code_lines(os.path.join(SRC, p), shipped=True) for p in linked)
    frontend = [os.path.join("frontend", n) for n in os.listdir(os.path.join(SRC, "frontend"))
                if n.endswith((".c", ".h"))]
    nfrontend = sum(code_lines(os.path.join(SRC, p)) for p in frontend)
    print(f"collector/: {ncollector} lines (budget {COLLECTOR_BUDGET})")
    print(f"privileged binary's own source: {ncollector + nlinked} lines (budget {PRIVILEGED_BUDGET}): "
          f"collector/ and {nlinked} in")
    for p in linked:
        print(f"    {code_lines(os.path.join(SRC, p), shipped=True):5d}  {p}")
    print(f"frontend/ (no budget): {nfrontend} lines")
    longs = long_functions()
    print(f"functions over {FUNCTION_BUDGET} lines outside tests: {len(longs)}")
    for n, path, sig in longs:
        print(f"    {n:5d}  {path}: {sig}")
    over = ncollector > COLLECTOR_BUDGET or ncollector + nlinked > PRIVILEGED_BUDGET or longs
    if a.check and over:
        print("budgets: over budget (see above)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
