#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bench/soak: ember's memory while processes come and go.

A churn of short-lived processes (the life of a CI builder or a busy node):
at least ten new processes a second, from 64 distinct short C programs (built
here, each its own code, build id and options: -O0..-O2, with and without
frame pointers, debug info, libm, threads, static), plus `python3 -c` and
`sh -c`. Under that churn it runs, for --duration seconds:

  daemons  ember-collector + ember-symbolizer (--interval 30s, -F 49), and
  record   `ember record -F 49 -d DURATION`

and samples every 10 s the resident memory (VmRSS) of the symbolizer and of
the collector, the collector's BPF map memory (the kernel's memlock figure of
each map its process holds, /proc/PID/fdinfo), and the symbolizer's own split of its memory by
owner (the "memory:" line it logs after every interval; in record mode the
last one, logged at the end); the symbolizer's resident size is read every
0.5 s as well. It prints the curve (every 10 s), its start, end, median and
peak in the 10 s rows and in the 0.5 s samples, medians and floors by third
(the symbolizer, the collector, the BPF maps, and each BPF map with the
entries the ones whose memory changed hold at the end, from bpftool), and
the growth over the second half of the run in MiB per hour: the raw
least-squares slope of the 10 s rows, and the slopes of the floor and of
the median of each interval (--interval seconds of 0.5 s samples) with
their standard errors. The symbolizer's size swings 15-20 MiB within each
interval (files read, the profile built, then written and freed), so the
raw slope over 15 minutes says mostly where the rows fell in that swing;
one floor and one median per interval do not depend on it, and a leak lifts
both.

--check (the CI version: 3 minutes and 5 s intervals by default) fails when the
symbolizer's median resident size after the first third exceeds --max-mib
(default 72: the 64 MiB budget with a margin), when its peak exceeds
--max-peak-mib (96), when its floor (the least size measured) grows by more
than --max-growth-mib from the middle to the last third of the run, when the
collector's memory (by more than 2 MiB) or its BPF map memory (by more than
--max-growth-mib) grows, or when the heap the symbolizer's steady owners hold
(STEADY_OWNERS: its counting allocator's exact figures in each interval's
profile) grows by more than --max-leak-mib-per-hour (5) after the first third.
The resident size swings too much for a short run to see a leak of 10 MiB an
hour (its floors' slope in one 7-minute run: -48 +- 17 MiB/hour); the steady
heap shows one as a line (--leak-mib-per-hour 10 makes the symbolizer leak
that much, to see it fail).

Usage: sudo bench/soak/run.py [--mode daemons|record] [--duration 1800] [--rate 12]
                              [--check] [--build build] [--keep-logs DIR]
"""
import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "tests", "integration"))
from emberlib import collector_argv, symbolizer_argv  # noqa: E402  (the daemons' command lines)

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.environ.get("EMBER_SOURCE_DIR", os.path.dirname(os.path.dirname(HERE)))
BUILD = os.environ.get("EMBER_BUILD_DIR", os.path.join(SRC, "build"))
SKIP = 77
NOBODY = 65534

PROGRAM = r"""
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile uint64_t sink;

__attribute__((noinline)) static uint64_t churn%(n)d_leaf(uint64_t x)
{
	for (int i = 0; i < %(inner)d; i++)
		x = x * 6364136223846793005ull + %(n)dull;
	return x;
}

__attribute__((noinline)) uint64_t churn%(n)d_middle(uint64_t x)
{
	uint64_t y = churn%(n)d_leaf(x) ^ %(salt)dull;
#if %(libm)d
	y += (uint64_t)sqrt((double)(y & 0xffff));
#endif
	return y;
}

static double cpu_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void *spin(void *arg)
{
	double until = *(double *)arg;
	uint64_t x = %(n)d;
	while (cpu_ms() < until)
		x = churn%(n)d_middle(x);
	sink = x;
	return NULL;
}

int main(int argc, char **argv)
{
	double until = argc > 1 ? atof(argv[1]) : 30;
#if %(threads)d
	pthread_t t;
	pthread_create(&t, NULL, spin, &until);
	pthread_join(t, NULL);
#else
	spin(&until);
#endif
	return 0;
}
"""

OPTIONS = [
    ["-O2", "-g"],
    ["-O0", "-g"],
    ["-O1"],
    ["-O2", "-fno-omit-frame-pointer"],
    ["-O2", "-g", "-fomit-frame-pointer"],
    ["-Os", "-g1"],
    ["-O2", "-gdwarf-4"],
    ["-O2", "-s"],
]


def log(*a):
    print(*a, flush=True)


def build_programs(wd, n):
    """n distinct short programs: (path, CPU ms each run)."""
    progs, procs = [], []
    for i in range(n):
        src = os.path.join(wd, f"churn{i}.c")
        out = os.path.join(wd, f"churn{i}")
        libm, threads = i % 3 == 0, i % 4 == 1
        with open(src, "w") as f:
            f.write(PROGRAM % {"n": i, "inner": 50 + 7 * i, "salt": i * 7919, "libm": int(libm),
                               "threads": int(threads)})
        cmd = ["gcc", *OPTIONS[i % len(OPTIONS)], "-o", out, src, "-pthread"]
        if libm:
            cmd.append("-lm")
        if i % 16 == 7:
            cmd.append("-static")
        procs.append(subprocess.Popen(cmd))
        progs.append((out, 15 + (i * 13) % 40))
        if len(procs) >= 4:
            for p in procs:
                if p.wait():
                    sys.exit("bench/soak: gcc failed")
            procs = []
    for p in procs:
        if p.wait():
            sys.exit("bench/soak: gcc failed")
    return progs


class Churn(threading.Thread):
    """Starts `rate` processes a second: the C programs in turn, every 8th python3, every 8th sh."""

    def __init__(self, progs, rate):
        super().__init__(daemon=True)
        self.progs, self.rate, self.stop, self.started = progs, rate, False, 0
        self.by_kind = {"c": 0, "python3": 0, "sh": 0}

    def command(self, k):
        if k % 8 == 3:
            self.by_kind["python3"] += 1
            return ["python3", "-c", "sum(i * i for i in range(%d))" % (100000 + k % 50000)]
        if k % 8 == 6:
            self.by_kind["sh"] += 1
            return ["sh", "-c", "i=0; while [ $i -lt %d ]; do i=$((i+1)); done" % (2000 + k % 1000)]
        self.by_kind["c"] += 1
        path, ms = self.progs[k % len(self.progs)]
        return [path, str(ms)]

    def run(self):
        live, k, t0 = [], 0, time.monotonic()
        while not self.stop:
            live = [p for p in live if p.poll() is None]
            if len(live) < 64:
                live.append(subprocess.Popen(self.command(k), stdout=subprocess.DEVNULL,
                                             stderr=subprocess.DEVNULL))
                self.started += 1
            k += 1
            delay = t0 + k / self.rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
        for p in live:
            p.wait()


def status_kib(pid, field="VmRSS"):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


MAP_NAMES = {}


def map_name(map_id):
    """A BPF map's name (bpftool, once per map; the id when bpftool is missing)."""
    if map_id not in MAP_NAMES:
        name = f"map {map_id}"
        try:
            out = subprocess.run(["bpftool", "map", "show", "id", map_id, "-j"],
                                 capture_output=True, text=True, timeout=10).stdout
            name = json.loads(out).get("name") or name
        except (OSError, ValueError, subprocess.TimeoutExpired):
            pass
        MAP_NAMES[map_id] = name
    return MAP_NAMES[map_id]


def bpf_maps(pid):
    """The kernel's memlock figure of each BPF map the process holds (/proc/PID/fdinfo;
    since Linux 6.4 what the map really uses, elements of growing hash maps included),
    as {map id: (name, KiB, max_entries)}."""
    maps = {}
    try:
        fds = os.listdir(f"/proc/{pid}/fdinfo")
    except OSError:
        return maps
    for fd in fds:
        try:
            with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                info = dict(line.split(":", 1) for line in f if ":" in line)
        except OSError:
            continue
        if "map_id" in info and "memlock" in info:
            map_id = info["map_id"].strip()
            if map_id not in maps:
                maps[map_id] = (map_name(map_id), int(info["memlock"].split()[0]) // 1024,
                                int(info.get("max_entries", "0").split()[0] or 0))
    return maps


def map_entries(map_id, timeout=60):
    """Entries a BPF map holds now (bpftool map dump; None when it cannot tell)."""
    try:
        out = subprocess.run(["bpftool", "map", "dump", "id", map_id, "-j"],
                             capture_output=True, text=True, timeout=timeout).stdout
        return len(json.loads(out))
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return None


MEMORY_LINE = re.compile(r"memory: (.*)$")


def last_memory_line(path):
    """The symbolizer's last "memory: owner N MiB, ..." log line, as {owner: MiB}."""
    try:
        with open(path, errors="replace") as f:
            lines = [m.group(1) for m in map(MEMORY_LINE.search, f) if m]
    except OSError:
        return {}
    if not lines:
        return {}
    split = {}
    head, _, owners = lines[-1].partition(":")
    m = re.match(r"rss ([\d.]+) MiB", head)
    if m:
        split["rss"] = float(m.group(1))
    m = re.search(r"peak ([\d.]+) MiB", head)
    if m:
        split["own peak"] = float(m.group(1))  # its own check, every 50 ms
    for part in re.split(r"[,;]", owners):
        m = re.match(r"\s*([\w .-]+?)\s+([\d.]+)\s*MiB", part)
        if m:
            split[m.group(1)] = float(m.group(2))
    return split


def profile_split(build, path):
    """The memory.* statistics `ember record` wrote into its profile, as {owner: MiB}
    (its log keeps the "memory:" line at debug level)."""
    try:
        out = subprocess.run([os.path.join(build, "ember"), "report", "--stats", path],
                             capture_output=True, text=True, timeout=120).stdout
    except (OSError, subprocess.TimeoutExpired):
        return {}
    split = {}
    for line in out.splitlines():
        m = re.match(r"memory\.(\w+)\s+(\d+)$", line.strip())
        if m and m.group(1) not in ("budget", "releases", "budget_exceeded",
                                    "shed_periods", "heap_in_use", "over_between_checks"):
            name = {"collector_rss": "collector", "collector_bpf_maps": "BPF maps",
                    "peak_rss": "own peak"}.get(
                m.group(1), m.group(1))
            split[name] = int(m.group(2)) / 1048576
    return split


PROFILE_STATS = {}  # path -> (when it was written, {name: value})
# The symbolizer's heap owners whose size does not follow what the host runs: no cache, no
# table of live processes. Its counting allocator charges every block to the owner current
# when it was allocated, so their sum grows only by what is never freed (a leak there).
STEADY_OWNERS = ("other", "kallsyms", "heap_unowned")


def read_profile_stats(build, out_dir):
    """Reads the statistics (`ember report --stats`) of every interval profile in out_dir not
    read yet, once each."""
    try:
        files = sorted(f for f in os.listdir(out_dir) if f.endswith(".pb.gz"))
    except OSError:
        return
    for f in files:
        path = os.path.join(out_dir, f)
        if path in PROFILE_STATS:
            continue
        stats = {}
        try:
            when = os.stat(path).st_mtime
            out = subprocess.run([os.path.join(build, "ember"), "report", "--stats", path],
                                 capture_output=True, text=True, timeout=60).stdout
        except (OSError, subprocess.TimeoutExpired):
            continue
        for line in out.splitlines():
            f2 = line.split()
            if len(f2) == 2 and f2[1].isdigit():
                stats[f2[0]] = int(f2[1])
        PROFILE_STATS[path] = (when, stats)


def newest_profile_stats(build, out_dir):
    """Statistics of the newest interval profile the daemon wrote: {name: value}."""
    read_profile_stats(build, out_dir)
    newest = [PROFILE_STATS[p] for p in sorted(PROFILE_STATS) if p.startswith(out_dir)]
    return newest[-1][1] if newest else {}


def steady_heap(since_wall):
    """[(seconds since since_wall, MiB)] of the steady owners' sum in each interval profile
    written after since_wall."""
    return sorted((when - since_wall,
                   sum(stats.get(f"memory.{o}", 0) for o in STEADY_OWNERS) / 1048576)
                  for when, stats in PROFILE_STATS.values()
                  if when > since_wall and "memory.other" in stats)


def child_pid(parent, name):
    try:
        out = subprocess.run(["pgrep", "-P", str(parent), "-f", name], capture_output=True,
                             text=True).stdout.split()
        return int(out[0]) if out else 0
    except (OSError, ValueError):
        return 0


def start_daemons(wd, a, log_dir):
    run_dir, out = os.path.join(wd, "run"), os.path.join(wd, "out")
    os.makedirs(run_dir)
    os.makedirs(out)
    os.chown(out, NOBODY, NOBODY)
    sock = os.path.join(run_dir, "collector.sock")
    col_log = open(os.path.join(log_dir, "collector.log"), "w")
    col = subprocess.Popen(collector_argv(a.build, "--user", "nobody", "--runtime-dir", run_dir,
                                          "-F", str(a.hz)),
                           stdout=col_log, stderr=subprocess.STDOUT)
    for _ in range(200):
        if os.path.exists(sock):
            break
        if col.poll() is not None:
            sys.exit("bench/soak: ember-collector failed: see " + col_log.name)
        time.sleep(0.1)
    sym_log = open(os.path.join(log_dir, "symbolizer.log"), "w")
    env = dict(os.environ)
    if a.leak_mib_per_hour:
        # A leak of a known rate (leak.c), to see --check catch it.
        lib = os.path.join(wd, "leak.so")
        subprocess.run(["gcc", "-O2", "-shared", "-fPIC", "-o", lib, os.path.join(HERE, "leak.c"), "-ldl"],
                       check=True)
        env.update(LD_PRELOAD=lib, EMBER_SOAK_LEAK_BYTES_PER_S=str(a.leak_mib_per_hour * 1048576 / 3600))
    sym = subprocess.Popen(symbolizer_argv(a.build, "--connect", sock, "--output-dir", out, "--interval",
                                           f"{a.interval}s", "--format", "folded", "--format", "pprof",
                                           "--keep", "0" if a.keep_intervals else "4", "--user", "nobody",
                                           *a.symbolizer_arg),
                           stdout=sym_log, stderr=subprocess.STDOUT, env=env)
    return col, sym, sym_log.name


def start_record(wd, a, log_dir):
    rec_log = open(os.path.join(log_dir, "record.log"), "w")
    rec = subprocess.Popen([os.path.join(a.build, "ember"), "record", "-F", str(a.hz), "-d",
                            str(a.duration), "--no-progress", "--log-level", "info",
                            "-o", os.path.join(wd, "soak.pb.gz"), *a.symbolizer_arg],
                           stdout=rec_log, stderr=subprocess.STDOUT)
    sym = 0
    for _ in range(100):
        sym = child_pid(rec.pid, "ember-symbolizer")
        if sym:
            break
        time.sleep(0.1)
    if not sym:
        sys.exit("bench/soak: ember record started no symbolizer: see " + rec_log.name)
    return rec, sym, rec_log.name


def slope_mib_per_hour(points):
    """Least-squares slope of (seconds, MiB) points, in MiB per hour."""
    return slope_and_error(points)[0]


def slope_and_error(points):
    """Least-squares slope of (seconds, MiB) points and its standard error, in MiB per hour."""
    n = len(points)
    if n < 2:
        return 0.0, 0.0
    mx = sum(t for t, _ in points) / n
    my = sum(v for _, v in points) / n
    var = sum((t - mx) ** 2 for t, _ in points)
    if not var:
        return 0.0, 0.0
    b = sum((t - mx) * (v - my) for t, v in points) / var
    res = sum((v - my - b * (t - mx)) ** 2 for t, v in points)
    se = (res / (n - 2) / var) ** 0.5 if n > 2 else 0.0
    return 3600.0 * b, 3600.0 * se


def median_of(values):
    v = sorted(values)
    return v[len(v) // 2] if v else 0.0


def by_third(points):
    """(seconds, value) points cut in three by time."""
    if not points:
        return [[], [], []]
    end = points[-1][0]
    return [[v for t, v in points if k * end / 3 <= t < (k + 1) * end / 3 or (k == 2 and t == end)]
            for k in range(3)]


def windows(points, width, start):
    """From start on, the points of each whole window of `width` seconds:
    [(middle of the window, [values])]."""
    out, end = [], points[-1][0] if points else 0
    t = start
    while t + width <= end:
        vals = [v for u, v in points if t <= u < t + width]
        if vals:
            out.append((t + width / 2, vals))
        t += width
    return out


def count_growing_maps(rows):
    """Entries held now by each BPF map whose memory changed over the run (bpftool), of those
    under 4 MiB."""
    seen = {}
    for r in rows:
        for map_id, (name, kib, _) in r.get("maps", {}).items():
            lo, hi = seen.get(map_id, (kib, kib))
            seen[map_id] = (min(lo, kib), max(hi, kib))
    # A dump prints every value: not for the large ones (unwind_blocks: 1 KiB a value).
    return {map_id: map_entries(map_id) for map_id, (lo, hi) in seen.items()
            if hi - lo >= 64 and hi < 4096}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mode", choices=["daemons", "record"], default="daemons")
    ap.add_argument("--duration", type=int, default=0, help="seconds (default 1800; 180 with --check)")
    ap.add_argument("--rate", type=float, default=12.0, help="new processes a second")
    ap.add_argument("--programs", type=int, default=64)
    ap.add_argument("--hz", type=int, default=49)
    ap.add_argument("--interval", type=int, default=0, help="seconds (default 30; 5 with --check)")
    ap.add_argument("--every", type=int, default=10, help="seconds between measurements")
    ap.add_argument("--build", default=BUILD)
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--max-mib", type=float, default=72.0,
                    help="--check: the symbolizer's median resident size after the first third "
                    "(the 64 MiB budget and a margin)")
    ap.add_argument("--max-peak-mib", type=float, default=96.0,
                    help="--check: its peak (one and a half times the budget: files are read only "
                    "if they fit the room left; 59.6-63.1 MiB in 3-4 minute runs at load 4-13, "
                    "a noisy CI host needs the margin)")
    ap.add_argument("--max-growth-mib", type=float, default=6.0)
    ap.add_argument("--max-leak-mib-per-hour", type=float, default=5.0,
                    help="--check: the growth of the symbolizer's heap charged to its steady "
                    "owners (no cache, no table of live processes), least squares over every "
                    "interval after the first third (a leak of 10 MiB/h fails it)")
    ap.add_argument("--keep-logs", default="")
    ap.add_argument("--keep-intervals", action="store_true",
                    help="daemons: keep every interval the symbolizer writes (in the work directory)")
    ap.add_argument("--leak-mib-per-hour", type=float, default=0,
                    help="daemons: make the symbolizer leak this much (leak.c, preloaded): --check "
                    "must fail with 10")
    ap.add_argument("--symbolizer-arg", action="append", default=[],
                    help="passed to ember-symbolizer (daemons) or ember record")
    a = ap.parse_args()
    a.duration = a.duration or (180 if a.check else 1800)
    a.interval = a.interval or (5 if a.check else 30)
    # Ctrl-C or SIGTERM (a CI timeout, a long run stopped by hand) ends the run early: the
    # churn and the daemons stop and what was measured is reported (--check fails then).
    stopped = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda s, _f: stopped.append(signal.Signals(s).name))
    if os.geteuid() != 0 or not os.path.exists("/sys/kernel/btf/vmlinux"):
        msg = "bench/soak: needs root and a kernel with BTF"
        if os.environ.get("CI") == "true":
            sys.exit(msg)
        print("SKIP: " + msg)
        sys.exit(SKIP)
    for tool in ("gcc", "python3"):
        if not shutil.which(tool):
            sys.exit(f"bench/soak: needs {tool}")
    wd = tempfile.mkdtemp(prefix="ember-soak-")
    os.chmod(wd, 0o755)
    log_dir = a.keep_logs or wd
    os.makedirs(log_dir, exist_ok=True)
    progs = build_programs(wd, a.programs)
    churn = Churn(progs, a.rate)
    rows, peak, samples = [], {"sym": 0, "col": 0}, []
    daemon = sym = None
    try:
        if a.mode == "daemons":
            col, daemon, sym_log = start_daemons(wd, a, log_dir)
            col_pid = col.pid
            time.sleep(2)
            sym_pid = daemon.pid
        else:
            col, sym_pid, sym_log = start_record(wd, a, log_dir)
            col_pid = col.pid
        churn.start()
        t0 = time.monotonic()
        a.t0_wall = time.time()
        next_at = t0
        while time.monotonic() - t0 < a.duration and not stopped:
            # `ember record -d N` counts its N seconds from its own start, before the
            # churn's: it may end a moment before this loop does.
            if a.mode == "record" and col.poll() == 0 and time.monotonic() - t0 > a.duration - 15:
                break
            if col.poll() is not None or (daemon and daemon.poll() is not None):
                sys.exit(f"bench/soak: a daemon exited early: see the logs in {log_dir}")
            sym_rss, col_rss = status_kib(sym_pid), status_kib(col_pid)
            peak["sym"], peak["col"] = max(peak["sym"], sym_rss), max(peak["col"], col_rss)
            if sym_rss:
                samples.append((time.monotonic() - t0, sym_rss / 1024))
            if time.monotonic() >= next_at and sym_rss:  # 0: the symbolizer has ended
                maps = bpf_maps(col_pid)
                rows.append({"t": time.monotonic() - t0, "sym": sym_rss / 1024, "col": col_rss / 1024,
                             "sym_peak": peak["sym"] / 1024,
                             "bpf": sum(kib for _, kib, _ in maps.values()) / 1024,
                             "maps": maps, "split": last_memory_line(sym_log),
                             "stats": newest_profile_stats(a.build, os.path.join(wd, "out"))
                             if a.mode == "daemons" else {},
                             "procs": churn.started})
                r = rows[-1]
                log(f"{r['t']:6.0f} s  symbolizer {r['sym']:6.1f} MiB (peak {r['sym_peak']:5.1f})  "
                    f"collector {r['col']:5.1f} MiB  "
                    f"BPF maps {r['bpf']:6.1f} MiB  processes started {r['procs']}")
                next_at += a.every
            time.sleep(0.5)
        churn.stop = True
        churn.join()
        entries = count_growing_maps(rows) if col.poll() is None else {}
        if a.mode == "record":
            if stopped and col.poll() is None:
                col.send_signal(signal.SIGINT)  # writes the profile, as Ctrl-C does
            rc = col.wait(timeout=120)
            if rc:
                sys.exit(f"bench/soak: ember record exited with {rc}: see {sym_log}")
        rows.append({"t": time.monotonic() - t0, "sym": status_kib(sym_pid) / 1024 if daemon else 0,
                     "col": 0, "sym_peak": peak["sym"] / 1024, "bpf": 0,
                     "split": last_memory_line(sym_log) if daemon else
                     profile_split(a.build, os.path.join(wd, "soak.pb.gz")),
                     "procs": churn.started, "final": True, "entries": entries})
    finally:
        churn.stop = True
        for p in (daemon, col if a.mode == "daemons" else None):
            if p and p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
    if stopped:
        log(f"bench/soak: {stopped[0]}: stopped after {rows[-1]['t'] if rows else 0:.0f} of {a.duration} s")
    report(a, rows, samples, peak, churn, log_dir, stopped)
    if not a.keep_logs:
        shutil.rmtree(wd, ignore_errors=True)


def report(a, rows, samples, peak, churn, log_dir, stopped):
    live = [r for r in rows if not r.get("final")]
    elapsed = live[-1]["t"] if live else 0
    log(f"\nbench/soak: {a.mode}, {a.duration} s, {a.hz} Hz, {churn.started} processes started "
        f"({churn.started / max(elapsed, 1):.1f}/s: {churn.by_kind['c']} of {a.programs} C programs, "
        f"{churn.by_kind['python3']} python3 -c, {churn.by_kind['sh']} sh -c)")
    owners = []
    for r in rows:
        for k in r["split"]:
            if k not in owners:
                owners.append(k)
    log(f"{'t (s)':>6} {'sym RSS':>8} {'col RSS':>8} {'BPF maps':>9}  " +
        " ".join(f"{o[:10]:>10}" for o in owners))
    for r in live:
        log(f"{r['t']:6.0f} {r['sym']:8.1f} {r['col']:8.1f} {r['bpf']:9.1f}  " +
            " ".join(f"{r['split'].get(o, 0):10.1f}" for o in owners))
    if rows and rows[-1].get("final") and rows[-1]["split"]:
        log("final split (MiB): " + ", ".join(f"{k} {v:.1f}" for k, v in rows[-1]["split"].items()))

    def curve(name, points):
        if not points:
            return
        vals = [v for _, v in points]
        thirds = by_third(points)
        log(f"{name}: start {vals[0]:.1f}, end {vals[-1]:.1f}, median {median_of(vals):.1f}, "
            f"peak {max(vals):.1f} MiB; by third: medians "
            + "/".join(f"{median_of(t):.1f}" for t in thirds) + ", floors "
            + "/".join(f"{min(t) if t else 0:.1f}" for t in thirds))

    log("\nthe curve (MiB):")
    curve("symbolizer, 10 s rows", [(r["t"], r["sym"]) for r in live])
    curve("symbolizer, 0.5 s samples", samples)
    over = sum(1 for _, v in samples if v > 64)
    log(f"  {sum(1 for r in live if r['sym'] > 64)} of {len(live)} rows and {over} of "
        f"{len(samples)} samples over 64 MiB")
    curve("collector, 10 s rows", [(r["t"], r["col"]) for r in live])
    curve("BPF maps, 10 s rows", [(r["t"], r["bpf"]) for r in live])

    # Growth over the second half. The raw slope of the 10 s rows is printed, but the
    # symbolizer's size swings 15-20 MiB within each interval (files read, the profile
    # built, then written and freed), so over 15 minutes where the rows fall in that swing
    # moves it by tens of MiB an hour either way. The floor of each interval (the least
    # of its 0.5 s samples: what stays after the write) and its median are one figure per
    # interval, independent of the phase: their slopes, with their standard errors, say
    # whether anything grows.
    half_start = elapsed / 2
    half = [(r["t"], r["sym"]) for r in live if r["t"] >= half_start]
    col_half = [(r["t"], r["col"]) for r in live if r["t"] >= half_start]
    bpf_half = [(r["t"], r["bpf"]) for r in live if r["t"] >= half_start]
    win = windows(samples, a.interval, half_start)
    floors = slope_and_error([(t, min(v)) for t, v in win])
    medians = slope_and_error([(t, median_of(v)) for t, v in win])
    growth = slope_mib_per_hour(half)
    log(f"\ngrowth over the second half (from {half_start:.0f} s), MiB/hour:")
    log(f"  symbolizer: raw slope of the 10 s rows {growth:+.1f}; of the floors of "
        f"{len(win)} {a.interval} s intervals {floors[0]:+.1f} +- {floors[1]:.1f}; of their "
        f"medians {medians[0]:+.1f} +- {medians[1]:.1f} (+- one standard error)")
    log(f"  collector {slope_mib_per_hour(col_half):+.1f}, BPF maps "
        f"{slope_mib_per_hour(bpf_half):+.1f} (raw slopes of the 10 s rows)")
    log("  (the raw slope follows where the rows fall in each interval's 15-20 MiB swing; a "
        "leak lifts every interval's floor and median)")
    # The heap its steady owners hold, exactly (its counting allocator): a leak in them is a
    # line, without the swing of the resident size.
    held = steady_heap(getattr(a, "t0_wall", 0) + elapsed / 3) if a.mode == "daemons" else []
    leak = slope_and_error(held) if len(held) >= 3 else (0.0, 0.0)
    if held:
        log(f"  symbolizer's heap of its steady owners ({', '.join(STEADY_OWNERS)}) in "
            f"{len(held)} intervals after the first third: {held[0][1]:.2f} -> "
            f"{held[-1][1]:.2f} MiB, {leak[0]:+.1f} +- {leak[1]:.1f} MiB/hour")
    log(f"symbolizer: peak {peak['sym'] / 1024:.1f} MiB (0.5 s samples), second half "
        f"{growth:+.1f} MiB/hour raw, {floors[0]:+.1f} MiB/hour by interval floors; collector: "
        f"peak {peak['col'] / 1024:.1f} MiB, second half {slope_mib_per_hour(col_half):+.1f} "
        f"MiB/hour; BPF maps second half {slope_mib_per_hour(bpf_half):+.1f} MiB/hour")

    # Each BPF map by third: which grows, and whether it is filling to its cap.
    names = {}
    for r in live:
        for map_id, (name, _, cap) in r.get("maps", {}).items():
            names[map_id] = (name, cap)
    entries = rows[-1].get("entries", {}) if rows else {}
    if names:
        log("\nBPF maps (memlock, MiB: medians by third, least-most; entries at the end "
            "of the maps whose memory changed):")
        for map_id, (name, cap) in sorted(names.items(), key=lambda m: -max(
                r.get("maps", {}).get(m[0], ("", 0, 0))[1] for r in live)):
            pts = [(r["t"], r["maps"][map_id][1] / 1024) for r in live if map_id in r.get("maps", {})]
            vals = [v for _, v in pts]
            if max(vals) < 0.1:
                continue
            n = entries.get(map_id)
            log(f"  {name:<16} " + "/".join(f"{median_of(t):.2f}" for t in by_third(pts))
                + f"  ({min(vals):.2f}-{max(vals):.2f})"
                + (f"  {n} of {cap} entries" if map_id in entries and n is not None else ""))
        # The unwinder's blocks are the rows of the tables the symbolizer keeps loaded
        # (those of the programs running, and 10 s after): side by side.
        blocks = [(r["t"], r["stats"]["unwind.blocks_live"] * 1024 / 1048576) for r in live
                  if "unwind.blocks_live" in r.get("stats", {})]
        tables = [(r["t"], r["stats"]["unwind.tables_live"]) for r in live
                  if "unwind.tables_live" in r.get("stats", {})]
        if blocks:
            log("  the symbolizer's live tables (last interval's profile), medians by third: "
                + "/".join(f"{median_of(t):.0f}" for t in by_third(tables)) + " tables, "
                + "/".join(f"{median_of(t):.2f}" for t in by_third(blocks))
                + " MiB of 1 KiB blocks")
    if a.mode == "record" and rows[-1]["split"].get("profile") is not None:
        log(f"record: peak {peak['sym'] / 1024:.1f} MiB beside a profile of "
            f"{rows[-1]['split']['profile']:.1f} MiB")
    log(f"logs: {log_dir}")
    if not a.check:
        return
    failures = [f"stopped early ({stopped[0]})"] if stopped else []
    third = max(1, len(live) // 3)
    first, last = live[third:2 * third], live[-third:]

    def floor(rows, key):
        return min(r[key] for r in rows)

    def median(rows, key):
        v = sorted(r[key] for r in rows)
        return v[len(v) // 2] if v else 0.0

    # Medians: parsing a large file lifts the resident size for a moment, which the next
    # check of the budget gives back; what stays is what matters.
    steady = median(live[third:], "sym")
    if steady > a.max_mib:
        failures.append(f"symbolizer {steady:.1f} MiB (median after the first third) > {a.max_mib} MiB")
    if peak["sym"] / 1024 > a.max_peak_mib:
        failures.append(f"symbolizer peak {peak['sym'] / 1024:.1f} MiB > {a.max_peak_mib} MiB")
    if first and last:
        # BPF maps: the tables of programs met for the first time still come in the first
        # minutes; a 3-minute run sees a leak only past that.
        # The symbolizer's floors, not its medians: its size swings 15-20 MiB within each
        # interval (files parsed, then the profile written and freed), so six-sample medians
        # of a 3-minute run differ by that swing alone (7.5 MiB in one CI run whose owners'
        # split stayed flat). A leak lifts the floor the size returns to after each interval.
        for key, name, limit, pick in (("sym", "symbolizer", a.max_growth_mib, floor),
                                       ("col", "collector", 2.0, median),
                                       ("bpf", "BPF maps", a.max_growth_mib, median)):
            grew = pick(last, key) - pick(first, key)
            if grew > limit:
                what = "floor" if pick is floor else "median"
                failures.append(f"{name} grew {grew:.1f} MiB ({what}) from the middle to the last third")
    if a.mode == "daemons":
        if len(held) < 10:
            failures.append(f"only {len(held)} intervals' statistics to measure a leak by")
        elif leak[0] > a.max_leak_mib_per_hour:
            failures.append(f"the symbolizer's steady heap grew {leak[0]:+.1f} MiB/hour "
                            f"(more than {a.max_leak_mib_per_hour})")
    if churn.started < 0.8 * a.rate * elapsed:
        failures.append(f"the churn started only {churn.started} processes")
    for f in failures:
        log("FAIL: " + f)
    if failures:
        sys.exit(1)
    log("PASS")


if __name__ == "__main__":
    main()
