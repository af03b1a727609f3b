#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bench/offcpu: what off-CPU profiling costs at a high context-switch rate.

A ping-pong workload (tests/workloads/offcpu.c pingpong: two threads on CPU 0
handing a byte back and forth through pipes, one context switch per hand-off,
with a fixed amount of work per hand-off calibrated so that CPU 0 switches
about --rate times a second) runs for the same time under each tool, recording
the whole system:

  none                          the workload alone
  ember                         ember record -F 19 (CPU samples only)
  ember --off-cpu               the same with off-CPU time (waits of 1 ms or more)
  ember --off-cpu=0             every wait (the sampling at high rates engages)
  offcputime -m 1000            libbpf-tools' offcputime (Debian package libbpf-tools)
  offcputime-bpfcc -m 1000      bcc's Python offcputime (bpfcc-tools), where it runs
  perf sched:sched_switch -g    perf record -e sched:sched_switch -g -a (tracefs is
                                mounted for it in a private mount namespace)

For each it prints the hand-offs per second (the workload's throughput), the
context switches per second (/proc/stat, the whole host), the workload's CPU
time per hand-off and how much that grew (the probes run in the switching
threads: the cost per switch), the tool's own CPU (its processes and threads,
from /proc, while the workload runs: start-up and the final report are shown
apart), and the added CPU at --rate switches a second: the growth per switch
times the rate, plus the tool's own, as a percentage of one core. Other work
on the host changes the throughput from run to run; the CPU time per hand-off
is what the probes add, whatever the throughput. A tool that cannot run here
is listed with the reason.

Usage: sudo bench/offcpu/run.py [--seconds 10] [--rate 50000] [--build build]
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))


def ctxt():
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith("ctxt "):
                return int(line.split()[1])
    return 0


def cpu_of(rusage):
    return rusage.ru_utime + rusage.ru_stime


def tree(pid):
    """pid and all its descendants."""
    pids, todo = [], [pid]
    while todo:
        p = todo.pop()
        pids.append(p)
        try:
            for t in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{t}/children") as f:
                    todo.extend(int(c) for c in f.read().split())
        except OSError:
            pass
    return pids


def tree_cpu(pid):
    """CPU seconds (user + system) of pid's process tree so far."""
    if pid is None:
        return 0.0
    ticks = 0
    for p in tree(pid):
        try:
            with open(f"/proc/{p}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            ticks += int(fields[11]) + int(fields[12])  # utime, stime
        except (OSError, IndexError, ValueError):
            pass
    return ticks / os.sysconf("SC_CLK_TCK")


def run_workload(workload, seconds, work):
    """Starts the workload; returns (popen). It waits for two lines on stdin."""
    p = subprocess.Popen([workload, "pingpong", str(seconds), str(work), "0"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    return p


def finish_workload(p, tool_pid=None):
    p.stdin.write("warm\n")
    p.stdin.flush()
    time.sleep(0.5)
    c0, t0, k0 = ctxt(), time.monotonic(), tree_cpu(tool_pid)
    p.stdin.write("go\n")
    p.stdin.flush()
    p.stdin.close()
    out = p.stdout.read()
    _, status, ru = os.wait4(p.pid, 0)
    c1, t1, k1 = ctxt(), time.monotonic(), tree_cpu(tool_pid)
    p.returncode = os.waitstatus_to_exitcode(status)
    handoffs = int(next(l.split("=")[1] for l in out.split() if l.startswith("handoffs=")))
    # warm_up (0.3 s) and the go line are inside the window: count from go on, near enough.
    return {"handoffs": handoffs, "cpu": cpu_of(ru), "ctxt_s": (c1 - c0) / (t1 - t0),
            "window": t1 - t0, "tool_window_cpu": k1 - k0}


def calibrate(workload, rate):
    """The work per hand-off that gives about `rate` context switches a second."""
    work = 0
    for _ in range(6):
        p = run_workload(workload, 1.5, work)
        r = finish_workload(p)
        if r["ctxt_s"] <= rate * 1.15:
            return work, r["ctxt_s"]
        # Hand-offs cost fixed time plus the work: scale the work by the rate's excess.
        per_switch_s = 1.0 / r["ctxt_s"]
        want_s = 1.0 / rate
        work = max(1000, int((work or 1000) * (want_s / per_switch_s) * 1.1))
    return work, r["ctxt_s"]


def reap(p, block):
    """wait4 on p (not through Popen, to get its rusage): (status, rusage), or None if running."""
    pid, status, ru = os.wait4(p.pid, 0 if block else os.WNOHANG)
    if not pid:
        return None
    p.returncode = os.waitstatus_to_exitcode(status)
    return status, ru


def last_line(text, code):
    lines = [l for l in text.strip().splitlines() if l.strip()]
    return lines[-1] if lines else f"exit status {code}"


def run_tool(name, cmd, workload, seconds, work, attach_s):
    """Runs the workload under cmd (None: alone). Returns the measurements or the reason it
    could not run."""
    tool = None
    wl = run_workload(workload, seconds, work)
    try:
        if cmd:
            tool = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            t_end = time.monotonic() + attach_s
            while time.monotonic() < t_end:
                time.sleep(0.1)
                if reap(tool, False):
                    return {"name": name, "error": last_line(tool.stderr.read(), tool.returncode)}
        r = finish_workload(wl, tool.pid if tool else None)
        r["name"] = name
        r["tool_cpu"] = 0.0
        if tool:
            deadline, done = time.monotonic() + seconds + 120, None
            while not done and time.monotonic() < deadline:
                time.sleep(0.2)
                done = reap(tool, False)
            if not done:
                tool.terminate()
                done = reap(tool, True)
            err = tool.stderr.read()
            if tool.returncode not in (0, -15):
                return {"name": name, "error": last_line(err, tool.returncode)}
            r["tool_cpu"] = cpu_of(done[1])
        return r
    finally:
        for p in (wl, tool):
            if p and p.returncode is None:
                p.kill()
                p.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--rate", type=int, default=50000, help="context switches per second to aim at")
    ap.add_argument("--build", default=os.path.join(SRC, "build"))
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench/offcpu: run as root (the tools record every CPU)")
    ember = os.path.join(a.build, "ember")
    if not os.path.exists(ember):
        sys.exit(f"bench/offcpu: no {ember}; build first")
    wd = tempfile.mkdtemp(prefix="ember-bench-offcpu-")
    workload = os.path.join(wd, "offcpu")
    subprocess.run(["gcc", "-O2", "-g", "-fno-omit-frame-pointer", "-pthread", "-o", workload,
                    os.path.join(SRC, "tests", "workloads", "offcpu.c")], check=True)
    work, got = calibrate(workload, a.rate)
    d = a.seconds + 0.9  # the workload's run, warm-up and go included
    rec = str(int(d + 4))
    out = lambda n: os.path.join(wd, n)  # noqa: E731
    perf = shutil.which("perf")
    tools = [
        ("none", None, 0),
        ("ember", [ember, "record", "-d", rec, "-F", "19", "--no-progress", "-o", out("a.pb.gz")], 2.0),
        ("ember --off-cpu", [ember, "record", "-d", rec, "-F", "19", "--no-progress", "--off-cpu",
                             "-o", out("b.pb.gz")], 2.0),
        ("ember --off-cpu=0", [ember, "record", "-d", rec, "-F", "19", "--no-progress", "--off-cpu=0",
                               "-o", out("c.pb.gz")], 2.0),
        ("offcputime -m 1000", ["/usr/sbin/offcputime", "-m", "1000", rec]
         if os.path.exists("/usr/sbin/offcputime") else None, 2.0),
        ("offcputime-bpfcc -m 1000", ["/usr/sbin/offcputime-bpfcc", "-m", "1000", rec]
         if os.path.exists("/usr/sbin/offcputime-bpfcc") else None, 8.0),
        ("perf sched_switch -g", ["unshare", "-m", "sh", "-c",
                                  "mount -t tracefs nodev /sys/kernel/tracing && exec " + perf +
                                  " record -q -e sched:sched_switch -g -a -o " + out("perf.data") +
                                  " -- sleep " + rec] if perf else None, 2.0),
    ]
    results = []
    for name, cmd, attach in tools:
        if cmd is None and name != "none":
            results.append({"name": name, "error": "not installed (scripts/install-deps.sh installs it)"})
            continue
        results.append(run_tool(name, cmd, workload, a.seconds, work, attach))
    base = results[0]
    base_per = base["cpu"] / base["handoffs"]
    print(f"bench/offcpu: ping-pong on CPU 0 for {a.seconds:.0f} s, {work} work iterations per "
          f"hand-off (calibrated: {got:,.0f} context switches/s alone), {os.cpu_count()} CPUs, "
          f"whole system")
    print(f"{'tool':<26} {'hand-offs/s':>11} {'switches/s':>11} {'wl us/h-off':>11} {'+us/switch':>10}"
          f" {'tool % core':>11} {'added at ' + str(a.rate // 1000) + 'k/s':>13} {'tool start+end s':>16}")
    added = {}
    for r in results:
        if "error" in r:
            print(f"{r['name']:<26} cannot run here: {r['error']}")
            continue
        per = r["cpu"] / r["handoffs"]
        tool_core = r["tool_window_cpu"] / r["window"]
        # Each hand-off is one context switch on CPU 0.
        added[r["name"]] = (per - base_per) * a.rate + tool_core
        print(f"{r['name']:<26} {r['handoffs'] / r['window']:>11,.0f} {r['ctxt_s']:>11,.0f}"
              f" {1e6 * per:>11.2f} {1e6 * (per - base_per):>10.2f} {100 * tool_core:>10.2f}%"
              f" {100 * added[r['name']]:>12.2f}% {r['tool_cpu'] - r['tool_window_cpu']:>16.3f}")
    for other in ("offcputime -m 1000", "offcputime-bpfcc -m 1000", "perf sched_switch -g"):
        if other in added and "ember --off-cpu" in added and added[other] > 0:
            print(f"ratio ember --off-cpu / {other}: added CPU {added['ember --off-cpu'] / added[other]:.2f}x")
    if "ember --off-cpu" in added and "ember" in added:
        print(f"--off-cpu adds {100 * (added['ember --off-cpu'] - added['ember']):.2f}% of a core "
              f"beside ember without it")
    print("(other work on the host moves these figures by a few tenths of a percent: compare "
          "rows of one run)")
    shutil.rmtree(wd, ignore_errors=True)


if __name__ == "__main__":
    main()
