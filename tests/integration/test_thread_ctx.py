#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Trace correlation: a program that publishes OpenTelemetry thread contexts (OTEP 4947) and
logs each span it ran (tests/workloads/thread_ctx.c) is recorded, and every sample's link is
checked against that log: the span that ran on that thread at that moment, with the function
the span ran in. The variable is reached each way a program can reach it (its own static TLS,
a library's TLS descriptor, GD pair or IE slot, a dlopened library's dynamic TLS); a program
that points its context at memory that is not there, marks it not valid or rewrites it gives
no link."""
import collections
import os
import subprocess
import time
import otlp_receiver as rx
from emberlib import (require_otlp_classes, SRC, ember, kill, log, read_folded, read_pprof, require_root, run_tests,
                      skip_or_fail, start, start_recording, workdir)

require_root()
require_otlp_classes(rx)
WD = workdir()
HZ = 499
SECONDS = 6
WORKLOAD = os.path.join(SRC, "tests", "workloads", "thread_ctx.c")
LIBRARY = os.path.join(SRC, "tests", "workloads", "thread_ctx_lib.c")
IN_SPAN = {"span_work_a": "a", "span_work_b": "b"}
NO_SPAN = ("outside_span", "slow_update", "bad_pointer", "not_valid")
RECORDED = {}  # what the first test recorded: "otlp", "pprof", "logs" {variant: path}, "pids"


def gcc(*args):
    subprocess.run(["gcc", "-O1", "-g", "-fno-omit-frame-pointer", *args], check=True)


def build():
    """{variant: (program, library argument)}: every way to otel_thread_ctx_v1."""
    out = {}
    for flavor, flags in (("desc", ["-mtls-dialect=gnu2"]), ("gd", []),
                          ("ie", ["-ftls-model=initial-exec"])):
        lib = os.path.join(WD, f"libtctx_{flavor}.so")
        gcc("-shared", "-fPIC", *flags, "-o", lib, LIBRARY)
        prog = os.path.join(WD, f"tctx_linked_{flavor}")
        gcc("-o", prog, WORKLOAD, "-DTCTX_LINKED", lib, f"-Wl,-rpath,{WD}", "-pthread")
        out[f"linked-{flavor}"] = (prog, "-")
        if flavor != "ie":  # an IE library cannot be dlopened where static TLS is short
            out[f"dlopen-{flavor}"] = (os.path.join(WD, "tctx_dlopen"), lib)
    gcc("-o", os.path.join(WD, "tctx_dlopen"), WORKLOAD, "-pthread", "-ldl")
    prog = os.path.join(WD, "tctx_program")
    gcc("-o", prog, WORKLOAD, "-DTCTX_IN_PROGRAM", "-pthread",
        "-Wl,--export-dynamic-symbol=otel_thread_ctx_v1")
    out["program"] = (prog, "-")
    return out


def read_log(path):
    """{(trace hex, span hex): (tid, kind, start ns, end ns)} of the spans the program ran."""
    spans = {}
    with open(path) as f:
        for line in f:
            _, tid, _, kind, t0, t1, trace, span = line.split()
            spans[(trace, span)] = (int(tid), kind, int(t0), int(t1))
    return spans


def judge(req, pid, spans, settled):
    """Counts of each verdict on pid's CPU and off-CPU samples, by where the stack is. CPU
    samples in a span taken before `settled` (Unix ns) count apart when they have no link."""
    d = req.dictionary
    verdicts = collections.Counter()
    for _, _, s, fr in rx.samples(req, pid):
        attrs = rx.attrs_of(d, s.attribute_indices)
        off = "off_cpu.wait" in attrs
        n = len(s.timestamps_unix_nano) if not off else len(s.values)
        link = d.link_table[s.link_index] if s.link_index else None
        where = next((f for f in fr if f in IN_SPAN or f in NO_SPAN), None)
        # Off-CPU: the waits in span_wait (a sleep inside a span); preemptions anywhere are
        # checked for wrong links only (OTLP gives off-CPU samples no time: those of the
        # first second cannot be told apart).
        cpu = "off-cpu" if off and "span_wait" in fr else "preempted" if off else "cpu"
        if where in NO_SPAN:
            verdicts[cpu, where, "link" if link else "none"] += n
            continue
        if where is None:
            continue  # between the two (the loop itself): either is right
        if not link:
            early = not off and all(t < settled for t in s.timestamps_unix_nano)
            verdicts[cpu, "span", "early" if early else "none"] += n
            continue
        got = spans.get((link.trace_id.hex(), link.span_id.hex()))
        right = got and got[0] == attrs.get("thread.id") and got[1] == IN_SPAN[where]
        # The span's attributes, when read, must be its own (route by kind, worker by the
        # thread number in its span id).
        if "http.route" in attrs or "worker" in attrs:
            right = right and attrs.get("http.route") == f"/span/{got[1]}" and \
                attrs.get("worker") == str(link.span_id[1])
            verdicts[cpu, "span", "attributes"] += n
        # CPU samples: their time within the span's (2 ms for the clocks read around it).
        timely = off or (got and all(got[2] - 2e6 <= t <= got[3] + 2e6
                                     for t in s.timestamps_unix_nano))
        verdicts[cpu, "span", "right" if right and timely else "wrong"] += n
    return verdicts


def test_every_way_to_the_variable_gives_the_running_span():
    """Six programs, one per way to the variable, recorded together with off-CPU samples:
    at least 99% of the CPU samples in a span carry that span's link (trace and span id,
    checked with the thread, the function and the time; from the recording's second second
    on), none carries another, none outside a span carries one; off-CPU samples of a sleep
    inside a span carry its link too (but for as many as the first second explains)."""
    variants = build()
    procs, logs = {}, {}
    try:
        for name, (prog, lib) in variants.items():
            logs[name] = os.path.join(WD, f"{name}.log")
            procs[name] = start([prog, str(SECONDS + 3), logs[name], lib, "hostile"])
        time.sleep(0.5)
        otlp, pprof = os.path.join(WD, "tctx.otlp"), os.path.join(WD, "tctx.pb.gz")
        proc, lines, _ = start_recording(
            ["--no-progress", "-d", str(SECONDS), "-F", str(HZ), "--off-cpu",
             *[a for p in procs.values() for a in ("-p", str(p.pid))], "-o", otlp, "-o", pprof])
        proc.wait(timeout=120)
        assert proc.returncode == 0, "".join(lines)
        for p in procs.values():
            p.wait(timeout=60)
    finally:
        for p in procs.values():
            kill(p)
    Request, _ = rx.classes()
    with open(otlp, "rb") as f:
        req = Request.FromString(f.read())
    assert not rx.check_dictionary(req), rx.check_dictionary(req)
    failures = []
    # The processes running when ember starts get their rows as ember reads their maps, one
    # after the other (each reading's unwind tables built before the next: libc's takes the
    # first process 100 ms): their first second's samples are not held to the 99%.
    settled = min(t for _, _, s, _ in rx.samples(req) for t in s.timestamps_unix_nano) + 1e9
    for name, p in procs.items():
        v = judge(req, p.pid, read_log(logs[name]), settled)
        right, wrong, none = (v["cpu", "span", k] for k in ("right", "wrong", "none"))
        oright, owrong, onone = (v["off-cpu", "span", k] for k in ("right", "wrong", "none"))
        if v["preempted", "span", "wrong"]:
            failures.append(f"{name}: {v['preempted', 'span', 'wrong']} preempted, wrong link")
        stray = {k: n for k, n in v.items() if k[1] in NO_SPAN and k[2] == "link"}
        log(f"  {name}: in a span {right} right, {wrong} wrong, {none} without "
            f"({v['cpu', 'span', 'early']} more in the first second); preempted "
            f"{v['preempted', 'span', 'right']}/{v['preempted', 'span', 'wrong']}/"
            f"{v['preempted', 'span', 'none']}; asleep "
            f"{oright}/{owrong}/{onone}; outside spans "
            f"{sum(n for k, n in v.items() if k[1] in NO_SPAN)} samples, {stray or 'none'} linked")
        if right + wrong + none < 60 or right < 0.99 * (right + wrong + none) or wrong:
            failures.append(f"{name}: CPU {right}/{wrong}/{none}")
        # Off-CPU samples carry no time to tell the first second's apart: those without a
        # link may be as many as the CPU samples' share before the context was found predicts,
        # with Poisson slack (about 1 of 24 expected; a broken link leaves all 24 without).
        early_share = v["cpu", "span", "early"] / max(1, right + wrong + none +
                                                     v["cpu", "span", "early"])
        expect = early_share * (oright + onone)
        if not oright or owrong or onone > expect + 3 * expect ** 0.5 + 1:
            failures.append(f"{name}: off-CPU {oright}/{owrong}/{onone} ({expect:.1f} "
                            f"expected without a link)")
        for phase in NO_SPAN:
            if not v["cpu", phase, "none"]:
                failures.append(f"{name}: no sample in {phase}")
        if stray:
            failures.append(f"{name}: linked outside a span: {stray}")
    RECORDED.update(otlp=otlp, pprof=pprof, logs=logs, pids={n: p.pid for n, p in procs.items()})
    assert not failures, failures
    # pprof carries the same spans as labels.
    prof = read_pprof(pprof)
    labels = set(prof["strings"])
    some = next(iter(read_log(logs["program"])))
    assert "trace_id" in labels and "span_id" in labels
    assert any(k[0] in labels and k[1] in labels for k in read_log(logs["program"])), some


def test_one_trace_as_its_own_profile():
    """`ember top --trace ID` and `ember report --trace ID:SPAN` read the pprof file the first
    test wrote: only that trace's (span's) samples, as many as OTLP linked to it."""
    if not RECORDED:
        test_every_way_to_the_variable_gives_the_running_span()
    Request, _ = rx.classes()
    with open(RECORDED["otlp"], "rb") as f:
        req = Request.FromString(f.read())
    d = req.dictionary
    per_link = collections.Counter()
    for _, _, s, _ in rx.samples(req, RECORDED["pids"]["program"]):
        if s.link_index and "off_cpu.wait" not in rx.attrs_of(d, s.attribute_indices):
            link = d.link_table[s.link_index]
            per_link[link.trace_id.hex(), link.span_id.hex()] += len(s.timestamps_unix_nano)
    spans = read_log(RECORDED["logs"]["program"])
    # The span of kind a with the most samples: its trace, then the span itself.
    (trace, span), n = max(((k, n) for k, n in per_link.items() if spans[k][1] == "a"),
                           key=lambda kn: kn[1])
    log(f"  trace {trace}, span {span}: {n} CPU samples linked in OTLP")
    top = ember("top", RECORDED["pprof"], "--trace", trace.upper(), "-n", "8").stdout
    assert "span_work_a" in top and "span_work_b" not in top and "outside_span" not in top, top
    folded = os.path.join(WD, "one-span.folded")
    ember("report", RECORDED["pprof"], "--trace", f"{trace}:{span}", "-o", folded)
    rows = read_folded(folded)
    assert sum(c for _, c in rows) == n, (sum(c for _, c in rows), n)
    assert all("span_work_a" in frames for frames, _ in rows), rows[:3]
    # A trace id that is not one: refused with what to give.
    r = ember("top", RECORDED["pprof"], "--trace", "xyz", check=False)
    assert r.returncode != 0 and "32 hex digits" in r.stderr, r.stderr


GO_FUNCS = {"main.spanA": "a", "main.spanB": "b", "main.unlabelled": None}


def go_toolchains():
    """{name: go command}: Debian's (scripts/install-deps.sh installs it: 1.19, labels in a
    map) and the one in /usr/local/go where there is one (1.24 and later: a sorted slice)."""
    out = {}
    for go in ("/usr/lib/go/bin/go", "/usr/local/go/bin/go"):
        if os.path.exists(go):
            v = subprocess.run([go, "env", "GOVERSION"], capture_output=True, text=True,
                               env=dict(os.environ, GOTOOLCHAIN="local")).stdout.strip()
            out[v] = go
    return out


def test_goroutine_labels():
    """A Go program whose goroutines run spanA under pprof labels span=a, spanB under span=b
    and unlabelled under none: from the recording's second second on, at least 97% of the
    samples in spanA carry span=a (and their worker; a set freed by the garbage collector
    before the symbolizer read it is none), none carries span=b; the same for spanB; none in
    unlabelled carries any. For each Go here (a map up to 1.23, a slice
    from 1.24); in OTLP sample attributes and in pprof labels."""
    toolchains = go_toolchains()
    if not toolchains:
        skip_or_fail("no Go toolchain (Debian: golang-go)")
    src = os.path.join(SRC, "tests", "workloads", "golabels")
    failures = []
    for version, go in sorted(toolchains.items()):
        prog = os.path.join(WD, f"golabels-{version}")
        subprocess.run([go, "build", "-o", prog, "."], cwd=src, check=True,
                       env=dict(os.environ, GOTOOLCHAIN="local", GOFLAGS="-mod=mod"))
        wl = start([prog, str(SECONDS + 2)])
        otlp, pprof = os.path.join(WD, f"go-{version}.otlp"), os.path.join(WD, f"go-{version}.pb.gz")
        try:
            time.sleep(0.3)
            proc, lines, _ = start_recording(["--no-progress", "-d", str(SECONDS), "-F", str(HZ),
                                              "-p", str(wl.pid), "-o", otlp, "-o", pprof])
            proc.wait(timeout=120)
            assert proc.returncode == 0, "".join(lines)
        finally:
            kill(wl)
        Request, _ = rx.classes()
        with open(otlp, "rb") as f:
            req = Request.FromString(f.read())
        d = req.dictionary
        settled = min(t for _, _, s, _ in rx.samples(req) for t in s.timestamps_unix_nano) + 1e9
        v = collections.Counter()
        workers = set()
        for _, _, s, fr in rx.samples(req, wl.pid):
            where = next((f for f in fr if f in GO_FUNCS), None)
            if not where:
                continue
            attrs = rx.attrs_of(d, s.attribute_indices)
            for t in s.timestamps_unix_nano:
                got = attrs.get("span")
                verdict = ("right" if got == GO_FUNCS[where] else
                           "early" if got is None and t < settled else
                           "none" if got is None else "wrong")
                v[where, verdict] += 1
            if attrs.get("span"):
                workers.add(attrs.get("worker"))
        log(f"  Go {version}: {dict(v)}; workers {sorted(workers, key=str)}")
        for f in GO_FUNCS:
            # A set the garbage collector freed before it was read is none, never another's.
            if v[f, "wrong"] or v[f, "right"] < 50 or \
                    v[f, "right"] < 0.97 * (v[f, "right"] + v[f, "none"]):
                failures.append(f"Go {version} {f}: {v[f, 'right']} right, {v[f, 'none']} "
                                f"without, {v[f, 'wrong']} wrong")
        if workers != {"0", "1"}:
            failures.append(f"Go {version}: workers {workers}")
        strings = set(read_pprof(pprof)["strings"])
        if not {"span", "worker", "a", "b"} <= strings:
            failures.append(f"Go {version}: pprof has no span/worker labels")
    assert not failures, failures


def test_span_attributes():
    """A span's attributes (the record's attrs_data, named by the process context's
    threadlocal.attribute_key_map) are read while the record is still that span's: with
    spans of 200 to 400 ms, at least 90% of the samples in a span carry its http.route and
    worker, none another's (the first test holds every attribute read to its span too)."""
    prog = os.path.join(WD, "tctx_program")
    if not os.path.exists(prog):
        build()
    log_path, otlp = os.path.join(WD, "attrs.log"), os.path.join(WD, "attrs.otlp")
    wl = start([prog, str(SECONDS + 2), log_path, "-", "plain"],
               env=dict(os.environ, THREAD_CTX_SPAN_MS="200"))
    try:
        time.sleep(0.5)
        proc, lines, _ = start_recording(["--no-progress", "-d", str(SECONDS), "-F", str(HZ),
                                          "-p", str(wl.pid), "-o", otlp])
        proc.wait(timeout=120)
        assert proc.returncode == 0, "".join(lines)
        wl.wait(timeout=60)
    finally:
        kill(wl)
    Request, _ = rx.classes()
    with open(otlp, "rb") as f:
        req = Request.FromString(f.read())
    settled = min(t for _, _, s, _ in rx.samples(req) for t in s.timestamps_unix_nano) + 1e9
    v = judge(req, wl.pid, read_log(log_path), settled)
    log(f"  {dict(v)}")
    right, wrong, with_attrs = (v["cpu", "span", k] for k in ("right", "wrong", "attributes"))
    assert right > 300 and not wrong, v
    assert with_attrs >= 0.9 * right, (with_attrs, right)


def test_a_context_published_late_is_found():
    """A program whose SDK publishes its contexts 1.5 s into its run (its threads run spans
    from the start), after ember read its maps at exec: its maps are read again (1 s after
    its first sample, then 2 s later...), and from the first linked sample on every sample
    in a span is linked; its resource is the one it published."""
    prog = os.path.join(WD, "tctx_program")
    if not os.path.exists(prog):
        build()
    log_path, otlp = os.path.join(WD, "late.log"), os.path.join(WD, "late.otlp")
    proc, lines, _ = start_recording(
        ["--no-progress", "-d", "8", "-F", str(HZ), "-o", otlp, "--", prog, "6", log_path, "-",
         "plain"], env=dict(os.environ, THREAD_CTX_PUBLISH_AFTER_MS="1500"))
    proc.wait(timeout=120)
    assert proc.returncode == 0, "".join(lines)
    Request, _ = rx.classes()
    with open(otlp, "rb") as f:
        req = Request.FromString(f.read())
    names = {rx.resource_attrs(rp).get("service.name") for rp in req.resource_profiles}
    assert names == {"thread-ctx"}, names
    times = {True: [], False: []}  # linked or not: the times of samples in a span
    for _, _, s, fr in rx.samples(req):
        if any(f in IN_SPAN for f in fr):
            times[bool(s.link_index)] += list(s.timestamps_unix_nano)
    assert len(times[True]) > 300, {k: len(v) for k, v in times.items()}
    found = min(times[True])
    after = [t for t in times[False] if t > found]
    log(f"  spans' samples: {len(times[False])} before the context was found "
        f"({(found - min(times[False] + [found])) / 1e9:.1f} s in), {len(times[True])} linked "
        f"after, {len(after)} not")
    assert not after, f"{len(after)} samples in spans unlinked after the first linked one"


if __name__ == "__main__":
    run_tests([test_every_way_to_the_variable_gives_the_running_span,
               test_one_trace_as_its_own_profile, test_a_context_published_late_is_found,
               test_span_attributes, test_goroutine_labels])
