#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bench/select: what choosing what to profile saves on a host busy with other work.

Every CPU is busy with processes nobody chose (tests/workloads/split.c, one
thread per CPU); one more process, the chosen one, runs in a cgroup of its own.
Each tool records for the same duration at the same frequency:

  ember (whole host)      ember record -F HZ
  ember --cgroup          ember record -F HZ --cgroup CHOSEN  (filtered in eBPF)
  ember -p                ember record -F HZ -p CHOSEN_PID    (filtered in eBPF)
  perf -a                 perf record -g -a -F HZ             (whole host)
  perf -p                 perf record -g -F HZ -p CHOSEN_PID  (per-task events: the
                          kernel never interrupts another task for it)

Printed per tool: the CPU seconds its processes used (RUSAGE_CHILDREN: every
process it started and reaped), per second of recording, the samples it kept
and, for ember, the kernel's count and time of its sampling program
(kernel.bpf_stats_enabled, switched on for the run and restored): the cost of
a sample of an unchosen task, which eBPF rejects after one map lookup, beside
that of a sample it keeps. Then ratios of each selection to its whole-host run.

Usage: sudo bench/select/run.py [--duration 10] [--hz 999] [--build build]
"""
import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))


def cgroup_root():
    with open("/proc/self/mountinfo") as f:
        mounts = [line.split()[4] for line in f if " - cgroup2 " in line]
    for root in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified"):
        if root in mounts:
            return root
    sys.exit("bench/select: no cgroup v2 hierarchy mounted")


def sampler_stats(ember_pid):
    """(run_cnt, run_time_ns) of the ember_sample program that process holds (its links name
    it in their fdinfo), or None."""
    ids = set()
    try:
        for fd in os.listdir(f"/proc/{ember_pid}/fdinfo"):
            with open(f"/proc/{ember_pid}/fdinfo/{fd}") as f:
                ids.update(line.split()[1] for line in f if line.startswith("prog_id:"))
    except OSError:
        return None
    for i in ids:
        out = subprocess.run(["bpftool", "-j", "prog", "show", "id", i], capture_output=True,
                             text=True)
        try:
            p = json.loads(out.stdout)
        except ValueError:
            continue
        if p.get("name") == "ember_sample":
            return p.get("run_cnt", 0), p.get("run_time_ns", 0)
    return None


def measure(name, cmd, duration, ember_pid_of=None):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stats = None
    if ember_pid_of:
        # The program's counters, read near the end of the recording (they go with it).
        deadline = t0 + 120
        while time.monotonic() < deadline and proc.poll() is None:
            s = sampler_stats(proc.pid)
            if s:
                stats = s
            time.sleep(0.5)
    out, err = proc.communicate(timeout=duration + 600)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        sys.exit(f"{name} failed ({proc.returncode}): {err[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    kept = None
    for line in (out + err).splitlines():
        if line.startswith("ember: ") and " samples, " in line:
            kept = int(line.split()[1])
        if "perf record: Captured and wrote" in line:
            pass
    return {"name": name, "cpu": cpu, "wall": wall, "kept": kept, "bpf": stats}


def perf_samples(perf, data):
    r = subprocess.run([perf, "report", "-i", data, "--stdio", "--sort", "comm", "-F", "sample"],
                       capture_output=True, text=True)
    n = 0
    for line in r.stdout.splitlines():
        f = line.split()
        if f and f[0].isdigit():
            n += int(f[0])
    return n


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--hz", type=int, default=999)
    ap.add_argument("--build", default=os.path.join(SRC, "build"))
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench/select: run as root")
    ember = os.path.join(a.build, "ember")
    perf = shutil.which("perf")
    if not os.path.exists(ember) or not perf or not shutil.which("bpftool"):
        sys.exit("bench/select: needs build/ember, perf and bpftool (scripts/install-deps.sh)")
    wd = tempfile.mkdtemp(prefix="ember-bench-select-")
    split = os.path.join(wd, "split")
    subprocess.run(["gcc", "-O2", "-g", "-fno-omit-frame-pointer", "-pthread", "-o", split,
                    os.path.join(SRC, "tests", "workloads", "split.c")], check=True)
    chosen_bin = os.path.join(wd, "chosen")
    shutil.copy(split, chosen_bin)
    ncpu = os.cpu_count() or 1
    cg_rel = f"/ember-bench-select-{os.getpid()}"
    cg = cgroup_root() + cg_rel
    os.makedirs(cg)
    with open("/proc/sys/kernel/bpf_stats_enabled") as f:
        stats_before = f.read().strip()
    span = str(6 * (a.duration + 20))
    load = [subprocess.Popen([split, span, str(ncpu)], stdout=subprocess.DEVNULL)]
    chosen = subprocess.Popen([chosen_bin, span], stdout=subprocess.DEVNULL)
    load.append(chosen)
    try:
        with open(os.path.join(cg, "cgroup.procs"), "w") as f:
            f.write(str(chosen.pid))
        with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
            f.write("1")
        time.sleep(2)
        d, hz = str(a.duration), str(a.hz)
        base = [ember, "record", "-d", d, "-F", hz, "--no-progress", "-o",
                os.path.join(wd, "p.folded")]
        runs = [
            measure("ember (whole host)", base, a.duration, True),
            measure("ember --cgroup", base + ["--cgroup", cg_rel], a.duration, True),
            measure("ember -p", base + ["-p", str(chosen.pid)], a.duration, True),
            measure("perf -a", [perf, "record", "-q", "-g", "-a", "-F", hz, "-o",
                                os.path.join(wd, "a.data"), "--", "sleep", d], a.duration),
            measure("perf -p", [perf, "record", "-q", "-g", "-F", hz, "-p", str(chosen.pid),
                                "-o", os.path.join(wd, "p.data"), "--", "sleep", d], a.duration),
        ]
        runs[3]["kept"] = perf_samples(perf, os.path.join(wd, "a.data"))
        runs[4]["kept"] = perf_samples(perf, os.path.join(wd, "p.data"))
    finally:
        for p in load:
            p.kill()
            p.wait()
        with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
            f.write(stats_before)
        os.rmdir(cg)
    print(f"bench/select: {a.duration} s at {a.hz} Hz; {ncpu} CPUs busy with unchosen work, "
          f"one chosen process in cgroup {cg_rel}")
    print(f"{'tool':<20} {'CPU s':>7} {'CPU ms/s':>9} {'samples kept':>13} "
          f"{'BPF runs':>9} {'ns/run':>7}")
    for r in runs:
        bpf = r["bpf"]
        runs_s = f"{bpf[0]:>9}" if bpf else f"{'-':>9}"
        ns = f"{bpf[1] / bpf[0]:>7.0f}" if bpf and bpf[0] else f"{'-':>7}"
        print(f"{r['name']:<20} {r['cpu']:>7.3f} {1000 * r['cpu'] / a.duration:>9.1f} "
              f"{r['kept'] if r['kept'] is not None else '-':>13} {runs_s} {ns}")
    whole, cgr, pid, pa, pp = runs
    if whole["bpf"] and cgr["bpf"] and whole["kept"] and cgr["bpf"][0] > (cgr["kept"] or 0):
        # In the cgroup run, the kept samples cost what whole-host samples cost; the rest of
        # the program's time went to the rejected ones.
        per_kept = whole["bpf"][1] / whole["bpf"][0]
        rejected = cgr["bpf"][0] - (cgr["kept"] or 0)
        per_rejected = (cgr["bpf"][1] - (cgr["kept"] or 0) * per_kept) / rejected
        print(f"a sample of an unchosen task costs ~{max(per_rejected, 0):.0f} ns in eBPF "
              f"(a kept one {per_kept:.0f} ns: {per_kept / max(per_rejected, 1):.0f}x)")
    for sel, all_ in ((cgr, whole), (pid, whole), (pp, pa)):
        print(f"ratio {sel['name']} / {all_['name']}: CPU {sel['cpu'] / all_['cpu']:.2f}x")
    print(f"ratio ember --cgroup / perf -p: CPU {cgr['cpu'] / pp['cpu']:.2f}x; "
          f"ember -p / perf -p: CPU {pid['cpu'] / pp['cpu']:.2f}x")
    shutil.rmtree(wd, ignore_errors=True)


if __name__ == "__main__":
    main()
