#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The .eh_frame unwinder end to end. A workload built without frame pointers
(-O2 -fomit-frame-pointer), two threads, three leaves at a known split, one
reached through a libc callback (qsort -> cmp_b). Each leaf's share must be
within 2 points of the truth and at least 99% of each leaf's samples must be
complete: from the leaf through its callers to main and _start (main thread)
or to thread_entry and libc's thread start (start_thread, clone3), with no
"[unwind stopped: ...]" marker. The same for a process that lives one second,
and the profile reports the fraction of samples that missed tables. Stacks
through a signal handler and the vDSO are complete too, and so are those
through the dynamic loader's lazy-binding trampoline."""
import os
import signal
import subprocess
import time

from emberlib import (EMBER, assert_close, assert_samples, assert_workload_ran, build_workload, kill, log,
                      read_folded, require_root, run_tests, start, truth_seconds, truth_shares, workdir)
from unwindlib import LEAVES, complete, profile_stats, start_stopped, wait_for_symbolizer

require_root()
WD = workdir()
NO_FRAME_POINTERS = ("-O2", "-fomit-frame-pointer")
UNWIND = build_workload("unwind", WD, cflags=NO_FRAME_POINTERS)
COMM = "unwind"


def record_workload(name, seconds, runs=1, hz="499"):
    """Runs the workload `runs` times, one after the other, for `seconds` each,
    under ember from each exec on; returns (rows, stats)."""
    folded, pprof = os.path.join(WD, f"{name}.folded"), os.path.join(WD, f"{name}.pb.gz")
    truth = os.path.join(WD, f"{name}.truth")
    os.environ["EMBER_TRUTH_FILE"] = truth  # inherited by the workloads forked below
    pids = [start_stopped([UNWIND, str(seconds), "2"]) for _ in range(runs)]
    del os.environ["EMBER_TRUTH_FILE"]
    proc = start([EMBER, "record", "-d", str(int(runs * (seconds + 0.5)) + 4), "-F", hz,
                  *[a for pid in pids for a in ("-p", str(pid))], "-o", folded, "-o", pprof])
    try:
        wait_for_symbolizer(proc.pid)
        time.sleep(2)  # the eBPF programs load and attach
        for pid in pids:
            os.kill(pid, signal.SIGCONT)
            _, status = os.waitpid(pid, 0)
            assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, f"status {status}"
        out, err = proc.communicate(timeout=120)
    finally:
        kill(proc)
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
    assert proc.returncode == 0, err
    return read_folded(folded), profile_stats(pprof, WD), truth


def record_one(name, argv, seconds, env=None):
    """Runs argv under `ember record -p` from its exec on, for `seconds`; returns the
    folded rows. env: variables the workload alone gets."""
    folded = os.path.join(WD, f"{name}.folded")
    os.environ.update(env or {})  # inherited by the workload forked below
    pid = start_stopped(argv)
    for k in env or {}:
        del os.environ[k]
    proc = start([EMBER, "record", "-d", str(seconds), "-F", "499", "-p", str(pid), "-o", folded])
    try:
        wait_for_symbolizer(proc.pid)
        time.sleep(2)
        os.kill(pid, signal.SIGCONT)
        os.waitpid(pid, 0)
        _, err = proc.communicate(timeout=120)
    finally:
        kill(proc)
    assert proc.returncode == 0, err
    return read_folded(folded)


def check(rows, stats, truth_file, hz, min_samples):
    """min_samples: the fewest that tell shares 2 points apart; the workloads' own CPU time
    in their leaves says how many a host, loaded or not, should have given (85% of it)."""
    truth = truth_shares(truth_file)
    counts = {leaf: 0 for leaf in LEAVES}
    good = {leaf: 0 for leaf in LEAVES}
    bad_examples = []
    other = 0
    for frames, n in rows:
        if frames[0] != COMM:
            continue
        leaf = next((f for f in reversed(frames) if f in LEAVES), None)
        if leaf is None:
            other += n
            continue
        counts[leaf] += n
        if complete(frames, leaf):
            good[leaf] += n
        elif len(bad_examples) < 6:
            bad_examples.append(";".join(frames) + f" {n}")
    total = sum(counts.values())
    log(f"  {total} samples in the leaves, {other} elsewhere (startup, clock_gettime, qsort)")
    for ex in bad_examples:
        log(f"  incomplete: {ex}")
    assert_samples("the leaves", total, truth_seconds(truth_file), hz)
    assert total >= min_samples, f"too few samples to compare shares: {total}"
    log("  the workload measured " + ", ".join(f"{k} {v:.1f}%" for k, v in sorted(truth.items())))
    assert_workload_ran(truth, LEAVES)
    for leaf in LEAVES:
        assert_close(leaf, 100.0 * counts[leaf] / total, round(truth[leaf], 1), 2)
    for leaf in LEAVES:
        pct = 100.0 * good[leaf] / counts[leaf]
        log(f"  {leaf}: {pct:.2f}% of {counts[leaf]} samples complete")
        assert pct >= 99.0, f"{leaf}: only {pct:.2f}% complete stacks"
    missed, samples = stats.get("unwind.samples_missed_tables"), stats.get("unwind.samples")
    assert missed is not None and samples, f"no unwind statistics in the profile: {stats}"
    log(f"  profile: {missed} of {samples} samples missed unwind tables "
        f"({stats.get('unwind.missed_ppm', 0) / 1e4:.2f}%); "
        f"{stats.get('unwind.process_loads')} process loads, "
        f"{stats.get('unwind.tables_built')} tables, {stats.get('unwind.rows_sent')} rows")


def test_no_frame_pointers_known_split_complete_stacks():
    rows, stats, truth = record_workload("long", 6, hz="999")
    check(rows, stats, truth, 999, min_samples=1000)


def test_short_lived_process():
    """Processes that live one second each, met at their exec: six of them in
    a row at 999 Hz, for enough samples to tell 2 points of share apart."""
    rows, stats, truth = record_workload("short", 1, runs=6, hz="999")
    check(rows, stats, truth, 999, min_samples=1000)


def test_frame_pointer_walk_is_marked_not_silent():
    """Without tables (a process ember met mid-run) the first samples may fall
    back to frame pointers; a walk that cannot be trusted says so."""
    wl = start([UNWIND, "6", "1"])
    folded = os.path.join(WD, "late.folded")
    try:
        time.sleep(0.3)
        r = subprocess.run([EMBER, "record", "-d", "3", "-F", "499", "-p", str(wl.pid),
                            "-o", folded], capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
    finally:
        kill(wl)
    rows = read_folded(folded)
    for frames, n in rows:
        if frames[0] != COMM:
            continue
        leaf = next((f for f in reversed(frames) if f in LEAVES), None)
        # A stack is complete or carries a marker: never silently short.
        if leaf and not complete(frames, leaf):
            assert any(f.startswith("[unwind stopped") for f in frames), ";".join(frames)
    total = sum(n for f, n in rows if f[0] == COMM)
    good = sum(n for f, n in rows if f[0] == COMM and
               (lambda leaf: leaf and complete(f, leaf))(next((x for x in reversed(f) if x in LEAVES), None)))
    log(f"  {good} of {total} samples complete for a process met mid-run")
    # 3 s of a busy thread at 499 Hz is about 1,500 samples; 100 leaves room for a loaded host,
    # and none at all (the process not sampled) checks nothing above.
    assert total >= 100, f"too few samples of {COMM}: {total}"
    assert good >= 0.9 * total, f"only {good} of {total} complete"


def assert_whole(name, group, whole, least, share):
    """At least `least` samples in group (rows: frames, count), and `share` of them pass
    whole(frames); logs the counts and the first row that does not pass."""
    total, good = sum(n for _, n in group), sum(n for f, n in group if whole(f))
    log(f"  {name}: {good} of {total} samples complete")
    for f, n in group:
        if not whole(f):
            log(f"  incomplete: {';'.join(f)} {n}")
            break
    assert total >= least, f"too few samples in {name}: {total}"
    assert good >= share * total, f"{name}: {good} of {total} complete"


def test_signal_handler_and_vdso():
    """Samples in a signal handler that interrupted the vDSO unwind through
    libc's signal trampoline and the vDSO back to main and _start."""
    sig = build_workload("signal", WD, cflags=NO_FRAME_POINTERS)
    rows = [(f, n) for f, n in record_one("signal", [sig, "6"], 8) if f[0] == "signal"]

    def whole(f):
        return (f[1:2] == ["_start"] and "main" in f and "spin" in f and
                not any(x.startswith("[unwind stopped") for x in f))

    in_handler = [(f, n) for f, n in rows if "in_handler" in f]
    in_vdso = [(f, n) for f, n in rows if f[-1].startswith("[vdso]") or f[-1] == "clock_gettime"]
    assert_whole("in_handler", in_handler, lambda f: whole(f) and "handler" in f, 50, 0.95)
    assert_whole("vdso", in_vdso, whole, 50, 0.95)


def test_lazy_binding_trampoline():
    """With LD_BIND_NOT=1 every call through the PLT goes through the dynamic
    loader's lazy-binding trampoline (_dl_runtime_resolve_xsavec: its CFA is
    rbx + 32, the stack pointer realigned to 64 bytes) into _dl_fixup and
    _dl_lookup_symbol_x: the stacks of those samples are complete, the
    trampoline's frame found through the rbx its callees saved."""
    plt = build_workload("plt", WD, cflags=[*NO_FRAME_POINTERS, "-fno-builtin"])
    rows = [(f, n) for f, n in record_one("lazy", [plt, "4"], 7, {"LD_BIND_NOT": "1"})
            if f[0] == "plt"]

    def whole(f):
        return (f[1:2] == ["_start"] and "main" in f and "call_through_plt" in f and
                not any(x.startswith("[unwind stopped") for x in f))

    lazy = [(f, n) for f, n in rows if any(x.startswith("_dl_runtime_resolve") for x in f)]
    total, in_lazy = sum(n for _, n in rows), sum(n for _, n in lazy)
    good = sum(n for f, n in lazy if whole(f))
    log(f"  {in_lazy} of {total} samples through the lazy-binding trampoline, {good} complete")
    for f, n in lazy:
        if not whole(f):
            log(f"  incomplete: {';'.join(f)} {n}")
            break
    assert in_lazy >= 300, f"too few samples through the trampoline: {in_lazy} of {total}"
    assert good >= 0.98 * in_lazy, f"{good} of {in_lazy} complete"


def test_frames_at_the_top_of_a_stack():
    """A context (makecontext) whose two-page stack ends at an inaccessible page burns CPU
    three frames down from its entry: every saved word the walk needs lies within a few
    hundred bytes of that page, so the unwinder's 512-byte window on the stack cannot be
    read whole there; it is read to the page's end instead, and the stacks keep edge_leaf,
    edge_mid, on_edge and glibc's context start above them."""
    edge = build_workload("stack_edge", WD, cflags=NO_FRAME_POINTERS)
    rows = [(f, n) for f, n in record_one("edge", [edge, "4"], 7) if f[0] == "stack_edge"]
    in_leaf = [(f, n) for f, n in rows if "edge_leaf" in f]

    def whole(f):
        i = f.index("edge_leaf")
        return i >= 3 and f[i - 2:i] == ["on_edge", "edge_mid"] and \
            (f[i - 3].startswith("libc.so.6") or f[i - 3] == "__start_context")

    assert_whole("edge_leaf", in_leaf, whole, 300, 0.98)


if __name__ == "__main__":
    run_tests([
        test_no_frame_pointers_known_split_complete_stacks,
        test_short_lived_process,
        test_signal_handler_and_vdso,
        test_lazy_binding_trampoline,
        test_frames_at_the_top_of_a_stack,
        test_frame_pointer_walk_is_marked_not_silent,
    ])
