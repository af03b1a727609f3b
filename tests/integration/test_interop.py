#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""ember's OTLP profiles through the programs users run them through.

- A real OpenTelemetry Collector (core v0.165.0, built from its Go modules by
  tests/interop/build.sh, cached between runs): ember ships to its OTLP receiver over HTTP and
  over gRPC, the Collector exports to a test receiver (otlp_http, otlp_grpc), and every sample,
  stack, frame, value, timestamp and attribute that arrives is what ember's own .otlp file of
  the same run holds.
- Grafana Pyroscope and Parca cannot be built here (their Go modules are not on the module
  proxy: tests/interop/README.md), so tests/interop/otlpcheck stands in for their intake:
  protobuf-go's strict decoding with the opentelemetry-proto Go module both decode with, and
  our reading of their validation and conversion rules. It must take every request ember
  writes (CPU and off-CPU; native, Go and Python frames; a process whose name is not UTF-8;
  backend symbols), and the flame graph Pyroscope's conversion makes of it must have the
  leaves and shares ember's own profile has, within a point.
The workloads are three known-split programs (C, Go, Python), recorded together."""
import collections
import os
import shutil
import signal
import socket
import subprocess
import json
import time

import otlp_receiver as rx
from emberlib import (require_otlp_classes, GO, SRC, assert_close, build_workload, kill, log, require_root, run_tests,
                      skip_or_fail, start, start_recording, truth_shares, workdir)

require_root()
require_otlp_classes(rx)
WD = workdir()
HZ = 499


def build_interop():
    """The bin directory of the Go helpers (tests/interop/build.sh): a few minutes the first
    time on a machine, then cached."""
    t = time.monotonic()
    r = subprocess.run(["sh", os.path.join(SRC, "tests", "interop", "build.sh")],
                       capture_output=True, text=True, timeout=1800)
    if r.returncode:
        skip_or_fail("cannot build the interop helpers (tests/interop/build.sh): "
                     + r.stderr.strip()[-600:])
    log(f"interop helpers in {r.stdout.strip()} ({time.monotonic() - t:.0f} s)")
    return r.stdout.strip()


BIN = build_interop()
OTELCOL, OTLPCHECK = os.path.join(BIN, "otelcol"), os.path.join(BIN, "otlpcheck")

SPLIT = build_workload("split", WD)
GOSPLIT = os.path.join(WD, "gosplit")
subprocess.run([GO, "build", "-o", GOSPLIT, os.path.join(SRC, "tests", "workloads", "gosplit.go")],
               check=True, timeout=600, cwd=WD,
               env=dict(os.environ, HOME=WD, GOCACHE=os.path.join(WD, "gocache"), GO111MODULE="off"))
PYSPLIT = os.path.join(SRC, "tests", "workloads", "pysplit.py")
# A process whose name is not UTF-8: one odd comm must not cost everyone's profile.
BADNAME = os.path.join(WD, "bad\xff\xfename".encode("latin-1").decode("utf-8", "surrogateescape"))
shutil.copy(SPLIT, BADNAME)

PYTHON = "/usr/bin/python3"
# The leaves of each program, by its process.executable.name.
LEAVES = {"split": ["leaf_a", "leaf_b", "leaf_c"], "gosplit": ["main.alpha", "main.beta"],
          os.path.basename(os.path.realpath(PYTHON)): ["leaf_a", "leaf_b", "leaf_c"]}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, proc, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the Collector exited"
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.2)
    raise AssertionError(f"nothing listens on {port}")


class Collector:
    """The real Collector: an OTLP receiver on two free ports, exporting profiles to a test
    receiver (exporter "otlp_http" or "otlp_grpc")."""

    def __init__(self, exporter, target):
        self.grpc, self.http = free_port(), free_port()
        out = (f"otlp_http: {{profiles_endpoint: 'http://127.0.0.1:{target}/v1development/profiles', compression: none}}"
               if exporter == "otlp_http" else
               f"otlp_grpc: {{endpoint: '127.0.0.1:{target}', tls: {{insecure: true}}}}")
        self.config = os.path.join(WD, f"collector-{exporter}.yaml")
        with open(self.config, "w") as f:
            f.write(f"""receivers:
  otlp:
    protocols:
      grpc: {{endpoint: '127.0.0.1:{self.grpc}'}}
      http: {{endpoint: '127.0.0.1:{self.http}'}}
exporters:
  debug: {{verbosity: basic}}
  {out}
service:
  telemetry: {{metrics: {{level: none}}}}
  pipelines:
    profiles: {{receivers: [otlp], exporters: [debug, {exporter}]}}
""")
        self.log = os.path.join(WD, f"collector-{exporter}.log")
        with open(self.log, "w") as f:
            self.proc = subprocess.Popen([OTELCOL, "--config", self.config], stdout=f, stderr=f)
        wait_port(self.grpc, self.proc)
        wait_port(self.http, self.proc)

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        finally:
            kill(self.proc)
        with open(self.log) as f:
            text = f.read()
        problems = [line for line in text.splitlines() if '"error"' in line or "\terror\t" in line]
        assert not problems, "the Collector logged errors:\n" + "\n".join(problems[:10])


def workloads():
    """Starts the three known-split programs and the badly named one: {name: process}."""
    procs = {"split": start([SPLIT, "60"]), "gosplit": start([GOSPLIT, "60"]),
             "python": start([PYTHON, PYSPLIT, "split", "60"]),
             "bad": start([BADNAME, "60"])}
    time.sleep(1.0)
    return procs


def record(procs, args):
    """ember record of the workloads (CPU and off-CPU) with args; returns its stderr."""
    pids = [a for p in procs.values() for a in ("-p", str(p.pid))]
    proc, lines, sampling = start_recording(["--no-progress", "-d", "4", "-F", str(HZ),
                                             "--off-cpu", *pids, *args])
    try:
        proc.wait(timeout=180)
        sampling.reader.join(timeout=30)
    finally:
        kill(proc)
    err = "".join(lines)
    assert proc.returncode == 0, err
    return err


def read_request(path):
    Request, _ = rx.classes()
    with open(path, "rb") as f:
        return Request.FromString(f.read())


def frame_key(d, loc):
    """What a location says, by value (indices differ between encoders)."""
    m = d.mapping_table[loc.mapping_index]
    st = d.string_table
    return (loc.address, st[m.filename_strindex], m.memory_start, m.memory_limit, m.file_offset,
            tuple(sorted(rx.attrs_of(d, m.attribute_indices).items())) if loc.mapping_index else (),
            tuple((st[d.function_table[li.function_index].name_strindex],
                   st[d.function_table[li.function_index].system_name_strindex],
                   st[d.function_table[li.function_index].filename_strindex], li.line)
                  for li in loc.lines),
            tuple(sorted(rx.attrs_of(d, loc.attribute_indices).items())))


def observations(reqs):
    """Every observation of the requests, by value: a Counter of (resource, scope, profile
    type, stack, sample attributes, link, timestamp) -> count for CPU samples (one per
    timestamp) and -> nanoseconds for off-CPU ones."""
    out = collections.Counter()
    for req in reqs:
        d = req.dictionary
        st = d.string_table
        for rp in req.resource_profiles:
            res = tuple(sorted(rx.resource_attrs(rp, d).items()))
            for sp in rp.scope_profiles:
                for p in sp.profiles:
                    kind = (st[p.sample_type.type_strindex], st[p.sample_type.unit_strindex],
                            st[p.period_type.type_strindex], st[p.period_type.unit_strindex],
                            p.period)
                    for s in p.samples:
                        stack = tuple(frame_key(d, d.location_table[i])
                                      for i in d.stack_table[s.stack_index].location_indices)
                        link = d.link_table[s.link_index]
                        key = (res, sp.scope.name, sp.scope.version, kind, stack,
                               tuple(sorted(rx.attrs_of(d, s.attribute_indices).items())),
                               link.trace_id, link.span_id)
                        if s.timestamps_unix_nano and not s.values:
                            for t in s.timestamps_unix_nano:
                                out[key + (t,)] += 1
                        else:
                            out[key + (None,)] += sum(s.values)
    return out


def through_the_collector(exporter):
    """ember -> Collector (over HTTP and gRPC in turn) -> exporter -> test receiver: what
    arrives is what ember's own file of the same run holds."""
    r = rx.HttpReceiver() if exporter == "otlp_http" else rx.GrpcReceiver()
    col = Collector(exporter, r.port)
    procs = workloads()
    try:
        for url in (f"http://127.0.0.1:{col.http}", f"grpc://127.0.0.1:{col.grpc}"):
            r.attempts.clear()
            own = os.path.join(WD, f"own-{exporter}-{url[:4]}.otlp")
            err = record(procs, ["-o", own, "--otlp", url])
            assert "delivered" in err, err
            assert r.wait_for(1, 30), "nothing came out of the Collector"
            time.sleep(2)  # the Collector forwards each request as it comes
            got = r.delivered()
            want = observations([read_request(own)])
            have = observations(got)
            log(f"  {url.split(':')[0]} -> Collector -> {exporter}: {len(got)} requests, "
                f"{sum(v for k, v in have.items() if k[-1] is not None)} CPU observations and "
                f"{sum(1 for k in have if k[-1] is None)} off-CPU stacks; ember's file "
                f"{sum(v for k, v in want.items() if k[-1] is not None)} and "
                f"{sum(1 for k in want if k[-1] is None)}")
            assert want, "ember's file is empty"
            missing, extra = want - have, have - want
            assert not missing and not extra, (
                f"{sum(missing.values())} missing, {sum(extra.values())} extra; e.g. "
                f"missing {list(missing)[:1]}, extra {list(extra)[:1]}")
            kinds = {k[3][0] for k in have}
            assert kinds == {"samples", "off_cpu"}, kinds
    finally:
        for p in procs.values():
            kill(p)
        r.stop()
        col.stop()


def test_collector_over_http_and_grpc_to_otlp_http():
    through_the_collector("otlp_http")


def test_collector_over_http_and_grpc_to_otlp_grpc():
    through_the_collector("otlp_grpc")


def otlpcheck(path):
    r = subprocess.run([OTLPCHECK, "--mode", "all", "--json", path], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode in (0, 1), r.stderr
    return json.loads(r.stdout.splitlines()[0])


def own_leaf_shares(req, exe):
    """{leaf function: percent} of exe's CPU samples in ember's own request (the leaf: the
    first frame, as Pyroscope's flame graph counts self time)."""
    counts = collections.Counter()
    for ra, p, s, fr in rx.samples(req):
        if ra.get("process.executable.name") == exe and req.dictionary.string_table[
                p.sample_type.type_strindex] == "samples" and fr:
            counts[fr[0]] += rx.sample_count(s)
    total = sum(counts.values())
    return {k: 100.0 * v / total for k, v in counts.items()}, total


def test_pyroscope_and_parca_intake_take_every_request():
    """otlpcheck (Pyroscope's and Parca's decoding and intake rules) takes what ember writes,
    host and backend symbols; Pyroscope's flame graph of each workload has ember's leaves and
    shares within a point; with backend symbols, the split program's mapping (it has a GNU
    build id) is left to Pyroscope's symbolizer, with host symbols it is not."""
    procs = workloads()
    host, backend = os.path.join(WD, "host.otlp"), os.path.join(WD, "backend.otlp")
    try:
        record(procs, ["-o", host])
        record(procs, ["-o", backend, "--otlp-symbols", "backend"])
    finally:
        for p in procs.values():
            kill(p)
    for path in (host, backend):
        rep = otlpcheck(path)
        assert rep["decode"] == "ok" and rep["parca"]["ok"] and rep["pyroscope"]["ok"], rep
        names = {s["labels"].get("process.executable.name") for s in rep["pyroscope"]["series"]}
        assert any("\ufffd" in (n or "") for n in names), f"the badly named process is missing: {names}"
        types = {s["profile_type"].split(":")[0] for s in rep["pyroscope"]["series"]}
        assert types == {"process_cpu", "off_cpu"}, types
        maps = {m["file"]: m["server_symbolized"] for m in rep["pyroscope"]["mappings"]}
        log(f"  {os.path.basename(path)}: Pyroscope and Parca take it; {len(rep['pyroscope']['series'])} "
            f"series; split's mapping left to Pyroscope's symbolizer: {maps.get(SPLIT)}")
        assert maps.get(SPLIT) is (path == backend), maps
    req = read_request(host)
    rep = otlpcheck(host)
    # The totals Pyroscope's conversion stores: CPU samples times the period, off-CPU
    # nanoseconds summed; per process, what ember's own request holds.
    for exe in LEAVES:
        for kind, name in (("samples", "process_cpu"), ("off_cpu", "off_cpu")):
            ours = sum(rx.sample_count(s) * (p.period or 1) for ra, p, s, _ in rx.samples(req)
                       if ra.get("process.executable.name") == exe
                       and req.dictionary.string_table[p.sample_type.type_strindex] == kind)
            theirs = sum(s["total"] for s in rep["pyroscope"]["series"]
                         if s["labels"].get("process.executable.name") == exe
                         and s["profile_type"].startswith(name))
            log(f"  {exe} {name}: ember {ours}, Pyroscope's conversion {theirs}")
            assert ours == theirs, (exe, name, ours, theirs)
    for exe, leaves in LEAVES.items():
        ours, total = own_leaf_shares(req, exe)
        assert total > 300, f"{exe}: {total} samples"
        series = [s for s in rep["pyroscope"]["series"]
                  if s["labels"].get("process.executable.name") == exe
                  and s["profile_type"].startswith("process_cpu")]
        assert len(series) == 1, series
        theirs = dict(series[0]["top"])
        for leaf in leaves:
            mine, pyro = ours.get(leaf, 0.0), 100.0 * theirs.get(leaf, 0.0)
            log(f"  {exe} {leaf}: ember {mine:.1f}%, Pyroscope's conversion {pyro:.1f}%")
            assert mine > 2 and abs(mine - pyro) <= 1.0, (exe, leaf, mine, pyro)


def test_pyroscope_labels_of_spans_and_goroutines():
    """A traced C program (OpenTelemetry thread contexts) and a Go program with goroutine
    labels, through Pyroscope's conversion: the C program's samples in spans carry the pprof
    labels trace_id and span_id (Pyroscope's names for a link), as many as ember linked; the
    Go program's carry its labels span and worker."""
    tctx = os.path.join(WD, "tctx")
    subprocess.run(["gcc", "-O1", "-g", "-pthread", "-DTCTX_IN_PROGRAM",
                    "-Wl,--export-dynamic-symbol=otel_thread_ctx_v1", "-o", tctx,
                    os.path.join(SRC, "tests", "workloads", "thread_ctx.c")], check=True)
    golabels = os.path.join(WD, "golabels")
    subprocess.run([GO, "build", "-o", golabels, "."], check=True, timeout=600,
                   cwd=os.path.join(SRC, "tests", "workloads", "golabels"),
                   env=dict(os.environ, HOME=WD, GOCACHE=os.path.join(WD, "gocache"),
                            GOTOOLCHAIN="local", GOFLAGS="-mod=mod"))
    procs = {"tctx": start([tctx, "30", os.path.join(WD, "tctx.log"), "-", "plain"]),
             "golabels": start([golabels, "30"])}
    path = os.path.join(WD, "labels.otlp")
    try:
        time.sleep(1.0)
        record(procs, ["-o", path])
    finally:
        for p in procs.values():
            kill(p)
    req = read_request(path)
    linked = sum(rx.sample_count(s) * p.period for ra, p, s, _ in rx.samples(req)
                 if ra.get("process.executable.name") == "tctx" and s.link_index
                 and req.dictionary.string_table[p.sample_type.type_strindex] == "samples")
    rep = otlpcheck(path)
    assert rep["pyroscope"]["ok"], rep["pyroscope"]
    cpu = {s["labels"].get("process.executable.name"): s for s in rep["pyroscope"]["series"]
           if s["profile_type"].startswith("process_cpu")}
    t, g = cpu["tctx"]["sample_labels"], cpu["golabels"]["sample_labels"]
    log(f"  tctx: {cpu['tctx']['total']} ns in Pyroscope, trace_id on {t.get('trace_id')}, "
        f"span_id on {t.get('span_id')}, ember linked {linked}; golabels: {g}")
    assert linked > 0.5 * cpu["tctx"]["total"], (linked, cpu["tctx"]["total"])
    assert t.get("trace_id") == t.get("span_id") == linked, (t, linked)
    assert g.get("span", 0) > 0.5 * cpu["golabels"]["total"] and g.get("worker") == g.get("span"), g


def readelf_build_id(path):
    out = subprocess.run(["readelf", "-n", path], capture_output=True, text=True).stdout
    return next(line.split()[-1] for line in out.splitlines() if "Build ID" in line)


def test_backend_symbols_name_a_stripped_program_through_debuginfod():
    """What Pyroscope's symbolizer does with --otlp-symbols backend, step by step with the real
    tools: a stripped program's frames go as ELF addresses in a mapping with its build id;
    debuginfod (Debian's), serving the program's separate debug file, returns that file by the
    build id; eu-addr2line names each address in it; and the leaves so named have the shares
    the program measured itself (within 3 points)."""
    if not shutil.which("debuginfod") or not shutil.which("debuginfod-find"):
        skip_or_fail("debuginfod is missing (Debian: debuginfod)")
    served, full = os.path.join(WD, "served"), os.path.join(WD, "split-full")
    os.makedirs(served, exist_ok=True)
    stripped = os.path.join(WD, "split-stripped")
    shutil.copy(SPLIT, full)
    subprocess.run(["objcopy", "--only-keep-debug", full, os.path.join(served, "split.debug")],
                   check=True)
    subprocess.run(["objcopy", "--strip-all", full, stripped], check=True)
    build_id = readelf_build_id(stripped)
    port = free_port()
    server = subprocess.Popen(["debuginfod", "-F", served, "-p", str(port), "-d",
                               os.path.join(WD, "debuginfod.sqlite")],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    env = dict(os.environ, DEBUGINFOD_URLS=f"http://127.0.0.1:{port}",
               DEBUGINFOD_CACHE_PATH=os.path.join(WD, "debuginfod-cache"))
    truth_file = os.path.join(WD, "stripped.truth")
    wl = start([stripped, "30"], env=dict(os.environ, EMBER_TRUTH_FILE=truth_file))
    otlp = os.path.join(WD, "stripped.otlp")
    try:
        time.sleep(0.5)
        record({"stripped": wl}, ["-o", otlp, "--otlp-symbols", "backend"])
        wl.send_signal(signal.SIGTERM)
        wl.wait(timeout=30)
        debug = None
        deadline = time.monotonic() + 60
        while not debug and time.monotonic() < deadline:  # until its first scan found the file
            r = subprocess.run(["debuginfod-find", "debuginfo", build_id], capture_output=True,
                               text=True, env=env, timeout=30)
            debug = r.stdout.strip() if r.returncode == 0 else None
            time.sleep(0.5)
        assert debug, f"debuginfod did not serve {build_id}: {r.stderr}"
    finally:
        kill(wl)
        kill(server)
    req = read_request(otlp)
    d = req.dictionary
    ours = [loc for loc in d.location_table[1:] if loc.mapping_index and
            d.string_table[d.mapping_table[loc.mapping_index].filename_strindex] == stripped]
    assert ours and not any(loc.lines for loc in ours), "the stripped program's frames are named"
    m = d.mapping_table[ours[0].mapping_index]
    assert rx.attrs_of(d, m.attribute_indices).get("process.executable.build_id.gnu") == build_id
    out = subprocess.run(["eu-addr2line", "-f", "-e", debug, *(hex(loc.address) for loc in ours)],
                         capture_output=True, text=True, check=True).stdout.splitlines()[0::2]
    name_at = dict(zip((loc.address for loc in ours), out))
    counts = collections.Counter()
    for _, p, s, _ in rx.samples(req):
        if d.string_table[p.sample_type.type_strindex] != "samples":
            continue
        for li in d.stack_table[s.stack_index].location_indices:
            name = name_at.get(d.location_table[li].address) if d.location_table[li].mapping_index else None
            if name in ("leaf_a", "leaf_b", "leaf_c"):
                counts[name] += rx.sample_count(s)
                break
    total = sum(counts.values())
    truth = truth_shares(truth_file)
    log(f"  {len(ours)} locations of the stripped program named through debuginfod: {dict(counts)}")
    assert total > 500, counts
    for leaf in ("leaf_a", "leaf_b", "leaf_c"):
        assert_close(leaf, 100.0 * counts[leaf] / total, round(truth[leaf], 1), 3)


if __name__ == "__main__":
    run_tests([
        test_collector_over_http_and_grpc_to_otlp_http,
        test_collector_over_http_and_grpc_to_otlp_grpc,
        test_pyroscope_and_parca_intake_take_every_request,
        test_pyroscope_labels_of_spans_and_goroutines,
        test_backend_symbols_name_a_stripped_program_through_debuginfod,
    ])
