#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Unwind tables found by file in the kernel (bpf/unwind.bpf.h), with real eBPF.

The symbolizer is told to send no process mapping lists (a test hook): every
table the kernel uses it finds from the file behind a pc, by device and inode,
and serves only while the file is as its table was built. Each case runs
short -fomit-frame-pointer programs (tests/workloads/quiet.c) one after the
other, recorded with -p, and requires every stack complete, the later
processes' unwound in the kernel by file from their first sample:

- a program run from an overlayfs mount (a container's layer): the kernel
  names its file as /proc/PID/maps does (the overlay's, not the layer's);
- a program rewritten in place (same device and inode) between two batches:
  the table of the old one is refused (its time and size differ), and the new
  one's built (a layout of its own: the old table would break its stacks);
  again with mapping lists, whose entry for the executable is the old table's
  until the symbolizer rebuilds it;
- a program deleted while it runs: its table still serves it;
- two programs of different layouts with the same inode number on two
  devices (two tmpfs mounts): each finds its own table.
The programs' frames are named from copies of their binaries as each process
ran them (nm and readelf), not by ember: a file rewritten or deleted since is
one the symbolizer cannot read again, and what is tested is the unwinding."""
import bisect
import collections
import os
import re
import shutil
import signal
import subprocess
import threading
import time

from emberlib import (SANITIZED, SRC, kill, log, require_root, run_tests, skip_or_fail,
                      start_recording, workdir)
from test_first_sample import otlp_stacks, quiet_stack, start_stopped_shell
from unwindlib import profile_stats

require_root()
if os.environ.get("EMBER_TEST_HOOKS") == "0":
    skip_or_fail("needs a build with -DEMBER_TEST_HOOKS=ON (EMBER_TEST_NO_PROCESS_LISTS)")
WD = workdir()
NO_FP = ("-O2", "-fomit-frame-pointer")


def build(name, variant, *extra):
    out = os.path.join(WD, name)
    subprocess.run(["gcc", *NO_FP, "-g", f"-DVARIANT={variant}", *extra, "-o", out,
                    os.path.join(SRC, "tests", "workloads", "quiet.c")], check=True)
    return out


NO_CFI = " [no unwind info]"


class Binary:
    """A copy of a program as a process ran it: its functions (nm), loadable segments
    (readelf) and the ranges its .eh_frame describes, to name a file offset of it."""

    def __init__(self, path):
        self.path = path + ".as-run"
        shutil.copy(path, self.path)
        out = subprocess.run(["nm", "-S", "--defined-only", self.path], capture_output=True,
                             text=True, check=True).stdout
        self.funcs = sorted((int(a, 16), int(a, 16) + int(n, 16), name.split(".")[0])
                            for a, n, t, name in (l.split() for l in out.splitlines()
                                                  if len(l.split()) == 4)
                            if t in "tTwW")
        out = subprocess.run(["readelf", "-lW", self.path], capture_output=True, text=True,
                             check=True).stdout
        self.segs = [tuple(int(x, 16) for x in m.groups()) for m in re.finditer(
            r"^\s*LOAD\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+\S+\s+0x([0-9a-f]+)", out, re.M)]
        out = subprocess.run(["readelf", "--debug-dump=frames", self.path], capture_output=True,
                             text=True, check=True).stdout
        self.fdes = [(int(a, 16), int(b, 16))
                     for a, b in re.findall(r"FDE cie=\S+ pc=([0-9a-f]+)\.\.([0-9a-f]+)", out)]

    def vaddr(self, offset):
        for off, vaddr, size in self.segs:
            if off <= offset < off + size:
                return vaddr + offset - off
        return None

    def name(self, offset):
        at = self.vaddr(offset)
        i = bisect.bisect_right(self.funcs, (at, float("inf"), "")) - 1 if at is not None else -1
        return self.funcs[i][2] if i >= 0 and self.funcs[i][0] <= at < self.funcs[i][1] else None

    def described(self, offset):
        """Whether the program's .eh_frame says how to unwind from offset: not in the C
        runtime's start-up code (crtstuff's frame_dummy and the like have no FDE)."""
        at = self.vaddr(offset)
        return at is not None and any(a <= at < b for a, b in self.fdes)


def namer(program, binary_of):
    """otlp_stacks' name_of: the frames of the mapped file named `program` named from the copy
    binary_of(pid) gives (the return address's call for a caller)."""
    def name_of(pid, path, offset, leaf):
        b = binary_of(pid) if os.path.basename(path) == program else None
        if not b:
            return None
        name = b.name(offset if leaf else offset - 1) or f"{program}+{offset:#x}"
        return name + (NO_CFI if leaf and not b.described(offset) else "")
    return name_of


def record(batches, tag, during=None):
    """Records with -p the programs of each batch (argv lists), run one after the other, each
    batch once its `before` (a callable, or None) ran; during, if given, runs on a thread once
    the first program starts. Returns (stats, the .otlp file, the PIDs of each batch's
    programs)."""
    otlp, pprof = os.path.join(WD, f"{tag}.otlp"), os.path.join(WD, f"{tag}.pb.gz")
    shells = [[start_stopped_shell(argv) for argv in batch] for batch, _ in batches]
    pids = [p.pid for batch in shells for p in batch]
    proc, lines, sampling = start_recording(
        ["-d", "300", "-F", "499", "--no-progress",
         *[a for pid in pids for a in ("-p", str(pid))], "-o", otlp, "-o", pprof])
    os.environ.pop("EMBER_TEST_NO_PROCESS_LISTS", None)
    try:
        assert sampling.wait(60), "".join(lines)
        if during:
            threading.Thread(target=during, daemon=True).start()
        for (_, before), batch in zip(batches, shells):
            if before:
                before()
            for p in batch:
                p.send_signal(signal.SIGCONT)
                p.wait()
        time.sleep(1)
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=120)
        sampling.reader.join()
    finally:
        kill(proc)
        for batch in shells:
            for p in batch:
                kill(p)
    assert proc.returncode == 0, "".join(lines)
    return profile_stats(pprof, WD), otlp, [[p.pid for p in batch] for batch in shells]


def check(stats, samples, comm_prefix, programs, lists=False):
    """Every stack of the programs complete (main, quiet_serve, quiet_work, quiet_leaf in
    order, to _start), and, without lists, the kernel found most tables by file."""
    kinds, first, bad = collections.Counter(), {}, []
    for pid, comm, ts, n, frames in samples:
        if not (comm or "").startswith(comm_prefix):
            continue
        k = quiet_stack(frames)
        names = [f for f, kind in reversed(frames) if kind != "kernel"]
        # A sample where the program describes no unwinding (its start-up code): no
        # unwinder steps from there, the stack ends at its first frame by right.
        if k.startswith("[unwind stopped") and any(n.endswith(NO_CFI) for n in names):
            k = "stopped where the program has no unwind info"
        if k == "complete" and "quiet_leaf" in names:
            path = [f for f in names if f in ("main", "quiet_serve", "quiet_work", "quiet_leaf")]
            if path != ["main", "quiet_serve", "quiet_work", "quiet_leaf"]:
                k = "wrong callers: " + ";".join(names)
        kinds[k] += n
        if k not in ("complete", "no user stack") and len(bad) < 3:
            bad.append(f"pid {pid} at {ts}: " + ";".join(f for f, _ in reversed(frames)))
        if pid not in first or ts < first[pid][0]:
            first[pid] = (ts, k)
    total = sum(kinds.values())
    log(f"  {total} samples of {len(first)} processes: " +
        ", ".join(f"{k} {n}" for k, n in kinds.most_common(5)))
    log(f"  kernel: {stats['unwind.samples_by_file']} by file, "
        f"{stats['unwind.samples_by_process']} by process list; copies "
        f"{stats['unwind.samples_complete_copy']}; tables not found by file: unseen "
        f"{stats['unwind.file.unseen']}, changed {stats['unwind.file.changed']}, no mapping "
        f"{stats['unwind.file.no_vma']}; files rebuilt {stats['unwind.files_rebuilt_changed']}")
    for b in bad:
        log("  incomplete: " + b)
    good = kinds["complete"] + kinds["no user stack"] + \
        kinds["stopped where the program has no unwind info"]
    assert len(first) >= programs // 2, f"only {len(first)} processes sampled"
    assert good == total, f"{total - good} of {total} stacks incomplete or wrong"
    if lists:
        return
    # No list was sent: whatever the kernel unwound, it found by file.
    assert stats["unwind.samples_by_process"] == 0, stats["unwind.samples_by_process"]
    # The rest came before their file's table was built and were unwound from their copies:
    # a sanitized symbolizer builds tables two to three times slower (200 of 252 by file, 52
    # from copies, in a fresh Debian's sanitized run).
    share = 0.6 if SANITIZED else 0.8
    assert stats["unwind.samples_by_file"] >= share * total, \
        f"tables not found by file: {stats['unwind.samples_by_file']} of {total}"


def one_shots(path, n):
    return [[path, "0", "30"] for _ in range(n)]


def test_overlayfs_program():
    lower, upper, work, merged = (os.path.join(WD, d) for d in ("lower", "upper", "work", "merged"))
    for d in (lower, upper, work, merged):
        os.makedirs(d, exist_ok=True)
    prog = Binary(build("ovl_prog", 3))
    shutil.copy(os.path.join(WD, "ovl_prog"), lower)
    r = subprocess.run(["mount", "-t", "overlay", "overlay", "-o",
                        f"lowerdir={lower},upperdir={upper},workdir={work}", merged],
                       capture_output=True, text=True)
    if r.returncode:
        skip_or_fail(f"cannot mount an overlay file system: {r.stderr.strip()}")
    try:
        os.environ["EMBER_TEST_NO_PROCESS_LISTS"] = "1"
        stats, otlp, _ = record([(one_shots(os.path.join(merged, "ovl_prog"), 12), None)],
                                "ovl")
    finally:
        subprocess.run(["umount", "-l", merged])
    check(stats, otlp_stacks(otlp, namer("ovl_prog", lambda pid: prog)), "ovl_prog", 12)


def rewritten_in_place(lists):
    path, other = build("inplace", 1), build("inplace_b", 2, "-falign-functions=4096")
    ino = os.stat(path).st_ino
    versions = [Binary(path), Binary(other)]

    def rewrite():
        with open(other, "rb") as f:
            data = f.read()
        with open(path, "r+b") as f:  # the same inode: no rename
            f.truncate(0)
            f.write(data)
        assert os.stat(path).st_ino == ino

    if not lists:
        os.environ["EMBER_TEST_NO_PROCESS_LISTS"] = "1"
    stats, otlp, pids = record([(one_shots(path, 8), None), (one_shots(path, 8), rewrite)],
                               "inplace")
    version = {pid: versions[b] for b, batch in enumerate(pids) for pid in batch}
    check(stats, otlp_stacks(otlp, namer("inplace", version.get)), "inplace", 16, lists)
    assert stats["unwind.files_rebuilt_changed"] >= 1, "the rewritten program was not rebuilt"


def test_program_rewritten_in_place():
    rewritten_in_place(lists=False)


def test_program_rewritten_in_place_with_lists():
    """As a process's mapping list names its tables: the list of a process of the new program
    made before the symbolizer rebuilt its table is the old table's, which the kernel refuses
    for the executable (its file says so in every sample)."""
    rewritten_in_place(lists=True)


def test_program_deleted_while_it_runs():
    path = build("deleted", 4)
    prog = Binary(path)

    def delete():
        time.sleep(1)
        os.unlink(path)

    os.environ["EMBER_TEST_NO_PROCESS_LISTS"] = "1"
    # A quiet daemon (20 ms of work every 100 ms, for 4 s), its binary deleted after a second.
    stats, otlp, _ = record([([[path, "100", "20", "4"]], None)], "deleted", during=delete)
    assert not os.path.exists(path)
    check(stats, otlp_stacks(otlp, namer("deleted", lambda pid: prog)), "deleted", 1)


def test_same_inode_on_two_devices():
    mounts = [os.path.join(WD, d) for d in ("dev_a", "dev_b")]
    progs = [build("twin_a", 5), build("twin_b", 6, "-falign-functions=4096")]
    copies = [Binary(p) for p in progs]
    paths = []
    for m, prog in zip(mounts, progs):
        os.makedirs(m, exist_ok=True)
        subprocess.run(["mount", "-t", "tmpfs", "none", m], check=True)
        paths.append(os.path.join(m, "twin"))
        shutil.copy(prog, paths[-1])
    try:
        st = [os.stat(p) for p in paths]
        assert st[0].st_ino == st[1].st_ino and st[0].st_dev != st[1].st_dev, st
        os.environ["EMBER_TEST_NO_PROCESS_LISTS"] = "1"
        argv = [[paths[i % 2], "0", "30"] for i in range(16)]
        stats, otlp, pids = record([(argv, None)], "twins")
    finally:
        for m in mounts:
            subprocess.run(["umount", "-l", m])
    copy = {pid: copies[i % 2] for i, pid in enumerate(pids[0])}
    check(stats, otlp_stacks(otlp, namer("twin", copy.get)), "twin", 16)


if __name__ == "__main__":
    run_tests([
        test_overlayfs_program,
        test_program_rewritten_in_place,
        test_program_rewritten_in_place_with_lists,
        test_program_deleted_while_it_runs,
        test_same_inode_on_two_devices,
    ])
