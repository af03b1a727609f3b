#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Complete user stacks from a process's first sample (-fomit-frame-pointer
code throughout).

- Stacks from stack copies: with the symbolizer holding back every process's
  tables (a test hook), every sample misses them and carries a copy of its
  stack, or says that the copy budget was spent. The copies unwound in the
  symbolizer must give complete stacks with the callers the known-split
  workload has, the leaves at the shares it measured itself; the copies add
  no more bytes than the stacks themselves (plus the burst).
- Processes already running when ember starts (a quiet host: 60 daemons of 20
  distinct binaries, each waking every 300 ms): their tables are loaded in the
  first moments; at least 99% of their samples and of their first samples are
  complete, the samples unwound in the kernel once loaded.
- One-shot processes run one after the other while ember runs: at least 99%
  of their first samples complete; processes of a program that ran before
  borrow its files' tables until their own are loaded.
- A shell loop of `true`: the execs of processes gone before ember meets them
  load no tables (nobody could read their maps any more).
In each case the copies add no more bytes to the sample ring than the samples
carry themselves, plus a burst per CPU."""
import collections
import os
import re
import signal
import subprocess
import time

import otlp_receiver
from emberlib import (EMBER, SRC, assert_close, build_workload, kill, log, read_folded, require_root,
                      run_tests, start, truth_shares, workdir)
from unwindlib import LEAVES, complete, profile_stats, start_stopped, wait_for_symbolizer

require_root()
WD = workdir()
NO_FRAME_POINTERS = ("-O2", "-fomit-frame-pointer")
BURST = 512 << 10  # EMBER_STACK_COPY_BURST_MAX: the most a CPU lends (99 Hz: 396 KiB)
MAX_COPY = 16 << 10  # EMBER_MAX_STACK_COPY
BUDGET_MARKER = "[unwind stopped: no tables yet, copy budget spent]"


def build_quiet(variant, name):
    out = os.path.join(WD, name)
    subprocess.run(["gcc", *NO_FRAME_POINTERS, "-g", f"-DVARIANT={variant}", "-o", out,
                    os.path.join(SRC, "tests", "workloads", "quiet.c")], check=True)
    return out


def otlp_stacks(path, name_of=None):
    """[(pid, thread name, first timestamp, count, [(function, kind)] leaf first)] of every
    sample in an .otlp file. name_of(pid, mapped file, file offset, leaf), if given, names a
    location in ember's place (None: ember's names stand)."""
    req_cls, _ = otlp_receiver.classes()
    with open(path, "rb") as f:
        req = req_cls.FromString(f.read())
    d = req.dictionary
    out = []
    for rp in req.resource_profiles:
        pid = otlp_receiver.resource_attrs(rp).get("process.pid")
        for sp in rp.scope_profiles:
            for p in sp.profiles:
                for s in p.samples:
                    attrs = otlp_receiver.attrs_of(d, s.attribute_indices)
                    frames = []
                    for li in d.stack_table[s.stack_index].location_indices:
                        loc = d.location_table[li]
                        kind = otlp_receiver.attrs_of(d, loc.attribute_indices).get(
                            "profile.frame.type", "unknown")
                        m = d.mapping_table[loc.mapping_index]
                        named = name_of and loc.mapping_index and name_of(
                            pid, d.string_table[m.filename_strindex],
                            loc.address - m.memory_start + m.file_offset,
                            not any(k != "kernel" for _, k in frames))
                        if named:
                            frames.append((named, kind))
                            continue
                        for line in loc.lines:
                            fn = d.function_table[line.function_index]
                            frames.append((d.string_table[fn.name_strindex], kind))
                        if not loc.lines:
                            frames.append((otlp_receiver.unnamed(d, loc), kind))
                    out.append((pid, attrs.get("thread.name"), min(s.timestamps_unix_nano),
                                otlp_receiver.sample_count(s), frames))
    return out


# The dynamic loader's entry (ld.so carries no symbol table in Debian: it stays unnamed).
LOADER_ENTRY = re.compile(r"^ld-linux-x86-64\.so\.2\+0x[0-9a-f]+$")


def quiet_stack(frames):
    """'complete' (from the program's or the dynamic loader's entry), 'no user
    stack' (a kernel-only sample in exec or exit, when the process has no user
    context), or why not."""
    names = [n for n, _ in frames]
    marker = next((n for n in names if n.startswith("[unwind stopped")), None)
    if marker:
        return marker
    user = [n for n, k in frames if k != "kernel"]
    if not user:
        kernel = " ".join(names)
        return "no user stack" if "execve" in kernel or "do_exit" in kernel else "kernel only"
    # The program's entry (through __libc_start_main), or the dynamic loader's (_start and
    # _dl_start_user in ld.so, named when it has symbols): a stack that reaches either is whole.
    if user[-1] in ("_start", "_dl_start_user") or LOADER_ENTRY.match(user[-1]):
        return "complete"
    return "short: " + ";".join(reversed(user))


def volume(stats):
    with_copies, without = stats["ring.sample_bytes"], stats["ring.sample_bytes_without_copies"]
    log(f"  sample ring: {with_copies} bytes, {without} without the stack copies: "
        f"{with_copies / max(without, 1):.2f}x")
    return with_copies, without


def split_line(stats):
    log(f"  unwound in the kernel {stats['unwind.samples_complete_kernel']} ("
        f"{stats['unwind.samples_by_file']} with tables found by file), from stack copies "
        f"{stats['unwind.samples_complete_copy']}, incomplete {stats['unwind.samples_incomplete']} "
        f"(copies {stats['unwind.copy.samples']}, {stats['unwind.copy.bytes']} bytes; budget "
        f"spent {stats['unwind.copy.skipped_budget']}; copy failed {stats['unwind.copy.failed']}; "
        f"maps not read {stats['unwind.stop.maps_not_read']})")


def test_stacks_from_copies_match_truth():
    unwind = build_workload("unwind", WD, cflags=NO_FRAME_POINTERS)
    folded, pprof = os.path.join(WD, "copies.folded"), os.path.join(WD, "copies.pb.gz")
    truth = os.path.join(WD, "copies.truth")
    os.environ["EMBER_TRUTH_FILE"] = truth
    pid = start_stopped([unwind, "8", "2"])
    del os.environ["EMBER_TRUTH_FILE"]
    proc = start([EMBER, "record", "-d", "14", "-F", "999", "-p", str(pid), "-o", folded, "-o",
                  pprof], env=dict(os.environ, EMBER_TEST_NO_PROCESS_TABLES="1"))
    try:
        wait_for_symbolizer(proc.pid)
        time.sleep(2)
        os.kill(pid, signal.SIGCONT)
        _, status = os.waitpid(pid, 0)
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, f"status {status}"
        _, err = proc.communicate(timeout=120)
    finally:
        kill(proc)
    assert proc.returncode == 0, err
    stats = profile_stats(pprof, WD)
    split_line(stats)
    counts, good, marked, bad = collections.Counter(), collections.Counter(), 0, []
    for frames, n in read_folded(folded):
        leaf = next((f for f in reversed(frames) if f in LEAVES), None)
        if frames[0] != "unwind" or leaf is None:
            continue
        counts[leaf] += n
        if BUDGET_MARKER in frames:
            marked += n
        elif complete(frames, leaf):
            good[leaf] += n
        else:
            bad.append((";".join(frames), n))
    total = sum(good.values())
    log(f"  {total} complete stacks in the leaves, {marked} marked copy budget spent, "
        f"{sum(n for _, n in bad)} otherwise")
    for stack, n in bad[:5]:
        log(f"  incomplete: {stack} {n}")
    # The tables were held back: nothing was unwound in the kernel, everything came from copies.
    assert stats["unwind.samples_complete_kernel"] == 0, stats["unwind.samples_complete_kernel"]
    assert stats["unwind.copy.samples"] >= 200, f"too few copies: {stats['unwind.copy.samples']}"
    assert stats["unwind.samples_complete_copy"] >= 0.99 * stats["unwind.copy.samples"]
    assert sum(n for _, n in bad) <= 0.01 * (total + marked), "stacks neither complete nor marked"
    assert total >= 200, f"too few complete stacks: {total}"
    # Every sample keeps its leaf, complete or marked: the attribution is the truth's.
    shares = truth_shares(truth)
    log("  the workload measured " + ", ".join(f"{k} {v:.1f}%" for k, v in sorted(shares.items())))
    for leaf in LEAVES:
        assert_close(leaf, 100.0 * counts[leaf] / sum(counts.values()), round(shares[leaf], 1), 2)
    # When the budget runs short, a copy costs its size: deep stacks (leaf_b's, under
    # qsort) find it spent more often. Complete stacks alone are skewed that way.
    log("  among the complete stacks alone: " + ", ".join(
        f"{leaf} {100.0 * good[leaf] / total:.1f}%" for leaf in LEAVES))
    # Copies never add more than the samples' own bytes, and a burst (and a copy) per CPU.
    with_copies, without = volume(stats)
    assert with_copies - without <= without + os.cpu_count() * (BURST + MAX_COPY)
    # A copy carries only the words that could be addresses (bpf/records.h), and loses no
    # frame for it (the checks above): well under the stack it stands for.
    log(f"  copies: {stats['unwind.copy.bytes']} bytes for {stats['unwind.copy.stack_bytes']} "
        "bytes of stack")
    assert stats["unwind.copy.bytes"] <= 0.75 * stats["unwind.copy.stack_bytes"]


def test_copies_taken_in_stack_page_faults():
    """A program that spends its time faulting in stack pages (tests/workloads/stack_faults.c),
    its tables held back: every sample carries a copy. A sample taken while the kernel faults
    in the page at the stack pointer cannot read that page; the frames above it are whole, so
    its stack must be too (a burst's first samples fall in page faults often)."""
    faults = build_workload("stack_faults", WD, cflags=NO_FRAME_POINTERS)
    folded, pprof = os.path.join(WD, "faults.folded"), os.path.join(WD, "faults.pb.gz")
    pid = start_stopped([faults, "4"])
    proc = start([EMBER, "record", "-d", "10", "-F", "999", "-p", str(pid), "-o", folded, "-o",
                  pprof], env=dict(os.environ, EMBER_TEST_NO_PROCESS_TABLES="1"))
    try:
        wait_for_symbolizer(proc.pid)
        time.sleep(2)
        os.kill(pid, signal.SIGCONT)
        _, status = os.waitpid(pid, 0)
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, f"status {status}"
        _, err = proc.communicate(timeout=120)
    finally:
        kill(proc)
    assert proc.returncode == 0, err
    stats = profile_stats(pprof, WD)
    split_line(stats)
    kinds = collections.Counter()
    for frames, n in read_folded(folded):
        if frames[0] != "stack_faults" or "exc_page_fault" not in frames:
            continue
        user = [f for f in frames if f in ("_start", "main", "fault_loop", "touch_pages")]
        kinds["complete" if user == ["_start", "main", "fault_loop", "touch_pages"] else
              next((f for f in frames if f.startswith("[unwind stopped")),
                   "short: " + ";".join(user))] += n
    total, good = sum(kinds.values()), kinds["complete"]
    log(f"  samples in a page fault of touch_pages: {good} of {total} complete; " + ", ".join(
        f"{k} {n}" for k, n in kinds.most_common(4) if k != "complete"))
    # The budget is spent for most of them (every sample copies, at 999 Hz): those say so.
    copied = total - kinds[BUDGET_MARKER]
    assert copied >= 100, f"too few samples in page faults with a copy: {copied}"
    assert good >= 0.99 * copied, f"only {good} of {copied} complete"


def test_processes_running_before_ember_starts():
    bins = [build_quiet(v, f"quiet_{v}") for v in range(20)]
    procs = [subprocess.Popen([bins[i % 20], "300", "3", "60"]) for i in range(60)]
    otlp, pprof = os.path.join(WD, "quiet.otlp"), os.path.join(WD, "quiet.pb.gz")
    try:
        time.sleep(1)
        r = subprocess.run([EMBER, "record", "-d", "10", "-F", "99", "--no-progress",
                            *[a for p in procs for a in ("-p", str(p.pid))], "-o", otlp, "-o",
                            pprof], capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
    finally:
        for p in procs:
            kill(p)
    stats = profile_stats(pprof, WD)
    split_line(stats)
    log(f"  {stats['unwind.running.listed']} processes listed at the start, "
        f"{stats['unwind.running.loaded']} loaded from the list")
    assert stats["unwind.running.listed"] >= 60
    samples = [s for s in otlp_stacks(otlp) if (s[1] or "").startswith("quiet_")]
    kinds, first = collections.Counter(), {}
    for pid, _, ts, n, frames in samples:
        kinds[quiet_stack(frames)] += n
        if pid not in first or ts < first[pid][0]:
            first[pid] = (ts, quiet_stack(frames))
    total = sum(kinds.values())
    good = kinds["complete"] + kinds["no user stack"]
    log(f"  {total} samples of {len(first)} processes: " + ", ".join(
        f"{k} {n}" for k, n in kinds.most_common(6)))
    assert total >= 200, f"too few samples: {total}"
    assert good >= 0.99 * total, f"only {good} of {total} complete"
    first_good = sum(1 for _, k in first.values() if k in ("complete", "no user stack"))
    log(f"  first samples: {first_good} of {len(first)} complete")
    assert first_good >= 0.99 * len(first)
    # Once loaded, the kernel unwinds them: a process takes a copy or two before its tables
    # are in (the busiest are loaded first), none after.
    assert stats["unwind.copy.samples"] <= 2 * len(first), stats["unwind.copy.samples"]
    # Copies add no more than the samples' own bytes and a burst per CPU (bench/firstsample
    # measures the ratio over a minute; a short run is mostly its first moments).
    with_copies, without = volume(stats)
    assert with_copies - without <= without + os.cpu_count() * (BURST + MAX_COPY)


def bpf_map_bytes(pid):
    """Memory of the BPF maps process pid holds: memlock in each map descriptor's fdinfo.
    Fails when the process holds no map or a map's fdinfo says no memlock: a figure that
    cannot be read must not read as 0 bytes."""
    seen = {}
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") != "anon_inode:bpf-map":
                continue
            with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                info = dict(line.split(":", 1) for line in f if ":" in line)
        except FileNotFoundError:
            continue  # closed since the listing
        assert "map_id" in info and "memlock" in info, f"fd {fd} of {pid}: no memlock in {info}"
        seen[int(info["map_id"])] = int(info["memlock"])
    assert seen, f"process {pid} holds no BPF map: its maps' memory cannot be measured"
    return sum(seen.values())


def start_stopped_shell(argv):
    """A shell that stops itself, then execs argv when continued (its PID known before)."""
    p = subprocess.Popen(["/bin/sh", "-c", 'kill -STOP $$; exec "$0" "$@"', *argv],
                         stdout=subprocess.DEVNULL)
    os.waitpid(p.pid, os.WUNTRACED)
    return p


def test_one_shot_processes():
    """Like a shell loop: one process after the other runs a short program (40 ms of CPU),
    each met at its exec; shells started before ember and stopped, so that -p can name them
    and nothing else on the host spends the copy budget."""
    bins = [build_quiet(v, f"oneshot_{v}") for v in range(10)]
    otlp, pprof = os.path.join(WD, "oneshot.otlp"), os.path.join(WD, "oneshot.pb.gz")
    shells = [start_stopped_shell([bins[i % 10], "0", "40"]) for i in range(200)]
    pids = [p.pid for p in shells]
    # Stopped by SIGINT once every shell is done: on a loaded host they take longer than 40 ms.
    proc = start([EMBER, "record", "-d", "300", "-F", "99", "--no-progress",
                  *[a for pid in pids for a in ("-p", str(pid))], "-o", otlp, "-o", pprof])
    try:
        wait_for_symbolizer(proc.pid)
        time.sleep(2)
        started = time.monotonic()
        for p in shells:
            p.send_signal(signal.SIGCONT)
            p.wait()
        log(f"  200 one-shot processes ran in {time.monotonic() - started:.1f} s")
        maps = bpf_map_bytes(proc.pid)
        time.sleep(1)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        kill(proc)
        for p in shells:
            kill(p)
    assert proc.returncode == 0, err
    # The maps' own cost, with few tables loaded: issue 15 allows 32 MiB with the tables of
    # 1,000 processes (bench/first_sample). `ember record -p` of one sleeping process: 21.0 MiB
    # while the off-CPU table was preallocated without off-CPU sampling and the blocks' hash
    # map had twice the buckets, 10.8 MiB since.
    log(f"  BPF maps: {maps / 2**20:.1f} MiB")
    assert maps <= 20 << 20, f"BPF maps take {maps / 2**20:.1f} MiB"
    stats = profile_stats(pprof, WD)
    split_line(stats)
    samples = [s for s in otlp_stacks(otlp) if (s[1] or "").startswith("oneshot_")]
    kinds, first = collections.Counter(), {}
    for pid, _, ts, n, frames in samples:
        kinds[quiet_stack(frames)] += n
        if pid not in first or ts < first[pid][0]:
            first[pid] = (ts, quiet_stack(frames), frames)
    total = sum(kinds.values())
    log(f"  {total} samples of {len(first)} processes: " + ", ".join(
        f"{k} {n}" for k, n in kinds.most_common(6)))
    first_kinds = collections.Counter(k for _, k, _ in first.values())
    first_good = first_kinds["complete"] + first_kinds["no user stack"]
    log(f"  first samples: {first_good} of {len(first)} complete; " + ", ".join(
        f"{k} {n}" for k, n in first_kinds.most_common(5)))
    for _, k, frames in first.values():
        if k not in ("complete", "no user stack"):
            log("  incomplete first sample: " + ";".join(f"{n}" for n, _ in reversed(frames)))
    assert len(first) >= 100, f"too few processes sampled: {len(first)}"
    assert first_good >= 0.99 * len(first), f"only {first_good} of {len(first)} first samples"
    # Each exec is met ahead of the ring: a process's mappings are read before it is gone;
    # one gone before a starved symbolizer read them is named by the collector's snapshot of
    # its maps and the files its program's other processes had (logged: how many were used).
    log(f"  maps snapshots taken {stats.get('maps.snapshots_taken')}, served "
        f"{stats.get('maps.snapshots_served')}, dropped {stats.get('maps.snapshots_dropped')}; "
        f"kept files served {stats.get('broker.kept_files_served')}")
    good = kinds["complete"] + kinds["no user stack"]
    assert good >= 0.99 * total, f"only {good} of {total} samples complete"
    assert stats["unwind.execs_met_first"] >= len(first), stats["unwind.execs_met_first"]
    # Twenty processes of each program: later ones find the tables of their files by file,
    # with no mapping list of their own (bpf/unwind.bpf.h).
    assert stats["unwind.samples_by_file"] > 0, "no table was found by file"
    # Issue 15's target: the samples, copies and all, at most twice their frames alone.
    with_copies, without = volume(stats)
    assert with_copies <= 2 * without, f"{with_copies / without:.2f}x the bytes without copies"


def test_execs_of_processes_already_gone():
    """A shell loop of /bin/true, 300 times, under a whole-host recording: most of the
    processes are gone when the symbolizer meets their exec (their exit is in the ring
    behind it), and those load no tables: no maps asked for, no tables sent. The loop
    runs under `sh`, so ember sees every exec; at 19 Hz almost none has a sample."""
    pprof = os.path.join(WD, "gone.pb.gz")
    proc = start([EMBER, "record", "-d", "8", "-F", "19", "--no-progress", "-o", pprof])
    try:
        wait_for_symbolizer(proc.pid)
        time.sleep(2)
        subprocess.run(["sh", "-c", "for i in $(seq 300); do /bin/true; done"], check=True)
        _, err = proc.communicate(timeout=120)
    finally:
        kill(proc)
    assert proc.returncode == 0, err
    stats = profile_stats(pprof, WD)
    met, gone = stats.get("unwind.execs_met_first", 0), stats.get("unwind.execs_gone", 0)
    loads = stats.get("unwind.process_loads", 0)
    log(f"  {met} execs met, {gone} of processes gone by then; {loads} process loads in all "
        f"(the host's processes at the start too)")
    assert met >= 300, f"only {met} execs met"
    # Each gone process would have been loaded twice (both cursors): a tenth is no chance.
    assert gone >= 30, f"only {gone} of {met} execs were of processes gone"


if __name__ == "__main__":
    run_tests([
        test_stacks_from_copies_match_truth,
        test_copies_taken_in_stack_page_faults,
        test_processes_running_before_ember_starts,
        test_one_shot_processes,
        test_execs_of_processes_already_gone,
    ])
