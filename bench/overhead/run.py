#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bench/overhead: the cost of recording a busy host.

Runs the same busy workload (every CPU busy: tests/workloads/split.c with one
thread per CPU, plus a syscall-heavy dd) and records it system-wide for the
same duration at the same frequency with ember and with `perf record -g`.
Prints, for each tool, the CPU seconds its processes used (user + system, via
RUSAGE_CHILDREN of this script, so every process the tool started and reaped
is counted), that cost as a percentage of one core, its steady state (the CPU
of its process tree from 10 s in to a second before the end, read from /proc:
start-up and the final write left out, in the same run), and the peak memory of
all its processes together (PSS, shared pages counted once, and VmRSS, summed
over the tool's process tree), then the ratios ember/perf. /proc is read every
100 ms, and every second in the steady window, by bench/overhead/observe.c: the
reader is a process on the host being recorded, and a Python one cost ember's
symbolizer more than the rest of the steady state (its first sample a parse of
libpython's symbols, about 40 ms, wherever it fell; later ones reads of the
interpreter's frames). The observer's CPU is taken out of the tool's.

Where the time goes, in the same steady window: each process's time on a CPU (from its
threads' schedstat, in nanoseconds; user and system time beside it, in clock ticks), its
context switches and its read and write calls per second (/proc: nothing is attached to
the tool, since an observer such as perf stat costs its threads more than a quiet second
does), and ember's eBPF programs' own time (kernel.bpf_stats_enabled, on for the run):
runs, time per run, and its share of a core (read from the fdinfo of the programs' descriptors
in the tool's processes, their names from the kernel by the observer: a bpftool run would be
a new process the tool records). The kernel charges that time to the process a sample interrupted, so no tool's
CPU seconds hold it; perf's own in-kernel stack walk is not counted anywhere either.

perf record leaves its stacks unnamed; the CPU of `perf script` over its long run's data
is printed beside it: what perf takes, later, to give names (by function only; ember's
have inline frames and lines).

--quiet records an idle host instead (no load): what a quiet second costs.
--execs N adds a host's churn: N short programs (/bin/true) started a second, as health
checks, cron jobs and shell scripts do; each exec is work for ember (its tables, its maps)
that perf record defers to the events it writes.

Usage: sudo bench/overhead/run.py [--duration 60] [--hz 19] [--short 10] [--quiet]
                                  [--execs N] [--build build]
"""
import argparse
import ctypes
import os
import resource
import shutil
import subprocess
import sys
import tempfile
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
    """CPU seconds of pid: its threads' time on a CPU (schedstat, in nanoseconds) and that of
    the children it has reaped (cutime, cstime: clock ticks, the only record of them)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        on_cpu = 0
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                on_cpu += int(f.read().split()[0])
        return on_cpu / 1e9 + sum(int(x) for x in fields[13:15]) / TICK
    except (OSError, IndexError, ValueError):
        return 0.0


def proc_stats(pid):
    """(name, user s, system s, s on a CPU, context switches, read and write calls) of pid,
    all its threads, or None when it is gone. User and system time come in clock ticks
    (10 ms: too coarse for a quiet second); the time on a CPU, from each thread's
    schedstat, in nanoseconds. Nothing is attached to the tool: an observer such as perf
    stat on its threads costs them more than a quiet second does."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            head, rest = f.read().rsplit(")", 1)
        fields = rest.split()
        on_cpu = switches = 0
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                on_cpu += int(f.read().split()[0])
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                switches += sum(int(line.split()[1]) for line in f
                                if line.startswith(("voluntary_ctxt", "nonvoluntary_ctxt")))
        with open(f"/proc/{pid}/io") as f:
            io = dict(line.split(": ") for line in f.read().splitlines())
        return (head.split("(", 1)[1], int(fields[11]) / TICK, int(fields[12]) / TICK,
                on_cpu / 1e9, switches, int(io["syscr"]) + int(io["syscw"]))
    except (OSError, IndexError, ValueError, KeyError):
        return None


class Observed:
    """The tool's process tree as bench/overhead/observe (a small C program: a Python thread
    here was sampled too, and cost ember a parse of libpython and reads of its frames that fell
    in the steady window) read it: every 100 ms (every second in the steady window, settle
    seconds in to a second before the end) the resident size (RSS, and PSS: shared pages once)
    and the CPU time; in the window each process's figures at both ends (proc_stats), and the
    eBPF programs' counters and names. Its output goes to a file, read after the run:
    nothing here wakes while the tool records."""

    def __init__(self, observe, settle, duration, wd):
        """Started before the tool: it is one of the processes running when the tool starts."""
        self.settle, self.duration = settle, duration
        self.path = os.path.join(wd, "observed")
        with open(self.path, "w") as out:
            self.proc = subprocess.Popen([observe, str(settle), str(duration)],
                                         stdin=subprocess.PIPE, stdout=out, text=True)

    def watch(self, pid):
        """The tool is started: its pid, to the observer, whose clock starts now."""
        self.proc.stdin.write(f"{pid}\n")
        self.proc.stdin.close()

    def finish(self):
        """After the tool exited: the observer's readings, parsed."""
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.peak = self.peak_pss = 0
        self.timeline, self.cpu, self.procs, self.seen = [], [], {}, set()
        counters = [{}, {}]  # window start, end: program id: (name, run_time_ns, run_cnt)
        with open(self.path) as f:
            for line in f:
                w = line.split()
                if w[0] == "T":
                    t, rss, pss, cpu = float(w[1]), int(w[2]), int(w[3]), float(w[4])
                    self.peak, self.peak_pss = max(self.peak, rss), max(self.peak_pss, pss)
                    self.timeline.append((t, rss))
                    self.cpu.append((t, cpu))
                elif w[0] == "P":
                    self.seen.add(int(w[1]))
                elif w[0] == "W":
                    st = (w[2], float(w[3]), float(w[4]), float(w[5]), int(w[6]), int(w[7]))
                    self.procs.setdefault(int(w[1]), [st, st])[1] = st
                elif w[0] == "B":
                    counters[int(w[1])][int(w[2])] = (w[3], int(w[4]), int(w[5]))
        self.bpf = [None, None]
        if counters[0]:
            self.bpf = [self.by_name(c) for c in (counters[0], counters[1] or counters[0])]

    @staticmethod
    def by_name(counters):
        progs = {}
        for name, t, n in counters.values():
            if name.startswith("ember_"):
                t0, n0 = progs.get(name, (0, 0))
                progs[name] = (t0 + t, n0 + n)
        return progs

    def breakdown(self):
        """Per process name: % of a core on a CPU, user and system (in ticks), context
        switches and read and write calls per second; the eBPF programs' (runs, ns per run,
        % of a core)."""
        per = {}
        for first, last in self.procs.values():
            c = per.setdefault(first[0], [0.0] * 5)
            for i in range(5):
                c[i] += last[i + 1] - first[i + 1]
        span = self.duration - 1 - self.settle
        per = {n: (100 * c[0] / span, 100 * c[1] / span, 100 * c[2] / span, c[3] / span,
                   c[4] / span) for n, c in per.items()}
        bpf = {}
        if self.bpf[0] is not None:
            for name, (t, n) in self.bpf[1].items():
                t0, n0 = self.bpf[0].get(name, (0, 0))
                if n > n0:
                    bpf[name] = (n - n0, (t - t0) / (n - n0), 100 * (t - t0) / 1e9 / span)
        return per, bpf

    def steady(self, settle, duration):
        """% of a core the tree used from settle seconds in to a second before the end:
        the cost of a long run, start-up and the final write left out."""
        a = [c for c in self.cpu if c[0] >= settle]
        b = [c for c in self.cpu if c[0] <= duration - 1]
        if not a or not b or b[-1][0] - a[0][0] < 1:
            return None
        return 100 * (b[-1][1] - a[0][1]) / (b[-1][0] - a[0][0])

    def settled(self, settle):
        """(seconds in, CPU s of the tree) at the first reading settle seconds in: what
        start-up cost, and where the rest of the run begins."""
        a = [c for c in self.cpu if c[0] >= settle]
        return a[0] if a else None

    def at(self, fraction, duration):
        """RSS (MiB) at a fraction of the run: is memory flat over time?"""
        t = fraction * duration
        near = [r for s, r in self.timeline if abs(s - t) < 1.0]
        return max(near) / 1024.0 if near else 0.0


SETTLE = 10  # seconds before the steady window (--settle)


def settle_for(duration):
    return min(SETTLE, duration / 3)


def reap_orphans(pids, deadline_s=5.0):
    """Waits for the processes of the tool's tree that outlived their parent: a helper killed
    by PR_SET_PDEATHSIG is nobody's to wait for, and its CPU would be in no rusage. This
    script is their subreaper (main), so they are its children once orphaned."""
    end = time.monotonic() + deadline_s
    todo = set(pids)
    while todo and time.monotonic() < end:
        for pid in list(todo):
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:  # not ours: its own parent reaped it
                done = pid
            if done:
                todo.discard(pid)
        if todo:
            time.sleep(0.05)


def cpu_of(cmd):
    """CPU seconds cmd took (None if it failed)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        return None
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def measure(name, cmd, duration, observe, wd):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    sampler = Observed(observe, settle_for(duration), duration, wd)
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    sampler.watch(proc.pid)
    _, err = proc.communicate(timeout=duration + 600)
    wall = time.monotonic() - t0
    # The observer is our child too: its CPU is taken out of the tool's below.
    obs_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    sampler.finish()
    obs_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    reap_orphans(sampler.seen - {proc.pid})
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        sys.exit(f"{name} failed ({proc.returncode}): {err[-2000:]}")
    # Our children's CPU, less the observer's (a child of ours too).
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    cpu -= (obs_after.ru_utime - obs_before.ru_utime) + (obs_after.ru_stime - obs_before.ru_stime)
    return {"name": name, "cpu": cpu, "wall": wall, "rss_mib": sampler.peak / 1024.0,
            "pss_mib": sampler.peak_pss / 1024.0,
            "rss_25": sampler.at(0.25, duration), "rss_90": sampler.at(0.9, duration),
            "steady": sampler.steady(settle_for(duration), duration),
            "settled": sampler.settled(settle_for(duration)),
            "breakdown": sampler.breakdown()}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duration", type=int, default=60)
    ap.add_argument("--hz", type=int, default=19)
    ap.add_argument("--build", default=os.path.join(SRC, "build"))
    ap.add_argument("--settle", type=float, default=10,
                    help="seconds before the steady window starts (at most a third of the "
                         "run): on an idle host the first kernel frame, and its symbols' "
                         "first read, may come well after start-up")
    ap.add_argument("--quiet", action="store_true",
                    help="record an idle host (no load): what a quiet second costs")
    ap.add_argument("--execs", type=float, default=0,
                    help="also start this many short programs (/bin/true) a second")
    ap.add_argument("--short", type=int, default=10,
                    help="also run each tool this many seconds: the difference is the steady-state "
                         "cost, without start-up (0: do not)")
    a = ap.parse_args()
    global SETTLE
    SETTLE = a.settle
    if os.geteuid() != 0:
        sys.exit("bench/overhead: run as root (both tools record every CPU)")
    # Orphaned helpers of a tool become this script's children, to be waited for and counted.
    PR_SET_CHILD_SUBREAPER = 36
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0):
        sys.exit("bench/overhead: prctl(PR_SET_CHILD_SUBREAPER) failed")
    ember = os.path.join(a.build, "ember")
    perf = shutil.which("perf")
    if not os.path.exists(ember) or not perf:
        sys.exit("bench/overhead: needs build/ember and perf (apt-get install linux-perf)")
    wd = tempfile.mkdtemp(prefix="ember-bench-")
    split, observe = os.path.join(wd, "split"), os.path.join(wd, "observe")
    subprocess.run(["gcc", "-O2", "-Wall", "-o", observe, os.path.join(HERE, "observe.c")],
                   check=True)
    subprocess.run(["gcc", "-O2", "-g", "-fno-omit-frame-pointer", "-pthread", "-o", split,
                    os.path.join(SRC, "tests", "workloads", "split.c")], check=True)
    ncpu = os.cpu_count() or 1
    span = str(2 * (a.duration + 30) + 30)
    load = [] if a.quiet else [
        subprocess.Popen([split, span, str(ncpu)], stdout=subprocess.DEVNULL),
        subprocess.Popen(["dd", "if=/dev/zero", "of=/dev/null", "bs=512"],
                         stderr=subprocess.DEVNULL)]
    if a.execs > 0:  # one process that starts the others: no shell's own exec between them
        load.append(subprocess.Popen([sys.executable, "-c",
                                      "import subprocess, sys, time\n"
                                      "while True:\n"
                                      "    t = time.monotonic()\n"
                                      "    subprocess.run(['/bin/true'])\n"
                                      "    time.sleep(max(0, 1 / float(sys.argv[1]) - (time.monotonic() - t)))\n",
                                      str(a.execs)]))
    # The eBPF programs' run time and count, for the breakdown (restored after).
    with open("/proc/sys/kernel/bpf_stats_enabled") as f:
        bpf_stats = f.read().strip()
    with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
        f.write("1")
    try:
        time.sleep(2)
        cmds = [
            ("ember", lambda d: [ember, "record", "-d", str(d), "-F", str(a.hz), "--no-progress",
                                 "-o", os.path.join(wd, "p.pb.gz"), "-o", os.path.join(wd, "p.folded")]),
            ("perf record -g", lambda d: [perf, "record", "-g", "-a", "-F", str(a.hz), "-o",
                                          os.path.join(wd, "perf.data"), "--", "sleep", str(d)]),
        ]
        runs = [measure(name, cmd(a.duration), a.duration, observe, wd) for name, cmd in cmds]
        # perf record leaves its stacks unnamed: perf script names them (functions from
        # the symbol tables, no inline frames or lines), on the same host, later.
        script_cpu = cpu_of([perf, "script", "-i", os.path.join(wd, "perf.data")])
        shorts = ([measure(name, cmd(a.short), a.short, observe, wd) for name, cmd in cmds]
                  if a.short else [])
    finally:
        for p in load:
            p.kill()
            p.wait()
        with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
            f.write(bpf_stats)
    print(f"bench/overhead: {a.duration} s, {a.hz} Hz, " +
          ("an idle host" if a.quiet else f"every CPU ({ncpu}) busy") + ", whole system" +
          (f", {a.execs:g} execs of /bin/true a second" if a.execs > 0 else ""))
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
    print(f"(steady %: the tools' CPU from {settle_for(a.duration):.0f} s in to a second before "
          "the end, read from /proc every second: start-up and the final write left out)")
    if script_cpu is not None:
        print(f"perf record -g, then perf script to name its stacks: {p['cpu'] + script_cpu:.3f} "
              f"CPU s (perf script {script_cpu:.3f}): ember/that {e['cpu'] / (p['cpu'] + script_cpu):.2f}x"
              " (ember names with inline frames and lines, perf script by function only)")
    print(f"\nwhere the time goes, steady window ({settle_for(a.duration):.0f} s in to a "
          "second before the end):")
    for r in runs:
        per, bpf = r["breakdown"]
        print(f"{r['name']}:")
        for name, (u, sy, on, cs, rw) in sorted(per.items()):
            print(f"  {name:<18} CPU {on:6.3f}% of a core (user {u:.3f}%, system {sy:.3f}% in "
                  f"ticks)  {cs:6.1f} context switches/s  {rw:7.1f} reads and writes/s")
        for name, (n, ns, pct) in sorted(bpf.items()):
            print(f"  eBPF {name:<22} {n / (a.duration - 1 - settle_for(a.duration)):8.1f} "
                  f"runs/s  {ns / 1000:7.2f} us per run  {pct:6.3f}% of a core")
    print("(eBPF time is charged to the interrupted processes, not to the tool; perf's own "
          "in-kernel stack walk is not counted)")
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
        # The same difference without start-up's noise: each run's CPU from its settle point
        # to its exit. What is left is a second of recording, with the work a tool defers to
        # its end (perf record reads its whole file for build ids as it exits) counted.
        print("\na second of recording, deferred work included (CPU from the settle point to the "
              "exit, long run minus short run):")
        for r, sh in zip(runs, shorts):
            if not r["settled"] or not sh["settled"]:
                continue
            (tl, cl), (ts, cs) = r["settled"], sh["settled"]
            after_l, after_s = r["cpu"] - cl, sh["cpu"] - cs
            secs = (r["wall"] - tl) - (sh["wall"] - ts)
            r["per_second"] = 100 * (after_l - after_s) / secs if secs > 0 else None
            print(f"{r['name']:<16} start-up {cl:.3f} CPU s ({tl:.1f} s in); after it {after_l:.3f} "
                  f"and {after_s:.3f} CPU s over {r['wall'] - tl:.1f} and {sh['wall'] - ts:.1f} s: "
                  f"{r['per_second']:.3f}% of a core")
        if e.get("per_second") and p.get("per_second"):
            print(f"ratio ember/perf: {e['per_second'] / p['per_second']:.2f}x")
    shutil.rmtree(wd, ignore_errors=True)


if __name__ == "__main__":
    main()
