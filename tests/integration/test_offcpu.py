#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Off-CPU profiles (`ember record --off-cpu`) against waits the workload
measures itself (tests/workloads/offcpu.c): each waiting function's share of
the off-CPU time and the total, a thread moved to another CPU while it
sleeps, the sampling at thousands of waits a second, the outputs (pprof's
off_cpu sample type and wait labels, OTLP's second profile, folded
microseconds, `ember top --view off-cpu`), and the flame graph's off-CPU view
drawn in headless Chromium."""
import collections
import importlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from emberlib import (BUILD, EMBER, GO, SRC, build_workload, collector_argv, ember, html_data, kill, log,
                      read_folded, require_root, run_tests, skip_or_fail, symbolizer_argv, workdir)

require_root()
WD = workdir()
ARTIFACTS = os.path.join(BUILD, "artifacts")
os.makedirs(ARTIFACTS, exist_ok=True)
WORKLOAD = build_workload("offcpu", WD)
SHARE_POINTS = 3.0  # each function's share of the off-CPU time, percentage points
TOTAL_PCT = 5.0     # total off-CPU time, percent


def pprof_module():
    """google/pprof's schema (tests/upstream/pprof, not ember's) as Python classes (protoc,
    then import)."""
    out = tempfile.mkdtemp(prefix="pprof-py-", dir=WD)
    proto_dir = os.path.join(SRC, "tests", "upstream", "pprof")
    subprocess.run(["protoc", f"-I{proto_dir}", f"--python_out={out}", "profile.proto"], check=True)
    sys.path.insert(0, out)
    return importlib.import_module("profile_pb2")


def read_pprof(path):
    import gzip
    prof = pprof_module().Profile()
    with open(path, "rb") as f:
        prof.ParseFromString(gzip.decompress(f.read()))
    return prof


def pprof_stats(prof):
    """The statistics ember writes as pprof comments "#name=value"."""
    return dict(c.lstrip("#").split("=", 1) for c in (prof.string_table[i] for i in prof.comment)
                if c.startswith("#") and "=" in c)


def pprof_samples(prof):
    """[(frames leaf first, {type: value}, {label: value})] of every sample."""
    st = prof.string_table
    types = [st[t.type] for t in prof.sample_type]
    funcs = {f.id: st[f.name] for f in prof.function}
    locs = {l.id: [funcs[ln.function_id] for ln in l.line] for l in prof.location}
    out = []
    for s in prof.sample:
        frames = [name for lid in s.location_id for name in locs[lid]]
        labels = {st[l.key]: (st[l.str] if l.str else l.num) for l in s.label}
        out.append((frames, dict(zip(types, s.value)), labels))
    return out


def record_workload(mode, seconds, *ember_args, outputs=("off.pb.gz", "off.folded")):
    """Runs the workload under `ember record --off-cpu -p PID`; returns (truth, paths, stderr)."""
    wl = subprocess.Popen([WORKLOAD, mode, str(seconds), WD], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert wl.stdout.readline().strip() == "ready"
    paths = [os.path.join(WD, f"{mode}-{o}") for o in outputs]
    args = [EMBER, "record", "--no-progress", "-d", str(seconds + 6), "-F", "99", "-p", str(wl.pid),
            *ember_args]
    for p in paths:
        args += ["-o", p]
    rec = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(2.0)  # the collector attaches its programs
        wl.stdin.write("warm\n")
        wl.stdin.flush()
        time.sleep(0.8)  # warm_up runs 0.3 s on CPU: the process's unwind tables load
        wl.stdin.write("go\n")
        wl.stdin.flush()
        out, err = wl.communicate(timeout=seconds + 30)
        assert wl.returncode == 0, err
        _, rerr = rec.communicate(timeout=seconds + 60)
        assert rec.returncode == 0, rerr
    finally:
        kill(wl)
        kill(rec)
    truth = {}
    for field in out.split():
        k, _, v = field.partition("=")
        truth[k] = int(v)
    log(f"  measured: { {k: (v / 1e9 if k.startswith(('wait', 'main', 'feeder', 'waker', 'mover')) else v) for k, v in truth.items()} }")
    return truth, paths, rerr


def off_cpu_by_function(folded_path, functions):
    """Microseconds off CPU below each function (from `--view off-cpu` folded output), and the
    process's total."""
    by_fn = collections.Counter()
    total = 0
    for frames, us in read_folded(folded_path):
        total += us
        for f in functions:
            if f in frames:
                by_fn[f] += us
    return by_fn, total


def compare(truth, measured_fns, folded_path, share_points=SHARE_POINTS, total_pct=TOTAL_PCT):
    got, process_total = off_cpu_by_function(folded_path, measured_fns)
    want_total = sum(truth[f] for f in measured_fns) / 1000.0  # us
    got_total = sum(got.values())
    log(f"  off-CPU total: ember {got_total / 1e6:.3f} s (whole process {process_total / 1e6:.3f} s), "
        f"measured {want_total / 1e6:.3f} s")
    failures = []
    for f in measured_fns:
        want = 100.0 * truth[f] / 1000.0 / want_total
        share = 100.0 * got[f] / got_total if got_total else 0.0
        ok = abs(share - want) <= share_points
        log(f"  {f:16s} ember {share:5.1f}%  measured {want:5.1f}%  {'ok' if ok else 'FAIL'}")
        if not ok:
            failures.append(f"{f}: {share:.1f}% vs {want:.1f}%")
    err = 100.0 * abs(got_total - want_total) / want_total
    log(f"  total within {err:.2f}% (limit {total_pct}%)")
    if err > total_pct:
        failures.append(f"total {got_total} us vs {want_total} us")
    # Nothing of the process waits outside the measured functions but thread starts and exits.
    outside = 100.0 * (process_total - got_total) / process_total if process_total else 0.0
    log(f"  off-CPU time outside the measured functions: {outside:.2f}%")
    if outside > total_pct:
        failures.append(f"{outside:.1f}% of the off-CPU time outside the measured functions")
    assert not failures, failures
    return got


KNOWN = {}


def test_known_waits():
    truth, (pb, folded, otlp, html), err = record_workload(
        "known", 8, "--off-cpu", "--view", "off-cpu",
        outputs=("off.pb.gz", "off.folded", "off.otlp", "off.html"))
    KNOWN.update(truth=truth, pb=pb, folded=folded, otlp=otlp, html=html)
    fns = [f for f in ("wait_sleep", "wait_pipe", "wait_futex", "wait_disk", "feeder_idle",
                       "feeder_delay", "waker_idle", "waker_delay", "main_wait", "wait_go")
           if f in truth]
    if "wait_disk" not in truth:
        log("  (no direct I/O here: no disk waits)")
    compare(truth, fns, folded)


def test_pprof_has_off_cpu_values_and_wait_reasons():
    prof = read_pprof(KNOWN["pb"])
    st = prof.string_table
    types = [(st[t.type], st[t.unit]) for t in prof.sample_type]
    assert types == [("samples", "count"), ("cpu", "nanoseconds"), ("off_cpu", "nanoseconds")], types
    assert st[prof.default_sample_type] == "samples"
    reasons = collections.Counter()
    cpu_samples = 0
    for frames, values, labels in pprof_samples(prof):
        # A sample is one or the other: CPU samples carry 0 off CPU and the reverse.
        assert (values["samples"] > 0) != (values["off_cpu"] > 0), values
        if values["samples"]:
            cpu_samples += values["samples"]
            assert "wait" not in labels and values["cpu"] == values["samples"] * prof.period
            continue
        assert values["cpu"] == 0 and "wait" in labels, (values, labels)
        for f in ("wait_sleep", "wait_pipe", "wait_futex", "wait_disk", "main_wait"):
            if f in frames:
                reasons[(f, labels["wait"])] += values["off_cpu"]
    log(f"  wait reasons: {dict(reasons)}")
    log(f"  CPU samples beside: {cpu_samples}")

    def main_reason(f):
        mine = {r: v for (fn, r), v in reasons.items() if fn == f}
        return max(mine, key=mine.get) if mine else None
    assert main_reason("wait_sleep") == "sleep", reasons
    assert main_reason("wait_pipe") == "read", reasons
    assert main_reason("wait_futex") == "futex", reasons
    if "wait_disk" in KNOWN["truth"]:
        assert main_reason("wait_disk") == "uninterruptible", reasons
    comments = pprof_stats(prof)
    for k in ("off_cpu.recorded", "off_cpu.recorded_ns", "off_cpu.min_ns"):
        assert k in comments, (k, comments)
    assert int(comments["off_cpu.min_ns"]) == 1000000
    log(f"  statistics: recorded {comments['off_cpu.recorded']}, below the minimum "
        f"{comments.get('off_cpu.below_min', '0')}, sampled out {comments.get('off_cpu.sampled_out', '0')}")
    assert int(comments["off_cpu.recorded"]) > 100


def test_go_tool_pprof_reads_the_off_cpu_type():
    env = dict(os.environ, HOME=WD, GOCACHE=os.path.join(WD, "gocache"))
    g = subprocess.run([GO, "tool", "pprof", "-sample_index=off_cpu", "-top", "-nodecount=200",
                        KNOWN["pb"]], capture_output=True, text=True, env=env, timeout=120)
    assert g.returncode == 0, g.stderr
    assert "Type: off_cpu" in g.stdout and "wait_futex" in g.stdout, g.stdout[:2000]
    g = subprocess.run([GO, "tool", "pprof", "-sample_index=off_cpu", "-tagfocus=wait=futex", "-top",
                        KNOWN["pb"]], capture_output=True, text=True, env=env, timeout=120)
    assert g.returncode == 0 and "wait_futex" in g.stdout and "wait_sleep" not in g.stdout, g.stdout[:2000]


def test_report_top_and_folded_views():
    # The pprof file read back keeps both values: each view of it, as folded and in top.
    off, cpu = os.path.join(WD, "back-off.folded"), os.path.join(WD, "back-cpu.folded")
    ember("report", KNOWN["pb"], "--view", "off-cpu", "-o", off)
    ember("report", KNOWN["pb"], "-o", cpu)
    fns = ("wait_futex", "wait_pipe")
    a, _ = off_cpu_by_function(off, fns)
    b, _ = off_cpu_by_function(KNOWN["folded"], fns)
    for f in fns:
        assert abs(a[f] - b[f]) <= 1 + b[f] // 10000, (f, a[f], b[f])
    # The CPU view holds the CPU samples, and only them.
    cpu_samples = sum(v["samples"] for _, v, _ in pprof_samples(read_pprof(KNOWN["pb"])))
    assert sum(n for _, n in read_folded(cpu)) == cpu_samples, "off-CPU time in the CPU view"
    r = ember("top", KNOWN["pb"], "--view", "off-cpu", "-n", "40")
    log("\n".join(r.stdout.splitlines()[:8]))
    assert "off CPU" in r.stdout.splitlines()[0] and "waits recorded" in r.stdout, r.stdout
    assert "wait_futex" in r.stdout and "schedule" in r.stdout
    r = ember("top", KNOWN["pb"], "--view", "both", "-n", "5")
    assert "on CPU" in r.stdout.splitlines()[0], r.stdout
    r = ember("top", KNOWN["pb"], "--view", "sideways", check=False)
    assert r.returncode == 2 and "cpu, off-cpu or both" in r.stderr, r.stderr
    # A diff of the off-CPU view: the recording against itself changes nothing, in
    # nanoseconds off CPU (the off-CPU view's total, not the CPU samples).
    d = os.path.join(WD, "off-diff.html")
    ember("diff", KNOWN["pb"], KNOWN["pb"], "--view", "off-cpu", "-o", d)
    data = html_data(d)
    nodes, changes = data["nodes"], data["diff"]["changes"]
    log(f"  off-CPU diff of the recording with itself: {len(nodes)} nodes, {len(changes)} rows "
        f"of changes, root {nodes[0][2]} ns")
    assert data["unit"] == "ns" and data["view"] == "off-cpu", (data["unit"], data["view"])
    off_ns = sum(v["off_cpu"] for _, v, _ in pprof_samples(read_pprof(KNOWN["pb"])))
    assert nodes[0][2] == off_ns and data["diff"]["base_samples"] == off_ns, (nodes[0], off_ns)
    changed = [n for n in nodes if n[2] != n[3]]
    assert not changed, f"{len(changed)} nodes differ from themselves: {changed[:5]}"
    assert changes and all(c[2] == c[3] and c[4] == c[5] for c in changes), changes[:5]


def test_otlp_has_an_off_cpu_profile():
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import otlp_receiver as rx
    req = rx.classes()[0]()
    with open(KNOWN["otlp"], "rb") as f:
        req.ParseFromString(f.read())
    d = req.dictionary
    futex_ns = 0
    kinds = collections.Counter()
    for rp in req.resource_profiles:
        for sp in rp.scope_profiles:
            for p in sp.profiles:
                kind = (d.string_table[p.sample_type.type_strindex], d.string_table[p.sample_type.unit_strindex])
                kinds[kind] += 1
                if kind != ("off_cpu", "nanoseconds"):
                    continue
                for s in p.samples:
                    attrs = rx.attrs_of(d, s.attribute_indices)
                    assert attrs.get("off_cpu.wait"), attrs
                    if "wait_futex" in rx.frames(d, s.stack_index):
                        futex_ns += sum(s.values)
    log(f"  profiles: {dict(kinds)}")
    assert kinds[("off_cpu", "nanoseconds")] == 1 and kinds[("samples", "count")] == 1, kinds
    folded, _ = off_cpu_by_function(KNOWN["folded"], ["wait_futex"])
    assert abs(futex_ns / 1000 - folded["wait_futex"]) <= 1 + folded["wait_futex"] / 1000, (futex_ns, folded)


def test_off_cpu_view_in_chromium():
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from chromium import Browser, find_chromium
    path, why = find_chromium()
    if not path:
        skip_or_fail(why)
    page = KNOWN["html"]
    folded, total = off_cpu_by_function(KNOWN["folded"], ["wait_futex", "wait_pipe"])
    with Browser() as b:
        t = b.open(page)
        log(f"  {os.path.basename(page)} ready in {t:.2f} s")
        # Recorded with --view off-cpu: the page opens in the off-CPU view.
        assert b.evaluate("emberFlame.state().metric") == "off-cpu"
        assert not b.evaluate("document.getElementById('metrics').hidden")
        labels = b.evaluate("emberFlame.visibleLabels()")
        for name in ("wait_futex", "wait_pipe", "main_wait", "schedule"):
            assert name in labels, f"{name} not drawn: {labels}"
        share = b.evaluate("emberFlame.search('^wait_futex$'), emberFlame.state().matchedShare")
        want = folded["wait_futex"] / total
        log(f"  wait_futex: {100 * share:.2f}% of the page's off-CPU time, folded {100 * want:.2f}%")
        assert abs(share - want) < 0.002, (share, want)
        assert "off-CPU time" in b.evaluate("document.getElementById('match').textContent")
        i = b.evaluate("emberFlame.find('wait_futex')")
        r = b.evaluate(f"emberFlame.rectOf({i})")
        b.hover(r["x"] + r["w"] / 2, r["y"] + r["h"] / 2)
        tip = b.evaluate("document.getElementById('tooltip').textContent")
        # Its total as a duration in the unit that fits (ms or s), beside the name.
        assert "wait_futex" in tip and re.search(r"total[\d.]+ (ms|s)(?![a-z])", tip), tip
        shot = b.screenshot(os.path.join(ARTIFACTS, "offcpu.png"))
        print(f"screenshot: {shot}", flush=True)
        # The CPU view: the waiting functions are (nearly) gone, warm_up runs.
        b.evaluate("emberFlame.setMetric('cpu')")
        assert b.evaluate("emberFlame.state().metric") == "cpu"
        # (Its box may be too narrow for a label beside the CPU time of the host's own
        # context switches: found by the page's search, not by its labels.)
        warm = b.evaluate("emberFlame.search('^warm_up$')")
        b.evaluate("emberFlame.search('')")
        assert warm > 0, "warm_up has no CPU samples in the CPU view"
        assert b.evaluate("document.getElementById('metric-cpu').getAttribute('aria-pressed')") == "true"
        # Both: the CPU samples as time (each one period) added to the time off CPU.
        off_total = b.evaluate("emberFlame.setMetric('off-cpu'), emberFlame.allTotal()")
        cpu_total = b.evaluate("emberFlame.setMetric('cpu'), emberFlame.allTotal()")
        both_total = b.evaluate("emberFlame.setMetric('both'), emberFlame.allTotal()")
        period = html_data(page)["period_ns"]
        log(f"  totals: off-CPU {off_total} ns, CPU {cpu_total} samples of {period} ns, "
            f"both {both_total} ns")
        assert cpu_total > 0 and off_total > 0, (cpu_total, off_total)
        assert abs(both_total - (off_total + cpu_total * period)) <= 1, (both_total, off_total, cpu_total)
        # warm_up (on CPU, too narrow to be labelled in this view) keeps its CPU time there.
        warm = {m: b.evaluate(f"emberFlame.setMetric('{m}'), emberFlame.search('^warm_up$')")
                for m in ("cpu", "off-cpu", "both")}
        b.evaluate("emberFlame.search('')")
        log(f"  warm_up: {warm}")
        assert warm["cpu"] > 0 and abs(warm["both"] - (warm["off-cpu"] + warm["cpu"] * period)) <= 1, warm
        shot = b.screenshot(os.path.join(ARTIFACTS, "offcpu-both.png"))
        print(f"screenshot: {shot}", flush=True)
        assert not b.errors(), b.errors()


def test_migrating_wait_is_weighted_correctly():
    truth, (pb, folded), _ = record_workload("migrate", 6, "--off-cpu")
    folded_off = os.path.join(WD, "migrate-off.folded")
    ember("report", pb, "--view", "off-cpu", "-o", folded_off)
    log(f"  {truth['migrations']} of {truth['waits']} waits ended on another CPU")
    assert truth["migrations"] >= truth["waits"] // 2, truth
    compare(truth, ["wait_migrating", "mover_delay", "main_wait", "wait_go"], folded_off)
    # The samples were taken on the CPU each wait ended on: both CPUs.
    cpus = collections.Counter()
    for frames, values, labels in pprof_samples(read_pprof(pb)):
        if "wait_migrating" in frames and values["off_cpu"]:
            cpus[labels.get("cpu")] += values["off_cpu"]
    log(f"  wait_migrating off-CPU time by the CPU it ended on: { {c: v / 1e9 for c, v in cpus.items()} }")
    assert len(cpus) >= 2, cpus


def test_sampling_keeps_totals_at_high_rates():
    # Every wait counts (no minimum): four threads wait ~12,000 times a second, beyond what is
    # recorded per CPU (1000/s), so waits are sampled and the kept ones weighted. (Each wait
    # also holds the few microseconds of switching back in, which the workload counts as on
    # CPU: about 2% here, far less with waits of milliseconds.)
    truth, (pb, folded), _ = record_workload("rapid", 6, "--off-cpu=0", "--view", "off-cpu")
    comments = pprof_stats(read_pprof(pb))
    recorded, sampled_out = int(comments["off_cpu.recorded"]), int(comments.get("off_cpu.sampled_out", 0))
    waits = truth["wait_rapid"] / 310e3  # about 310 us each
    log(f"  about {waits:.0f} waits: {recorded} recorded, {sampled_out} sampled out")
    assert sampled_out > recorded, "the sampling did not engage"
    compare(truth, ["wait_rapid", "main_wait", "wait_go"], folded)


def test_daemons_take_off_cpu():
    """ember-collector --off-cpu and an ember-symbolizer daemon: its pprof files carry the
    off_cpu type and the workload's waits, its folded files (--view off-cpu) microseconds."""
    r = subprocess.run(collector_argv(BUILD, "--help"), capture_output=True, text=True)
    assert "--off-cpu" in r.stdout, r.stdout
    r = subprocess.run(collector_argv(BUILD, "--off-cpu=soon"), capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 2 and "--off-cpu=5ms" in r.stderr, r.stderr
    base = os.path.join(WD, "daemons")
    run_dir, out = os.path.join(base, "run"), os.path.join(base, "out")
    os.makedirs(run_dir, exist_ok=True)
    os.makedirs(out, exist_ok=True)
    os.chown(out, 65534, 65534)
    sock = os.path.join(run_dir, "collector.sock")
    wl = subprocess.Popen([WORKLOAD, "known", "6", WD], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)
    assert wl.stdout.readline().strip() == "ready"
    col = sym = None
    try:
        col = subprocess.Popen(collector_argv(BUILD, "--user", "nobody", "--runtime-dir", run_dir,
                                              "-F", "99", "--off-cpu", "-p", str(wl.pid)),
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        for _ in range(100):
            if os.path.exists(sock):
                break
            time.sleep(0.1)
        sym = subprocess.Popen(symbolizer_argv(BUILD, "--connect", sock, "--output-dir", out,
                                               "--interval", "60s", "--format", "pprof", "--format",
                                               "folded", "--keep", "0", "--user", "nobody",
                                               "--view", "off-cpu"),
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        time.sleep(2.0)
        wl.stdin.write("warm\n")
        wl.stdin.flush()
        time.sleep(0.8)
        wl.stdin.write("go\n")
        wl.stdin.flush()
        wout, _ = wl.communicate(timeout=60)
        time.sleep(1.0)
        sym.send_signal(signal.SIGTERM)
        sym_out, _ = sym.communicate(timeout=60)
    finally:
        for p in (sym, col, wl):
            if p and p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    kill(p)
    assert sym.returncode == 0, sym_out
    truth = dict((k, int(v)) for k, _, v in (f.partition("=") for f in wout.split()))
    files = sorted(f for f in os.listdir(out) if not f.startswith("."))
    pbs = [os.path.join(out, f) for f in files if f.endswith(".pb.gz")]
    folded = [os.path.join(out, f) for f in files if f.endswith(".folded")]
    assert len(pbs) == 1 and len(folded) == 1, files
    prof = read_pprof(pbs[0])
    types = [prof.string_table[t.type] for t in prof.sample_type]
    assert "off_cpu" in types, types
    futex = sum(v["off_cpu"] for fr, v, _ in pprof_samples(prof) if "wait_futex" in fr)
    log(f"  daemon: wait_futex {futex / 1e9:.3f} s off CPU, measured {truth['wait_futex'] / 1e9:.3f} s")
    assert abs(futex - truth["wait_futex"]) <= 0.05 * truth["wait_futex"], (futex, truth)
    got, _ = off_cpu_by_function(folded[0], ["wait_futex"])
    assert abs(got["wait_futex"] * 1000 - futex) <= 1000 + futex // 1000, (got, futex)


run_tests([
    test_known_waits,
    test_pprof_has_off_cpu_values_and_wait_reasons,
    test_go_tool_pprof_reads_the_off_cpu_type,
    test_report_top_and_folded_views,
    test_otlp_has_an_off_cpu_profile,
    test_off_cpu_view_in_chromium,
    test_migrating_wait_is_weighted_correctly,
    test_sampling_keeps_totals_at_high_rates,
    test_daemons_take_off_cpu,
])
shutil.rmtree(WD, ignore_errors=True)
