#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bench/symbolize: the same addresses resolved to function, file:line and
inline frames by ember's symbolizer code, by `eu-addr2line -f -i` and by
`llvm-symbolizer`, each fed the whole batch on standard input.

Address sets, drawn from real samples (perf, cpu-clock, leaf addresses):
  libc     libc.so.6 under a libc-heavy workload; DWARF from libc6-dbg's
           /usr/lib/debug/.build-id file (compressed sections), found by
           every tool through the build id.
  go       a Go program using much of the standard library (goload.go,
           Debian's golang-go) built with -ldflags='-s -w':
           ember reads its .gopclntab; eu-addr2line and llvm-symbolizer
           cannot, so they get the same build with DWARF (same code, same
           addresses).
Each tool is timed as a whole process, output written (to /dev/null):
  cold  a fresh process resolving N addresses: parsing included (files are
        in the page cache; --drop-caches empties it first, as root)
  warm  in-process caches warm: time(2N addresses) - time(N addresses);
        "noise" when that difference is below what the clock and the shared
        machine can tell apart (1 ms)
--base-build-dir DIR adds the driver of another build (e.g. main before a
change) as "ember (base)", timed in the same run, to show a slowdown as a
ratio. --instructions also counts the instructions both drivers execute
(valgrind's callgrind), cold (N addresses) and warm ((2N - N) / N per
address): a comparison that the load of a shared machine does not blur.
Agreement on the innermost frame: the line, the function name (compiler
clone suffixes aside) and the source path as each peer prints it.
Usage: sudo bench/symbolize/run.py [--build-dir build] [--base-build-dir DIR]
                                   [--addresses 100000]
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
LIBC = "/lib/x86_64-linux-gnu/libc.so.6"


def die(msg):
    print(f"bench/symbolize: {msg}", file=sys.stderr)
    sys.exit(2)


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, **kw)


def build_id(path):
    out = subprocess.run(["readelf", "-n", path], capture_output=True, text=True).stdout
    m = re.search(r"Build ID: ([0-9a-f]+)", out)
    return m.group(1) if m else None


def load_segments(path):
    """[(offset, vaddr, filesz)] of the PT_LOAD segments."""
    out = subprocess.run(["readelf", "-lW", path], capture_output=True, text=True).stdout
    segs = []
    for line in out.splitlines():
        f = line.split()
        if f and f[0] == "LOAD":
            segs.append((int(f[1], 16), int(f[2], 16), int(f[4], 16)))
    return segs


def sample(cmd, seconds, hz, wd, name):
    """Runs cmd under perf record; returns [(ip, dso, map_start, map_pgoff)]."""
    data = os.path.join(wd, name + ".perf")
    wl = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
    try:
        time.sleep(0.3)
        run(["perf", "record", "-q", "-e", "cpu-clock", "-F", str(hz), "-p", str(wl.pid), "-o",
             data, "--", "sleep", str(seconds)], stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
    finally:
        wl.kill()
        wl.wait()
    out = subprocess.run(["perf", "script", "-i", data, "-F", "ip,dso", "--show-mmap-events"],
                         capture_output=True, text=True).stdout
    maps, samples = {}, []
    mmap_re = re.compile(r"PERF_RECORD_MMAP2? \S+: \[0x([0-9a-f]+)\(0x([0-9a-f]+)\) @ (0x[0-9a-f]+|\d+)"
                         r".*\]: \S+ (\S+)$")
    for line in out.splitlines():
        m = mmap_re.search(line)
        if m:
            maps.setdefault(m.group(4), []).append(
                (int(m.group(1), 16), int(m.group(2), 16), int(m.group(3), 0)))
            continue
        f = line.split()
        if len(f) == 2 and f[1].startswith("("):
            samples.append((int(f[0], 16), f[1].strip("()")))
    return samples, maps


def to_vaddrs(samples, maps, path):
    """ELF virtual addresses of the samples that fall in path's mappings."""
    real = os.path.realpath(path)
    segs = load_segments(real)
    ranges = [r for dso, rs in maps.items() if os.path.realpath(dso) == real for r in rs]
    out = []
    for ip, dso in samples:
        if os.path.realpath(dso) != real:
            continue
        for start, length, pgoff in ranges:
            if start <= ip < start + length:
                off = ip - start + pgoff
                for soff, svaddr, sz in segs:
                    if soff <= off < soff + sz:
                        out.append(off - soff + svaddr)
                        break
                break
    return out


def widen(addrs, n):
    """n addresses: the samples in order, repeated if there were fewer."""
    if not addrs:
        die("no samples landed in the binary")
    return (addrs * (n // len(addrs) + 1))[:n]


def write_addrs(path, addrs):
    with open(path, "w") as f:
        for a in addrs:
            f.write(f"0x{a:x}\n")


def timed(cmd, addr_file):
    with open(addr_file) as stdin:
        t0 = time.perf_counter()
        # eu-addr2line exits 1 when some address has no answer: not a failure here.
        subprocess.run(cmd, stdin=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return time.perf_counter() - t0


def drop_caches():
    subprocess.run(["sync"])
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def measure(tools, n, files, args):
    """{tool: (cold s, warm s)} for N addresses (files[1]) and 2N (files[2]).
    The tools take turns within each repetition, so that a burst of load on
    the machine weighs on all of them, not on whichever ran then."""
    cold, t1, t2 = ({name: [] for name, _ in tools} for _ in range(3))
    for _, cmd in tools:
        timed(cmd, files[1])  # page cache warm-up
    for _ in range(args.repeat):
        for name, cmd in tools:
            if args.drop_caches:
                drop_caches()
            cold[name].append(timed(cmd, files[1]))
            t1[name].append(timed(cmd, files[1]))
            t2[name].append(timed(cmd, files[2]))
    res = {}
    for name, _ in tools:
        warm = min(t2[name]) - min(t1[name])
        # The 2N/N difference of a fast tool can vanish in the noise of a
        # shared machine: no rate then, rather than an absurd one.
        res[name] = (min(cold[name]), warm if warm >= 1e-3 else None)
    return res


def instructions(cmd, addr_file):
    """Instructions cmd executes on addr_file, as callgrind counts them."""
    with open(addr_file) as stdin:
        r = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *cmd],
                           stdin=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           text=True)
    m = re.search(r"refs:\s+([\d,]+)", r.stderr)
    if not m:
        die(f"callgrind counted nothing for {cmd[0]}: {r.stderr[-300:]}")
    return int(m.group(1).replace(",", ""))


def rate(n, seconds):
    return f"{n / seconds:>14,.0f}" if seconds else f"{'noise':>14}"


def ratio(peer, ours):
    return f"x{peer / ours:.1f}" if peer and ours else "n/a"


def outputs(cmd, addr_file):
    with open(addr_file) as stdin:
        return subprocess.run(cmd, stdin=stdin, capture_output=True, text=True).stdout


def innermost(text):
    """(function, line, path) of the innermost frame per address, from output
    with an address line before each entry."""
    out, lines = [], text.split("\n")
    for i, line in enumerate(lines):
        if line.startswith("0x") and i + 2 < len(lines):
            m = re.search(r"^(.*?):(\d+)(?::\d+)?$", lines[i + 2])
            out.append((lines[i + 1].split(" inlined at")[0].strip(),
                        m.group(2) if m else "0", m.group(1) if m else "??"))
    return out


def base_name(name):
    """A function's name without a compiler clone suffix (.isra.0, .part.0, ...)."""
    return re.sub(r"\.(isra|part|constprop|cold|lto_priv)\.\d+.*$", "", name)


def agreement(sample_file, ember_cmd, peer_cmd):
    """Addresses whose innermost frame ember gives the same line / name / path
    as the peer, of how many, and the most frequent path disagreements."""
    pairs = list(zip(innermost(outputs(ember_cmd, sample_file)),
                     innermost(outputs(peer_cmd, sample_file))))
    same_line = sum(1 for a, b in pairs if a[1] == b[1])
    same_name = sum(1 for a, b in pairs if base_name(a[0]) == base_name(b[0]))
    # A path is compared where both name a file: a peer's "??" is no path.
    paths = [(a[2], b[2]) for a, b in pairs if a[2] != "??" and b[2] != "??"]
    same_path = sum(1 for a, b in paths if a == b)
    doubled, differ = 0, {}
    for a, b in paths:
        if a != b and doubled_dir(a, b):
            doubled += 1
        elif a != b:
            differ[(a, b)] = differ.get((a, b), 0) + 1
    worst = sorted(differ.items(), key=lambda kv: -kv[1])[:3]
    return same_line, same_name, same_path, doubled, len(paths), len(pairs), worst


def doubled_dir(ours, theirs):
    """Whether the peer put a file of a relative compilation directory under
    that directory twice (ours ./libio/genops.c, theirs ./libio/./libio/genops.c),
    a path that does not exist."""
    return not ours.startswith("/") and any(
        theirs == ours[:i] + "/" + ours for i, c in enumerate(ours) if c == "/")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build-dir", default=os.path.join(SRC, "build"))
    ap.add_argument("--base-build-dir", help="also time this build's driver, as \"ember (base)\"")
    ap.add_argument("--instructions", action="store_true",
                    help="with --base-build-dir: count both drivers' instructions (valgrind)")
    ap.add_argument("--addresses", type=int, default=100000)
    ap.add_argument("--go-addresses", type=int, default=50000)
    ap.add_argument("--seconds", type=float, default=8)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--drop-caches", action="store_true", help="empty the page cache before cold runs (root)")
    args = ap.parse_args()

    driver = os.path.join(args.build_dir, "bench", "symbolize", "ember-symbolize-bench")
    for tool in ("perf", "eu-addr2line", "llvm-symbolizer", "gcc", "go", "readelf"):
        if not shutil.which(tool):
            die(f"{tool} is missing: run scripts/install-deps.sh")
    base_driver = None
    if args.base_build_dir:
        base_driver = os.path.join(args.base_build_dir, "bench", "symbolize",
                                   "ember-symbolize-bench")
    if args.instructions and not (base_driver and shutil.which("valgrind")):
        die("--instructions needs --base-build-dir and valgrind (apt-get install valgrind)")
    for d, b in ((driver, args.build_dir), (base_driver, args.base_build_dir)):
        if d and not os.path.exists(d):
            die(f"{d} is missing: build first (cmake --build {b})")
    bid = build_id(LIBC)
    if not bid or not os.path.exists(f"/usr/lib/debug/.build-id/{bid[:2]}/{bid[2:]}.debug"):
        die("libc6-dbg is not installed (apt-get install libc6-dbg): libc has no DWARF to read")

    wd = tempfile.mkdtemp(prefix="ember-bench-")
    env = dict(os.environ, HOME=wd, GOCACHE=os.path.join(wd, "gocache"), CGO_ENABLED="0")
    load = os.path.join(wd, "libc_load")
    run(["gcc", "-O2", "-o", load, os.path.join(HERE, "libc_load.c")])
    gosrc = os.path.join(HERE, "goload.go")
    go_stripped, go_dwarf = os.path.join(wd, "go-stripped"), os.path.join(wd, "go-dwarf")
    run(["go", "build", "-ldflags=-s -w", "-o", go_stripped, gosrc], env=env)
    run(["go", "build", "-o", go_dwarf, gosrc], env=env)

    hz = 10000
    s, maps = sample([load, str(args.seconds + 2)], args.seconds, hz, wd, "libc")
    libc_addrs = to_vaddrs(s, maps, LIBC)
    s, maps = sample([go_stripped, str(args.seconds / 2 + 2)], args.seconds / 2, hz, wd, "go")
    go_addrs = to_vaddrs(s, maps, go_stripped)

    sets = [("libc.so.6 + libc6-dbg (DWARF, build-id debug file)", LIBC, LIBC, libc_addrs,
             args.addresses),
            ("Go, stripped (-s -w): .gopclntab / DWARF", go_stripped, go_dwarf, go_addrs,
             args.go_addresses)]
    print(f"bench/symbolize: {os.uname().release}, 2N/N method, best of {args.repeat}; "
          f"cold = fresh process{' and empty page cache' if args.drop_caches else ', page cache warm'}")
    for title, ember_bin, peer_bin, addrs, n in sets:
        base = widen(addrs, n)
        files = {}
        for k in (1, 2):
            files[k] = os.path.join(wd, f"{os.path.basename(ember_bin)}.{k}.addrs")
            write_addrs(files[k], base * k)
        tools = [
            ("ember", [driver, "--print", "--passes", "1", ember_bin]),
            ("eu-addr2line -f -i", ["eu-addr2line", "-f", "-i", "-e", peer_bin]),
            ("llvm-symbolizer", ["llvm-symbolizer", "--inlining", "--obj=" + peer_bin]),
        ]
        if base_driver:
            tools.append(("ember (base)", [base_driver, "--print", "--passes", "1", ember_bin]))
        res = measure(tools, n, files, args)
        print()
        print(f"{title}: {n} addresses ({len(set(base))} distinct, from {len(addrs)} samples)")
        print(f"  {'tool':<22} {'cold addr/s':>14} {'warm addr/s':>14}")
        for name, _ in tools:
            cold, warm = res[name]
            print(f"  {name:<22} {rate(n, cold)} {rate(n, warm)}")
        e_cold, e_warm = res["ember"]
        for name, _ in tools[1:]:
            cold, warm = res[name]
            print(f"  ember / {name:<14} cold {ratio(cold, e_cold)}   warm {ratio(warm, e_warm)}")
        if args.instructions:
            counts = {}
            for name, cmd in (tools[0], tools[-1]):
                one, two = instructions(cmd, files[1]), instructions(cmd, files[2])
                counts[name] = (one, (two - one) / n)
                print(f"  {name:<22} instructions: cold {one:,} ({one / n:,.0f}/address), "
                      f"warm {(two - one) / n:,.0f}/address")
            (c, w), (bc, bw) = counts["ember"], counts["ember (base)"]
            print(f"  ember's instructions against ember (base): cold {100 * (c / bc - 1):+.1f}%, "
                  f"warm {100 * (w / bw - 1):+.1f}%")
        # Does ember give the same answers (first 5,000 addresses)? Names of one
        # address differ by policy (aliases, DW_AT_name or linkage name): lines do not.
        check = os.path.join(wd, "check.addrs")
        write_addrs(check, base[:5000])
        for name, cmd in tools[1:3]:
            line, fn, path, doubled, with_path, total, worst = agreement(
                check, tools[0][1],
                [cmd[0], "-a" if cmd[0] == "eu-addr2line" else "--print-address", *cmd[1:]])
            print(f"  agreement with {name} on the innermost frame: line {line}/{total}, "
                  f"function name {fn}/{total}, source path {path}/{with_path} "
                  f"(+{doubled} where {name} doubles a relative comp_dir)")
            for (ours, theirs), count in worst:
                print(f"    {count:>5} x path {ours} where {name} prints {theirs}")
    shutil.rmtree(wd, ignore_errors=True)


if __name__ == "__main__":
    main()
