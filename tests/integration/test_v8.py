#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""JavaScript frames end to end, with the real eBPF walker and V8's own layout: npm's Node
16, 18, 20, 22 and 24 (V8 9.4, 10.2, 11.3, 12.4, 13.6; fetched into the build tree by
nodes.py) and the machine's own node (an official build, nodesource's or Debian's). A known-split workload
(tests/workloads/nodesplit.js) measures each leaf's CPU itself; it runs in V8's default
tiers (Ignition, Sparkplug, Maglev, TurboFan) and interpreted only (--jitless). In each:
shares within 3 points of that truth over at least 1,500 leaf samples; the leaf named in
98% of handle()'s samples; complete from the leaf through handle and runRound to the
native start (__libc_start_call_main) in 98%; the leaf's line exact in 95%, interpreted
or compiled (its hot loop's, or its clock call's while it reads the clock); JavaScript frames typed "v8js" in OTLP with
the script's path. Then, in Node 20, 22 and 24, the same checks with Sparkplug's baseline
code held as the top tier, and with Ignition without --jitless (both run V8's builtins
from their copy in the code range; Sparkplug's code calls builtins that build no frame).
Then, on Node 20: the leaves as class methods called through an arrow
and an anonymous function; recursion 1,000 frames deep (cut with a marker, counted); zlib's
crc32 (C++) under its JavaScript caller; the leaves called from an async function resumed
after an await; the split in a worker_threads Worker; node
--cpu-prof in the same process (names, scripts, hottest lines equal, shares within 5
points). Last, the newest release (Node 26, V8 14, whose position tables ember does not
read yet) refused with a statistic, its JavaScript unnamed, never misnamed.

    sudo python3 tests/integration/test_v8.py     (or ctest -R integration_v8)

What the reader must give: leafA (V8's name for it), the file nodesplit.js and the line,
OTLP profile.frame.type "v8js", and the statistics v8.processes, v8.frames and
v8.frames_named (pprof comments)."""
import collections
import glob
import json
import os

import nodes
from emberlib import (SANITIZED, SRC, log, require_root, run_tests, shipped_build_only,
                      skip_or_fail, workdir)
from interplib import (assert_shares, check_marker_cut, check_peer, follows, in_leaves,
                       leaf_shares, marked_lines, run_workload)

SCRIPT = os.path.join(SRC, "tests", "workloads", "nodesplit.js")
LEAVES = ("leaf_a", "leaf_b", "leaf_c")
KIND = "v8js"  # OTLP's profile.frame.type for JavaScript frames
NAMES = {"leaf_a": "leafA", "leaf_b": "leafB", "leaf_c": "leafC"}
LEAF_OF = {name: leaf for leaf, name in NAMES.items()}
PATH = ["__libc_start_call_main", "runRound", "handle"]
METHOD_PATH = ["__libc_start_call_main", "runRound", "(anonymous)", "handle"]
MARKS = marked_lines(SCRIPT)
with open(SCRIPT) as _f:
    _text = _f.read().splitlines()
# Each plain leaf's lines: from its declaration to its closing brace.
RANGES = {}
for _name in NAMES.values():
    _first = next(n for n, t in enumerate(_text, 1) if t.startswith(f"function {_name}("))
    _last = next(n for n, t in enumerate(_text, 1) if n > _first and t == "}")
    RANGES[_name] = (_first, _last)
MODES = {"default": (), "jitless": ("--jitless",)}
WD = None


def innermost_leaf(frames):
    return next((f for f in frames if f.kind == KIND and f.name in LEAF_OF), None)


def run(exe, label, mode, opts=(), seconds=5, min_samples=1500):
    return run_workload(WD, SCRIPT, LEAVES, lambda fr: innermost_leaf(fr) is not None, label,
                        exe, mode, seconds, cmd_prefix=(exe, *opts), min_samples=min_samples)


def check_split(label, samples, truth, compiled, path=PATH):
    """Shares vs truth; stacks complete along path; the leaf's line; JavaScript frames
    typed, with the script's path."""
    counts, complete, exact, within, typed = collections.Counter(), 0, 0, 0, 0
    bad, lines = [], collections.defaultdict(collections.Counter)
    for n, frames, leaf in in_leaves(samples, innermost_leaf):
        key = LEAF_OF[leaf.name]
        counts[key] += n
        lines[key][leaf.line] += n
        names = [f.name for f in reversed(frames)]
        if follows(names, [*path, leaf.name]):
            complete += n
        elif len(bad) < 4:
            bad.append(";".join(f.name + ("" if f.kind in (KIND, "kernel") else "(n)")
                                for f in reversed(frames)))
        # The leaf's line is its hot loop's, or its clock call's while it reads the clock
        # (a JavaScript frame above it).
        clock = frames.index(leaf) > 0 and any(f.name == "cpuUs" for f in frames)
        want = MARKS[("clock-" if clock else "hot-") + key[-1]]
        if leaf.line == want and leaf.file == SCRIPT:
            exact += n
        first, last = RANGES[leaf.name]
        if first <= leaf.line <= last:
            within += n
        if all(f.kind == KIND for f in frames if f.file == SCRIPT):
            typed += n
    result = leaf_shares(label, counts, truth, 1500, bad, " ((n): native)")
    total = sum(counts.values())
    in_handle = sum(n for _, _, n, frames in samples if any(f.name == "handle" for f in frames))
    for leaf in LEAVES:
        log(f"    {NAMES[leaf]}: {result[leaf][0]:.1f}% (truth {truth[leaf]:.1f}%), lines "
            f"{dict(lines[leaf].most_common(3))} (hot loop: {MARKS['hot-' + leaf[-1]]})")
    pct = {k: 100.0 * v / total for k, v in (("complete", complete), ("exact", exact),
                                             ("within", within))}
    pct["named"] = 100.0 * total / max(in_handle, 1)
    log(f"    complete: {pct['complete']:.2f}%, the leaf's line exact: {pct['exact']:.2f}%, "
        f"within the leaf: {pct['within']:.2f}%, handle()'s samples in a leaf: "
        f"{pct['named']:.2f}%")
    assert_shares(label, result, 3.0)
    if pct["named"] < 98.0:
        unnamed = collections.Counter()
        for _, _, n, frames in samples:
            if any(f.name == "handle" for f in frames) and innermost_leaf(frames) is None:
                unnamed[";".join(f"{f.name}:{f.line}" for f in reversed(frames[:5]))] += n
        log(f"    handle()'s samples without a leaf: {unnamed.most_common(3)}")
    assert pct["named"] >= 98.0, f"{label}: only {pct['named']:.2f}% of handle()'s samples " \
        "name the leaf it runs"
    assert pct["complete"] >= 98.0, f"{label}: only {pct['complete']:.2f}% complete: {bad}"
    # The issue asks for exact lines interpreted and lines within the leaf compiled: V8's
    # position tables give the exact line in compiled code too (99.4% and more here).
    assert pct["within"] >= 90.0, f"{label}: the leaf's lines in only {pct['within']:.2f}%"
    assert pct["exact"] >= 95.0, f"{label}: the leaf's line exact in only {pct['exact']:.2f}%"
    assert typed == total, f"{label}: a frame of the script not typed {KIND} in " \
        f"{total - typed} samples"


def stats_line(stats):
    return ", ".join(f"{k}={v}" for k, v in sorted(stats.items()) if k.startswith("v8."))


def readable_nodes():
    """(label, path) of each node to read: npm's pinned releases, then the machine's own
    (an official build, or Debian's: a small node on libnode.so, whose builtins have no
    symbols). Under the sanitizers, Node 20 alone: the reader's code paths are the same for
    every version, and the shipped build's pass reads them all."""
    if SANITIZED:
        return [("node-20.20.2", nodes.fetch("20.20.2"))]
    out = [(f"node-{v}", nodes.fetch(v)) for v in nodes.READ]
    own = nodes.machine_node()
    if own and all(own != p for _, p in out):
        log(f"  the machine's own node: {own}")
        out.append(("machine-node", own))
    return out


def test_known_split_in_every_version_and_mode():
    for label, exe in readable_nodes():
        for mode, opts in MODES.items():
            _, samples, stats, truth, _, _ = run(exe, f"{label}-{mode}", "split", opts)
            check_split(f"{label} {mode}", samples, next(iter(truth.values())),
                        compiled=mode == "default")
            log(f"  stats: {stats_line(stats)}")
            assert stats.get("v8.processes", 0) >= 1 and stats.get("v8.rows_sent", 0) >= 1, \
                stats_line(stats)


# V8's lower tiers held as the top one: what a busy host or a warm (not hot) function runs.
# Sparkplug's code calls builtins that build no frame (ModulusSmi_Baseline, ...); Ignition
# runs in the builtins' own handlers. Node 20 on runs both from the builtins' copy in the
# code range (short builtin calls, on hosts with 4 GiB or more).
HELD = {"baseline": ("--no-turbofan", "--no-maglev"),
        "interpreted": ("--no-sparkplug", "--no-maglev", "--no-turbofan")}
HELD_VERSIONS = ("20.20.2", "22.23.5", "24.22.3")


def builtins_copied(pid, exe):
    """Whether the process runs V8's builtins from a copy: an executable mapping of node
    placed apart from its own load (another address less file offset)."""
    path = os.path.realpath(exe)
    with open(f"/proc/{pid}/maps") as f:
        mapped = [line.split() for line in f]
    bases = {int(m[0].split("-")[0], 16) - int(m[2], 16) for m in mapped
             if len(m) >= 6 and m[5] == path and "x" in m[1]}
    return len(bases) > 1


def test_lower_tiers_held():
    """Each leaf in Sparkplug's baseline code, and interpreted by Ignition without
    --jitless, in Node 20, 22 and 24: shares, names and exact lines as in the default
    tiers. The builtins run from their copy in the code range (checked: else the test
    does not cover it and says so)."""
    versions = HELD_VERSIONS[:1] if SANITIZED else HELD_VERSIONS
    copied = []

    def held(version, mode):
        exe = nodes.fetch(version)
        label = f"node-{version} {mode}"
        _, samples, stats, truth, _, _ = run_workload(
            WD, SCRIPT, LEAVES, lambda fr: innermost_leaf(fr) is not None,
            f"node-{version}-{mode}", exe, "split", 5, cmd_prefix=(exe, *HELD[mode]),
            min_samples=1500,
            check_pid=lambda pid: copied.append((version, builtins_copied(pid, exe))))
        check_split(label, samples, next(iter(truth.values())), compiled=False)
        log(f"  stats: {stats_line(stats)}")

    for version in versions:
        for mode in HELD:
            held(version, mode)
    # V8 decides at start-up whether to copy (1 process of 6 in a run here did not): a
    # version none of whose processes copied runs again, up to 4 times, until one does.
    for version in versions:
        for _ in range(4):
            if any(c for v, c in copied if v == version):
                break
            log(f"  node {version}: no process ran from the copy yet: once more")
            held(version, "baseline")
    log(f"  builtins run from their copy in {sum(c for _, c in copied)} of {len(copied)} processes")
    uncovered = sorted({v for v, _ in copied} - {v for v, c in copied if c})
    if uncovered:
        skip_or_fail(f"V8 did not copy its builtins here in Node {', '.join(uncovered)} (a host "
                     "under 4 GiB?): the copy is not covered")


def test_class_methods_behind_an_arrow_and_an_anonymous_function():
    exe = nodes.fetch("20.20.2")
    _, samples, _, truth, _, _ = run(exe, "node-20-method", "method")
    check_split("node 20 methods", samples, next(iter(truth.values())), compiled=True,
                path=METHOD_PATH)


def test_recursion_past_the_frame_budget():
    """1,000 frames deep: the JavaScript frames end in the marker (counted), the leaves'
    shares still follow the truth."""
    exe = nodes.fetch("20.20.2")
    _, samples, stats, truth, _, _ = run(exe, "node-20-recursion", "recursion")
    check_marker_cut("v8", samples, stats, next(iter(truth.values())), innermost_leaf,
                     lambda frames: [f for f in frames if f.kind == KIND],
                     lambda name: LEAF_OF[name], "[v8 frames truncated]")


def test_native_code_under_its_caller():
    """zlib's crc32 (C++ in node) under its JavaScript caller: of checksum()'s samples
    (but those in the clock it reads), 95% have zlib's native frames above it, named from
    node's symbols, and the JavaScript below it complete to the native start."""
    exe = nodes.fetch("20.20.2")
    _, samples, _, _, _, _ = run(exe, "node-20-native", "native",
                                 min_samples=0)
    total = above = complete = 0
    example = ""
    for _, _, n, frames in samples:
        at = next((i for i, f in enumerate(frames) if f.kind == KIND and f.name == "checksum"),
                  None)
        # checksum() reads the clock around each call: those samples are the clock's.
        if at is None or any(f.name == "cpuUs" for f in frames[:at]):
            continue
        total += n
        native = [f for f in frames[:at] if f.kind not in (KIND, "kernel")]
        if native and any("crc32" in f.name.lower() or "deflate" in f.name.lower()
                          for f in native):
            above += n
            example = example or ";".join(f.name for f in reversed(frames[:at + 1]))
        if follows([f.name for f in reversed(frames)], [*PATH[:2], "checksum"]):
            complete += n
    log(f"  checksum(): {total} samples, {above} with zlib's code above it, {complete} "
        f"complete; e.g. {example[:200]}")
    assert total >= 500, f"too few samples in checksum() ({total})"
    assert above >= 0.95 * total, f"zlib's code above checksum() in only {above} of {total}"
    assert complete >= 0.98 * total, f"complete in only {complete} of {total}"


def test_async_function():
    """Each leaf called from an async function resumed from the microtask queue after an
    await: its shares, its leaves named, handleAsync above handle."""
    exe = nodes.fetch("20.20.2")
    _, samples, _, truth, _, _ = run(exe, "node-20-async", "async")
    check_split("node 20 async", samples, next(iter(truth.values())), compiled=True,
                path=["__libc_start_call_main", "handleAsync", "handle"])


def test_worker_thread():
    """A worker_threads Worker running the split 70/20/10 while the main thread waits: its
    shares, its leaves named, complete from the worker thread's start."""
    exe = nodes.fetch("20.20.2")
    _, samples, _, truth, _, _ = run(exe, "node-20-worker", "worker")
    check_split("node 20 worker", samples, next(iter(truth.values())), compiled=True,
                path=["start_thread", "runRound", "handle"])


def cpu_prof_leaves(directory):
    """{leaf: {"name", "file", "ticks", "lines": {line: ticks}}} from the .cpuprofile node
    --cpu-prof wrote in directory: each leaf function's own ticks (samples whose innermost
    frame it is) and their lines."""
    paths = glob.glob(os.path.join(directory, "*.cpuprofile"))
    assert paths, f"node --cpu-prof wrote no profile in {directory}"
    with open(paths[0]) as f:
        prof = json.load(f)
    out = {leaf: {"name": NAMES[leaf], "file": None, "ticks": 0,
                  "lines": collections.Counter()} for leaf in LEAVES}
    for node in prof["nodes"]:
        frame = node["callFrame"]
        leaf = LEAF_OF.get(frame["functionName"])
        if not leaf:
            continue
        out[leaf]["file"] = frame["url"]
        out[leaf]["ticks"] += node.get("hitCount", 0)
        for t in node.get("positionTicks", []):
            out[leaf]["lines"][t["line"]] += t["ticks"]
    return out


@shipped_build_only("agreement with a peer profiler")
def test_cpu_prof_beside():
    """node --cpu-prof (V8's own sampling profiler, in the same process) while ember
    records it: the leaves' names and scripts equal, the hottest line of each leaf equal,
    shares within 5 points. V8's sampler can drift from the workload's own clock on a
    loaded machine (seen: leafA at 95.0% for a truth of 59.5%, ember 59.4%): a run where it
    is more than 5 points off the truth is recorded once more, and if it is off again its
    shares are not compared (ember's are held to the truth in run); names, scripts and
    hottest lines still are."""
    exe = nodes.fetch("20.20.2")
    for attempt in range(2):
        prof_dir = os.path.join(WD, f"cpu-prof-{attempt}")
        os.makedirs(prof_dir, exist_ok=True)
        _, samples, _, truth, _, _ = run(exe, f"node-20-cpu-prof-{attempt}", "split",
                                         opts=("--cpu-prof", f"--cpu-prof-dir={prof_dir}",
                                               "--cpu-prof-interval=1000"))
        truth = next(iter(truth.values()))
        counts, lines = collections.Counter(), collections.defaultdict(collections.Counter)
        files = {}
        for n, _, leaf in in_leaves(samples, innermost_leaf):
            counts[LEAF_OF[leaf.name]] += n
            lines[LEAF_OF[leaf.name]][leaf.line] += n
            files[LEAF_OF[leaf.name]] = leaf.file
        total = sum(counts.values())
        shares = {leaf: 100.0 * counts[leaf] / total for leaf in LEAVES}
        peer = cpu_prof_leaves(prof_dir)
        for leaf in LEAVES:
            url = peer[leaf]["file"] or ""
            assert url in (files.get(leaf), "file://" + files.get(leaf, "")), \
                f"{leaf}: --cpu-prof's script {url}, ember's {files.get(leaf)}"
        ticks = sum(peer[leaf]["ticks"] for leaf in LEAVES) or 1
        off = max(abs(100.0 * peer[leaf]["ticks"] / ticks - truth[leaf]) for leaf in LEAVES)
        if off > 5.0 and attempt == 0:
            log(f"    --cpu-prof is {off:.1f} points off the workload's own truth: once more")
            continue
        check_peer("--cpu-prof", peer, "ticks", NAMES, shares, lines, truth,
                   tolerance=5.0 if off <= 5.0 else 100.0)
        break


def test_newest_releases_refused():
    for version in nodes.REFUSED:
        exe = nodes.fetch(version)
        _, samples, stats, _, _, _ = run(exe, f"node-{version}", "split", seconds=3,
                                         min_samples=0)
        js = sum(n for _, _, n, frames in samples if any(f.kind == KIND for f in frames))
        log(f"  node {version}: {sum(n for *_, n, _ in samples)} samples, {js} with a "
            f"{KIND} frame; {stats_line(stats)}")
        assert stats.get("v8.processes_unsupported", 0) >= 1, stats_line(stats)
        assert stats.get("v8.rows_sent", 0) == 0, stats_line(stats)
        assert js == 0, f"node {version}: {js} samples with a {KIND} frame"


def main():
    global WD
    require_root()
    WD = workdir()
    try:
        nodes.fetch(nodes.READ[0])
    except OSError as e:
        skip_or_fail(f"cannot fetch node from the npm registry: {e}")
    run_tests([test_known_split_in_every_version_and_mode, test_lower_tiers_held,
               test_class_methods_behind_an_arrow_and_an_anonymous_function,
               test_recursion_past_the_frame_budget, test_native_code_under_its_caller,
               test_async_function, test_worker_thread, test_cpu_prof_beside,
               test_newest_releases_refused])


if __name__ == "__main__":
    main()
