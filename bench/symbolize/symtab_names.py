#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bench/symbolize/symtab_names.py: function names from the symbol tables of
real libraries, ember against llvm-symbolizer, at random addresses in their
executable sections (drawn in proportion to each section's size).

The libraries carry no DWARF (Debian strips them into -dbgsym packages), so
both name addresses from .dynsym/.symtab: this checks the corners of the
symbol tables (sizes, nesting, untyped and sizeless symbols). Counted apart:
PLT entries, which ember names target@plt and llvm-symbolizer does not
name ("??"). The most frequent other differences are printed (GNU's
demangler spells "operator<< <T>" where LLVM's spells "operator<<<T>").

Usage: bench/symbolize/symtab_names.py [--build-dir build] [--addresses 4000] [FILE...]
"""
import argparse
import os
import random
import re
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
LIBS = ["/usr/lib/x86_64-linux-gnu/libstdc++.so.6", "/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0",
        "/usr/lib/x86_64-linux-gnu/libcrypto.so.3", "/usr/bin/python3.11"]


def exec_sections(path):
    """[(name, address, size)] of the executable sections."""
    out = subprocess.run(["readelf", "-SW", path], capture_output=True, text=True).stdout
    return [(m.group(1), int(m.group(2), 16), int(m.group(3), 16)) for m in re.finditer(
        r"\]\s+(\S+)\s+\S+\s+([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)\s+\S+\s+(\S*X\S*)", out)]


def names(cmd, addrs):
    text = subprocess.run(cmd, input="".join(f"0x{a:x}\n" for a in addrs), capture_output=True,
                          text=True).stdout.split("\n")
    return {int(text[i], 16): text[i + 1] for i in range(len(text) - 1)
            if text[i].startswith("0x")}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build-dir", default=os.path.join(SRC, "build"))
    ap.add_argument("--addresses", type=int, default=4000)
    ap.add_argument("files", nargs="*", default=[f for f in LIBS if os.path.exists(f)])
    args = ap.parse_args()
    driver = os.path.join(args.build_dir, "bench", "symbolize", "ember-symbolize-bench")
    rng = random.Random(7)
    for path in args.files:
        secs = exec_sections(path)
        addrs = []
        for _ in range(args.addresses):
            _, start, size = rng.choices(secs, weights=[s[2] for s in secs])[0]
            addrs.append(start + rng.randrange(size))
        ours = names([driver, "--print", "--passes", "1", path], addrs)
        theirs = names(["llvm-symbolizer", "--no-inlines", "--print-address", "--obj=" + path],
                       addrs)
        same = plt = spelling = 0
        differ = {}
        for a in addrs:
            o, t = ours.get(a, "??"), theirs.get(a, "??")
            if o == t:
                same += 1
            elif t == "??" and o.endswith("@plt") and len(o) > 4:
                plt += 1
            elif re.sub(r"(operator\S+) <", r"\1<", o) == t:
                spelling += 1
            else:
                differ[(o, t)] = differ.get((o, t), 0) + 1
        print(f"{path}: {same}/{len(addrs)} named as llvm-symbolizer names them, "
              f"{plt} PLT entries it leaves unnamed, {spelling} spelt \"operator<< <T>\", "
              f"{sum(differ.values())} otherwise")
        for (o, t), n in sorted(differ.items(), key=lambda kv: -kv[1])[:3]:
            print(f"  {n:>4} x ember {o}\n         llvm-symbolizer {t}")


if __name__ == "__main__":
    main()
