#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bench/unwind: how many stacks each profiler unwinds completely, and at what cost.

Workloads (each single-threaded, so that one criterion fits them all):
  fp      tests/workloads/split.c built with frame pointers
  nofp    tests/workloads/unwind.c built with -O2 -fomit-frame-pointer (a leaf
          reached through libc's qsort)
  deep    the same, each leaf 14 frames further down (-DDEPTH=14): stacks of 20
          to 24 frames that only the CFI can walk
  xz      Debian's xz -9 -T1 compressing data fed through a pipe
  python  Debian's python3 running a CPU loop
  gzip    Debian's gzip -9 compressing data fed through a pipe
Tools, each attached to a fresh instance of the workload for the same time at
the same frequency: ember, `perf record --call-graph fp`, `perf record
--call-graph dwarf`.

A stack is complete when it reaches __libc_start_main (exported by libc, so
every tool can name it: the root of every main-thread stack) and carries no
"[unwind stopped" marker. Cost: CPU seconds of the tool's processes (user +
system, from wait4, descendants included) while recording, plus the CPU of
the post-processing that turns the recording into stacks (`perf script`;
ember's symbolizer works while recording), plus for ember the run time of its
eBPF program (kernel.bpf_stats_enabled). perf's in-kernel work (copying 8 KiB
of stack per sample in dwarf mode) is charged to the workload and not counted.

A second, short run of every pair (--short, 2 s) separates each tool's
start-up cost from its cost per sample, which is what a long profile pays.

--repeat N records each workload with ember alone N times, round-robin, and prints
its eBPF time per sample in each run, the least and the median: on a shared or
virtual machine one run's figure swings by a factor of two or more with what
else the host does to the caches.

Usage: sudo bench/unwind/run.py [--duration 10] [--hz 199] [--short 2] [--build build]
                                [--repeat N]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
FRAME_POINTERS = ["-O2", "-fno-omit-frame-pointer", "-mno-omit-leaf-frame-pointer",
                  "-fno-optimize-sibling-calls"]


def build(name, flags, wd):
    out = os.path.join(wd, name)
    src = os.path.join(SRC, "tests", "workloads", name.split("-")[0] + ".c")
    subprocess.run(["gcc", *flags, "-g", "-pthread", "-o", out, src], check=True)
    return out


def make_data(wd):
    """32 MiB of compressible but not trivial data: system libraries, repeated."""
    path = os.path.join(wd, "data")
    with open(path, "wb") as out:
        size = 0
        for d in ("/usr/lib/x86_64-linux-gnu", "/usr/bin"):
            for name in sorted(os.listdir(d)):
                p = os.path.join(d, name)
                if os.path.isfile(p) and size < (32 << 20):
                    with open(p, "rb") as f:
                        chunk = f.read(1 << 20)
                    out.write(chunk)
                    size += len(chunk)
    return path


class Feeder(threading.Thread):
    """Writes data into a process's stdin until it is told to stop."""

    def __init__(self, proc, data):
        super().__init__(daemon=True)
        self.proc, self.data, self.stop = proc, data, False

    def run(self):
        with open(self.data, "rb") as f:
            blob = f.read()
        try:
            while not self.stop:
                self.proc.stdin.write(blob)
        except (BrokenPipeError, ValueError, OSError):
            pass


def start_workload(kind, bins, data):
    dev = subprocess.DEVNULL
    if kind == "fp":
        return subprocess.Popen([bins["fp"], "1000"], stdout=dev), None
    if kind in ("nofp", "deep"):
        return subprocess.Popen([bins[kind], "1000", "1"], stdout=dev), None
    if kind == "python":
        return subprocess.Popen(["/usr/bin/python3", "-c",
                                 "while True: sum(i * i for i in range(10000))"]), None
    cmd = {"xz": ["xz", "-9", "-T1", "-c"], "gzip": ["gzip", "-9", "-c"]}[kind]
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=dev)
    feeder = Feeder(proc, data)
    feeder.start()
    return proc, feeder


def comm_of(kind):
    return {"fp": "split", "nofp": "unwind", "deep": "unwind-deep", "python": "python3",
            "xz": "xz", "gzip": "gzip"}[kind]


def wait_cpu(proc):
    """Waits for proc; returns its CPU seconds (user + system), reaped descendants included."""
    _, _, ru = os.wait4(proc.pid, 0)
    proc.returncode = 0
    return ru.ru_utime + ru.ru_stime


def ember_programs():
    """{id: run_time_ns} of every loaded ember_sample program."""
    r = subprocess.run(["bpftool", "--json", "prog", "show"], capture_output=True, text=True)
    try:
        progs = json.loads(r.stdout)
    except ValueError:
        return {}
    return {p["id"]: p.get("run_time_ns", 0) for p in progs if p.get("name") == "ember_sample"}


def run_ember(args, pid, wd, tag, duration):
    folded = os.path.join(wd, f"{tag}.folded")
    # Other ember instances on the machine are not ours: count only the new program.
    before = set(ember_programs())
    proc = subprocess.Popen([os.path.join(args.build, "ember"), "record", "-d", str(duration),
                             "-F", str(args.hz), "-p", str(pid), "-o", folded],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    bpf, cpu = 0.0, None
    while cpu is None:
        ours = {i: t for i, t in ember_programs().items() if i not in before}
        bpf = max(bpf, sum(ours.values()) / 1e9)  # read while the program is still loaded
        time.sleep(0.1)
        done, _, ru = os.wait4(proc.pid, os.WNOHANG)
        if done:
            cpu = ru.ru_utime + ru.ru_stime
    proc.returncode = 0
    stacks = []
    with open(folded) as f:
        for line in f:
            frames, _, n = line.rstrip("\n").rpartition(" ")
            stacks.append((frames.split(";"), int(n)))
    return stacks, cpu, 0.0, bpf


def run_perf(args, pid, wd, tag, mode, duration):
    data = os.path.join(wd, f"{tag}.data")
    proc = subprocess.Popen(["perf", "record", "-q", "-F", str(args.hz), "--call-graph", mode,
                             "-p", str(pid), "-o", data, "--", "sleep", str(duration)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    cpu = wait_cpu(proc)
    script = subprocess.Popen(["perf", "script", "-i", data, "-F", "comm,ip,sym"],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    text = script.stdout.read()
    post = wait_cpu(script)
    stacks, cur = [], None
    for line in text.splitlines():
        if not line.strip():
            if cur is not None:
                stacks.append((cur, 1))
            cur = None
        elif not line[0].isspace():
            cur = [line.split()[0]]
        elif cur is not None:
            parts = line.split(None, 1)
            cur.insert(1, parts[1] if len(parts) > 1 else parts[0])
    if cur is not None:
        stacks.append((cur, 1))
    return stacks, cpu, post, 0.0


def completeness(stacks, comm):
    total = good = 0
    for frames, n in stacks:
        if frames[0] != comm[:15]:
            continue
        total += n
        if any("__libc_start_main" in f for f in frames) and \
                not any(f.startswith("[unwind stopped") for f in frames):
            good += n
    return good, total


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--hz", type=int, default=199)
    ap.add_argument("--build", default=os.path.join(SRC, "build"))
    ap.add_argument("--workloads", default="fp,nofp,deep,xz,python,gzip")
    ap.add_argument("--repeat", type=int, default=0,
                    help="instead: record each workload with ember this many times and print "
                         "its eBPF time per sample in each run, the least and the median (the "
                         "least is the least disturbed by the rest of the host)")
    ap.add_argument("--short", type=int, default=2,
                    help="also run each for this many seconds to separate start-up from the "
                         "cost per sample (0: do not)")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench/unwind: run as root (eBPF, perf)")
    wd = tempfile.mkdtemp(prefix="ember-bench-unwind-")
    bins = {"fp": build("split", FRAME_POINTERS, wd),
            "nofp": build("unwind", ["-O2", "-fomit-frame-pointer"], wd),
            "deep": build("unwind-deep", ["-O2", "-fomit-frame-pointer", "-DDEPTH=14"], wd)}
    data = make_data(wd)
    subprocess.run(["sysctl", "-q", "kernel.bpf_stats_enabled=1"], check=False)
    tools = [("ember", None), ("perf-fp", "fp"), ("perf-dwarf", "dwarf")]
    results, short = {}, {}
    if args.repeat:
        try:
            per = {kind: [] for kind in args.workloads.split(",")}
            for i in range(args.repeat):  # round-robin: a disturbance hits every workload alike
                for kind in per:
                    _, total, _, bpf = one_run(args, kind, "ember", None, bins, data, wd,
                                               args.duration)
                    per[kind].append(1e6 * bpf / total if total else float("nan"))
        finally:
            subprocess.run(["sysctl", "-q", "kernel.bpf_stats_enabled=0"], check=False)
        print(f"\neBPF time per sample (us: ember_sample's run time over the workload's "
              f"samples), {args.repeat} runs of {args.duration} s at {args.hz} Hz\n")
        print("| workload | runs | least | median |")
        print("|---|---|---|---|")
        for kind, v in per.items():
            print(f"| {kind} | " + ", ".join(f"{x:.1f}" for x in v) +
                  f" | {min(v):.1f} | {sorted(v)[len(v) // 2]:.1f} |")
        return
    try:
        for kind in args.workloads.split(","):
            for tool, mode in tools:
                results[(kind, tool)] = one_run(args, kind, tool, mode, bins, data, wd,
                                                args.duration)
                if args.short:
                    short[(kind, tool)] = one_run(args, kind, tool, mode, bins, data, wd,
                                                  args.short)
    finally:
        subprocess.run(["sysctl", "-q", "kernel.bpf_stats_enabled=0"], check=False)

    print(f"\n{args.duration} s per run at {args.hz} Hz; complete = reaches __libc_start_main, "
          f"no marker; cost = tool CPU s (record + post-processing + eBPF)\n")
    print("| workload | ember complete | perf fp complete | perf dwarf complete "
          "| ember cost | perf fp cost | perf dwarf cost | ember/dwarf cost |")
    print("|---|---|---|---|---|---|---|---|")
    for kind in args.workloads.split(","):
        cells, costs = [], []
        for tool, _ in tools:
            good, total, cost, _ = results[(kind, tool)]
            cells.append(f"{100.0 * good / total:.1f}% of {total}" if total else "no samples")
            costs.append(cost)
        ratio = costs[0] / costs[2] if costs[2] else float("nan")
        print(f"| {kind} | " + " | ".join(cells) + " | " +
              " | ".join(f"{c:.2f} s" for c in costs) + f" | {ratio:.2f} |")
    if not args.short:
        return
    # A run's cost is a start-up (loading, symbol tables) plus a cost per sample; the
    # difference between the long and the short run separates them.
    print(f"\nCost per 1000 samples, from the difference between the {args.duration} s and "
          f"the {args.short} s runs (start-up = cost of the {args.short} s run)\n")
    print("| workload | ember /1000 | perf fp /1000 | perf dwarf /1000 | ember/dwarf "
          "| ember start-up | perf fp start-up | perf dwarf start-up |")
    print("|---|---|---|---|---|---|---|---|")
    for kind in args.workloads.split(","):
        per, start = [], []
        for tool, _ in tools:
            _, n_long, c_long, _ = results[(kind, tool)]
            _, n_short, c_short, _ = short[(kind, tool)]
            dn = n_long - n_short
            per.append(1000.0 * (c_long - c_short) / dn if dn > 0 else float("nan"))
            start.append(c_short)
        ratio = per[0] / per[2] if per[2] > 0 else float("nan")
        print(f"| {kind} | " + " | ".join(f"{c * 1000:.1f} ms" for c in per) +
              f" | {ratio:.2f} | " + " | ".join(f"{c:.2f} s" for c in start) + " |")


def one_run(args, kind, tool, mode, bins, data, wd, duration):
    """Records a fresh instance of the workload; returns (complete, total, cost in CPU s)."""
    proc, feeder = start_workload(kind, bins, data)
    time.sleep(0.5)
    tag = f"{kind}-{tool}-{duration}"
    if tool == "ember":
        out = run_ember(args, proc.pid, wd, tag, duration)
    else:
        out = run_perf(args, proc.pid, wd, tag, mode, duration)
    if feeder:
        feeder.stop = True
    proc.kill()
    proc.wait()
    stacks, cpu, post, bpf = out
    good, total = completeness(stacks, comm_of(kind))
    print(f"{kind:7s} {tool:10s} {duration:3d}s {good:6d}/{total:<6d} complete, "
          f"cpu {cpu:.2f}s + post {post:.2f}s + bpf {bpf:.3f}s", flush=True)
    return good, total, cpu + post + bpf, bpf

if __name__ == "__main__":
    main()
