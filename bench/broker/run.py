#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bench/broker: broker requests per second that ember-collector serves for
local files, one request at a time as the symbolizer asks, beside the same
opens made directly by a process without a broker (the peer), in the same run.

Kinds (see broker_bench.c): maps, mapped-file (the workload's executable, on
a local file system), proc-file (its cgroup list). With --baseline BUILD the
ember-collector of another build (e.g. main before a change) is measured too,
alternating with this one over --rounds rounds, and the ratio printed; each
build's own driver is used (BUILD/bench/broker/ember-broker-bench: the
protocol may differ).

Usage: sudo bench/broker/run.py [--build-dir build] [--baseline OTHER_BUILD]
       [--count 4000] [--rounds 3]
"""
import argparse
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SRC, "tests", "integration"))
from emberlib import collector_argv  # noqa: E402  (the daemon's command line)

NOBODY = 65534


def die(msg):
    print(f"bench/broker: {msg}", file=sys.stderr)
    sys.exit(2)


def as_nobody():
    os.setgroups([])
    os.setresgid(NOBODY, NOBODY, NOBODY)
    os.setresuid(NOBODY, NOBODY, NOBODY)


def parse(out):
    """{kind: requests/s} from the driver's output."""
    return {m.group(1): float(m.group(2))
            for m in re.finditer(r"^(\S+) (\d+) requests/s", out, re.M)}


def first_file_mapping(pid):
    """(start address in hex, path) of pid's first mapping of a file: its executable."""
    for line in open(f"/proc/{pid}/maps"):
        f = line.split()
        if len(f) >= 6 and f[5].startswith("/") and f[4] != "0":
            return f[0].split("-")[0], f[5]
    die(f"pid {pid} maps no file")


def measure(build, pid, addr, count, wd):
    """Starts build's ember-collector sampling pid, runs that build's driver against it."""
    driver = os.path.join(build, "bench", "broker", "ember-broker-bench")
    run_dir = tempfile.mkdtemp(dir=wd)
    os.chmod(run_dir, 0o755)
    sock = os.path.join(run_dir, "collector.sock")
    log = open(os.path.join(run_dir, "collector.log"), "w")
    col = subprocess.Popen(collector_argv(build, "--user", "nobody", "--runtime-dir", run_dir, "-F", "99",
                                          "-p", str(pid)),
                           stdout=log, stderr=log)
    try:
        deadline = time.time() + 30
        while not os.path.exists(sock):
            if col.poll() is not None or time.time() > deadline:
                die(f"{build}/ember-collector did not start: "
                    f"{open(os.path.join(run_dir, 'collector.log')).read()}")
            time.sleep(0.1)
        time.sleep(1.0)  # the workload is sampled: the broker serves its pid
        r = subprocess.run([driver, sock, str(pid), addr, str(count)], capture_output=True, text=True,
                           preexec_fn=as_nobody, timeout=600)
        if r.returncode:
            die(f"the driver failed against {build}: {r.stdout}{r.stderr}")
        return parse(r.stdout), r.stdout
    finally:
        col.send_signal(signal.SIGTERM)
        col.wait(timeout=30)
        log.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build-dir", default=os.path.join(SRC, "build"))
    ap.add_argument("--baseline", help="another build directory to compare with")
    ap.add_argument("--count", type=int, default=4000, help="requests per kind (below 10000)")
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    if os.geteuid() != 0:
        die("needs root (it runs ember-collector)")
    if not 0 < a.count < 10000:
        die("--count must stay below the broker's burst of 10000")
    build = os.path.abspath(a.build_dir)
    driver = os.path.join(build, "bench", "broker", "ember-broker-bench")
    if not os.path.exists(driver):
        die(f"{driver} is missing: build the tree first")
    wd = tempfile.mkdtemp(prefix="ember-bench-broker-")
    os.chmod(wd, 0o755)
    # A CPU-bound workload the collector samples; its executable is a local file.
    wl = subprocess.Popen(["/bin/sh", "-c", "while :; do :; done"])
    time.sleep(0.2)  # exec done
    addr, path = first_file_mapping(wl.pid)
    builds = [("this build", build)]
    if a.baseline:
        builds.append(("baseline", os.path.abspath(a.baseline)))
    results = {name: [] for name, _ in builds}
    direct = []
    try:
        for rnd in range(a.rounds):
            for name, b in builds:
                res, out = measure(b, wl.pid, addr, a.count, wd)
                results[name].append(res)
                print(f"round {rnd + 1} {name}: " +
                      ", ".join(f"{k} {v:.0f}/s" for k, v in res.items()), flush=True)
            r = subprocess.run([driver, "--direct", str(wl.pid), addr, str(a.count)],
                               capture_output=True, text=True, check=True)
            direct.append(parse(r.stdout))
            print(f"round {rnd + 1} direct opens: " +
                  ", ".join(f"{k} {v:.0f}/s" for k, v in direct[-1].items()), flush=True)
    finally:
        wl.kill()
        wl.wait()
    print(f"\nbroker requests per second, median of {a.rounds} rounds "
          f"({a.count} requests per kind, one at a time; mapped-file: {path}):")
    kinds = list(direct[0].keys())
    med = {name: {k: statistics.median(r[k] for r in rs) for k in kinds}
           for name, rs in results.items()}
    dmed = {k: statistics.median(r[k] for r in direct) for k in kinds}
    header = f"{'kind':<12} {'this build':>11}"
    if a.baseline:
        header += f" {'baseline':>10} {'ratio':>6}"
    header += f" {'direct':>9} {'vs direct':>9}"
    print(header)
    for k in kinds:
        line = f"{k:<12} {med['this build'][k]:>11.0f}"
        if a.baseline:
            line += f" {med['baseline'][k]:>10.0f} {med['this build'][k] / med['baseline'][k]:>6.2f}"
        line += f" {dmed[k]:>9.0f} {med['this build'][k] / dmed[k]:>9.2f}"
        print(line)


if __name__ == "__main__":
    main()
