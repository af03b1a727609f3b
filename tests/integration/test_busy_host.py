#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Complete stacks on a loaded host (issue 27): the test starts a CPU-bound
process per CPU at the same nice level, then records the whole system at 99 Hz
(ember starts on the loaded host, as a continuous profiler finds it):

- a parallel C build at make -j twice the CPUs (ember's own sources): at least
  99% of the compiler processes' samples (cc1, as, ld, collect2, gcc) complete,
  reaching the program's entry with no marker; the kernel found tables by file
  (later compilers, with no list of their own); the samples, copies and all,
  at most twice their frames alone;
- one-shot programs (a shell loop of short -fomit-frame-pointer programs, 10
  binaries) started the moment ember says it samples: at least 99% of their
  first samples complete, those of the first 100 ms included.
Samples without user frames (a process in exec or exit) are left out."""
import collections
import glob
import os
import re
import signal
import subprocess
import time

from emberlib import BUILD, SRC, kill, log, require_root, run_tests, start_recording, workdir
from test_first_sample import otlp_stacks
from unwindlib import profile_stats

require_root()
WD = workdir()
COMPILERS = ("cc1", "as", "ld", "collect2", "gcc", "cc")
# The program's entry (through libc's start) or a thread's, or the dynamic loader's.
ROOTS = re.compile(r"(^_start$|__libc_start_(call_)?main|^_dl_start_user$|^start_thread$"
                   r"|^__?clone3?$|^ld-linux-x86-64\.so\.2\+0x)")


def classify(frames):
    """'complete', why not, or None for a sample without user frames."""
    marker = next((n for n, _ in frames if n.startswith("[unwind stopped")), None)
    if marker:
        return marker
    user = [n for n, k in frames if k != "kernel"]
    if not user:
        return None
    return "complete" if any(ROOTS.search(n) for n in user) else "ends in " + user[-1]


class Hogs:
    """One CPU-bound process per CPU, at the test's nice level, for the block's duration."""

    def __enter__(self):
        self.procs = [subprocess.Popen(["/bin/sh", "-c", "while :; do :; done"],
                                       start_new_session=True) for _ in range(os.cpu_count())]
        return self

    def __exit__(self, *exc):
        for p in self.procs:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def record_while(tag, work):
    """Records the whole system at 99 Hz while work(sampling_time) runs; returns the
    statistics, the samples and the time ember said it samples (time of day)."""
    otlp, pprof = os.path.join(WD, f"{tag}.otlp"), os.path.join(WD, f"{tag}.pb.gz")
    proc, lines, sampling = start_recording(["-F", "99", "--no-progress", "-o", otlp,
                                             "-o", pprof])
    try:
        assert sampling.wait(120), "".join(lines)
        work()
        time.sleep(1)
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=300)
        sampling.reader.join()
    finally:
        kill(proc)
    assert proc.returncode == 0, "".join(lines)
    return profile_stats(pprof, WD), otlp_stacks(otlp), sampling.time


def shares(samples, wanted, since_s):
    """Per stack kind: all samples; each process's first; first ones within 100 ms of since_s."""
    kinds, first = collections.Counter(), {}
    for pid, comm, ts, n, frames in samples:
        k = classify(frames) if wanted(comm or "") else None
        if k is None:
            continue
        kinds[k] += n
        if pid not in first or ts < first[pid][0]:
            first[pid] = (ts, k)
    early = [k for ts, k in first.values() if ts < since_s * 1e9 + 100e6]
    return kinds, collections.Counter(k for _, k in first.values()), collections.Counter(early)


def report(what, kinds):
    total = sum(kinds.values())
    log(f"  {what}: {kinds['complete']} of {total} complete" +
        "".join(f"; {n} {k}" for k, n in kinds.most_common(4) if k != "complete"))
    return kinds["complete"], total


def volume(stats):
    with_copies, without = stats["ring.sample_bytes"], stats["ring.sample_bytes_without_copies"]
    log(f"  samples {with_copies} bytes, {with_copies / max(without, 1):.2f}x their frames alone; "
        f"kernel: {stats['unwind.samples_by_process']} by process list, "
        f"{stats['unwind.samples_by_file']} by file; copies {stats['unwind.samples_complete_copy']}"
        f" (budget spent {stats['unwind.copy.skipped_budget']}); not found by file: unseen "
        f"{stats['unwind.file.unseen']}, no mapping {stats['unwind.file.no_vma']}; kernel maps "
        f"served {stats.get('processes.kernel_maps_served')}")
    assert with_copies <= 2 * without, f"{with_copies / without:.2f}x the bytes without copies"


def test_overcommitted_build():
    files = sorted(glob.glob(os.path.join(SRC, "shared", "*.c")) +
                   glob.glob(os.path.join(SRC, "symbolizer", "*", "*.c")))[:36]
    objs = os.path.join(WD, "objs")
    os.makedirs(objs)
    with open(os.path.join(WD, "build.mk"), "w") as f:
        names = [f"o{i}.o" for i in range(len(files))]
        f.write("all: " + " ".join(names) + "\n")
        for o, src in zip(names, files):
            f.write(f"{o}: {src}\n\tgcc -O2 -g -std=gnu17 -I{SRC} -I{BUILD} -I{BUILD}/proto "
                    f"-c -o $@ $<\n")

    def build():
        t0 = time.monotonic()
        subprocess.run(["make", "-s", "-k", f"-j{2 * os.cpu_count()}", "-C", objs, "-f",
                        os.path.join(WD, "build.mk")],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        log(f"  {len(files)} compilations in {time.monotonic() - t0:.1f} s")

    with Hogs():
        stats, samples, since = record_while("build", build)
    kinds, first, _ = shares(samples, lambda c: c in COMPILERS, since)
    good, total = report("compiler samples", kinds)
    report("their processes' first samples", first)
    volume(stats)
    assert total >= 300, f"too few compiler samples: {total}"
    assert good >= 0.99 * total, f"only {good} of {total} compiler samples complete"
    assert stats["unwind.samples_by_file"] > 0, "no table found by file"


def test_overcommitted_one_shot_programs():
    for v in range(10):
        subprocess.run(["gcc", "-O2", "-fomit-frame-pointer", "-g", f"-DVARIANT={v}", "-o",
                        os.path.join(WD, f"bh_oneshot_{v}"),
                        os.path.join(SRC, "tests", "workloads", "quiet.c")], check=True)
    loop = "for i in $(seq 100); do \"$0\"_$((i % 10)) 0 40; done"

    def one_shots():
        t0 = time.monotonic()
        subprocess.run(["/bin/sh", "-c", loop, os.path.join(WD, "bh_oneshot")], check=True)
        log(f"  100 one-shot programs in {time.monotonic() - t0:.1f} s")

    with Hogs():
        stats, samples, since = record_while("oneshot", one_shots)
    kinds, first, early = shares(samples, lambda c: c.startswith("bh_oneshot"), since)
    report("one-shot samples", kinds)
    good, total = report("first samples", first)
    egood, etotal = report("first samples in the first 100 ms", early)
    volume(stats)
    assert total >= 50, f"too few processes sampled: {total}"
    assert good >= 0.99 * total, f"only {good} of {total} first samples complete"
    assert egood == etotal, f"{etotal - egood} of the first 100 ms's first samples incomplete"


if __name__ == "__main__":
    run_tests([
        test_overcommitted_build,
        test_overcommitted_one_shot_programs,
    ])
