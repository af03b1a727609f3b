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
  binaries, after a burst of 10 other binaries at once, their first run: the
  processes started in the first 100 ms) started the moment ember says it
  samples: at least 99% of their first samples complete, every one of the
  burst's.
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
            first[pid] = (ts, k, frames)
    early = [k for ts, k, _ in first.values() if ts < since_s * 1e9 + 100e6]
    for _, k, frames in first.values():
        if k != "complete":  # the whole stack, leaf last, for the log of a failure
            log(f"  incomplete first sample ({k}): " + ";".join(n for n, _ in reversed(frames)))
    return kinds, collections.Counter(k for _, k, _ in first.values()), collections.Counter(early)


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
    return with_copies, without


# The copy budget's loan at 99 Hz, all CPUs (bpf/records.h, EMBER_STACK_COPY_BURST: 4 KiB per
# Hz and CPU): a run whose samples carry more stays within twice their bytes (stack_copy.bpf.h).
LOAN = os.cpu_count() * 99 * 4096
# The work goes on this long at least (whole rounds), so that its samples repay the loan.
WORK_S = 40


def assert_volume(ratio):
    with_copies, without = ratio
    assert without >= LOAN, (f"the run's samples carry {without} bytes, less than the copy "
                             f"budget's loan ({LOAN}): too short a run to hold to the 2x bound")
    assert with_copies <= 2 * without, f"{with_copies / without:.2f}x the bytes without copies"


def test_overcommitted_build():
    files = sorted(glob.glob(os.path.join(SRC, "shared", "*.c")) +
                   glob.glob(os.path.join(SRC, "symbolizer", "*", "*.c")))[:36]
    with open(os.path.join(WD, "build.mk"), "w") as f:
        f.write("all: " + " ".join(f"o{i}.o" for i in range(len(files))) + "\n")
        for i, src in enumerate(files):
            f.write(f"o{i}.o: {src}\n\tgcc -O2 -g -std=gnu17 -I{SRC} -I{BUILD} -I{BUILD}/proto "
                    f"-c -o $@ $<\n")

    def build():
        """Rounds of the build, each into a directory of its own, for WORK_S at least."""
        t0, rounds = time.monotonic(), 0
        while time.monotonic() - t0 < WORK_S:
            objs = os.path.join(WD, f"objs{rounds}")
            os.makedirs(objs)
            subprocess.run(["make", "-s", "-k", f"-j{2 * os.cpu_count()}", "-C", objs, "-f",
                            os.path.join(WD, "build.mk")],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            rounds += 1
        log(f"  {rounds * len(files)} compilations in {time.monotonic() - t0:.1f} s")

    with Hogs():
        stats, samples, since = record_while("build", build)
    kinds, first, _ = shares(samples, lambda c: c in COMPILERS, since)
    good, total = report("compiler samples", kinds)
    report("their processes' first samples", first)
    ratio = volume(stats)
    assert total >= 300, f"too few compiler samples: {total}"
    assert good >= 0.99 * total, f"only {good} of {total} compiler samples complete"
    assert stats["unwind.samples_by_file"] > 0, "no table found by file"
    assert_volume(ratio)


def test_overcommitted_one_shot_programs():
    for v in range(20):  # 10 for the loop, 10 for the burst
        name = f"bh_oneshot_{v}" if v < 10 else f"bh_burst_{v - 10}"
        subprocess.run(["gcc", "-O2", "-fomit-frame-pointer", "-g", f"-DVARIANT={v}", "-o",
                        os.path.join(WD, name),
                        os.path.join(SRC, "tests", "workloads", "quiet.c")], check=True)
    # The burst: 10 programs at once the moment ember samples, none run before (no table
    # yet): the processes started in the first 100 ms. Then the loop.
    # The loop goes on for WORK_S, a program at a time; it counts them.
    loop = ("for v in $(seq 0 9); do \"$0\"/bh_burst_$v 0 40 & done; end=$(($(date +%s) + $1)); "
            "i=0; while [ $(date +%s) -lt $end ]; do \"$0\"/bh_oneshot_$((i % 10)) 0 40; "
            "i=$((i + 1)); done; wait; echo $i")

    def one_shots():
        t0 = time.monotonic()
        n = subprocess.run(["/bin/sh", "-c", loop, WD, str(WORK_S)], check=True,
                           capture_output=True, text=True).stdout.strip()
        log(f"  {n} one-shot programs after the burst in {time.monotonic() - t0:.1f} s")

    with Hogs():
        stats, samples, since = record_while("oneshot", one_shots)
    kinds, first, early = shares(samples, lambda c: c.startswith(("bh_oneshot", "bh_burst")),
                                 since)
    report("one-shot samples", kinds)
    good, total = report("first samples", first)
    report("first samples in the first 100 ms", early)
    _, burst, _ = shares(samples, lambda c: c.startswith("bh_burst"), since)
    bgood, btotal = report("first samples of the burst (started in the first 100 ms)", burst)
    ratio = volume(stats)
    assert total >= 150, f"too few processes sampled: {total}"
    assert good >= 0.99 * total, f"only {good} of {total} first samples complete"
    assert btotal >= 8, f"only {btotal} of the burst's 10 processes sampled"
    assert bgood == btotal, f"{btotal - bgood} of the burst's first samples incomplete"
    assert_volume(ratio)


if __name__ == "__main__":
    run_tests([
        test_overcommitted_build,
        test_overcommitted_one_shot_programs,
    ])
