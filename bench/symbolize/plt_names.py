#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bench/symbolize/plt_names.py: the names ember gives the PLT entries of real
libraries, compared with objdump's labels (foo@plt, from the relocations;
demangled, objdump -C, as ember demangles them: std::terminate()@plt).

For every entry objdump labels in .plt, .plt.sec and .plt.got, the driver is
asked for the first and the last byte of the entry; an answer agrees when it
is objdump's label. Entries objdump cannot name (IFUNC slots "*ABS*+0xADDR@plt",
ADDR the resolver) are counted apart: they agree when ember names them after
an IFUNC symbol at ADDR (in the file or its build-id debug file), "memcpy@plt". --base-build-dir runs another build's driver on the
same addresses (e.g. main before the PLT naming: every entry was named after
the symbol before the PLT, _init).

Usage: bench/symbolize/plt_names.py [--build-dir build] [--base-build-dir DIR] [FILE...]
"""
import argparse
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
LIBS = ["/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0", "/lib/x86_64-linux-gnu/libc.so.6",
        "/usr/lib/x86_64-linux-gnu/libstdc++.so.6", "/usr/lib/x86_64-linux-gnu/libcrypto.so.3",
        "/usr/lib/x86_64-linux-gnu/libcurl.so.4", "/usr/bin/python3.11"]


def plt_entries(path):
    """[(start, end, label)] of the PLT entries objdump labels, header excluded."""
    out = subprocess.run(["objdump", "-d", "-C", "--no-show-raw-insn", "-j", ".plt", "-j", ".plt.sec",
                          "-j", ".plt.got", path], capture_output=True, text=True).stdout
    entries, cur = [], None
    for line in out.splitlines():
        m = re.match(r"^([0-9a-f]+) <(.+)>:$", line)
        if m:
            cur = [int(m.group(1), 16), int(m.group(1), 16), m.group(2)]
            entries.append(cur)
            continue
        m = re.match(r"^\s+([0-9a-f]+):", line)
        if m and cur:
            cur[1] = int(m.group(1), 16)  # the last instruction's first byte
        if line.startswith("Disassembly of section"):
            cur = None
    return [(a, b, n) for a, b, n in entries if "@plt" in n and "@plt-" not in n]


def build_id(path):
    out = subprocess.run(["readelf", "-n", path], capture_output=True, text=True).stdout
    m = re.search(r"Build ID: ([0-9a-f]+)", out)
    return m.group(1) if m else None


def ifunc_symbols(path):
    """{address: {names}} of the IFUNC symbols of path and of its debug file."""
    files = [path]
    bid = build_id(path)
    if bid:
        files.append(f"/usr/lib/debug/.build-id/{bid[:2]}/{bid[2:]}.debug")
    out = {}
    for f in files:
        if not os.path.exists(f):
            continue
        text = subprocess.run(["readelf", "-sW", f], capture_output=True, text=True).stdout
        for line in text.splitlines():
            p = line.split()
            if len(p) >= 8 and p[3] == "IFUNC":
                out.setdefault(int(p[1], 16), set()).add(p[7].split("@")[0])
    return out


def names(driver, path, addrs):
    text = subprocess.run([driver, "--print", "--passes", "1", path],
                          input="".join(f"0x{a:x}\n" for a in addrs), capture_output=True,
                          text=True).stdout.split("\n")
    return {int(text[i], 16): text[i + 1] for i in range(len(text) - 1)
            if text[i].startswith("0x")}


def check(driver, path, entries, ifuncs):
    addrs = [a for s, e, _ in entries for a in (s, e)]
    got = names(driver, path, addrs)
    agree = ifunc_named = 0
    wrong = {}
    for s, e, label in entries:
        for a in (s, e):
            n = got.get(a, "??")
            if label.startswith("*ABS*"):
                m = re.match(r"\*ABS\*\+0x([0-9a-f]+)@plt", label)
                want = ifuncs.get(int(m.group(1), 16), set()) if m else set()
                if n.endswith("@plt") and n[:-4] in want:
                    ifunc_named += 1
                else:
                    wrong[n] = wrong.get(n, 0) + 1
            elif n == label:
                agree += 1
            else:
                wrong[n] = wrong.get(n, 0) + 1
    return agree, ifunc_named, wrong


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build-dir", default=os.path.join(SRC, "build"))
    ap.add_argument("--base-build-dir")
    ap.add_argument("files", nargs="*", default=[f for f in LIBS if os.path.exists(f)])
    args = ap.parse_args()
    drivers = [("ember", args.build_dir)] + ([("ember (base)", args.base_build_dir)]
                                             if args.base_build_dir else [])
    status = 0
    for path in args.files:
        entries, ifuncs = plt_entries(path), ifunc_symbols(path)
        named = [e for e in entries if not e[2].startswith("*ABS*")]
        nifuncs = len(entries) - len(named)
        print(f"{path}: {len(named)} PLT entries objdump names, {nifuncs} IFUNC slots")
        for who, build in drivers:
            driver = os.path.join(build, "bench", "symbolize", "ember-symbolize-bench")
            agree, ifunc_named, wrong = check(driver, path, entries, ifuncs)
            worst = ", ".join(f"{n} x{c}" for n, c in sorted(wrong.items(), key=lambda kv: -kv[1])[:3])
            print(f"  {who:<13} first and last byte named as objdump: {agree}/{2 * len(named)}"
                  f"; IFUNC slots named after the IFUNC: {ifunc_named}/{2 * nifuncs}"
                  + (f"; otherwise: {worst}" if worst else ""))
            if who == "ember" and (agree != 2 * len(named) or ifunc_named != 2 * nifuncs):
                status = 1
    sys.exit(status)


if __name__ == "__main__":
    main()
