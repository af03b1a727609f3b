#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Ruby frames end to end, with the real eBPF walker and Debian's ruby3.1
(3.1.2, a shared libruby). A known-split workload (tests/workloads/rbsplit.rb)
measures its own thread CPU time per method: shares within 3 points of that
truth over at least 2,000 leaf samples; 99% of them complete from the leaf to
<main> and on through libruby's ruby_run_node to _start; the leaf's line the
hot loop's in 95% of them, the callers' lines the lines that call; Ruby frames
typed "ruby" in OTLP and named as Ruby names them (Shop::Cart#leaf_a, the
block's "block in ...", the C function Integer#times between two Ruby frames,
with native frames between them). Then the shapes: two threads with different
splits, recursion 300 deep (cut with a marker, counted), a C extension (zlib)
under its Ruby caller, stackprof on the same process beside ember (the leaves'
names and hottest lines agree, shares within 5 points), a process started
after ember, one in its own mount and PID namespaces, one whose heap is
compacted every 100 ms (no frame ever misnamed), one whose memory-map lock
waits on a file system that stopped answering (its Ruby frames unnamed, the
run on time, the other process named), and a fake libruby
(tests/workloads/fake_ruby.c: the symbols and thread variable ember finds
Ruby by) whose VM stack is garbage, too deep, unmapped or forged.

    sudo python3 tests/integration/test_ruby.py     (or ctest -R integration_ruby)
    python3 tests/integration/test_ruby.py --peer-only [SECONDS]
        the workload under stackprof alone, against its truth: no ember, no root

What the reader must give: the names above (rb_profile_frame_full_label's, as
stackprof prints them, a block's "block in METHOD" with or without the class),
OTLP profile.frame.type "ruby" on every Ruby frame (C functions called as
methods too), the .rb file and line, the marker "[ruby frames truncated]" and
the statistics ruby.processes, ruby.frames, ruby.frames_stale and
ruby.markers_truncated (pprof comments)."""
import collections
import json
import os
import re
import subprocess
import sys

from emberlib import (FRAME_POINTERS, SRC, log, read_folded, require_root, run_tests,
                      shipped_build_only, skip_or_fail, workdir)
from interplib import (CTR, assert_shares, check_a_stall, check_hostile_fakes, follows,
                       in_leaves, leaf_shares, mapped_from_namespace,
                       line_ranges, marked_lines, matches, own_namespaces, read_truth,
                       record_started_after, run_workload as run_split_workload)
from unwindlib import THREAD_START

WORKLOAD = os.path.join(SRC, "tests", "workloads", "rbsplit.rb")
RBSTALL = os.path.join(SRC, "tests", "workloads", "rbstall.rb")
RUBY = "/usr/bin/ruby3.1"
LIBRUBY = "/usr/lib/x86_64-linux-gnu/libruby-3.1.so.3.1"
LEAVES = ("leaf_a", "leaf_b", "leaf_c")
KIND = "ruby"  # OTLP's profile.frame.type for Ruby frames
NAMES = {leaf: f"Shop::Cart#{leaf}" for leaf in LEAVES}
LEAF_OF = {name: leaf for leaf, name in NAMES.items()}
HANDLE = "Shop::Cart#handle_request"
TIMES = "Integer#times"  # a C function (numeric.c's int_dotimes) in 3.1
TRUNCATED = "[ruby frames truncated]"
MARKERS = {TRUNCATED, "[ruby frame not readable]", "[ruby frames stopped]", "[unknown]",
           "[unwind stopped: depth limit]"}
# The main thread's native root (the program's entry) and what libruby must show on the way.
MAIN_ROOT = re.compile(r"^_start$")
RUN_NODE = "ruby_run_node"


def block_in(method):
    """A block's frame: Ruby 3.1 labels it "block in run_split" ("block (2 levels) in
    run_threads" for a block in a block); with the method's class, as Ruby 3.4's
    backtraces do, "block in Object#run_split"."""
    return re.compile(rf"block (\([0-9]+ levels\) )?in (Object#)?{re.escape(method)}")


SPLIT_PATH = ["<main>", "Object#main", "Object#run_main_split", "Object#run_split", TIMES,
              block_in("run_split"), HANDLE]
THREAD_PATH = [block_in("run_threads"), "Object#run_split", TIMES, block_in("run_split"), HANDLE]
COMPACT_PATH = ["<main>", "Object#main", "Object#run_compact", "Object#run_split", TIMES,
                block_in("run_split"), HANDLE]
RECURSION_PATH = ["Object#recurse", HANDLE]  # <main> and run_recursion are past the budget
CEXT_PATH = ["<main>", "Object#main", "Object#run_cext", "Shop::Cart#compress",
             "Zlib::Deflate.deflate"]
# The C function and its neighbours, adjacent among the Ruby frames (root first).
BETWEEN = ["Object#run_split", TIMES, block_in("run_split")]
# A C function called as a method, as Ruby names it: Class#method or Class.method.
CFUNC_NAME = re.compile(r"[A-Z]\w*(::[A-Z]\w*)*[#.]\S+")


def source_lines():
    """Marked lines of the workload (# hot-a, # call-a, ...); each method's qualified name
    (Shop::Cart#leaf_a, Shop.cpu_ns, Object#run_split) and line range."""
    defs, nesting = [], []
    with open(WORKLOAD) as f:
        for n, text in enumerate(f, 1):
            m = re.match(r"(\s*)(module|class) (\w+)", text)
            if m:
                nesting.append((len(m.group(1)), m.group(3)))
                continue
            m = re.match(r"(\s*)end\b", text)
            if m and nesting and nesting[-1][0] == len(m.group(1)):
                nesting.pop()
                continue
            m = re.match(r"\s*def (self\.)?(\w+[?!]?)", text)
            if m:
                owner = "::".join(name for _, name in nesting) or "Object"
                defs.append((owner + ("." if m.group(1) else "#") + m.group(2), n))
    return marked_lines(WORKLOAD), line_ranges(defs)


MARKS, RANGES = source_lines()

def ruby_frames(frames):
    """The Ruby frames, root first."""
    return [f for f in reversed(frames) if f.kind == KIND]


def ruby_names(frames):
    return [f.name for f in ruby_frames(frames)]


def innermost_leaf(frames):
    return next((f for f in frames if f.kind == KIND and f.name in LEAF_OF), None)


def counted(frames):
    """A sample the leaf counts take: in a leaf, or in the C extension's caller."""
    return innermost_leaf(frames) or any(f.kind == KIND and f.name == "Shop::Cart#compress"
                                         for f in frames)


def native_root_ok(frames, native_root, via):
    """The outermost user frame is native_root's, and via (when given) is a native frame
    between it and the outermost Ruby frame."""
    user = [f for f in frames if f.kind != "kernel"]
    if not user or not native_root.search(user[-1].name):
        return False
    if via is None:
        return True
    first_ruby = max(i for i, f in enumerate(frames) if f.kind == KIND)
    return any(f.name == via and f.kind != KIND for f in frames[first_ruby + 1:])


def c_between(frames):
    """Object#run_split > Integer#times > block in run_split adjacent among the Ruby
    frames, and native frames (the C function's own, the VM's way back into Ruby)
    between Integer#times and the block in the whole stack."""
    rb = ruby_frames(frames)
    names = [f.name for f in rb]
    for i in range(len(names) - 2):
        if all(matches(n, w) for n, w in zip(names[i:i + 3], BETWEEN)):
            times, block = rb[i + 1], rb[i + 2]
            # frames is leaf first: the block sits at a lower index than Integer#times.
            lo, hi = frames.index(block), frames.index(times)
            return any(f.kind not in (KIND, "kernel") for f in frames[lo + 1:hi])
    return False


def check_split(label, samples, truth, path, min_samples=2000, tolerance=3.0, tid=None,
                native_root=MAIN_ROOT, via=RUN_NODE, between=True):
    """Shares vs truth; stacks complete from the leaf along path to its first element (the
    outermost Ruby frame) and on to the native root; the leaf's line the hot loop's; the
    callers' lines the calls'; the C function between two Ruby frames; Ruby frames typed."""
    counts, complete, hot, callers, c_ok, kinds_ok = (collections.Counter(), 0, 0, 0, 0, 0)
    bad, leaf_lines = [], collections.defaultdict(collections.Counter)
    for n, frames, leaf in in_leaves(samples, innermost_leaf, tid):
        key = LEAF_OF[leaf.name]
        counts[key] += n
        leaf_lines[key][leaf.line] += n
        names = ruby_names(frames)
        if names and matches(names[0], path[0]) and follows(names, [*path, leaf.name]) and \
                native_root_ok(frames, native_root, via):
            complete += n
        elif len(bad) < 4:
            bad.append(";".join(f"{f.name}" + ("" if f.kind in (KIND, "kernel") else "(n)")
                                for f in reversed(frames)))
        if leaf.line == MARKS["hot-" + key[-1]] and leaf.file.endswith("rbsplit.rb"):
            hot += n
        handle = next((f for f in frames if f.kind == KIND and f.name == HANDLE), None)
        rb = ruby_frames(frames)
        block = rb[rb.index(handle) - 1] if handle in rb and rb.index(handle) > 0 else None
        if handle and handle.line == MARKS["call-" + key[-1]] and block and \
                matches(block.name, block_in("run_split")) and block.line == MARKS["call-block"]:
            callers += n
        if not between or c_between(frames):
            c_ok += n
        if all(f.kind == KIND for f in frames if f.file.endswith(".rb")):
            kinds_ok += n
    result = leaf_shares(label, counts, truth, min_samples, bad, " ((n): native)")
    total = sum(counts.values())
    for leaf, (got, want) in result.items():
        top = leaf_lines[leaf].most_common(1)
        log(f"    {NAMES[leaf]}: {got:.1f}% (truth {want:.1f}%), lines {dict(leaf_lines[leaf].most_common(3))}"
            f" (hot loop: {MARKS['hot-' + leaf[-1]]})" if top else f"    {leaf}: no samples")
    pct = {k: 100.0 * v / total for k, v in
           (("complete", complete), ("hot", hot), ("callers", callers), ("between", c_ok))}
    log(f"    complete to {path[0] if isinstance(path[0], str) else path[0].pattern} and "
        f"{native_root.pattern}: {pct['complete']:.2f}%, the leaf's line exact: {pct['hot']:.2f}%, "
        f"callers' lines: {pct['callers']:.2f}%, {TIMES} between Ruby frames: {pct['between']:.2f}%")
    assert_shares(label, result, tolerance)
    assert pct["complete"] >= 99.0, f"{label}: only {pct['complete']:.2f}% complete"
    assert pct["hot"] >= 95.0, f"{label}: the leaf's line exact in only {pct['hot']:.2f}%"
    assert pct["callers"] >= 99.0, f"{label}: the callers' lines right in only {pct['callers']:.2f}%"
    assert pct["between"] >= 99.0, f"{label}: {TIMES} between Ruby frames in only {pct['between']:.2f}%"
    assert kinds_ok == total, f"{label}: a .rb frame not typed {KIND} in {total - kinds_ok} samples"
    return result, leaf_lines


def run_workload(wd, label, mode, seconds, exe=RUBY, cmd_prefix=(), env=None, min_samples=2000,
                 attempts=4, check_pid=None):
    """Runs rbsplit MODE under ember; returns (pid, samples, stats, truth, extra, outs)
    (interplib's run_workload says how)."""
    if not os.path.exists(RUBY):
        skip_or_fail(f"{RUBY} is missing: run scripts/install-deps.sh")
    return run_split_workload(wd, WORKLOAD, LEAVES, counted, label, exe, mode, seconds,
                              cmd_prefix=cmd_prefix, env=env, min_samples=min_samples,
                              attempts=attempts, check_pid=check_pid)


def read_stackprof(path):
    """stackprof's results (StackProf.results as JSON, cpu mode, raw): {leaf: samples}
    (a sample counts for the innermost leaf among its frames), {leaf: hottest line}
    (the leaf frame's line with the most samples) and {leaf: the name stackprof gave the
    frame whose name ends in the leaf's}."""
    with open(path) as f:
        r = json.load(f)
    frames = r["frames"]
    name_of = {int(k): v["name"] for k, v in frames.items()}
    counts, raw, i = collections.Counter(), r["raw"], 0
    while i < len(raw):  # [n, frame ids root first..., count] per stack
        n = raw[i]
        ids, count = raw[i + 1:i + 1 + n], raw[i + 1 + n]
        i += n + 2
        leaf = next((LEAF_OF[name_of[x]] for x in reversed(ids) if name_of[x] in LEAF_OF), None)
        if leaf:
            counts[leaf] += count
    lines, names = {}, {}
    for v in frames.values():
        for leaf in LEAVES:
            if v["name"].endswith(leaf) or v["name"].endswith(f"#{leaf}"):
                names[leaf] = v["name"]
        leaf = LEAF_OF.get(v["name"])
        if leaf and v.get("lines"):
            # {line: [total, self]} (an int in some stackprof versions)
            per_line = {int(k): (c[0] if isinstance(c, list) else c) for k, c in v["lines"].items()}
            lines[leaf] = max(per_line, key=per_line.get)
    return counts, lines, names, r.get("mode"), r.get("samples")


def check_peer_against_truth(label, counts, lines, names, truth, tolerance=5.0):
    """stackprof itself: its leaf names, shares within tolerance of the truth, hot lines."""
    total = sum(counts.values())
    log(f"  {label}: stackprof has {total} samples in the leaves")
    shares = {}
    for leaf in LEAVES:
        shares[leaf] = 100.0 * counts[leaf] / total if total else 0.0
        log(f"    {names.get(leaf)}: {shares[leaf]:.1f}% (truth {truth[leaf]:.1f}%), hottest "
            f"line {lines.get(leaf)} (hot loop {MARKS['hot-' + leaf[-1]]})")
    assert total >= 500, f"{label}: stackprof has too few samples ({total})"
    for leaf in LEAVES:
        assert names.get(leaf) == NAMES[leaf], f"stackprof names {leaf} {names.get(leaf)!r}"
        assert abs(shares[leaf] - truth[leaf]) <= tolerance, \
            f"the peer itself is off: stackprof {leaf} {shares[leaf]:.1f}% vs truth {truth[leaf]:.1f}%"
        assert lines.get(leaf) == MARKS["hot-" + leaf[-1]], f"stackprof's hottest line of {leaf}"
    return shares


WD = None


def test_known_split():
    pid, samples, stats, truth, _, outs = run_workload(WD, "debian-3.1", "split", 8)
    check_split("ruby3.1 split", samples, next(iter(truth.values())), SPLIT_PATH)
    log(f"  stats: " + ", ".join(f"{k}={v}" for k, v in sorted(stats.items())
                                  if k.startswith("ruby.")))
    assert stats.get("ruby.processes", 0) >= 1, "no ruby.processes in the statistics"
    assert stats.get("ruby.frames_stale", 0) <= stats.get("ruby.frames", 0) // 100
    # The folded output has the same frames, root first after the comm.
    rows = [(frames, n) for out in outs for frames, n in read_folded(out["folded"])]
    want = ["Object#run_split", TIMES, block_in("run_split"), HANDLE, NAMES["leaf_a"]]
    folded = sum(n for frames, n in rows if follows(frames, want) and "<main>" in frames)
    log(f"  folded: {folded} samples along {' > '.join(map(str, want))} from <main>")
    assert folded > 0, "the folded output lacks the Ruby frames"


def test_two_threads_with_different_splits():
    pid, samples, _, truth, _, _ = run_workload(WD, "debian-3.1", "threads", 8)
    assert len(truth) == 2, truth
    for tid, shares in truth.items():
        check_split(f"thread {tid}", samples, shares, THREAD_PATH, min_samples=1000, tid=tid,
                    native_root=THREAD_START, via=None)
        root = collections.Counter()
        for _, t, n, f in samples:
            if t == tid and innermost_leaf(f):
                root[(ruby_frames(f)[0].name, ruby_frames(f)[0].line)] += n
        log(f"    outermost Ruby frames: {dict(root.most_common(2))}")
        (name, line), _ = root.most_common(1)[0]
        assert line == MARKS["call-thread"], f"the thread's block at line {line}"


def test_recursion_300_deep_is_cut_with_a_marker():
    pid, samples, stats, truth, _, _ = run_workload(WD, "debian-3.1", "recursion", 6,
                                                    min_samples=1000)
    deep = [(n, f) for _, _, n, f in samples if innermost_leaf(f)]
    total = sum(n for n, _ in deep)
    marked = sum(n for n, f in deep if any(x.name in (TRUNCATED, "[unwind stopped: depth limit]")
                                           for x in f))
    along = sum(n for n, f in deep if follows(ruby_names(f), [*RECURSION_PATH,
                                                              innermost_leaf(f).name]))
    depth = max((ruby_names(f).count("Object#recurse") for _, f in deep), default=0)
    counts = collections.Counter()
    for n, f in deep:
        counts[LEAF_OF[innermost_leaf(f).name]] += n
    want = next(iter(truth.values()))
    log(f"  {marked} of {total} samples end in a marker, {along} along "
        f"{' > '.join(RECURSION_PATH)}; up to {depth} recurse frames; "
        f"ruby.markers_truncated={stats.get('ruby.markers_truncated')}; shares " +
        ", ".join(f"{l} {100.0 * counts[l] / max(total, 1):.1f}% (truth {want[l]:.1f}%)"
                  for l in LEAVES))
    assert total >= 1000, f"too few samples ({total})"
    assert marked >= 0.99 * total, f"{marked} of {total} marked"
    assert along >= 0.99 * total, f"{along} of {total} along the recursion"
    assert depth >= 25, "the leaf-most frames of the recursion are kept"
    assert stats.get("ruby.markers_truncated", 0) > 0, "ruby.markers_truncated not counted"
    for leaf in LEAVES:
        got = 100.0 * counts[leaf] / total
        assert abs(got - want[leaf]) <= 3.0, f"recursion: {leaf} {got:.1f}% vs {want[leaf]:.1f}%"


def test_c_extension_under_its_caller():
    """Zlib::Deflate.deflate (zlib.so, a C extension) called from Shop::Cart#compress: the
    C method's frame under its Ruby caller, and zlib's native frames under that."""
    pid, samples, _, truth, _, _ = run_workload(WD, "debian-3.1", "cext", 6, min_samples=1000)
    mine = [(n, f) for _, _, n, f in samples if counted(f)]
    total = sum(n for n, _ in mine)
    along = sum(n for n, f in mine if ruby_names(f)[:1] == ["<main>"] and
                follows(ruby_names(f), CEXT_PATH))
    under = 0
    for n, f in mine:
        deflate = next((i for i, x in enumerate(f) if x.kind == KIND and
                        x.name == "Zlib::Deflate.deflate"), None)
        if deflate is not None and any(x.kind == "native" and
                                       re.search(r"deflate|longest_match|compress|libz", x.name)
                                       for x in f[:deflate]):
            under += n
    log(f"  {along} of {total} samples along {' > '.join(CEXT_PATH)}; {under} with zlib's "
        f"native frames under Zlib::Deflate.deflate")
    assert total >= 1000, f"too few samples ({total})"
    assert along >= 0.98 * total
    assert under >= 0.9 * total


@shipped_build_only("agreement with stackprof")
def test_stackprof_beside_ember():
    """stackprof (cpu mode, 1 ms: the kernel's tick makes it about 250 a second of CPU) runs
    in the process ember records. Each against the workload's truth, and the two against
    each other: the leaves' names and hottest lines agree, shares within 5 points. Ember
    records until stackprof has about 2,000 leaf samples too (8,000 of its own)."""
    sp = os.path.join(WD, "stackprof.json")
    pid, samples, _, truth, _, _ = run_workload(
        WD, "stackprof", "split", 10, env=dict(os.environ, EMBER_STACKPROF=sp),
        min_samples=8000, attempts=6)
    truth = next(iter(truth.values()))
    assert os.path.exists(sp), "the workload wrote no stackprof results"
    counts, lines, names, mode, _ = read_stackprof(sp)
    peer = check_peer_against_truth("stackprof", counts, lines, names, truth)
    mine, leaf_lines = check_split("ember beside stackprof", samples, truth, SPLIT_PATH,
                                   min_samples=4000)
    for leaf in LEAVES:
        ember_line = leaf_lines[leaf].most_common(1)[0][0]
        log(f"    {NAMES[leaf]}: ember {mine[leaf][0]:.1f}%, stackprof {peer[leaf]:.1f}%; "
            f"hottest line ember {ember_line}, stackprof {lines.get(leaf)}")
        assert abs(mine[leaf][0] - peer[leaf]) <= 5.0, f"{leaf}: ember vs stackprof"
        assert ember_line == lines.get(leaf), f"{leaf}: hottest lines differ"


def test_process_started_after_ember():
    samples, truth, _ = record_started_after(WD, [RUBY, WORKLOAD, "split", "8"], 14, LEAVES)
    check_split("started after", samples, next(iter(truth.values())), SPLIT_PATH,
                min_samples=1000)


def test_process_in_its_own_mount_and_pid_namespace():
    """ruby3.1 and libruby live only in the process's mount namespace (a tmpfs over
    /opt/ember-ctr): the broker reaches them through the process, not by path."""
    lib = os.path.basename(LIBRUBY)
    with own_namespaces([RUBY, LIBRUBY]) as (cmd_prefix, ctr_exe):
        pid, samples, stats, truth, _, _ = run_workload(
            WD, "ctr", "split", 8, exe=ctr_exe, cmd_prefix=cmd_prefix,
            env=dict(os.environ, LD_LIBRARY_PATH=CTR),
            check_pid=mapped_from_namespace(lib, os.path.join(CTR, lib)))
    check_split("container", samples, next(iter(truth.values())), SPLIT_PATH)


def test_heap_compacted_every_100ms_never_misnames():
    """Ruby's hostile case: a thread compacts the heap every 100 ms (GC.verify_compaction_
    references(toward: :empty): every object that can move does, iseqs, method entries,
    classes and strings among them) while the split runs and leaves garbage. No Ruby frame
    of the process is ever named what the workload does not have; the split holds."""
    pid, samples, stats, truth, extra, _ = run_workload(WD, "compact", "compact", 8)
    info = next(iter(extra.values()))
    known = set(RANGES) | {"<main>"}
    misnamed = collections.Counter()
    for _, _, n, frames in samples:
        for f in frames:
            if f.kind != KIND or f.name in known or f.name in MARKERS or CFUNC_NAME.fullmatch(f.name):
                continue
            m = re.fullmatch(r"block (\(\d+ levels\) )?in (.+)", f.name)
            if m and (m.group(2) in known or "Object#" + m.group(2) in known or
                      any(k.endswith("#" + m.group(2)) or k.endswith("." + m.group(2))
                          for k in known)):
                continue
            misnamed[f.name] += n
    log(f"  {info.get('compactions')} compactions moved {info.get('moved')} objects; "
        f"misnamed Ruby frames: {dict(misnamed.most_common(5)) or 'none'}")
    assert info.get("compactions", 0) >= 10 and info.get("moved", 0) > 0, info
    assert not misnamed, f"frames misnamed after compaction: {dict(misnamed.most_common(5))}"
    check_split("compacted", samples, next(iter(truth.values())), COMPACT_PATH)


def test_stalled_ruby_process_costs_only_its_frames():
    """A Ruby process whose memory-map lock waits on a file system that stopped answering
    (tests/workloads/rbstall.rb) cannot have its memory read: the recording still ends on
    time, another Ruby process keeps every name, and the stall is counted; the stalled
    process keeps its native frames, its Ruby frames unnamed."""
    check_a_stall(WD, "ruby3.1", [RUBY, RBSTALL], [RUBY, WORKLOAD, "split", "120"], kind=KIND,
                  leaf_of=innermost_leaf,
                  complete=lambda fr: follows(ruby_names(fr), [*SPLIT_PATH, innermost_leaf(fr).name]),
                  spinning=["Object#stalled_spin", "Object#stalled_leaf"])


def test_hostile_fake_interpreters():
    """A program on a fake libruby (tests/workloads/fake_ruby.c: ruby_api_version, the
    thread variable ruby_current_ec through the dynamic thread vector, rb_vm_exec calling a
    vm_exec_core of 4 KiB and more) whose VM stack is garbage, 4,096 frames deep, unmapped
    or forged: markers or [unknown], never a name, no crash, no stall."""
    src = os.path.join(SRC, "tests", "workloads", "fake_ruby.c")
    lib, exe = os.path.join(WD, "libfake-ruby.so"), os.path.join(WD, "fake_ruby")
    subprocess.run(["gcc", *FRAME_POINTERS, "-g", "-shared", "-fPIC", "-DFAKE_RUBY_LIB",
                    "-o", lib, src], check=True)
    subprocess.run(["gcc", *FRAME_POINTERS, "-g", "-pthread", "-o", exe, src, "-L", WD,
                    "-lfake-ruby", f"-Wl,-rpath,{WD}"], check=True)
    seen = check_hostile_fakes(WD, exe, "ruby", KIND, set())
    forged = seen["forged"][1]
    assert forged["[unknown]"] > 0 and forged["[ruby frame not readable]"] > 0, forged


def peer_only(seconds):
    """The workload under stackprof alone (no ember, no root): stackprof against the truth."""
    sp, truth_file = os.path.join(WD, "stackprof.json"), os.path.join(WD, "peer.truth")
    r = subprocess.run([RUBY, WORKLOAD, "split", str(seconds)], timeout=seconds + 60,
                       env=dict(os.environ, EMBER_STACKPROF=sp, EMBER_TRUTH_FILE=truth_file))
    assert r.returncode == 0
    truth, _ = read_truth(truth_file, LEAVES)
    counts, lines, names, mode, n = read_stackprof(sp)
    log(f"stackprof mode {mode}, {n} samples")
    check_peer_against_truth("stackprof alone", counts, lines, names, next(iter(truth.values())))
    log("stackprof agrees with the truth")


if __name__ == "__main__":
    WD = workdir()
    if sys.argv[1:2] == ["--peer-only"]:
        peer_only(float(sys.argv[2]) if len(sys.argv) > 2 else 20)
        sys.exit(0)
    require_root()
    run_tests([test_known_split, test_two_threads_with_different_splits,
               test_recursion_300_deep_is_cut_with_a_marker, test_c_extension_under_its_caller,
               test_stackprof_beside_ember, test_process_started_after_ember,
               test_process_in_its_own_mount_and_pid_namespace,
               test_heap_compacted_every_100ms_never_misnames,
               test_stalled_ruby_process_costs_only_its_frames, test_hostile_fake_interpreters])
