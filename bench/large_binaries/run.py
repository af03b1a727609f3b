#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bench/large_binaries: large programs' frames under the default memory budget.

Fleets run large binaries: Node (99 MB, 80,000 functions in its symbol table),
C++ services with full debug information, Go programs of tens of megabytes. A
budget that sheds their frames leaves a profile nobody keeps. For each program:

  node  npm's Node 20 (tests/integration/nodes.py fetches it), running
        JavaScript that calls into node's own C++ (zlib, crypto hashes, JSON,
        Buffer, regular expressions): frames in node's 10 MB symbol table
  cpp   a C++ program made here (bench/large_binaries/gen_cpp.py) of
        --functions functions in namespaces and templates, each with an inlined
        helper, built with g++ -O1 -g: full DWARF, the program calling them
        at random so that samples land all over it
  go    a Go program built here with Debian's Go (or the first go on PATH) that
        runs net/http, crypto, encoding/json, compress/gzip and regexp: its
        .gopclntab

it records the process twice for --duration seconds at --hz, with the default
budget and with --memory-budget 1G (pprof), and compares the two by address
(each sampled address of the program's own file: the names ember gives it,
inlined frames included):

  shed        symbolizer.frames_shed under the default budget (must be 0)
  unnamed     addresses left as module+0xOFFSET, default / 1G
  differ      addresses both runs sampled whose function differs (must be 0)
  inlined     addresses both runs sampled where the default budget names fewer
              inlined functions (a file whose expanded DWARF outgrows the budget
              has units deferred: their addresses named by the symbol table)
  peak RSS    memory.peak_rss of the symbolizer, default / 1G
  llvm        llvm-symbolizer's peak RSS (/usr/bin/time) on the same
              addresses of the same file (the 1G run's), and how many of
              them it names as ember does (innermost function, demangled)

--check fails when anything is shed, when an address is named differently,
or with fewer inlined functions, or when the default budget leaves more
addresses unnamed than 1G does.

Usage: sudo bench/large_binaries/run.py [--program node|cpp|go]... [--duration 10]
                                        [--hz 499] [--functions 12000] [--check]
                                        [--build build]
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SRC, "tests", "integration"))

import nodes  # noqa: E402
from emberlib import pprof_comments, read_pprof  # noqa: E402

NODE_JS = r"""
const zlib = require('zlib'), crypto = require('crypto');
const buf = Buffer.alloc(1 << 16, 7), text = JSON.stringify({a: [...Array(2000).keys()]});
const re = /([a-z]+)-(\d+)/g, words = 'alpha-1 beta-22 gamma-333 '.repeat(500);
const end = Date.now() + SECONDS * 1000;
while (Date.now() < end) {
  zlib.deflateSync(buf);
  crypto.createHash('sha256').update(buf).digest('hex');
  JSON.parse(text);
  Buffer.from(text).toString('base64');
  words.replace(re, '$2$1');
}
"""

GO_MAIN = r"""
package main

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"time"
)

func main() {
	secs, _ := strconv.Atoi(os.Args[1])
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write(bytes.Repeat([]byte("x"), 4096))
	}))
	defer srv.Close()
	re := regexp.MustCompile(`([a-z]+)-(\d+)`)
	words := bytes.Repeat([]byte("alpha-1 beta-22 gamma-333 "), 200)
	doc := map[string][]int{"a": make([]int, 2000)}
	end := time.Now().Add(time.Duration(secs) * time.Second)
	for time.Now().Before(end) {
		var b bytes.Buffer
		z := gzip.NewWriter(&b)
		z.Write(words)
		z.Close()
		sha256.Sum256(b.Bytes())
		out, _ := json.Marshal(doc)
		json.Unmarshal(out, &doc)
		re.ReplaceAll(words, []byte("$2$1"))
		if resp, err := http.Get(srv.URL); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
}
"""

UNNAMED = re.compile(r"\+0x[0-9a-f]+$|^\[unknown\]$")


def log(*a):
    print(*a, flush=True)


def build_cpp(wd, functions):
    units = 12  # g++ takes about 6 s for 1,000 of these functions at -O1 (32 s at -O2)
    srcs = []
    for u in range(units):
        path = os.path.join(wd, f"big{u}.cpp")
        subprocess.run([sys.executable, os.path.join(HERE, "gen_cpp.py"), "--unit", str(u),
                        "--units", str(units), "--functions", str(functions), "-o", path],
                       check=True)
        srcs.append(path)
    main = os.path.join(wd, "bigmain.cpp")
    subprocess.run([sys.executable, os.path.join(HERE, "gen_cpp.py"), "--main", "--units",
                    str(units), "--functions", str(functions), "-o", main], check=True)
    objs = []
    procs = []
    for s in srcs + [main]:
        o = s[:-4] + ".o"
        objs.append(o)
        procs.append(subprocess.Popen(["g++", "-O1", "-g", "-fno-omit-frame-pointer", "-c",
                                       "-o", o, s]))
        if len(procs) == os.cpu_count() or s == main:
            for p in procs:
                assert p.wait() == 0, "g++ failed"
            procs = []
    exe = os.path.join(wd, "bigcpp")
    subprocess.run(["g++", "-o", exe, *objs], check=True)
    return [exe], exe


def build_go(wd):
    go = "/usr/bin/go" if os.path.exists("/usr/bin/go") else shutil.which("go")
    if not go:
        return None, None
    d = os.path.join(wd, "gobig")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "main.go"), "w") as f:
        f.write(GO_MAIN)
    with open(os.path.join(d, "go.mod"), "w") as f:
        f.write("module gobig\n\ngo 1.19\n")
    env = dict(os.environ, GOFLAGS="-mod=mod", GOCACHE=os.path.join(wd, "gocache"),
               GOPATH=os.path.join(wd, "gopath"), GOTOOLCHAIN="local")
    subprocess.run([go, "build", "-o", "gobig", "."], cwd=d, env=env, check=True)
    exe = os.path.join(d, "gobig")
    return [exe], exe


def program(name, wd, a):
    """(argv without the seconds, the program's own file) or (None, reason)."""
    if name == "node":
        try:
            exe = nodes.fetch("20.20.2")
        except Exception as e:  # noqa: BLE001 - no registry: say so, go on
            return None, f"cannot fetch node: {e}"
        js = os.path.join(wd, "big.js")
        with open(js, "w") as f:
            f.write(NODE_JS.replace("SECONDS", "Number(process.argv[2])"))
        return [exe, js], exe
    if name == "cpp":
        return build_cpp(wd, a.functions)
    if name == "go":
        argv, exe = build_go(wd)
        return (argv, exe) if argv else (None, "no Go toolchain")
    raise ValueError(name)


def record(a, argv, seconds, out, budget):
    wl = subprocess.Popen(argv + [str(seconds + 8)])
    try:
        time.sleep(2)  # past start-up: node's and Go's runtimes are running their loops
        cmd = [os.path.join(a.build, "ember"), "record", "-p", str(wl.pid), "-d", str(seconds),
               "-F", str(a.hz), "-o", out, "--no-progress"]
        if budget:
            cmd += ["--memory-budget", budget]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    finally:
        wl.kill()
        wl.wait()


def names_by_address(path, exe):
    """{(role, file offset in exe): tuple of names, innermost first} for every location
    in exe that samples use, role "pc" for a leaf and "ret" for a caller: a caller's
    address is looked up a byte before it (inside its call), so one offset can stand
    for two places of which the inlined functions differ (Go's runtime.bgsweep:
    isSweepDone where a sample stopped, lock and lockWithRank where a call returns)."""
    p = read_pprof(path)
    real = os.path.realpath(exe)
    offsets = {}
    for lid, loc in p["locations"].items():
        m = p["mappings"].get(loc["mapping"])
        if not m or os.path.realpath(m["file"]) != real and os.path.basename(m["file"]) != \
                os.path.basename(real):
            continue
        offsets[lid] = loc["address"] - m["start"] + m["offset"]
    out = {}
    for _, ids in p["samples"]:
        for i, lid in enumerate(ids):
            if lid in offsets:
                out[("ret" if i else "pc", offsets[lid])] = tuple(p["locations"][lid]["names"])
    return out


def load_segments(exe):
    """[(file offset, vaddr, filesz)] of exe's PT_LOAD segments."""
    out = []
    text = subprocess.run(["readelf", "-lW", exe], capture_output=True, text=True).stdout
    for line in text.splitlines():
        f = line.split()
        if f and f[0] == "LOAD":
            out.append((int(f[1], 16), int(f[2], 16), int(f[4], 16)))
    return out


def llvm_symbolizer(exe, offsets):
    """(peak RSS in MiB, {offset: innermost function}) of llvm-symbolizer on those offsets."""
    tool = shutil.which("llvm-symbolizer")
    if not tool or not offsets:
        return None, {}
    segs = load_segments(exe)
    vaddr = {}
    for off in offsets:
        for fo, va, sz in segs:
            if fo <= off < fo + sz:
                vaddr[off] = va + off - fo
    with tempfile.NamedTemporaryFile("w", delete=False) as f:
        for off, va in vaddr.items():
            f.write(f"0x{va:x}\n")
        addrs = f.name
    r = subprocess.run(["/usr/bin/time", "-f", "maxrss_kib=%M", tool, "--obj=" + exe,
                        "--functions=linkage", "--demangle", "--output-style=LLVM"],
                       stdin=open(addrs), capture_output=True, text=True)
    os.unlink(addrs)
    rss = re.search(r"maxrss_kib=(\d+)", r.stderr)
    # One block per address, blank-line separated: function, place, innermost first.
    blocks = [b.splitlines() for b in r.stdout.strip("\n").split("\n\n")]
    names = {off: b[0] for off, b in zip(vaddr, blocks) if b}
    return (int(rss.group(1)) / 1024 if rss else None), names


def short(name):
    """A function name as both tools print it: no parameters, no template arguments."""
    name = re.sub(r"\(.*\)( const)?$", "", name)
    while True:
        n = re.sub(r"<[^<>]*>", "", name)
        if n == name:
            return name
        name = n


def measure(name, a, wd):
    argv, exe = program(name, wd, a)
    if not argv:
        log(f"{name}: skipped: {exe}")
        return None
    runs = {}
    for label, budget in (("default", None), ("1G", "1G")):
        out = os.path.join(wd, f"{name}-{label}.pb.gz")
        record(a, argv, a.duration, out, budget)
        runs[label] = (names_by_address(out, exe), pprof_comments(out))
    (dflt, ds), (big, bs) = runs["default"], runs["1G"]
    unnamed = [sum(1 for n in m.values() if not n or UNNAMED.search(n[0]))
               for m in (dflt, big)]
    both = set(dflt) & set(big)
    # The function an address is in (the outermost name) must be the same; the functions
    # inlined there may be fewer under the default budget when a file's expanded DWARF
    # does not fit it (its units deferred): counted apart.
    differ = [off for off in both if dflt[off][-1:] != big[off][-1:]]
    inlined = [off for off in both if dflt[off] != big[off] and off not in differ]
    # llvm-symbolizer is given each offset once, as it is (a leaf's role where both).
    by_offset = {off: names for (role, off), names in sorted(big.items(), reverse=True)}
    rss, llvm = llvm_symbolizer(exe, sorted(by_offset))
    for label, st in (("default", ds), ("1G", bs)):
        log(f"  {label}: " + " ".join(f"{k}={v}" for k, v in sorted(st.items())
                                      if k.startswith("objcache.") and v))
    agree = sum(1 for off, n in llvm.items() if by_offset.get(off) and
                short(n) == short(by_offset[off][0]))
    size = os.path.getsize(exe) / 2**20
    row = {"program": name, "size": size, "addresses": len(big), "shed": ds.get(
        "symbolizer.frames_shed", -1), "shed_1g": bs.get("symbolizer.frames_shed", -1),
        "unnamed": unnamed, "differ": len(differ), "inlined": len(inlined), "both": len(both),
        "rss": (ds.get("memory.peak_rss", 0) / 2**20, bs.get("memory.peak_rss", 0) / 2**20),
        "objcache": (ds.get("objcache.bytes", 0) / 2**20, bs.get("objcache.bytes", 0) / 2**20),
        "llvm_rss": rss, "llvm_agree": agree, "llvm_n": len(llvm)}
    for key in (differ + inlined)[:5]:
        log(f"  {name} {key[0]} +0x{key[1]:x}: default {dflt[key]} / 1G {big[key]}")
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--program", action="append", choices=["node", "cpp", "go"])
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--hz", type=int, default=499)
    ap.add_argument("--functions", type=int, default=12000)
    ap.add_argument("--build", default=os.path.join(SRC, "build"))
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench/large_binaries: run as root (sudo): ember record loads eBPF")
    a.build = os.path.abspath(a.build)
    wd = tempfile.mkdtemp(prefix="ember-large-")
    rows = []
    for name in a.program or ["node", "cpp", "go"]:
        log(f"== {name}")
        row = measure(name, a, wd)
        if row:
            rows.append(row)
    log("\nbench/large_binaries: default budget against --memory-budget 1G, "
        f"{a.duration} s at {a.hz} Hz each")
    log(f"{'program':<8} {'MiB':>6} {'addrs':>6} {'shed':>5} {'unnamed dflt/1G':>16} "
        f"{'differ':>9} {'inlined':>9} {'peak RSS dflt/1G':>17} {'objcache dflt/1G':>17} "
        f"{'llvm-sym RSS':>12} {'agree':>11}")
    failures = []
    for r in rows:
        llvm = f"{r['llvm_rss']:.1f}" if r["llvm_rss"] else "-"
        log(f"{r['program']:<8} {r['size']:6.1f} {r['addresses']:6d} {r['shed']:5d} "
            f"{r['unnamed'][0]:7d}/{r['unnamed'][1]:<8d} {r['differ']:4d}/{r['both']:<4d} "
            f"{r['inlined']:4d}/{r['both']:<4d}"
            f"{r['rss'][0]:8.1f}/{r['rss'][1]:<8.1f} {r['objcache'][0]:8.1f}/{r['objcache'][1]:<8.1f}"
            f"{llvm:>12} {r['llvm_agree']:5d}/{r['llvm_n']:<5d}")
        if r["shed"] != 0:
            failures.append(f"{r['program']}: {r['shed']} frames shed under the default budget")
        if r["differ"]:
            failures.append(f"{r['program']}: {r['differ']} addresses named differently")
        if r["inlined"]:
            failures.append(f"{r['program']}: {r['inlined']} addresses with fewer inlined "
                            "functions under the default budget than under 1G")
        if r["unnamed"][0] > r["unnamed"][1]:
            failures.append(f"{r['program']}: {r['unnamed'][0]} addresses unnamed under the "
                            f"default budget, {r['unnamed'][1]} under 1G")
    shutil.rmtree(wd, ignore_errors=True)
    if a.check:
        for f in failures:
            log("FAIL: " + f)
        if failures:
            sys.exit(1)
        log("PASS")


if __name__ == "__main__":
    main()
