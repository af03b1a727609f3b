#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bench/python: what reading Python frames costs, and how it compares with perf.

The workload is tests/workloads/pysplit.py (60/30/10 over three Python
functions, its own thread-CPU truth) on the newest CPython found (pyenv's,
else Debian's python3.11). Each run records a fresh instance for the same time
at the same frequency:

  ember python   ember record -p PID: Python frames walked in eBPF, named in
                 the symbolizer
  ember native   the same with --interpreters none: native frames only (the
                 interpreter loop, no Python functions)
  perf -X perf   python3.12 -X perf (3.12+; CPython's perf trampolines and
                 /tmp/perf-PID.map) under `perf record --call-graph dwarf`
                 (the interpreter has no frame pointers), then `perf script`

Figures per run: samples of the workload; eBPF run time per sample
(kernel.bpf_stats_enabled, ember's program only; the program also runs, and
returns early, on the CPU samples of every process -p did not choose: a run
recording an idle process measures that cost, which is taken out); symbolizer CPU (user +
system of ember-symbolizer, read from /proc while it runs); for perf, the CPU
of perf record and perf script; and the attribution: each leaf's share
against the workload's own truth. A short run (--short) beside each long one
separates start-up from the cost per 1,000 samples.

Usage: sudo bench/python/run.py [--duration 10] [--short 3] [--hz 499] [--build build]
"""
import argparse
import collections
import glob
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
WORKLOAD = os.path.join(SRC, "tests", "workloads", "pysplit.py")
LEAVES = ("leaf_a", "leaf_b", "leaf_c")


def newest_python():
    root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    found = []
    for d in glob.glob(os.path.join(root, "versions", "3.*")):
        m = re.match(r"3\.(\d+)\.(\d+)$", os.path.basename(d))
        exe = os.path.join(d, "bin", f"python3.{m.group(1)}") if m else ""
        if m and os.access(exe, os.X_OK):
            found.append(((int(m.group(1)), int(m.group(2))), exe))
    if found:
        return max(found)
    return (11, 2), "/usr/bin/python3.11"  # (minor, patch), as above


def cpu_of(pid):
    """CPU seconds (user + system) of a live process, or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def ember_programs(pid):
    """Run time of the sampler programs the ember process pid holds (by their descriptors:
    other ember instances on the same machine load programs of the same name)."""
    ids = set()
    try:
        for fd in os.listdir(f"/proc/{pid}/fdinfo"):
            with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                m = re.search(r"^prog_id:\s*(\d+)", f.read(), re.M)
            if m:
                ids.add(int(m.group(1)))
    except OSError:
        return {}
    r = subprocess.run(["bpftool", "--json", "prog", "show"], capture_output=True, text=True)
    try:
        progs = json.loads(r.stdout)
    except ValueError:
        return {}
    return {p["id"]: (p.get("run_time_ns", 0), p.get("run_cnt", 0)) for p in progs
            if p.get("name") == "ember_sample" and p["id"] in ids}


def truth_of(path):
    ns = collections.Counter()
    with open(path) as f:
        for line in f:
            for kv in line.split():
                k, _, v = kv.partition("=")
                if k in LEAVES:
                    ns[k] += int(v)
    total = sum(ns.values())
    return {k: 100.0 * ns[k] / total for k in LEAVES} if total else {}


def start_workload(exe, wd, tag, extra=()):
    truth = os.path.join(wd, f"{tag}.truth")
    proc = subprocess.Popen([exe, *extra, WORKLOAD, "split", "600"],
                            env=dict(os.environ, EMBER_TRUTH_FILE=truth),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.0)
    return proc, truth


def stop_workload(proc):
    proc.send_signal(signal.SIGTERM)  # it writes its truth
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def shares(counts):
    total = sum(counts.values())
    return {k: 100.0 * counts[k] / total for k in LEAVES} if total else {}


def run_ember(args, exe, wd, tag, duration, python):
    proc, truth = start_workload(exe, wd, tag)
    folded = os.path.join(wd, f"{tag}.folded")
    rec = subprocess.Popen([os.path.join(args.build, "ember"), "record", "-d", str(duration),
                            "-F", str(args.hz), "-p", str(proc.pid), "-o", folded,
                            "--interpreters", "python" if python else "none"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    bpf, calls, sym_cpu, sym_pid = 0.0, 0, 0.0, None
    while rec.poll() is None:
        ours = ember_programs(rec.pid)
        # Read while the program is loaded.
        bpf = max(bpf, sum(t for t, _ in ours.values()) / 1e9)
        calls = max(calls, sum(n for _, n in ours.values()))
        if sym_pid is None:
            r = subprocess.run(["pgrep", "-P", str(rec.pid), "-f", "ember-symbolizer"],
                               capture_output=True, text=True)
            sym_pid = int(r.stdout.split()[0]) if r.stdout.strip() else None
        if sym_pid is not None:
            sym_cpu = max(sym_cpu, cpu_of(sym_pid) or 0.0)
        time.sleep(0.05)
    stop_workload(proc)
    counts, samples = collections.Counter(), 0
    with open(folded) as f:
        for line in f:
            frames, _, n = line.rstrip("\n").rpartition(" ")
            frames = frames.split(";")
            if not frames or not frames[0].startswith("python"):
                continue
            samples += int(n)
            leaf = next((x for x in reversed(frames) if x in LEAVES), None)
            if leaf:
                counts[leaf] += int(n)
    return {"samples": samples, "bpf": bpf, "calls": calls, "cpu": sym_cpu,
            "shares": shares(counts), "truth": truth_of(truth)}


def filtered_call_ns(args, wd, duration):
    """What ember_sample costs on a CPU sample of a process -p did not choose: ember records
    an idle process, so that every call is one. The runs above subtract it for the calls
    that were not the workload's samples."""
    idle = subprocess.Popen(["sleep", str(duration + 30)])
    rec = subprocess.Popen([os.path.join(args.build, "ember"), "record", "-d", str(duration),
                            "-F", str(args.hz), "-p", str(idle.pid), "-o",
                            os.path.join(wd, "idle.folded")],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    bpf, calls = 0, 0
    while rec.poll() is None:
        ours = ember_programs(rec.pid)
        bpf = max(bpf, sum(t for t, _ in ours.values()))
        calls = max(calls, sum(n for _, n in ours.values()))
        time.sleep(0.05)
    idle.kill()
    idle.wait()
    return bpf / calls if calls else 0.0


def run_perf(args, exe, wd, tag, duration):
    proc, truth = start_workload(exe, wd, tag, extra=("-X", "perf"))
    data = os.path.join(wd, f"{tag}.data")
    rec = subprocess.Popen(["perf", "record", "-q", "-F", str(args.hz), "--call-graph", "dwarf",
                            "-p", str(proc.pid), "-o", data, "--", "sleep", str(duration)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, _, ru = os.wait4(rec.pid, 0)
    rec.returncode = 0
    cpu = ru.ru_utime + ru.ru_stime
    stop_workload(proc)
    script = subprocess.Popen(["perf", "script", "-i", data, "-F", "ip,sym"],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    text = script.stdout.read()
    _, _, ru = os.wait4(script.pid, 0)
    script.returncode = 0
    post = ru.ru_utime + ru.ru_stime
    counts, samples = collections.Counter(), 0
    for block in text.split("\n\n"):
        syms = [line.split(None, 1)[1] for line in block.strip().splitlines()
                if len(line.split(None, 1)) == 2]
        if not syms:
            continue
        samples += 1
        leaf = next((s for s in syms for l in LEAVES if s.startswith(f"py::{l}:")), None)
        if leaf:
            counts[leaf[4:10]] += 1
    return {"samples": samples, "bpf": 0.0, "calls": 0, "cpu": cpu + post,
            "shares": shares(counts), "truth": truth_of(truth)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--short", type=int, default=3)
    ap.add_argument("--hz", type=int, default=499)
    ap.add_argument("--build", default=os.path.join(SRC, "build"))
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench/python: run as root (eBPF, perf)")
    version, exe = newest_python()
    wd = tempfile.mkdtemp(prefix="ember-bench-python-")
    runs = [("ember python", lambda t, d: run_ember(args, exe, wd, t, d, True)),
            ("ember native", lambda t, d: run_ember(args, exe, wd, t, d, False))]
    if version >= (12, 0):
        runs.append(("perf -X perf", lambda t, d: run_perf(args, exe, wd, t, d)))
    else:
        print(f"no CPython 3.12+ ({exe} is 3.{version[0]}): no perf -X perf comparison")
    with open("/proc/sys/kernel/bpf_stats_enabled") as f:
        stats_before = f.read().strip()
    subprocess.run(["sysctl", "-q", "kernel.bpf_stats_enabled=1"], check=False)
    results = {}
    try:
        call0 = filtered_call_ns(args, wd, args.short)
        print(f"ember_sample on a sample of a process not chosen: {call0:.0f} ns", flush=True)
        for name, fn in runs:
            for d in (args.duration, args.short):
                r = fn(f"{name.replace(' ', '-')}-{d}", d)
                results[(name, d)] = r
                print(f"{name:13s} {d:3d}s: {r['samples']} samples, eBPF {r['bpf']:.4f}s, "
                      f"CPU {r['cpu']:.2f}s, shares " +
                      " ".join(f"{k} {r['shares'].get(k, 0):.1f}% ({r['truth'].get(k, 0):.1f}%)"
                               for k in LEAVES), flush=True)
    finally:
        subprocess.run(["sysctl", "-q", f"kernel.bpf_stats_enabled={stats_before}"], check=False)

    print(f"\n{exe} (3.{version[0]}.{version[1]}), pysplit.py split, "
          f"{args.hz} Hz, {args.duration} s and {args.short} s runs\n")
    print("| run | samples | eBPF per sample | symbolizer (perf: record + script) CPU per "
          "1000 samples | start-up CPU | worst share error vs truth |")
    print("|---|---|---|---|---|---|")
    per = {}
    for name, _ in runs:
        lo, hi = results[(name, args.short)], results[(name, args.duration)]
        dn = hi["samples"] - lo["samples"]
        cpu1000 = 1000.0 * (hi["cpu"] - lo["cpu"]) / dn if dn > 0 else float("nan")
        # The calls that were not the workload's samples cost what a filtered call costs.
        own = 1e9 * hi["bpf"] - max(hi["calls"] - hi["samples"], 0) * call0
        bpf_ns = own / hi["samples"] if hi["samples"] else float("nan")
        err = max(abs(hi["shares"].get(k, 0) - hi["truth"].get(k, 0)) for k in LEAVES) \
            if hi["shares"] else float("nan")
        per[name] = (bpf_ns, cpu1000)
        print(f"| {name} | {hi['samples']} | " +
              (f"{bpf_ns / 1000:.1f} µs" if hi["bpf"] else "-") +
              f" | {cpu1000 * 1000:.1f} ms | {lo['cpu']:.2f} s | " +
              (f"{err:.1f} points" if hi["shares"] else "no Python functions") + " |")
    py, nat = per["ember python"], per["ember native"]
    print(f"\nember python / native-only: eBPF per sample x{py[0] / nat[0]:.2f}, "
          f"symbolizer CPU per 1000 samples x{py[1] / nat[1]:.2f}")
    if "perf -X perf" in per:
        pf = per["perf -X perf"]
        print(f"ember python / perf -X perf: CPU per 1000 samples x{(py[1] + py[0] / 1e6) / pf[1]:.3f}"
              " (ember: symbolizer + eBPF; perf: record + script)")


if __name__ == "__main__":
    main()
