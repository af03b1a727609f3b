#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Symbols a user can read, end to end with the real eBPF programs: a
stripped Go program (.gopclntab) with a known split between two main.*
functions, a C program built with -O2 -g whose inlined functions are frames
of their own, and stripped C binaries whose debug information comes from
/usr/lib/debug/.build-id, from .gnu_debuglink, or from MiniDebugInfo; PLT
entries in a whole-system recording, checked against objdump."""
import os
import re
import shutil
import signal
import subprocess
import time

from emberlib import (GO, SRC, CpuClock, assert_close, assert_samples, assert_workload_ran,
                      build_workload, ember, kill, log, pprof_comments, read_folded, read_pprof,
                      require_root, run_tests, staged_for_others, start, start_recording, truth_shares,
                      workdir)

require_root()
WD = workdir()
GOENV = dict(os.environ, HOME=WD, GOCACHE=os.path.join(WD, "gocache"), GOFLAGS="-mod=mod",
             GO111MODULE="auto", CGO_ENABLED="0")
FP = ["-fno-omit-frame-pointer", "-mno-omit-leaf-frame-pointer", "-fno-optimize-sibling-calls"]


def record(pid, name, seconds=5, hz=499):
    folded, pprof = os.path.join(WD, name + ".folded"), os.path.join(WD, name + ".pb.gz")
    ember("record", "-d", str(seconds), "-F", str(hz), "-p", str(pid), "-o", folded, "-o", pprof)
    return read_folded(folded), pprof


def record_workload(cmd, name, seconds=5):
    wl = start(cmd)
    try:
        time.sleep(0.5)
        return record(wl.pid, name, seconds)
    finally:
        kill(wl)


def record_split(cmd, name, seconds=5, hz=499):
    """Records a known-split workload; returns its rows, pprof and the shares it measured itself.
    Its samples are checked against the CPU time it used from the moment ember said it samples
    to the profile's end: a loaded host gives it less time, and ember must miss none of it."""
    truth_file = os.path.join(WD, name + ".truth")
    folded, pprof = os.path.join(WD, name + ".folded"), os.path.join(WD, name + ".pb.gz")
    wl = start(cmd, env=dict(os.environ, EMBER_TRUTH_FILE=truth_file))
    clock = CpuClock(wl.pid)
    try:
        time.sleep(0.5)
        proc, lines, sampling = start_recording(["-d", str(seconds), "-F", str(hz), "-p",
                                                 str(wl.pid), "-o", folded, "-o", pprof])
        try:
            proc.wait(timeout=120)
            sampling.reader.join(timeout=30)
        finally:
            kill(proc)
        assert proc.returncode == 0 and sampling.is_set(), "".join(lines)
        wl.send_signal(signal.SIGTERM)  # the workload writes what it measured, then exits
        wl.wait(timeout=30)
    finally:
        clock.stop = True
        kill(wl)
    rows, st = read_folded(folded), pprof_comments(pprof)
    end = (st["time_nanos"] + st["duration_nanos"]) / 1e9
    comm = os.path.basename(cmd[0])[:15]
    assert_samples(comm, sum(n for f, n in rows if f[0] == comm),
                   clock.cpu_between(sampling.time, end), hz)
    return rows, pprof, truth_shares(truth_file)


def pprof_top_lines(pprof):
    r = subprocess.run([GO, "tool", "pprof", "-top", "-lines", "-symbolize=none", pprof],
                       capture_output=True, text=True, env=GOENV, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout


def samples_containing(rows, comm, names):
    """Samples of comm per name, for the first of names found in each stack."""
    counts = {n: 0 for n in names}
    for frames, n in rows:
        if frames[0] != comm:
            continue
        for name in names:
            if name in frames[1:]:
                counts[name] += n
                break
    return counts


def has_section(path, name):
    out = subprocess.run(["readelf", "-SW", path], capture_output=True, text=True).stdout
    return re.search(r"\s" + re.escape(name) + r"\s", out) is not None


def build_id(path):
    out = subprocess.run(["readelf", "-n", path], capture_output=True, text=True).stdout
    m = re.search(r"Build ID: ([0-9a-f]+)", out)
    assert m, f"{path} has no GNU build id"
    return m.group(1)


def test_stripped_go_program_has_functions_lines_and_split():
    """A stripped Go program (no .symtab, no DWARF: .gopclntab alone): main.alpha's and
    main.beta's shares within 3 points of what the program measured itself, and every leaf
    location in them named with the function and file:line Go's own reader (go tool
    addr2line) gives its address in the program before it was stripped."""
    src = os.path.join(SRC, "tests", "workloads", "gosplit.go")
    full, exe = os.path.join(WD, "gosplit-full"), os.path.join(WD, "gosplit")
    subprocess.run([GO, "build", "-o", full, src], check=True, env=GOENV, timeout=600)
    subprocess.run(["objcopy", "--strip-all", full, exe], check=True)
    assert not has_section(exe, ".symtab") and not has_section(exe, ".debug_info"), \
        "the Go program is not stripped"
    rows, pprof, truth = record_split([exe, "14"], "go", seconds=8)
    counts = samples_containing(rows, "gosplit", ["main.alpha", "main.beta"])
    total = sum(counts.values())
    log(f"  {total} samples in main.alpha/main.beta: {counts}; the program measured "
        + ", ".join(f"{k} {v:.1f}%" for k, v in sorted(truth.items())))
    # Enough to tell 3 points of share apart (the whole process's against its CPU time above).
    assert total > 500, f"too few samples in main.*: {total} ({rows[:5]})"
    for fn in ("main.alpha", "main.beta"):
        assert_close(fn, 100.0 * counts[fn] / total, round(truth[fn], 1), 3)
    # Lines: ember's against go tool addr2line's, address by address.
    locs = [loc for loc in read_pprof(pprof)["locations"].values()
            if loc["lines"] and loc["lines"][0][0] in ("main.alpha", "main.beta")]
    addr2line = subprocess.run([GO, "tool", "addr2line", full], input="".join(
        f"{loc['address']:#x}\n" for loc in locs), capture_output=True, text=True, env=GOENV,
        timeout=120).stdout.splitlines()
    go_says = [(addr2line[i], addr2line[i + 1]) for i in range(0, len(addr2line), 2)]
    wrong = [(hex(loc["address"]), loc["lines"][0], want) for loc, want in zip(locs, go_says)
             if (loc["lines"][0][0], f"{loc['lines'][0][1]}:{loc['lines'][0][2]}") != want]
    log(f"  {len(locs)} locations in main.alpha/main.beta, {len(locs) - len(wrong)} named as "
        f"go tool addr2line names them")
    assert len(locs) >= 2 and len(go_says) == len(locs), (locs[:3], addr2line[:6])
    assert not wrong, wrong[:5]
    # The mapping carries the Go build id.
    raw = subprocess.run([GO, "tool", "pprof", "-raw", "-symbolize=none", pprof],
                         capture_output=True, text=True, env=GOENV).stdout
    go_id = subprocess.run([GO, "tool", "buildid", exe], capture_output=True, text=True,
                           env=GOENV).stdout.strip()
    assert go_id and go_id in raw, f"the Go build id {go_id} is not in the profile's mappings"


def elf_vaddr(path, file_offset):
    """The ELF virtual address of a file offset of path (its PT_LOAD segments, readelf)."""
    out = subprocess.run(["readelf", "-lW", path], capture_output=True, text=True).stdout
    for m in re.finditer(r"^\s*LOAD\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+\S+\s+0x([0-9a-f]+)", out, re.M):
        offset, vaddr, size = (int(x, 16) for x in m.groups())
        if offset <= file_offset < offset + size:
            return vaddr + file_offset - offset
    raise AssertionError(f"offset {file_offset:#x} is in no segment of {path}")


def eu_addr2line(path, vaddrs):
    """[[(name, file:line), innermost first]] of each address, as eu-addr2line -f -i names it
    (its "NAME inlined at ..." and columns dropped)."""
    chains = []
    for a in vaddrs:
        out = subprocess.run(["eu-addr2line", "-f", "-i", "-e", path, f"{a:#x}"],
                             capture_output=True, text=True, check=True).stdout.splitlines()
        chains.append([(out[j].split(" inlined at ")[0], re.sub(r"(:\d+):\d+$", r"\1", out[j + 1]))
                       for j in range(0, len(out) - 1, 2)])
    return chains


def test_c_program_inlined_functions_are_frames():
    """Inlined mix_a and mix_b are frames below outer and main, their shares within 3 points
    of what the program measured itself, each of their locations named (inline chain, files and
    lines) as eu-addr2line names its address."""
    exe = build_workload("inline", WD, cflags=["-O2", *FP])
    rows, pprof, truth = record_split([exe, "12"], "inline")
    counts = samples_containing(rows, "inline", ["mix_a", "mix_b"])
    total = sum(counts.values())
    log(f"  {total} samples in the inlined functions: {counts}")
    assert total > 500, f"too few samples in inlined functions: {total} ({rows[:5]})"
    # Inline frames sit below their caller, which sits below main.
    for name in ("mix_a", "mix_b"):
        good = sum(n for f, n in rows if f[0] == "inline" and name in f
                   and f[f.index(name) - 1] == "outer" and "main" in f)
        assert good >= 0.95 * counts[name], f"{name} is not a frame below outer and main"
    # mix_a does about twice the work of mix_b; the program measured how much.
    log("  the program measured " + ", ".join(f"{k} {v:.1f}%" for k, v in sorted(truth.items())))
    for name in ("mix_a", "mix_b"):
        assert_close(name, 100.0 * counts[name] / total, round(truth[name], 1), 3)
    # Lines and inline chains: ember's against eu-addr2line's (elfutils' own DWARF reader).
    locs = assert_lines_as_elfutils(pprof, exe, exe, ("mix_a", "mix_b"))
    assert all(len(loc["lines"]) >= 2 for loc in locs), "an inlined function without its caller"
    top = pprof_top_lines(pprof)
    log("\n".join(top.splitlines()[-8:]))
    for name in ("mix_a", "mix_b"):
        assert re.search(re.escape(name) + r" \S*inline\.c:\d+ \(inline\)", top), \
            f"pprof shows no inlined {name} with file:line"
    assert re.search(r"outer \S*inline\.c:\d+", top), "pprof shows no file:line for outer"


def stripped_split(name, extra_ldflags=()):
    """split.c built -O2 -g, its debug info in NAME.debug, the binary stripped of all symbols."""
    exe = build_workload("split", WD, extra=list(extra_ldflags))
    os.rename(exe, os.path.join(WD, name))
    exe = os.path.join(WD, name)
    dbg = exe + ".debug"
    subprocess.run(["objcopy", "--only-keep-debug", exe, dbg], check=True)
    subprocess.run(["strip", "--strip-all", exe], check=True)
    assert not has_section(exe, ".symtab") and not has_section(exe, ".debug_info")
    return exe, dbg


def leaves_named(rows, comm):
    return {leaf: sum(n for f, n in rows if f[0] == comm and leaf in f)
            for leaf in ("leaf_a", "leaf_b", "leaf_c")}


def assert_lines_as_elfutils(pprof, exe, dwarf, functions):
    """Every location of pprof whose innermost frame is one of functions (in exe) has the
    inline chain, files and lines eu-addr2line gives its address from dwarf (exe itself or
    its debug file)."""
    prof = read_pprof(pprof)
    locs = [loc for loc in prof["locations"].values()
            if loc["lines"] and loc["lines"][0][0] in functions]
    vaddrs = []
    for loc in locs:
        m = prof["mappings"][loc["mapping"]]
        vaddrs.append(elf_vaddr(exe, loc["address"] - m["start"] + m["offset"]))
    wrong = []
    for loc, chain in zip(locs, eu_addr2line(dwarf, vaddrs)):
        ours = [(name, f"{path}:{line}") for name, path, line in loc["lines"]]
        if ours != chain[:len(ours)]:
            wrong.append((hex(loc["address"]), ours, chain))
    log(f"  {len(locs)} locations in {'/'.join(functions)}, {len(locs) - len(wrong)} named as "
        f"eu-addr2line names them (inline chain, file:line)")
    assert len(locs) >= len(functions) and not wrong, (len(locs), wrong[:3])
    return locs


def assert_split_named_with_lines(rows, pprof, truth, comm, exe, dbg):
    named = leaves_named(rows, comm)
    total = sum(n for f, n in rows if f[0] == comm)
    log(f"  {total} samples, by leaf: {named}; the workload measured leaf_a {truth['leaf_a']:.1f}%")
    assert total > 500, f"too few samples: {total}"
    assert sum(named.values()) >= 0.9 * total, f"leaves not named: {rows[:6]}"
    assert_workload_ran(truth, {"leaf_a": 60, "leaf_b": 30, "leaf_c": 10})
    assert_close("leaf_a", 100.0 * named["leaf_a"] / sum(named.values()),
                 round(truth["leaf_a"], 1), 4)
    assert_lines_as_elfutils(pprof, exe, dbg, ("leaf_a", "leaf_b", "leaf_c"))


def test_stripped_c_resolves_through_build_id_debug_file():
    exe, dbg = stripped_split("split-bid")
    bid = build_id(exe)
    # Without the debug file: a stripped binary has nothing to name its frames.
    rows, _ = record_workload([exe, "5"], "bid-none", seconds=2)
    assert not any(leaves_named(rows, "split-bid").values()), "named without a debug file?"
    target_dir = os.path.join("/usr/lib/debug/.build-id", bid[:2])
    target = os.path.join(target_dir, bid[2:] + ".debug")
    assert not os.path.exists(target), f"{target} exists already: not overwriting it"
    made_dir = not os.path.isdir(target_dir)
    os.makedirs(target_dir, exist_ok=True)
    shutil.copyfile(dbg, target)
    try:
        rows, pprof, truth = record_split([exe, "12"], "bid")
        assert_split_named_with_lines(rows, pprof, truth, "split-bid", exe, dbg)
    finally:
        os.unlink(target)
        if made_dir:
            os.rmdir(target_dir)


def test_stripped_c_resolves_through_debuglink():
    # No build id: only the debug link (and its CRC) can find the debug file.
    exe, dbg = stripped_split("split-dl", ["-Wl,--build-id=none"])
    debug_dir = os.path.join(WD, ".debug")
    os.makedirs(debug_dir, exist_ok=True)
    linked = os.path.join(debug_dir, "split-dl.debug")
    os.rename(dbg, linked)
    subprocess.run(["objcopy", "--add-gnu-debuglink=" + linked, exe], check=True)
    rows, pprof, truth = record_split([exe, "12"], "dl")
    assert_split_named_with_lines(rows, pprof, truth, "split-dl", exe, linked)


def test_stripped_c_names_from_minidebuginfo():
    exe, dbg = stripped_split("split-mini")
    # MiniDebugInfo as Fedora makes it: the symbol table, xz-compressed, in .gnu_debugdata.
    mini = os.path.join(WD, "mini")
    subprocess.run(["objcopy", "--only-keep-debug", "--strip-debug", dbg, mini], check=True)
    subprocess.run(["xz", "-f", mini], check=True)
    subprocess.run(["objcopy", "--add-section", ".gnu_debugdata=" + mini + ".xz", exe],
                   check=True)
    rows, _ = record_workload([exe, "8"], "mini", seconds=4)
    named = leaves_named(rows, "split-mini")
    total = sum(n for f, n in rows if f[0] == "split-mini")
    log(f"  {total} samples, by leaf: {named}")
    assert total > 300 and sum(named.values()) >= 0.9 * total, f"not named: {rows[:6]}"


def load_segments(path):
    """[(offset, vaddr, filesz)] of the file's PT_LOAD segments."""
    out = subprocess.run(["readelf", "-lW", path], capture_output=True, text=True).stdout
    return [(int(f[1], 16), int(f[2], 16), int(f[4], 16))
            for f in (line.split() for line in out.splitlines()) if f and f[0] == "LOAD"]


def section_range(path, name):
    out = subprocess.run(["readelf", "-SW", path], capture_output=True, text=True).stdout
    m = re.search(r"\s" + re.escape(name) + r"\s+\S+\s+([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)", out)
    return (int(m.group(1), 16), int(m.group(1), 16) + int(m.group(2), 16)) if m else None


def objdump_plt_labels(path):
    """[(address, label)] of the PLT entries as objdump -C names them (demangled, as
    ember names them: std::terminate()@plt), sorted."""
    out = subprocess.run(["objdump", "-d", "-C", "--no-show-raw-insn", "-j", ".plt", "-j", ".plt.sec",
                          "-j", ".plt.got", path], capture_output=True, text=True).stdout
    return sorted((int(m.group(1), 16), m.group(2))
                  for m in re.finditer(r"^([0-9a-f]+) <(.+)>:$", out, re.M))


class ElfFacts:
    """What readelf and objdump say of the files a profile's mappings name (cached)."""

    def __init__(self):
        self.cache = {}

    def get(self, path):
        if path not in self.cache:
            self.cache[path] = (load_segments(path), section_range(path, ".init"),
                                objdump_plt_labels(path))
        return self.cache[path]

    def vaddr(self, path, offset):
        for soff, svaddr, size in self.get(path)[0]:
            if soff <= offset < soff + size:
                return offset - soff + svaddr
        return None


PY_PLT = """
import sys, time
end = time.time() + float(sys.argv[1])
chunk = b"x" * 64
while time.time() < end:
    for i in range(2000):
        b = chunk * 4          # memcpy through the PLT
        s = bytearray(200)     # calloc, memset
        t = b.find(b"y")       # memchr
"""


def test_whole_system_names_plt_entries_not_init():
    """PLT stubs sit right after _init, which has no size: they used to be named _init.
    A C program calling labs() through its PLT and Python (whose binary and
    libpython call libc through theirs), recorded with the whole system: PLT
    frames are target@plt as objdump names the entry, and _init only ever
    names addresses inside .init."""
    exe = build_workload("plt", WD, cflags=["-O2", "-fno-builtin", *FP])
    wl = start([exe, "12"])
    py = start(["python3", "-c", PY_PLT, "12"])
    try:
        time.sleep(0.5)
        folded, pprof = os.path.join(WD, "plt.folded"), os.path.join(WD, "plt.pb.gz")
        ember("record", "-d", "5", "-F", "999", "-o", folded, "-o", pprof)
    finally:
        kill(wl)
        kill(py)
    rows = read_folded(folded)
    plt_total = sum(n for f, n in rows if f[0] == "plt")
    plt_hits = sum(n for f, n in rows if f[0] == "plt" and f[-1] == "labs@plt")
    log(f"  plt: {plt_hits} of {plt_total} samples in labs@plt")
    assert plt_total > 300, f"too few samples of the plt workload: {plt_total}"
    assert plt_hits >= 0.01 * plt_total, f"labs@plt is not named: {rows[:5]}"
    assert not any("_init" in f for f, _ in rows if f[0] == "plt"), "plt frames named _init"
    facts, checked, wrong, py_plt = ElfFacts(), 0, [], 0
    prof = read_pprof(pprof)
    for loc in prof["locations"].values():
        m = prof["mappings"].get(loc["mapping"])
        names = [n for n in loc["names"] if n == "_init" or n.endswith("@plt")]
        if not m or not names or m["file"].startswith("[") or not os.path.exists(m["file"]):
            continue
        vaddr = facts.vaddr(m["file"], loc["address"] - m["start"] + m["offset"])
        if vaddr is None:
            continue  # not in the file's loadable segments as readelf reads them
        _, init, labels = facts.get(m["file"])
        base = os.path.basename(m["file"])
        for name in names:
            checked += 1
            if name == "_init":
                # A return address may sit right after the last call in _init.
                if not init or not any(init[0] <= a < init[1] for a in (vaddr, vaddr - 1)):
                    wrong.append(f"{base}: _init at {vaddr:#x}, .init is {init}")
                continue
            py_plt += base.startswith(("python3", "libpython3"))
            label = next((lb for a, lb in reversed(labels) if a <= vaddr), None)
            # objdump names IFUNC slots *ABS*+0x...@plt and the header foo@plt-0x10.
            if label and not label.startswith("*ABS*") and "@plt-" not in label and label != name:
                wrong.append(f"{base}: {name} at {vaddr:#x}, objdump says {label}")
    log(f"  {checked} frames named _init or *@plt checked against readelf/objdump, "
        f"{py_plt} in Python's PLTs")
    assert not wrong, wrong[:10]
    assert py_plt > 0, "no PLT frame of python3.11 or libpython3.11"


def check_kptr_line(value, as_nobody=False):
    """(value, verdict, advice) of `ember check`'s kptr_restrict line, run (as root or as
    nobody) in a mount namespace of its own where /proc/sys/kernel/kptr_restrict reads value
    (a file bound over it; None: the host's own)."""
    ember_copy, _ = staged_for_others(os.path.join(WD, "bin"), "ember", "ember-symbolizer")
    cmd = (["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"] if as_nobody else []) + \
        [ember_copy, "check"]
    if value is not None:
        fake = os.path.join(WD, f"kptr_restrict-{value}")
        with open(fake, "w") as f:
            f.write(f"{value}\n")
        # /proc made private in a mount namespace of its own, not / (which is no mount point
        # in a chroot): the bind over kptr_restrict cannot reach the host's namespace.
        cmd = ["unshare", "-m", "--propagation", "unchanged", "sh", "-c",
               'mount --make-rprivate /proc && mount --bind "$0" /proc/sys/kernel/kptr_restrict && '
               'exec "$@"', fake, *cmd]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    m = re.search(r"^[ \t]*kptr_restrict[ \t]+(\S+)[ \t]+(\S+)[ \t]*(.*)$", r.stdout + r.stderr, re.M)
    assert m, f"ember check says nothing of kptr_restrict:\n{r.stdout}{r.stderr}"
    return m.group(1), m.group(2), m.group(3).strip()


def test_check_explains_kernel_address_hiding():
    """ember check reads kptr_restrict and says what it means for whoever runs it: 0 shows
    kernel addresses to all, 1 to root (CAP_SYSLOG) only, 2 to nobody."""
    with open("/proc/sys/kernel/kptr_restrict") as f:
        host = f.read().strip()
    got = check_kptr_line(None)
    log(f"  this host: kptr_restrict {host}: {got}")
    assert got[0] == host, got
    hidden = "kernel frames will show as addresses"
    for value, nobody, verdict, advice in (("0", True, "ok", ""), ("1", False, "ok", ""),
                                           ("1", True, "warning", f"{hidden}: run as root"),
                                           ("2", False, "warning",
                                            f"{hidden}: sysctl kernel.kptr_restrict=1 and run as root")):
        got = check_kptr_line(value, nobody)
        log(f"  kptr_restrict {value} as {'nobody' if nobody else 'root'}: {got}")
        assert got == (value, verdict, advice), got


run_tests([
    test_stripped_go_program_has_functions_lines_and_split,
    test_c_program_inlined_functions_are_frames,
    test_stripped_c_resolves_through_build_id_debug_file,
    test_stripped_c_resolves_through_debuglink,
    test_stripped_c_names_from_minidebuginfo,
    test_whole_system_names_plt_entries_not_init,
    test_check_explains_kernel_address_hiding,
])
