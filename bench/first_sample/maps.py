#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bench/first_sample/maps.py: BPF map memory of ember recording a busy host's processes.

Issue 27's target: the collector's BPF maps take at most 32 MiB while it records
1,000 processes of 250 distinct programs. --procs quiet processes of --binaries
distinct -fomit-frame-pointer programs (tests/workloads/quiet.c variants, as
run.py's quiet case; each wakes every 300 ms for a moment of CPU) are started,
then `ember record -p PID ...` records them (the host's other processes left
out) for --seconds at 19 Hz. The memory of the collector's maps (the kernel's
memlock figure in the fdinfo of each bpf-map descriptor it holds) is polled every
second; printed: its peak in MiB beside the target, and the largest maps at the
peak. Exits non-zero when the peak is over the target, or when ember fails.

The binaries are built (make -j2) into a new directory under /tmp, which is kept
and named at the end: --bins DIR reuses them (fsb_q0 .. fsb_qN-1, as run.py
builds them too). Every process the bench starts is stopped when it ends, failed
or interrupted; the quiet ones exit by themselves a minute after the recording
in any case.

Usage: sudo bench/first_sample/maps.py [--build build] [--procs 1000]
           [--binaries 250] [--seconds 45] [--bins DIR] [--target-mib 32]
"""
import argparse
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from run import SRC, bpf_map_memory, build_quiet  # noqa: E402  (run.py's quiet binaries)

NAME = "bench/first_sample/maps"


MAP_NAMES = {}


def map_name(map_id, map_type):
    """A BPF map's name (bpftool, once per map, while it exists; else its id and type)."""
    if map_id not in MAP_NAMES:
        name = f"map {map_id} (type {map_type})"
        try:
            out = subprocess.run(["bpftool", "map", "show", "id", str(map_id), "-j"],
                                 capture_output=True, text=True, timeout=10).stdout
            name = json.loads(out).get("name") or name
        except (OSError, ValueError, subprocess.TimeoutExpired):
            pass
        MAP_NAMES[map_id] = name
    return MAP_NAMES[map_id]


def quiet_binaries(args):
    """The --binaries distinct programs: those in --bins, or built afresh."""
    if args.bins:
        bins = [os.path.join(args.bins, f"fsb_q{v}") for v in range(args.binaries)]
        missing = [b for b in bins if not os.access(b, os.X_OK)]
        if missing:
            sys.exit(f"{NAME}: --bins {args.bins} lacks {len(missing)} of the {args.binaries} "
                     f"binaries (first: {missing[0]})")
        return args.bins, bins
    wd = tempfile.mkdtemp(prefix="ember-bench-maps-")
    print(f"building {args.binaries} quiet binaries in {wd}", flush=True)
    return wd, build_quiet(wd, args.binaries)


def stop(proc, sig, grace):
    """Signals proc (if it still runs) and reaps it, killing it after grace seconds."""
    if proc.poll() is None:
        try:
            proc.send_signal(sig)
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            proc.kill()
    proc.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(SRC, "build"))
    ap.add_argument("--procs", type=int, default=1000)
    ap.add_argument("--binaries", type=int, default=250)
    ap.add_argument("--seconds", type=int, default=45, help="how long ember records")
    ap.add_argument("--hz", type=int, default=19)
    ap.add_argument("--bins", help="a directory of fsb_q* binaries built before, reused")
    ap.add_argument("--target-mib", type=float, default=32.0)
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit(f"{NAME}: run as root (eBPF)")
    ember = os.path.join(args.build, "ember")
    if not os.access(ember, os.X_OK):
        sys.exit(f"{NAME}: no {ember}: --build names a build directory")
    # A SIGTERM stops the bench as Ctrl-C does: through the finally below.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(f"{NAME}: terminated"))
    wd, bins = quiet_binaries(args)
    out = tempfile.NamedTemporaryFile(prefix="ember-bench-maps-", suffix=".folded", delete=False)
    err = tempfile.NamedTemporaryFile(prefix="ember-bench-maps-", suffix=".log", delete=False)
    procs, rec = [], None
    peak, at_peak, rc = 0, {}, None
    try:
        # Started before ember, as a host's daemons are; each exits by itself a minute after
        # the recording should have ended, should the bench be killed before it stops them.
        life = str(args.seconds + 60)
        for i in range(args.procs):
            procs.append(subprocess.Popen([bins[i % len(bins)], "300", "0.1", life]))
        time.sleep(3)
        gone = [p for p in procs if p.poll() is not None]
        if gone:
            sys.exit(f"{NAME}: {len(gone)} of the {args.procs} quiet processes exited at start")
        pids = [a for p in procs for a in ("-p", str(p.pid))]
        rec = subprocess.Popen([ember, "record", "-F", str(args.hz), "-d", str(args.seconds),
                                "--no-progress", "-o", out.name, *pids],
                               stdout=subprocess.DEVNULL, stderr=err)
        # `ember record` becomes the collector (it execs it): its descriptors hold the maps.
        while rec.poll() is None:
            m = bpf_map_memory(rec.pid)
            total = sum(b for b, _ in m.values())
            if total > peak:
                peak, at_peak = total, {i: (b, map_name(i, t)) for i, (b, t) in m.items()}
            time.sleep(1)
        rc = rec.returncode
        alive = sum(1 for p in procs if p.poll() is None)
    finally:
        for p in procs:
            p.kill()
        for p in procs:
            p.wait()
        if rec is not None:
            stop(rec, signal.SIGINT, 10)
        with open(err.name) as f:
            log = f.read()
        for path in (out.name, err.name):
            with contextlib.suppress(OSError):
                os.unlink(path)
    sampling = re.search(r"^ember: sampling \d+ CPUs at", log, re.M)
    if rc != 0 or not sampling:
        sys.exit(f"{NAME}: ember record exited with {rc}"
                 + ("" if sampling else " before it sampled") + ":\n" + log)
    mib = peak / 2**20
    print(f"ember record -p of {args.procs} processes of {len(bins)} programs, {args.seconds} s "
          f"at {args.hz} Hz ({alive} still running at the end): peak BPF map memory "
          f"{mib:.1f} MiB (target: at most {args.target_mib:g} MiB)")
    for _, (b, n) in sorted(at_peak.items(), key=lambda kv: -kv[1][0])[:8]:
        print(f"  {b / 2**20:7.2f} MiB  {n}")
    print(f"binaries kept in {wd} (--bins {wd} reuses them)")
    if mib > args.target_mib:
        sys.exit(f"{NAME}: FAIL: the BPF maps took {mib:.1f} MiB, over the "
                 f"{args.target_mib:g} MiB target")


if __name__ == "__main__":
    main()
