#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Names from perf maps (/tmp/perf-PID.map) for JIT code no walker named, with real eBPF.

- Node (--perf-basic-prof --interpreted-frames-native-stack) on a workload that measures
  its leaves' CPU itself (tests/workloads/nodesplit.js, 60/30/10): the leaves named as V8
  writes them ("JS:*leafA /path:line:col"), in plain functions and in class methods
  behind an arrow and an anonymous function; shares within 3 points of the truth; the
  leaves named in at least 95% of the samples under the JS round that calls them.
- CPython 3.12+ with -X perf: its trampolines named py::leaf_a:PATH under the Python
  frames ember's own reader names.
- A HotSpot JVM whose perf map jcmd Compiler.perfmap wrote, with ember's JVM reader off
  (--interpreters none): its compiled leaves named from the map, shares within 3 points
  of the truth JvmSplit measures.
- Erlang's JIT (+JPperf true): three leaves of 6, 3 and 1 units of work named ($erlsplit:loop_a/2),
  their shares within 5 points of the work they do (the same code in each).
- A "JIT" (tests/workloads/jit_spin.c, a loop in anonymous executable memory) with a map
  that is good, written a second late, garbage, 1 GiB long, a line of 1 MiB, a FIFO, a
  symbolic link, another user's, or absurd sizes: named when the map is good (late: once
  written), never from the others; no recording stalls; the statistics count what was
  refused or cut.

    sudo python3 tests/integration/test_perfmap.py     (or ctest -R integration_perfmap)"""
import collections
import glob
import os
import re
import shutil
import signal
import subprocess
import time

from emberlib import (SRC, build_workload, kill, log, require_root, run_tests, skip_or_fail,
                      start, workdir)
from interplib import (assert_shares, decode_otlp, leaf_shares, read_truth, record,
                       run_workload, stats_of)

LEAVES = ("leaf_a", "leaf_b", "leaf_c")
NODE_SCRIPT = os.path.join(SRC, "tests", "workloads", "nodesplit.js")
# V8 names a function by its tier (~ interpreted, ^ baseline, + Maglev, * optimized) and
# where it starts: "JS:*leafA /path/nodesplit.js:34:15" (Node 20; Node 18 writes
# "LazyCompile:*leafA /path/nodesplit.js:34").
V8_FN = r"(?:JS|LazyCompile|Function):[*~^+]?{} .*nodesplit\.js(?::\d+)+"
NODE_LEAF = re.compile(V8_FN.format(r"leaf([ABC])"))
NODE_METHOD_LEAF = re.compile(V8_FN.format(r"(?:Split\.)?leaf([ABC])"))
NODE_ROUND = re.compile(V8_FN.format("runRound"))
ERL_LEAF = re.compile(r"\$erlsplit:(?:leaf|loop)_([abc])/2")


def remove_map(pid):
    """The JIT leaves its map behind when it exits (Node, CPython): the test does not."""
    try:
        os.unlink(f"/tmp/perf-{pid}.map")
    except FileNotFoundError:
        pass


def names(frames):
    return [f.name for f in frames]


def node():
    path = shutil.which("node") or shutil.which("nodejs")
    if not path:
        skip_or_fail("no node on PATH (scripts/install-deps.sh installs nodejs)")
    return path


def node_leaf(pattern):
    """The sample's innermost frame the perf map names as a leaf, as leaf_a..leaf_c."""
    def leaf_of(frames):
        for f in frames:  # leaf first
            m = pattern.fullmatch(f.name)
            if m:
                return "leaf_" + m.group(1).lower()
        return None
    return leaf_of


def check_node(mode, pattern):
    exe = node()
    wd = WD
    leaf_of = node_leaf(pattern)
    pid, samples, stats, truth, _, _ = run_workload(
        wd, NODE_SCRIPT, LEAVES, leaf_of, f"node-{mode}", exe, mode, 5,
        cmd_prefix=(exe, "--perf-basic-prof", "--interpreted-frames-native-stack"),
        min_samples=1500, record_extra=("--interpreters", "none"))
    remove_map(pid)
    counts, in_round, named = collections.Counter(), 0, 0
    for _, _, n, frames in samples:
        leaf = leaf_of(frames)
        if leaf:
            counts[leaf] += n
        if any(NODE_ROUND.fullmatch(f.name) for f in frames):
            in_round += n
            named += n if leaf else 0
    shares = leaf_shares(f"node {mode}", counts, next(iter(truth.values())), 1500)
    for leaf in LEAVES:
        log(f"    {leaf}: {shares[leaf][0]:.1f}% (truth {shares[leaf][1]:.1f}%)")
    share = 100.0 * named / max(in_round, 1)
    perf = {k: v for k, v in stats.items() if k.startswith("perfmap.")}
    log(f"    runRound's samples with their leaf named: {share:.2f}% of {in_round}; {perf}")
    example = next((";".join(reversed(names(f))) for _, _, _, f in samples if leaf_of(f)), "")
    log(f"    e.g. {example[-300:]}")
    assert_shares(f"node {mode}", shares, 3.0)
    assert share >= 95.0, f"node {mode}: leaves named in only {share:.2f}% of the round"
    assert stats.get("perfmap.files", 0) >= 1, perf
    assert stats.get("perfmap.lines_bad", 0) == 0, perf


def test_node_functions():
    check_node("split", NODE_LEAF)


def test_node_methods():
    check_node("method", NODE_METHOD_LEAF)


def python312():
    """A CPython 3.12 or later (-X perf), here or under pyenv."""
    root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    cands = sorted(glob.glob(os.path.join(root, "versions", "3.1[2-9]*", "bin", "python3")))
    cands += [shutil.which(f"python3.{v}") for v in (13, 12)]
    for c in cands:
        if c and os.path.exists(c) and "/shims/" not in c:
            return os.path.realpath(c)
    skip_or_fail("no CPython 3.12 or later (for -X perf): none on PATH or under ~/.pyenv")


def test_cpython_trampolines():
    py = python312()
    script = os.path.join(SRC, "tests", "workloads", "pysplit.py")
    tramp = re.compile(r"py::(leaf_[abc]):" + re.escape(script))

    def leaf_of(frames):
        for f in frames:
            m = tramp.fullmatch(f.name)
            if m:
                return m.group(1)
        return None

    pid, samples, stats, truth, _, _ = run_workload(
        WD, script, LEAVES, leaf_of, "py312", py, "split", 5, cmd_prefix=(py, "-X", "perf"),
        min_samples=1000)
    remove_map(pid)
    counts, with_python = collections.Counter(), 0
    for _, _, n, frames in samples:
        leaf = leaf_of(frames)
        if leaf:
            counts[leaf] += n
            # ember's Python reader names the same function above its trampoline.
            if any(f.name == leaf and f.kind == "cpython" for f in frames):
                with_python += n
    total = sum(counts.values())
    shares = leaf_shares("python -X perf", counts, next(iter(truth.values())), 1000)
    for leaf in LEAVES:
        log(f"    py::{leaf}: {shares[leaf][0]:.1f}% (truth {shares[leaf][1]:.1f}%)")
    log(f"    {with_python} of {total} with the Python frame ember's reader names; "
        f"perfmap.frames_named={stats.get('perfmap.frames_named')}")
    assert_shares("python -X perf", shares, 5.0)
    assert with_python >= 0.95 * total, f"{with_python} of {total}"


def test_jvm_perfmap():
    jdk = "/usr/lib/jvm/java-17-openjdk-amd64"
    if not os.path.exists(f"{jdk}/bin/jcmd"):
        skip_or_fail(f"{jdk} is not installed (scripts/install-deps.sh installs it)")
    classes = os.path.join(WD, "jvm")
    os.makedirs(classes, exist_ok=True)
    subprocess.run([f"{jdk}/bin/javac", "-g", "-d", classes,
                    os.path.join(SRC, "tests", "workloads", "JvmSplit.java")], check=True)
    # HotSpot writes a method as Java declares it: "long JvmSplit.leafA(long)".
    leaf = re.compile(r"long JvmSplit\.leaf([ABC])\(long\)")
    truth_file = os.path.join(WD, "jvm-perfmap.truth")
    wl = start([f"{jdk}/bin/java", "-cp", classes, "JvmSplit", "split", "60"],
               env=dict(os.environ, EMBER_TRUTH_FILE=truth_file))
    path = f"/tmp/perf-{wl.pid}.map"
    try:
        # The map is what the code cache holds when jcmd asks: asked again until the three
        # leaves are compiled in it (within a few seconds; longer on a slow machine).
        for _ in range(30):
            time.sleep(1)
            jcmd = subprocess.run([f"{jdk}/bin/jcmd", str(wl.pid), "Compiler.perfmap"],
                                  capture_output=True, text=True, timeout=60)
            assert jcmd.returncode == 0, jcmd.stdout + jcmd.stderr
            with open(path, errors="replace") as f:
                compiled = {m.group(1) for m in map(leaf.fullmatch, (
                    line.rstrip("\n").split(" ", 2)[-1] for line in f)) if m}
            if compiled == {"A", "B", "C"}:
                break
        log(f"    jcmd Compiler.perfmap: the leaves {sorted(compiled)} compiled in {path}")
        out = record(WD, "jvm-perfmap", [wl.pid], 4, extra=("--interpreters", "none"))
        wl.send_signal(signal.SIGTERM)
        wl.wait(timeout=60)
    finally:
        kill(wl)
        for p in glob.glob(f"/tmp/perf-{wl.pid}.map"):
            os.unlink(p)
    samples = [s for s in decode_otlp(out["otlp"]) if s[0] == wl.pid]
    counts, total = collections.Counter(), 0
    for _, _, n, frames in samples:
        total += n
        for f in frames:
            m = leaf.fullmatch(f.name)
            if m:
                counts[m.group(1)] += n
                break
    stats = stats_of(out["pb.gz"])
    named = sum(counts.values())
    log(f"    {named} of {total} samples in a leaf the map names: {dict(counts)}; "
        f"perfmap.frames_named={stats.get('perfmap.frames_named')}")
    truth = next(iter(read_truth(truth_file, LEAVES)[0].values()))
    shares = leaf_shares("jvm perf map", {f"leaf_{k.lower()}": v for k, v in counts.items()},
                         truth, 1000)
    for leaf in LEAVES:
        log(f"    {leaf}: {shares[leaf][0]:.1f}% (truth {shares[leaf][1]:.1f}%)")
    assert named >= 0.9 * total, f"only {named} of {total} samples named from the map"
    assert_shares("jvm perf map", shares, 3.0)


def test_erlang_perf_map():
    """BEAM's JIT (+JPperf true) on three leaves of 6, 3 and 1 units of work on one scheduler."""
    erl, erlc = shutil.which("erl"), shutil.which("erlc")
    if not erl or not erlc:
        skip_or_fail("no erl/erlc on PATH (scripts/install-deps.sh installs erlang-base)")
    out_dir = os.path.join(WD, "erl")
    os.makedirs(out_dir, exist_ok=True)
    subprocess.run([erlc, "-o", out_dir, os.path.join(SRC, "tests", "workloads", "erlsplit.erl")],
                   check=True)
    wl = start([erl, "+JPperf", "true", "+S", "1", "-noshell", "-pa", out_dir, "-run",
                "erlsplit", "main", "30"])
    pid = wl.pid
    try:
        line = wl.stdout.readline()
        assert line.startswith("ready "), line
        pid = int(line.split()[1])  # the emulator's (erl execs it)
        time.sleep(1)
        out = record(WD, "erlang", [pid], 4)
    finally:
        kill(wl)
        for p in glob.glob(f"/tmp/perf-{pid}.map"):
            os.unlink(p)
    counts, total = collections.Counter(), 0
    for _, _, n, frames in (s for s in decode_otlp(out["otlp"]) if s[0] == pid):
        total += n
        leaf = next((m.group(1) for m in map(ERL_LEAF.fullmatch, names(frames)) if m), None)
        if leaf:
            counts["leaf_" + leaf] += n
    stats = stats_of(out["pb.gz"])
    # The leaves run the same code for 6, 3 and 1 units of work: their shares of the CPU
    # time are the truth, however much of it other processes on the host take.
    shares = leaf_shares("erlang", counts, {"leaf_a": 60.0, "leaf_b": 30.0, "leaf_c": 10.0}, 1000)
    for leaf in LEAVES:
        log(f"    $erlsplit:{leaf}: {shares[leaf][0]:.1f}% (truth {shares[leaf][1]:.0f}%)")
    log(f"    {sum(counts.values())} of {total} samples named from the map; "
        f"perfmap.entries={stats.get('perfmap.entries')}")
    assert sum(counts.values()) >= 0.8 * total, f"{sum(counts.values())} of {total}"
    assert_shares("erlang", shares, 5.0)


SPIN_MODES = {  # mode: (named, statistics that must be non-zero)
    "good": (True, ()),
    "late": (True, ()),
    "garbage": (False, ("perfmap.lines_bad",)),
    "huge": (True, ("perfmap.truncated",)),
    "long": (True, ("perfmap.lines_long",)),
    "fifo": (False, ()),
    "link": (False, ()),
    "other": (False, ()),
    "sizes": (True, ("perfmap.lines_bad",)),  # wrapping, everything, empty, 18 digits
}


def test_hostile_maps():
    spin = build_workload("jit_spin", WD)
    for mode, (named_want, counted) in SPIN_MODES.items():
        # "late" writes its map a second in: the rest of its run is what is checked.
        seconds = 4 if mode == "late" else 2
        wl = start([spin, mode, str(seconds + 6)])
        try:
            line = wl.stdout.readline()
            assert line.startswith("ready"), line
            t0 = time.time()
            out = record(WD, f"spin-{mode}", [wl.pid], seconds)
            took = time.time() - t0
        finally:
            kill(wl)
        samples = [s for s in decode_otlp(out["otlp"]) if s[0] == wl.pid]
        total = sum(n for _, _, n, _ in samples)
        named = sum(n for _, _, n, f in samples if any(x.name == "jit_spin_loop" for x in f))
        stats = stats_of(out["pb.gz"])
        perf = {k[8:]: v for k, v in stats.items() if k.startswith("perfmap.") and v}
        log(f"  {mode}: {named} of {total} samples named jit_spin_loop, recorded in "
            f"{took:.1f}s; {perf}")
        assert total >= 1000, f"{mode}: {total} samples"
        # A recording of 4 s ends within a few more: nothing the map does stalls it.
        assert took < seconds + 15, f"{mode}: the recording took {took:.1f}s"
        if named_want:
            # late: unnamed until the map is written a second in, and the next read.
            assert named >= (0.5 if mode == "late" else 0.95) * total, f"{mode}: {named}"
        else:
            assert named == 0, f"{mode}: {named} samples named from a map that is not one"
        for k in counted:
            assert stats.get(k, 0) > 0, f"{mode}: {k} is {stats.get(k)}"
        bad_names = [x.name for _, _, _, f in samples for x in f
                     if x.name in ("wraps", "everything", "nothing", "too_many_digits")]
        assert not bad_names, f"{mode}: named from an absurd line: {bad_names[:3]}"


if __name__ == "__main__":
    require_root()
    WD = workdir()
    run_tests([test_node_functions, test_node_methods, test_cpython_trampolines,
               test_jvm_perfmap, test_erlang_perf_map, test_hostile_maps])
