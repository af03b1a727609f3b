#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bench/overhead: the cost of recording a busy host.

Runs the same busy workload (every CPU busy: tests/workloads/split.c with one
thread per CPU, plus a syscall-heavy dd) and records it system-wide for the
same duration at the same frequency with ember and with `perf record -g`.
Prints, for each tool, the CPU seconds its processes used (user + system, via
RUSAGE_CHILDREN of this script, so every process the tool started and reaped
is counted), that cost as a percentage of one core, its steady state (the CPU
of its process tree from 10 s in to a second before the end, read from /proc
every 100 ms: start-up and the final write left out, in the same run), and the
peak memory of all its processes together (PSS, shared pages counted once,
and VmRSS, summed over the tool's process tree, sampled every 100 ms), then the
ratios ember/perf.

Usage: sudo bench/overhead/run.py [--duration 60] [--hz 19] [--short 10] [--build build]
"""
import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))


def tree(pid):
    """pid and all its descendants."""
    pids, todo = [], [pid]
    while todo:
        p = todo.pop()
        pids.append(p)
        try:
            with open(f"/proc/{p}/task/{p}/children") as f:
                todo.extend(int(c) for c in f.read().split())
        except OSError:
            pass
    return pids


def proc_kib(pid, name, key):
    """The KiB figure of the line starting with key in /proc/PID/NAME (0: gone)."""
    try:
        with open(f"/proc/{pid}/{name}") as f:
            for line in f:
                if line.startswith(key):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def rss_kib(pid):
    return proc_kib(pid, "status", "VmRSS:")


def pss_kib(pid):
    """Proportional set size: a page shared by n processes counts 1/n in each."""
    return proc_kib(pid, "smaps_rollup", "Pss:")


TICK = os.sysconf("SC_CLK_TCK")


def cpu_s(pid):
    """CPU seconds of pid and of its children it has reaped (utime, stime, cutime, cstime)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return sum(int(x) for x in fields[11:15]) / TICK
    except (OSError, IndexError, ValueError):
        return 0.0


class PeakRss(threading.Thread):
    """Every 100 ms: the resident size (RSS, and PSS: shared pages once) and the CPU time
    of the tool's process tree."""

    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid, self.peak, self.peak_pss, self.stop, self.timeline = pid, 0, 0, False, []
        self.cpu = []  # (seconds since start, CPU seconds of the tree)

    def run(self):
        t0 = time.monotonic()
        while not self.stop:
            pids = tree(self.pid)
            rss = sum(rss_kib(p) for p in pids)
            self.peak = max(self.peak, rss)
            self.peak_pss = max(self.peak_pss, sum(pss_kib(p) for p in pids))
            self.timeline.append((time.monotonic() - t0, rss))
            self.cpu.append((time.monotonic() - t0, sum(cpu_s(p) for p in pids)))
            time.sleep(0.1)

    def steady(self, settle, duration):
        """% of a core the tree used from settle seconds in to a second before the end:
        the cost of a long run, start-up and the final write left out."""
        a = [c for c in self.cpu if c[0] >= settle]
        b = [c for c in self.cpu if c[0] <= duration - 1]
        if not a or not b or b[-1][0] - a[0][0] < 1:
            return None
        return 100 * (b[-1][1] - a[0][1]) / (b[-1][0] - a[0][0])

    def at(self, fraction, duration):
        """RSS (MiB) at a fraction of the run: is memory flat over time?"""
        t = fraction * duration
        near = [r for s, r in self.timeline if abs(s - t) < 1.0]
        return max(near) / 1024.0 if near else 0.0


def measure(name, cmd, duration):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    sampler = PeakRss(proc.pid)
    sampler.start()
    _, err = proc.communicate(timeout=duration + 600)
    sampler.stop = True
    sampler.join()
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        sys.exit(f"{name} failed ({proc.returncode}): {err[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"name": name, "cpu": cpu, "wall": wall, "rss_mib": sampler.peak / 1024.0,
            "pss_mib": sampler.peak_pss / 1024.0,
            "rss_25": sampler.at(0.25, duration), "rss_90": sampler.at(0.9, duration),
            "steady": sampler.steady(min(10, duration / 3), duration)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duration", type=int, default=60)
    ap.add_argument("--hz", type=int, default=19)
    ap.add_argument("--build", default=os.path.join(SRC, "build"))
    ap.add_argument("--short", type=int, default=10,
                    help="also run each tool this many seconds: the difference is the steady-state "
                         "cost, without start-up (0: do not)")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench/overhead: run as root (both tools record every CPU)")
    ember = os.path.join(a.build, "ember")
    perf = shutil.which("perf")
    if not os.path.exists(ember) or not perf:
        sys.exit("bench/overhead: needs build/ember and perf (apt-get install linux-perf)")
    wd = tempfile.mkdtemp(prefix="ember-bench-")
    split = os.path.join(wd, "split")
    subprocess.run(["gcc", "-O2", "-g", "-fno-omit-frame-pointer", "-pthread", "-o", split,
                    os.path.join(SRC, "tests", "workloads", "split.c")], check=True)
    ncpu = os.cpu_count() or 1
    span = str(2 * (a.duration + 30) + 30)
    load = [subprocess.Popen([split, span, str(ncpu)], stdout=subprocess.DEVNULL),
            subprocess.Popen(["dd", "if=/dev/zero", "of=/dev/null", "bs=512"], stderr=subprocess.DEVNULL)]
    try:
        time.sleep(2)
        cmds = [
            ("ember", lambda d: [ember, "record", "-d", str(d), "-F", str(a.hz), "--no-progress",
                                 "-o", os.path.join(wd, "p.pb.gz"), "-o", os.path.join(wd, "p.folded")]),
            ("perf record -g", lambda d: [perf, "record", "-g", "-a", "-F", str(a.hz), "-o",
                                          os.path.join(wd, "perf.data"), "--", "sleep", str(d)]),
        ]
        runs = [measure(name, cmd(a.duration), a.duration) for name, cmd in cmds]
        shorts = [measure(name, cmd(a.short), a.short) for name, cmd in cmds] if a.short else []
    finally:
        for p in load:
            p.kill()
            p.wait()
    print(f"bench/overhead: {a.duration} s, {a.hz} Hz, every CPU ({ncpu}) busy, whole system")
    print(f"{'tool':<16} {'CPU s':>8} {'% of a core':>12} {'steady %':>9} {'peak PSS MiB':>13} "
          f"{'peak RSS MiB':>13} {'RSS at 25%':>11} {'at 90%':>7}")
    for r in runs:
        steady = f"{r['steady']:.3f}" if r["steady"] is not None else "-"
        print(f"{r['name']:<16} {r['cpu']:>8.3f} {100 * r['cpu'] / a.duration:>11.3f}% {steady:>9}"
              f" {r['pss_mib']:>13.1f} {r['rss_mib']:>13.1f} {r['rss_25']:>11.1f} {r['rss_90']:>7.1f}")
    e, p = runs
    print(f"ratio ember/perf: CPU {e['cpu'] / p['cpu']:.2f}x, peak PSS {e['pss_mib'] / p['pss_mib']:.2f}x, "
          f"peak RSS {e['rss_mib'] / p['rss_mib']:.2f}x" +
          (f", steady state {e['steady'] / p['steady']:.2f}x" if e["steady"] and p["steady"] else ""))
    print("(steady %: the tools' CPU from 10 s in to a second before the end, read from /proc "
          "every 100 ms: start-up and the final write left out)")
    if shorts:
        # Start-up (loading BPF, first symbol tables) is paid once; what a long-running
        # profiler costs is the difference between the long and the short run.
        span = a.duration - a.short
        print(f"\nsteady state ({a.duration} s run minus {a.short} s run):")
        for r, sh in zip(runs, shorts):
            print(f"{r['name']:<16} start-up {sh['cpu']:.3f} CPU s, then "
                  f"{100 * (r['cpu'] - sh['cpu']) / span:.3f}% of a core")
        print("(start-up varies by about 0.1 CPU s from run to run: a steady state near or below 0 "
              "is smaller than that noise)")
    shutil.rmtree(wd, ignore_errors=True)


if __name__ == "__main__":
    main()
