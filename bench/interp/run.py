#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bench/interp: what reading interpreted frames costs, per runtime, beside native-only frames.

Each runtime has a workload with a known split (60/30/10 over three leaf
methods or functions) that measures its own thread-CPU truth:

  python   tests/workloads/pysplit.py split, on the newest CPython found
           (pyenv's, else Debian's python3.11)
  ruby     tests/workloads/rbsplit.rb split, on Debian's ruby3.1
  php      tests/workloads/phpsplit.php split, on Debian's php8.2
  perl     tests/workloads/plsplit.pl split, on Debian's perl (5.36)
  jvm      tests/workloads/JvmSplit.java split, on Debian's OpenJDK 17 (tiered:
           interpreted, then C1 and C2 code)

One run records, for each runtime chosen (--runtime, all by default), a fresh
instance of its workload for the same time at the same frequency:

  ember RUNTIME  ember record -p PID --interpreters RUNTIME: the runtime's
                 frames walked in eBPF, named in the symbolizer
  ember native   the same workload with --interpreters none: native frames only
                 (the interpreter loop, no Python functions or Ruby methods)
  perf -X perf   Python only: python3.12 -X perf (3.12+; CPython's perf
                 trampolines and /tmp/perf-PID.map) under `perf record
                 --call-graph dwarf` (the interpreter has no frame pointers),
                 then `perf script`. ruby3.1, php8.2 and perl give perf no
                 names for their functions (no perf map, no trampolines): they
                 have no perf row.

Figures per run: samples of the workload; eBPF run time per sample
(kernel.bpf_stats_enabled, ember's program only; the program also runs, and
returns early, on the CPU samples of every process -p did not choose: a run
recording an idle process measures that cost, which is taken out); symbolizer
CPU (on-CPU time of ember-symbolizer and of its reader processes, which read
the interpreters' memory for it, in ns from /proc while it runs); for perf,
the CPU of perf record and perf script; and the attribution: each leaf's
share against the workload's own truth. A short run (--short) beside each
long one separates start-up from the cost per 1,000 samples (the short run
should outlast the symbolizer's start-up: about 2 s on a busy 2-CPU host).
The table ends with ratios between rows of the same run (each runtime against
native-only on its workload, each against Python): on a shared machine the
absolute figures move from run to run, the ratios less.

Usage: sudo bench/interp/run.py [--runtime python] [--runtime ruby] [--runtime php]
                                [--runtime perl] [--runtime jvm] [--duration 10]
                                [--short 3] [--hz 499] [--build build]
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
WORKLOADS = os.path.join(SRC, "tests", "workloads")
LEAVES = ("leaf_a", "leaf_b", "leaf_c")
RUBY = "/usr/bin/ruby3.1"
PHP = "/usr/bin/php8.2"
PERL = "/usr/bin/perl"
JDK = "/usr/lib/jvm/java-17-openjdk-amd64"

# A runtime under test: its --interpreters name; the command that runs its workload
# (`split SECONDS` appended; perf's flags go after exe); the comm its samples carry; its
# leaves' frame names, as ember names them; what the table says of it; perf: True when
# perf can name its frames, else why not; pre: arguments before script (Java's class path).
Runtime = collections.namedtuple("Runtime", "name exe script comm names label frames perf pre",
                                 defaults=((),))


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


def python_runtime():
    version, exe = newest_python()
    perf = version >= (12, 0) or f"no CPython 3.12+ for -X perf ({exe} is 3.{version[0]})"
    return Runtime("python", exe, os.path.join(WORKLOADS, "pysplit.py"), "python",
                   {leaf: leaf for leaf in LEAVES},
                   f"{exe} (3.{version[0]}.{version[1]}), pysplit.py split", "Python functions",
                   perf)


def debian_runtime(name, exe, script, comm, names, version_args, frames):
    """A runtime from Debian's packages (scripts/install-deps.sh), or None without it; its
    version printed by exe with version_args; perf has no names for its functions (no perf map,
    no trampolines like CPython 3.12's -X perf)."""
    if not os.access(exe, os.X_OK):
        print(f"no {exe} (scripts/install-deps.sh installs it): no {name} runs")
        return None
    r = subprocess.run([exe, *version_args], capture_output=True, text=True)
    return Runtime(name, exe, os.path.join(WORKLOADS, script), comm, names,
                   f"{exe} ({r.stdout.strip()}), {script} split", frames,
                   f"{os.path.basename(exe)} gives perf no names for {frames} (no perf map)")


def jvm_runtime():
    """Debian's OpenJDK 17 on JvmSplit.java, compiled here; None without it."""
    java, javac = f"{JDK}/bin/java", f"{JDK}/bin/javac"
    if not os.access(javac, os.X_OK):
        print(f"no {javac} (scripts/install-deps.sh installs it): no jvm runs")
        return None
    classes = tempfile.mkdtemp(prefix="ember-bench-jvm-")
    os.chmod(classes, 0o755)
    subprocess.run([javac, "-d", classes, os.path.join(WORKLOADS, "JvmSplit.java")], check=True)
    r = subprocess.run([java, "-version"], capture_output=True, text=True)
    version = r.stderr.splitlines()[0] if r.stderr else "?"
    return Runtime("jvm", java, "JvmSplit", "java",
                   {f"JvmSplit.{n}": leaf for n, leaf in zip(("leafA", "leafB", "leafC"), LEAVES)},
                   f"{java} ({version}), JvmSplit split", "Java methods",
                   "java gives perf no names for compiled code without a perf map "
                   "(jcmd Compiler.perfmap) nor frames through it without "
                   "-XX:+PreserveFramePointer", ("-cp", classes))


def v8_runtime():
    """npm's Node 20 (tests/integration/nodes.py fetches it into the build tree) on
    nodesplit.js."""
    sys.path.insert(0, os.path.join(os.path.dirname(WORKLOADS), "integration"))
    import nodes  # noqa: E402 - the tests' own fetcher
    try:
        node = nodes.fetch("20.20.2")
    except OSError as e:
        print(f"cannot fetch node from the npm registry ({e}): no v8 runs")
        return None
    return Runtime("v8", node, os.path.join(WORKLOADS, "nodesplit.js"), "node",
                   {n: leaf for n, leaf in zip(("leafA", "leafB", "leafC"), LEAVES)},
                   f"{node} (20.20.2), nodesplit.js split", "JavaScript functions",
                   "node gives perf no names for its JavaScript without a perf map "
                   "(--perf-basic-prof)")


RUNTIMES = {
    "python": python_runtime,
    "ruby": lambda: debian_runtime("ruby", RUBY, "rbsplit.rb", "ruby",
                                   {f"Shop::Cart#{leaf}": leaf for leaf in LEAVES},
                                   ("-e", "print RUBY_VERSION"), "Ruby methods"),
    "php": lambda: debian_runtime("php", PHP, "phpsplit.php", "php8.2",
                                  {f"Shop\\Cart::{leaf}": leaf for leaf in LEAVES},
                                  ("-r", "echo PHP_VERSION;"), "PHP functions"),
    "perl": lambda: debian_runtime("perl", PERL, "plsplit.pl", "perl",
                                   {f"Shop::Cart::{leaf}": leaf for leaf in LEAVES},
                                   ("-e", "printf '%vd', $^V"), "Perl subs"),
    "jvm": jvm_runtime,
    "v8": v8_runtime,
}


def cpu_of(pid):
    """CPU seconds of a live process's threads, or None: their on-CPU time in ns
    (/proc/PID/task/TID/schedstat). /proc/PID/stat counts clock ticks, 10 ms: coarser than
    what the symbolizer spends between a short run and a long one."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    ns = 0
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                ns += int(f.read().split()[0])
        except (OSError, IndexError, ValueError):
            pass  # the thread exited
    return ns / 1e9


def symbolizer_cpu(pid):
    """CPU seconds of ember-symbolizer and of its reader processes (symbolizer/client/reader.c:
    they read the files, and the interpreters' memory, it asks for), or None."""
    own = cpu_of(pid)
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            children = [int(c) for c in f.read().split()]
    except (OSError, ValueError):
        children = []
    return None if own is None else own + sum(cpu_of(c) or 0.0 for c in children)


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


def start_workload(rt, wd, tag, extra=()):
    truth = os.path.join(wd, f"{tag}.truth")
    proc = subprocess.Popen([rt.exe, *extra, *rt.pre, rt.script, "split", "600"],
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


def run_ember(args, rt, wd, tag, duration, interpreters):
    proc, truth = start_workload(rt, wd, tag)
    folded = os.path.join(wd, f"{tag}.folded")
    rec = subprocess.Popen([os.path.join(args.build, "ember"), "record", "-d", str(duration),
                            "-F", str(args.hz), "-p", str(proc.pid), "-o", folded,
                            "--interpreters", interpreters],
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
            sym_cpu = max(sym_cpu, symbolizer_cpu(sym_pid) or 0.0)
        time.sleep(0.05)
    stop_workload(proc)
    counts, samples = collections.Counter(), 0
    with open(folded) as f:
        for line in f:
            frames, _, n = line.rstrip("\n").rpartition(" ")
            frames = frames.split(";")
            if not frames or not frames[0].startswith(rt.comm):
                continue
            samples += int(n)
            leaf = next((rt.names[x] for x in reversed(frames) if x in rt.names), None)
            if leaf:
                counts[leaf] += int(n)
    # measured: some poll above read the program's and the symbolizer's figures while they ran.
    return {"samples": samples, "bpf": bpf, "calls": calls, "cpu": sym_cpu,
            "shares": shares(counts), "truth": truth_of(truth),
            "measured": calls > 0 and sym_cpu > 0}


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


def run_perf(args, rt, wd, tag, duration):
    """CPython only: its -X perf trampolines name Python functions py::NAME:FILE for perf."""
    proc, truth = start_workload(rt, wd, tag, extra=("-X", "perf"))
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
            "shares": shares(counts), "truth": truth_of(truth), "measured": True}


def ratio(a, b):
    """a / b, or n/a when either is not a positive figure: NaN (no samples), or a difference
    of CPU times at the clock tick's resolution that came out at or below zero (short runs)."""
    return f"x{a / b:.2f}" if a > 0 and b > 0 else "n/a"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runtime", action="append", choices=sorted(RUNTIMES),
                    help="a runtime to measure (repeat for more; default: all of them)")
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--short", type=int, default=3)
    ap.add_argument("--hz", type=int, default=499)
    ap.add_argument("--build", default=os.path.join(SRC, "build"))
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench/interp: run as root (eBPF, perf)")
    runtimes = [rt for rt in (RUNTIMES[n]() for n in args.runtime or RUNTIMES) if rt]
    if not runtimes:
        sys.exit("bench/interp: none of the runtimes asked for is installed")
    wd = tempfile.mkdtemp(prefix="ember-bench-interp-")
    runs = []  # (runtime, row name, fn(tag, seconds))
    for rt in runtimes:
        runs.append((rt, f"ember {rt.name}",
                     lambda t, d, rt=rt: run_ember(args, rt, wd, t, d, rt.name)))
        runs.append((rt, "ember native", lambda t, d, rt=rt: run_ember(args, rt, wd, t, d, "none")))
        if rt.perf is True:
            runs.append((rt, "perf -X perf", lambda t, d, rt=rt: run_perf(args, rt, wd, t, d)))
    with open("/proc/sys/kernel/bpf_stats_enabled") as f:
        stats_before = f.read().strip()
    subprocess.run(["sysctl", "-q", "kernel.bpf_stats_enabled=1"], check=False)
    results = {}
    try:
        call0 = filtered_call_ns(args, wd, args.short)
        print(f"ember_sample on a sample of a process not chosen: {call0:.0f} ns", flush=True)
        for rt, name, fn in runs:
            for d in (args.duration, args.short):
                for attempt in range(3):
                    r = fn(f"{rt.name}-{name.replace(' ', '-')}-{d}-{attempt}", d)
                    if r["measured"]:
                        break
                    print(f"{rt.name:6s} {name:13s} {d:3d}s: ember's program or symbolizer "
                          "not read while it ran: recording again",
                          flush=True)
                results[(rt.name, name, d)] = r
                print(f"{rt.name:6s} {name:13s} {d:3d}s: {r['samples']} samples, "
                      f"eBPF {r['bpf']:.4f}s, CPU {r['cpu']:.2f}s, shares " +
                      " ".join(f"{k} {r['shares'].get(k, 0):.1f}% ({r['truth'].get(k, 0):.1f}%)"
                               for k in LEAVES), flush=True)
    finally:
        subprocess.run(["sysctl", "-q", f"kernel.bpf_stats_enabled={stats_before}"], check=False)

    print(f"\n{args.hz} Hz, {args.duration} s and {args.short} s runs of each:")
    for rt in runtimes:
        print(f"  {rt.name}: {rt.label}")
    print("\n| workload | run | samples | eBPF per sample | symbolizer (perf: record + script) "
          "CPU per 1000 samples | start-up CPU | worst share error vs truth |")
    print("|---|---|---|---|---|---|---|")
    per = {}
    for rt, name, _ in runs:
        lo, hi = results[(rt.name, name, args.short)], results[(rt.name, name, args.duration)]
        dn = hi["samples"] - lo["samples"]
        cpu1000 = 1000.0 * (hi["cpu"] - lo["cpu"]) / dn if dn > 0 else float("nan")
        # The calls that were not the workload's samples cost what a filtered call costs.
        own = 1e9 * hi["bpf"] - max(hi["calls"] - hi["samples"], 0) * call0
        bpf_ns = own / hi["samples"] if hi["samples"] else float("nan")
        err = max(abs(hi["shares"].get(k, 0) - hi["truth"].get(k, 0)) for k in LEAVES) \
            if hi["shares"] else float("nan")
        per[(rt.name, name)] = (bpf_ns, cpu1000)
        print(f"| {os.path.basename(rt.script)} | {name} | {hi['samples']} | " +
              (f"{bpf_ns / 1000:.1f} µs" if hi["bpf"] else "-") +
              f" | {cpu1000 * 1000:.1f} ms | {lo['cpu']:.2f} s | " +
              (f"{err:.1f} points" if hi["shares"] else f"no {rt.frames}") + " |")

    print("\nRatios (eBPF per sample, symbolizer CPU per 1000 samples):")
    for rt in runtimes:
        mine, nat = per[(rt.name, f"ember {rt.name}")], per[(rt.name, "ember native")]
        print(f"  ember {rt.name} / native-only on {os.path.basename(rt.script)}: "
              f"{ratio(mine[0], nat[0])}, {ratio(mine[1], nat[1])}")
    names = [rt.name for rt in runtimes]
    for rt in runtimes if "python" in names else ():
        if rt.name == "python":
            continue
        mine, py = per[(rt.name, f"ember {rt.name}")], per[("python", "ember python")]
        nat, pyn = per[(rt.name, "ember native")], per[("python", "ember native")]
        print(f"  ember {rt.name} / ember python: {ratio(mine[0], py[0])}, "
              f"{ratio(mine[1], py[1])} (native-only, {os.path.basename(rt.script)} / "
              f"pysplit.py: {ratio(nat[0], pyn[0])}, {ratio(nat[1], pyn[1])})")
    for rt in runtimes:
        if rt.perf is True:
            mine, pf = per[(rt.name, f"ember {rt.name}")], per[(rt.name, "perf -X perf")]
            print(f"  ember {rt.name} / perf -X perf: CPU per 1000 samples "
                  f"{ratio(mine[1] + mine[0] / 1e6, pf[1])} (ember: symbolizer + eBPF; perf: "
                  "record + script)")
        else:
            print(f"  {rt.name}: no perf row: {rt.perf}")


if __name__ == "__main__":
    main()
