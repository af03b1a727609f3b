#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bench/first_sample: complete stacks from a process's first sample, whole system.

Cases (issue 15), each recorded whole-system by every tool in turn, on the same
work started afresh for each tool:
  build    a parallel C build (make -j2, or -j twice the CPUs with --overcommit, of
           --build-files of ember's own sources:
           cc1, as), 99 Hz
  oneshot  a shell loop starting short -fomit-frame-pointer programs one after
           the other (tests/workloads/quiet.c, 40 ms of CPU each, 10 binaries), after
           a burst of the 10 at once the moment the tool samples, 99 Hz
  quiet    a quiet host: --procs processes of --binaries distinct
           -fomit-frame-pointer programs (quiet.c variants), each waking every
           300 ms for a moment of CPU, started before the tool; 19 Hz
Tools: ember (this build), optionally ember as it was before (--before BUILD,
e.g. main without stack copies), `perf record -a --call-graph fp` and
`--call-graph dwarf`.

--overcommit loads the host (issue 27): one CPU-bound process per CPU at the
same nice level, started before the tool, and the build at make -j twice the
CPUs. --beside perf-g runs `perf record -a -g -F 99` beside ember (and the
older build) for the whole recording. --runs N repeats every case and tool N
times; the summary gives each run's figure and the lowest.

Only the samples of the case's own processes count (by command name: cc1, as,
ld, collect2, gcc for the build; the programs' names otherwise). A stack is
complete when it reaches the program's entry (_start, __libc_start_main, the
dynamic loader's _dl_start_user) or a thread's (start_thread, clone3) and
carries no "[unwind stopped" marker; samples with no user frames (a process in
exec or exit) are left out. Printed per case and tool: the share of complete
stacks among all samples and among each process's first sample (and among
the first samples of processes first sampled in the 100 ms after the tool
said it samples); bytes per
sample (ember: through the sample ring, and the ratio to the same samples
without their stack copies; perf: perf.data size per sample); the tool's CPU
seconds (record + post-processing; ember's eBPF run time not included); for
ember the peak resident memory of collector and symbolizer together (with their
broker workers and readers: the sum of their proportional set sizes, so pages
they share, the program's text and libraries, count once) and the BPF maps'
memory.

the ember statistics' split of samples
(complete in the kernel with every table from the process's list, with some
found by file, from a stack copy; why tables were not found by file).

Usage: sudo bench/first_sample/run.py [--build build] [--before BUILD]
           [--cases build,oneshot,quiet] [--tools ember,before,perf-fp,perf-dwarf]
           [--procs 1000] [--binaries 250] [--quiet-seconds 60] [--oneshots 200]
           [--overcommit] [--beside perf-g] [--runs 5]
"""
import argparse
import collections
import glob
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SRC, "tests", "integration"))
import otlp_receiver  # noqa: E402  (the tests' OTLP reader)
from emberlib import pprof_comments  # noqa: E402  (the statistics in a pprof)

NO_FP = ["-O2", "-fomit-frame-pointer", "-g"]
BUILD_COMMS = ("cc1", "as", "ld", "collect2", "gcc")
ROOTS = re.compile(r"(^_start$|__libc_start_(call_)?main|^_dl_start_user$|^start_thread$|^__?clone3?$"
                   r"|^ld-linux-x86-64\.so\.2\+0x)")


def classify(frames):
    """frames: [(name, is_kernel)] leaf first. 'complete', why not (the marker, or the
    outermost user frames), or None (no user frames: a process in exec or exit)."""
    marker = next((n for n, _ in frames if n.startswith("[unwind stopped")), None)
    if marker:
        return marker
    user = [n for n, k in frames if not k]
    if not user:
        return None
    return "complete" if any(ROOTS.search(n) for n in user) else "ends in " + ";".join(
        reversed(user[-3:]))


def ember_samples(path):
    """[(comm, pid, time_ns, count, frames)] of an ember .otlp file."""
    req_cls, _ = otlp_receiver.classes()
    with open(path, "rb") as f:
        req = req_cls.FromString(f.read())
    d, out = req.dictionary, []
    for rp in req.resource_profiles:
        pid = otlp_receiver.resource_attrs(rp).get("process.pid")
        for sp in rp.scope_profiles:
            for p in sp.profiles:
                for s in p.samples:
                    comm = otlp_receiver.attrs_of(d, s.attribute_indices).get("thread.name")
                    frames = []
                    for li in d.stack_table[s.stack_index].location_indices:
                        loc = d.location_table[li]
                        kernel = otlp_receiver.attrs_of(d, loc.attribute_indices).get(
                            "profile.frame.type") == "kernel"
                        names = [d.string_table[d.function_table[ln.function_index].name_strindex]
                                 for ln in loc.lines] or [f"0x{loc.address:x}"]
                        frames += [(n, kernel) for n in names]
                    out.append((comm or "", pid, min(s.timestamps_unix_nano),
                                otlp_receiver.sample_count(s), frames))
    return out


def perf_samples(data):
    """[(comm, pid, time_ns, 1, frames)] of a perf.data file; the CPU of `perf script`."""
    script = subprocess.Popen(["perf", "script", "-i", data, "-F", "comm,pid,time,ip,sym,dso"],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    text = script.stdout.read()
    post = wait_cpu(script)
    out, cur = [], None
    head = re.compile(r"^(.*?)\s+(\d+)\s+(\d+)\.(\d+):\s*$")
    for line in text.splitlines():
        if not line.strip():
            cur = None
        elif not line[0].isspace():
            m = head.match(line)
            cur = None
            if m:
                cur = (m.group(1).strip(), int(m.group(2)),
                       int(m.group(3)) * 10**9 + int(m.group(4).ljust(9, "0")), 1, [])
                out.append(cur)
        elif cur is not None:
            parts = line.split(None, 1)
            rest = parts[1] if len(parts) > 1 else ""
            dso = rest[rest.rfind("(") + 1:-1] if rest.endswith(")") else ""
            sym = rest[:rest.rfind("(")].strip() if "(" in rest else rest
            sym = re.sub(r"\+0x[0-9a-f]+$", "", sym)
            cur[4].append((sym, "kernel.kallsyms" in dso or dso.startswith("[kernel")))
    return out, post


def shares(samples, wanted, ready_ns):
    """(complete, total) over all samples, over each process's first sample, and over the
    first samples of processes first sampled within 100 ms of ready_ns (the samples' clock)."""
    kinds, first = collections.Counter(), {}
    for comm, pid, ts, n, frames in samples:
        if not wanted(comm):
            continue
        k = classify(frames)
        if k is None:
            continue
        kinds[k] += n
        if pid not in first or ts < first[pid][0]:
            first[pid] = (ts, k)
    fk = collections.Counter(k for _, k in first.values())
    early = [k for ts, k in first.values() if ts < ready_ns + 100_000_000]
    why = [f"{n} {k}" for k, n in kinds.most_common(4) if k != "complete"][:3]
    return ((kinds["complete"], sum(kinds.values())), (fk["complete"], len(first)),
            (early.count("complete"), len(early)), why)


def wait_cpu(proc):
    """Waits for proc; its CPU seconds (user + system), reaped descendants included."""
    _, _, ru = os.wait4(proc.pid, 0)
    proc.returncode = 0
    return ru.ru_utime + ru.ru_stime


def descendants(pid):
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        for f in glob.glob(f"/proc/{p}/task/*/children"):
            try:
                todo += [int(c) for c in open(f).read().split()]
            except OSError:
                pass
    return out


def pss_kib(pid):
    """Proportional set size: resident pages, each shared one divided among its sharers.
    Summed over ember's processes it counts their shared pages once (VmRSS would count the
    program and libraries in each of its nine processes)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            return next(int(l.split()[1]) for l in f if l.startswith("Pss:"))
    except (OSError, StopIteration):
        return 0


def bpf_map_memory(pid):
    """{map id: (bytes, type)} of the BPF maps process pid holds (memlock in each map
    descriptor's fdinfo)."""
    seen = {}
    for fd in glob.glob(f"/proc/{pid}/fd/*"):
        try:
            if os.readlink(fd) != "anon_inode:bpf-map":
                continue
            with open(fd.replace("/fd/", "/fdinfo/")) as f:
                info = dict(l.split(":", 1) for l in f if ":" in l)
            seen[int(info["map_id"])] = (int(info["memlock"]), info.get("map_type", "?").strip())
        except (OSError, KeyError, ValueError):
            pass
    return seen


def bpf_map_bytes(pid):
    """Memory of the BPF maps process pid holds."""
    return sum(n for n, _ in bpf_map_memory(pid).values())


class Recording:
    """One tool recording the whole system until stop(); then its samples and costs."""

    def __init__(self, tool, build, wd, tag, hz, beside=None):
        self.tool, self.wd, self.tag, self.peak_kib, self.map_bytes = tool, wd, tag, 0, 0
        self.beside = None
        if beside == "perf-g" and not tool.startswith("perf"):
            # Another profiler on the host, for the whole recording: its samples, its CPU.
            self.beside = subprocess.Popen(["perf", "record", "-q", "-a", "-g", "-F", "99", "-o",
                                            os.path.join(wd, f"{tag}-beside.data")],
                                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(1.5)
        if tool.startswith("perf"):
            self.out = os.path.join(wd, f"{tag}.data")
            mode = tool.split("-")[1]
            self.proc = subprocess.Popen(["perf", "record", "-q", "-a", "-F", str(hz),
                                          "--call-graph", mode, "-o", self.out],
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(1.5)  # perf has no "ready" signal: give it its start-up
            self.ready_ns = time.monotonic_ns()  # perf script's clock: the kernel's, from boot
            return
        self.out = os.path.join(wd, f"{tag}.otlp")
        self.pprof = os.path.join(wd, f"{tag}.pb.gz")
        self.proc = subprocess.Popen([os.path.join(build, "ember"), "record", "-F", str(hz),
                                      "--no-progress", "-o", self.out, "-o", self.pprof],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        # Ready once ember samples: it says so on stderr once its programs are attached
        # (after the symbolizer connected). A process started before then is one that was
        # running when the profiler started, not one started under it. Builds older than
        # that line say only that the symbolizer connected: they are given 2 s more.
        self.err = []
        for line in self.proc.stderr:
            self.err.append(line)
            if re.match(r"ember: sampling \d+ CPUs at", line):
                self.ready_ns = time.time_ns()  # ember's samples carry the time of day
                break
            if "connected" in line and tool == "before":
                time.sleep(2)
                self.ready_ns = time.time_ns()
                break
        else:
            sys.exit(f"{tag}: ember did not start:\n" + "".join(self.err))

    def poll(self):
        if self.tool.startswith("perf"):
            return
        self.peak_kib = max(self.peak_kib, sum(pss_kib(p) for p in descendants(self.proc.pid)))
        self.map_bytes = max(self.map_bytes, bpf_map_bytes(self.proc.pid))

    def stop(self):
        os.kill(self.proc.pid, 2)  # not Popen.send_signal: it may reap, and wait4 needs the child
        if self.beside:
            self.beside.send_signal(2)
            self.beside.wait()
            os.unlink(os.path.join(self.wd, f"{self.tag}-beside.data"))
        self.stats = {}
        if self.tool.startswith("perf"):
            cpu = wait_cpu(self.proc)
            samples, post = perf_samples(self.out)
            size = os.path.getsize(self.out)
            return samples, cpu + post, size / max(len(samples), 1), None
        self.err.append(self.proc.stderr.read())
        cpu = wait_cpu(self.proc)
        if not os.path.exists(self.pprof):
            print(f"{self.tag}: ember wrote no profile:\n" + "".join(self.err), flush=True)
            return [], cpu, float("nan"), None
        stats = self.stats = pprof_comments(self.pprof)
        samples = ember_samples(self.out)
        n = sum(s[3] for s in samples)
        ring = stats.get("ring.sample_bytes")
        without = stats.get("ring.sample_bytes_without_copies")
        per = ring / max(n, 1) if ring else float("nan")
        ratio = ring / without if ring and without else None
        return samples, cpu, per, ratio


def build_quiet(wd, variants):
    """The quiet.c variants as distinct binaries, built two at a time."""
    src = os.path.join(SRC, "tests", "workloads", "quiet.c")
    mk = os.path.join(wd, "quiet.mk")
    with open(mk, "w") as f:
        names = [f"fsb_q{v}" for v in range(variants)]
        f.write("all: " + " ".join(names) + "\n")
        for v, n in enumerate(names):
            f.write(f"{n}: {src}\n\tgcc {' '.join(NO_FP)} -DVARIANT={v} -o $@ $<\n")
    subprocess.run(["make", "-s", "-j2", "-C", wd, "-f", mk], check=True)
    return [os.path.join(wd, f"fsb_q{v}") for v in range(variants)]


def start_hogs(args):
    """--overcommit: one CPU-bound process per CPU, at the same nice level as the work."""
    if not args.overcommit:
        return []
    return [subprocess.Popen(["/bin/sh", "-c", "while :; do :; done"], start_new_session=True)
            for _ in range(os.cpu_count())]


def stop_hogs(hogs):
    for h in hogs:
        os.killpg(h.pid, 9)
        h.wait()


def start_work(args, case, tool, wd, run):
    if case == "oneshot":
        # The burst: each binary's first run, all at once, in the tool's first 100 ms.
        loop = ("for v in $(seq 0 9); do \"$0\"_$v 0 40 & done; "
                "for i in $(seq %d); do \"$0\"_$((i %% 10)) 0 40; done; wait" % args.oneshots)
        return subprocess.Popen(["/bin/sh", "-c", loop, os.path.join(wd, "fsb_q")])
    objs = os.path.join(wd, f"obj-{tool}-{run}")
    os.makedirs(objs, exist_ok=True)
    jobs = 2 * os.cpu_count() if args.overcommit else 2
    return subprocess.Popen(["make", "-s", "-k", f"-j{jobs}", "-C", objs, "-f",
                             os.path.join(wd, "build.mk")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


# The ember statistics that say how samples were unwound, and why tables were not found by file.
SPLIT = ("unwind.samples_by_process", "unwind.samples_by_file", "unwind.samples_complete_copy",
         "unwind.samples_incomplete", "unwind.file.unseen", "unwind.file.no_vma",
         "unwind.file.changed", "unwind.copy.skipped_budget", "unwind.stop.maps_not_read")


def run_case(args, case, tool, wd, bins, run=0):
    """Runs one case under one tool; returns the printed row's cells."""
    build = args.before if tool == "before" else args.build
    tag = f"{case}-{tool}-{run}"
    hz = 19 if case == "quiet" else 99
    procs = []
    hogs = start_hogs(args)
    try:
        if case == "quiet":
            # Started before the tool: a host's daemons are running when the profiler starts.
            procs = [subprocess.Popen([bins[i % len(bins)], "300", str(args.quiet_work),
                                       str(args.quiet_seconds + 30)]) for i in range(args.procs)]
            time.sleep(3)
            wanted = lambda c: c.startswith("fsb_q")  # noqa: E731
        elif case == "oneshot":
            wanted = lambda c: c.startswith("fsb_q")  # noqa: E731
        else:
            wanted = lambda c: c in BUILD_COMMS  # noqa: E731
        rec = Recording(tool, build, wd, tag, hz, args.beside)
        t0 = time.monotonic()
        work = None
        if case == "quiet":
            while time.monotonic() - t0 < args.quiet_seconds:
                rec.poll()
                time.sleep(1)
        else:
            work = start_work(args, case, tool, wd, run)
        while work and work.poll() is None:
            rec.poll()
            time.sleep(0.5)
        elapsed = time.monotonic() - t0
        time.sleep(1)
        samples, cpu, per_sample, ratio = rec.stop()
    finally:  # a run that fails leaves no CPU hog behind
        stop_hogs(hogs)
        for p in procs:
            p.kill()
            p.wait()
    (good, total), (fgood, ftotal), (egood, etotal), why = shares(samples, wanted, rec.ready_ns)
    row = {"all": (good, total), "first": (fgood, ftotal), "early": (egood, etotal), "cpu": cpu,
           "bytes": per_sample, "ratio": ratio, "rss": rec.peak_kib, "maps": rec.map_bytes,
           "elapsed": elapsed}
    print(f"{case:8s} {tool:10s} run {run}, {elapsed:5.1f}s: complete {good}/{total}, first "
          f"samples {fgood}/{ftotal} (in the first 100 ms {egood}/{etotal}), "
          f"{per_sample:.0f} B/sample" + (f" ({ratio:.2f}x without copies)" if ratio else "")
          + f", cpu {cpu:.2f}s" + (f", peak resident (PSS) {rec.peak_kib / 1024:.1f} MiB, BPF maps "
                                   f"{rec.map_bytes / 2**20:.1f} MiB" if rec.peak_kib else ""),
          flush=True)
    if rec.stats:
        print("    " + ", ".join(f"{k[7:]} {rec.stats.get(k, 0)}" for k in SPLIT))
    for w in why:
        print(f"    incomplete: {w}")
    return row


def write_build_makefile(args, wd):
    """make -j2 of ember's own sources (those that compile without generated headers too)."""
    files = sorted(glob.glob(os.path.join(SRC, "shared", "*.c")) +
                   glob.glob(os.path.join(SRC, "ipc", "*.c")) +
                   glob.glob(os.path.join(SRC, "symbolizer", "*", "*.c")))[:args.build_files]
    flags = f"-O2 -g -std=gnu17 -I{SRC} -I{args.build} -I{args.build}/proto"
    with open(os.path.join(wd, "build.mk"), "w") as f:
        objs = [(f"o{i}_{r}.o", src) for r in range(args.build_rounds)
                for i, src in enumerate(files)]
        f.write("all: " + " ".join(o for o, _ in objs) + "\n")
        for o, src in objs:
            f.write(f"{o}: {src}\n\tgcc {flags} -c -o $@ $<\n")
    return len(objs)


def pct(cell):
    good, total = cell
    return f"{100.0 * good / total:.1f}% of {total}" if total else "no samples"


def share(cell):
    return 100.0 * cell[0] / cell[1] if cell[1] else 100.0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(SRC, "build"))
    ap.add_argument("--before", help="a build of ember to compare with (e.g. an older main)")
    ap.add_argument("--cases", default="build,oneshot,quiet")
    ap.add_argument("--tools", default="ember,before,perf-fp,perf-dwarf")
    ap.add_argument("--procs", type=int, default=1000)
    ap.add_argument("--binaries", type=int, default=250)
    ap.add_argument("--quiet-seconds", type=int, default=60)
    ap.add_argument("--quiet-work", type=float, default=0.1, help="ms of CPU per wake-up")
    ap.add_argument("--oneshots", type=int, default=200)
    ap.add_argument("--build-files", type=int, default=48, help="C files the build compiles")
    ap.add_argument("--build-rounds", type=int, default=3, help="times it compiles each")
    ap.add_argument("--overcommit", action="store_true",
                    help="a CPU-bound process per CPU, and the build at make -j twice the CPUs")
    ap.add_argument("--beside", choices=["perf-g"], help="another profiler beside ember")
    ap.add_argument("--runs", type=int, default=1, help="times each case and tool runs")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench/first_sample: run as root (eBPF, perf)")
    tools = [t for t in args.tools.split(",") if t != "before" or args.before]
    wd = tempfile.mkdtemp(prefix="ember-bench-first-")
    cases = args.cases.split(",")
    bins = build_quiet(wd, max(args.binaries if "quiet" in cases else 0, 10))
    for v in range(10):
        os.symlink(bins[v], os.path.join(wd, f"fsb_q_{v}"))
    if "build" in cases:
        jobs = 2 * os.cpu_count() if args.overcommit else 2
        print(f"build: {write_build_makefile(args, wd)} compilations, make -j{jobs}", flush=True)
    results = collections.defaultdict(list)
    for run in range(args.runs):
        for case in cases:
            for tool in tools:
                results[(case, tool)].append(run_case(args, case, tool, wd, bins, run))

    print("\ncomplete = reaches _start/__libc_start_main/a thread entry, no marker; "
          "samples without user frames left out" + ("; host overcommitted" if args.overcommit
                                                    else "") +
          (f"; {args.beside} beside" if args.beside else "") + "\n")
    print("| case | tool | complete (each run; lowest) | first samples complete | of them in the "
          "first 100 ms | bytes/sample | tool CPU s | peak resident (PSS) | BPF maps |")
    print("|---|---|---|---|---|---|---|---|---|")
    for case in cases:
        for tool in tools:
            rows = results[(case, tool)]
            r = rows[-1]
            ratio = f" ({r['ratio']:.2f}x fp-only)" if r["ratio"] else ""
            rss = f"{max(x['rss'] for x in rows) / 1024:.1f} MiB" if r["rss"] else "-"
            maps = f"{max(x['maps'] for x in rows) / 2**20:.1f} MiB" if r["maps"] else "-"
            each = lambda key: ", ".join(pct(x[key]) for x in rows) + (  # noqa: E731
                f"; lowest {min(share(x[key]) for x in rows):.1f}%" if len(rows) > 1 else "")
            print(f"| {case} | {tool} | {each('all')} | {each('first')} | {each('early')} | "
                  f"{r['bytes']:.0f}{ratio} | {r['cpu']:.2f} | {rss} | {maps} |")


if __name__ == "__main__":
    main()
