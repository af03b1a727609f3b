#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""ember record shipping OTLP profiles to real receivers (HTTP and gRPC, with
and without TLS) that decode with classes generated from the upstream schema;
and the faults of a real network: a receiver absent at start, 503 then 200,
400, hanging, restarted mid-run, gRPC UNAVAILABLE / INVALID_ARGUMENT, a full
delivery queue. "Nothing lost" is checked against the CPU time the workload
used while ember sampled it (/proc/PID/stat), and against the folded file ember
writes in the same run; container.id against the id podman gives its container."""
import os
import re
import signal
import socket
import struct
import subprocess
import time

import otlp_receiver as rx
from emberlib import (require_otlp_classes, BUILD, EMBER, SANITIZED, SRC, CpuClock, assert_close, assert_workload_ran,
                      build_workload, collector_argv, kill, log, podman_run, pprof_comments,
                      read_folded,
                      truth_shares, require_root, run_tests, skip_or_fail, start, start_recording,
                      symbolizer_argv, workdir)

require_root()
require_otlp_classes(rx)
WD = workdir()
SPLIT = build_workload("split", WD)
HZ = 997


TRUTH = {}  # pid -> the leaf shares the workload measured itself (tests/workloads/known_split.h)
CLOCKS = {}  # pid -> CpuClock of the workload
SAMPLED = {}  # pid -> (when ember said it samples, when it exited, its -d): ember record -p pid


def record(args, timeout=180, env=None):
    """Runs ember record; returns (returncode, stderr)."""
    proc, lines, sampling = start_recording(["--no-progress", *args], env=env)
    try:
        proc.wait(timeout=timeout)
    finally:
        kill(proc)
    note_sampled(args, sampling)
    return proc.returncode, "".join(lines)


def note_sampled(args, sampling):
    """After `ember record ARGS` (start_recording) ended: the time it sampled -p PID, by the
    test's clock, for expect_nothing_lost."""
    ended = time.time()
    sampling.reader.join(timeout=30)
    if sampling.is_set() and "-p" in args and "-d" in args:
        SAMPLED[int(args[args.index("-p") + 1])] = (sampling.time, ended,
                                                    float(args[args.index("-d") + 1]))


def with_split(seconds, fn):
    truth_file = os.path.join(WD, f"split-{time.monotonic_ns()}.truth")
    wl = start([SPLIT, str(seconds)], env=dict(os.environ, EMBER_TRUTH_FILE=truth_file))
    CLOCKS[wl.pid] = CpuClock(wl.pid)
    try:
        time.sleep(0.3)
        return fn(wl.pid)
    finally:
        wl.send_signal(signal.SIGTERM)
        try:
            wl.wait(timeout=30)
            TRUTH[wl.pid] = truth_shares(truth_file)
        except (subprocess.TimeoutExpired, AssertionError, OSError):
            pass
        kill(wl)


def record_split_to(r, seconds, *args):
    """Records a split workload of `seconds` (`ember record -F HZ -p PID ARGS...`), then stops
    the receiver r; returns the workload's pid, ember's exit code and its stderr."""
    try:
        pid, (rc, err) = with_split(seconds, lambda pid: (pid, record(
            ["-F", str(HZ), "-p", str(pid), *args])))
    finally:
        r.stop()
    return pid, rc, err


def unique_requests(receivers):
    """Delivered requests, each profile batch once (a retried batch keeps its profile ids)."""
    seen, out = set(), []
    for r in receivers:
        for req in r.delivered():
            ids = tuple(sorted(p.profile_id for rp in req.resource_profiles
                               for sp in rp.scope_profiles for p in sp.profiles))
            if ids not in seen:
                seen.add(ids)
                out.append(req)
    return out


def otlp_total(reqs, pid):
    return sum(rx.sample_count(s) for req in reqs for _, _, s, _ in rx.samples(req, pid))


def folded_total(path):
    return sum(n for _, n in read_folded(path))


def expect_nothing_lost(reqs, pid, folded):
    """What OTLP delivered of pid is what its CPU time while ember sampled it calls for (ember
    samples -d seconds from when it says it samples, and has stopped when it exits): at least
    90% of the CPU time in the first, at most 110% of that in the second; and every sample the
    folded file of the same run holds."""
    got, in_file = otlp_total(reqs, pid), folded_total(folded)
    began, ended, seconds = SAMPLED[pid]
    low = CLOCKS[pid].cpu_between(began, min(ended, began + seconds)) * HZ
    high = CLOCKS[pid].cpu_between(began - 0.1, ended) * HZ
    log(f"  delivered {got} samples of pid {pid} in {len(reqs)} batches; its CPU time while sampled "
        f"calls for {low:.0f}-{high:.0f}; the folded file has {in_file}")
    assert got >= 0.9 * low > 0, f"OTLP carried {got} samples, the workload's CPU time calls for {low:.0f}"
    assert got <= 1.1 * high, f"OTLP carried {got} samples, the workload's CPU time calls for {high:.0f}"
    assert got == in_file, f"OTLP carried {got} samples, the run recorded {in_file}"


def check_dictionaries(reqs):
    for req in reqs:
        problems = rx.check_dictionary(req)
        assert not problems, problems


def gnu_build_id(path):
    out = subprocess.run(["readelf", "-n", path], capture_output=True, text=True).stdout
    m = re.search(r"Build ID:\s*([0-9a-f]+)", out)
    return m.group(1) if m else None


def in_a_container():
    """Whether this test runs in a container (podman and docker leave these files in theirs):
    then its own workloads have a container id the test cannot know from outside."""
    return os.path.exists("/run/.containerenv") or os.path.exists("/.dockerenv")


def check_content(reqs, pid, interval_s=None):
    """The split's functions and shares, resource and sample attributes, time ranges."""
    check_dictionaries(reqs)
    counts, total = rx.leaf_counts(reqs, pid, ["leaf_a", "leaf_b", "leaf_c"])
    everything = rx.pid_total(reqs, pid)
    log(f"  {everything} samples of split in {len(reqs)} requests, {total} in the leaves")
    assert total > 1000, f"too few samples: {total} (is the machine overloaded?)"
    assert total >= 0.95 * everything, "the leaves are missing from too many stacks"
    truth = TRUTH.get(pid)
    assert truth, "the workload did not report what it measured"
    assert_workload_ran(truth, {"leaf_a": 60, "leaf_b": 30, "leaf_c": 10})
    for leaf in ("leaf_a", "leaf_b", "leaf_c"):
        assert_close(leaf, 100.0 * counts[leaf] / total, round(truth[leaf], 1), 3)
    host = socket.gethostname()
    build_id = gnu_build_id(SPLIT)
    starts = []
    for req in reqs:
        d = req.dictionary
        for rp in req.resource_profiles:
            ra = rx.resource_attrs(rp)
            if ra.get("process.pid") != pid:
                continue
            assert ra.get("process.executable.name") == "split", ra
            assert ra.get("process.executable.path") == SPLIT, ra
            assert ra.get("host.name") == host, ra
            assert ra.get("service.name") == "ember-it", ra
            assert ra.get("deployment.environment") == "ci", ra
            # Not in a container: no container id (test_container_id_is_podmans: one that is).
            assert in_a_container() or "container.id" not in ra, ra
            assert len(rp.scope_profiles) == 1
            sp = rp.scope_profiles[0]
            assert sp.scope.name == "ember" and sp.scope.version, sp.scope
            for p in sp.profiles:
                st = d.string_table
                assert (st[p.sample_type.type_strindex], st[p.sample_type.unit_strindex]) == ("samples", "count")
                assert (st[p.period_type.type_strindex], st[p.period_type.unit_strindex]) == ("cpu", "nanoseconds")
                assert p.period == 1000000000 // HZ, p.period
                assert len(p.profile_id) == 16
                starts.append(p.time_unix_nano)
                for s in p.samples:
                    # Timestamps alone (Pyroscope refuses a CPU sample of several values).
                    assert not s.values and len(s.timestamps_unix_nano) > 0, s
                    for t in s.timestamps_unix_nano:
                        assert p.time_unix_nano <= t < p.time_unix_nano + p.duration_nano
                    sa = rx.attrs_of(d, s.attribute_indices)
                    assert sa.get("thread.id") == pid and sa.get("thread.name") == "split", sa
                    assert 0 <= sa.get("cpu.logical_number", -1) < os.cpu_count(), sa
                    loc = d.location_table[d.stack_table[s.stack_index].location_indices[0]]
                    assert rx.attrs_of(d, loc.attribute_indices).get("profile.frame.type") in ("native", "kernel")
        # The workload's own mapping carries its GNU build id.
        maps = [m for m in d.mapping_table[1:] if d.string_table[m.filename_strindex] == SPLIT]
        assert maps, "no mapping of the split binary"
        if build_id:
            assert rx.attrs_of(d, maps[0].attribute_indices).get("process.executable.build_id.gnu") == build_id
    if interval_s:
        assert starts == sorted(starts), "profiles out of order"
    return total


def ship_split(r, url, folded, seconds, args, env=None):
    """Records the split workload for seconds with -o folded, shipping it to receiver r at url
    (with args, and the environment env adds); stops r. Returns (pid, delivered requests)."""
    env = dict(os.environ, OTEL_RESOURCE_ATTRIBUTES="deployment.environment=ci", **(env or {}))
    try:
        def run(pid):
            return pid, record(["-d", str(seconds), "-F", str(HZ), "-p", str(pid), "-o", folded,
                                "--service-name", "ember-it", *args, "--otlp", url], env=env)
        pid, (rc, err) = with_split(seconds + 4, run)
    finally:
        r.stop()
    log("  " + err.strip().replace("\n", "\n  "))
    assert rc == 0, err
    return pid, unique_requests([r])


def test_http_delivers_the_split():
    r = rx.HttpReceiver()
    folded = os.path.join(WD, "h.folded")
    pid, reqs = ship_split(r, f"http://127.0.0.1:{r.port}", folded, 6,
                           ["--interval", "2s", "--otlp-header", "Authorization=Bearer t0ken"])
    assert len(reqs) >= 3, f"expected a profile per 2 s interval, got {len(reqs)}"
    check_content(reqs, pid, interval_s=2)
    expect_nothing_lost(reqs, pid, folded)
    headers = r.attempts[0].headers
    assert headers.get("Content-Type") == "application/x-protobuf", headers
    assert headers.get("Content-Encoding") == "gzip", headers
    assert headers.get("Authorization") == "Bearer t0ken", headers


def test_grpc_delivers_the_split():
    r = rx.GrpcReceiver()
    folded = os.path.join(WD, "g.folded")
    pid, reqs = ship_split(r, f"grpc://127.0.0.1:{r.port}", folded, 6, ["--interval", "3s"],
                           env={"OTEL_EXPORTER_OTLP_HEADERS": "x-scope-orgid=tenant-7"})
    assert len(reqs) >= 2, len(reqs)
    check_content(reqs, pid, interval_s=3)
    expect_nothing_lost(reqs, pid, folded)
    md = r.attempts[0].headers
    assert md.get("x-scope-orgid") == "tenant-7", md


def test_large_intervals_go_as_several_requests():
    """An interval larger than --otlp-max-request reaches the receiver as several requests, each
    within the limit, with every sample: a default Collector refuses a gRPC request past 4 MiB
    whole."""
    r = rx.GrpcReceiver()
    folded = os.path.join(WD, "m.folded")
    limit = 64 << 10
    pid, reqs = ship_split(r, f"grpc://127.0.0.1:{r.port}", folded, 14,
                           ["--interval", "14s", "--otlp-max-request", "64K"])
    sizes = sorted(req.ByteSize() for req in reqs)
    log(f"  {len(reqs)} requests of {sizes[0]} to {sizes[-1]} bytes (limit {limit})")
    # About 14,000 samples with a timestamp each (8 bytes): past 64 KiB as one request
    # (6,000 made 55 KB), so the interval went as two or more.
    assert len(reqs) >= 2 and sizes[-2] >= limit // 4, sizes
    assert sizes[-1] <= limit, sizes
    check_content(reqs, pid)
    expect_nothing_lost(reqs, pid, folded)


def test_otlp_file_matches_the_folded_file():
    otlp, folded = os.path.join(WD, "f.otlp"), os.path.join(WD, "f.folded")
    env = dict(os.environ, OTEL_SERVICE_NAME="ember-it",
               OTEL_RESOURCE_ATTRIBUTES="deployment.environment=ci")

    def run(pid):
        return pid, record(["-d", "4", "-F", str(HZ), "-p", str(pid), "-o", otlp, "-o", folded], env=env)
    pid, (rc, err) = with_split(8, run)
    assert rc == 0, err
    Request, _ = rx.classes()
    with open(otlp, "rb") as f:
        req = Request.FromString(f.read())
    check_content([req], pid)
    expect_nothing_lost([req], pid, folded)


def gnu_build_id_note(notes):
    """The GNU build id among ELF notes (Elf64_Nhdr records), as hex, or None."""
    at = 0
    while at + 12 <= len(notes):
        namesz, descsz, kind = struct.unpack_from("<III", notes, at)
        name_at = at + 12
        desc_at = name_at + (namesz + 3) // 4 * 4
        if kind == 3 and notes[name_at:name_at + namesz] == b"GNU\0":
            return notes[desc_at:desc_at + descsz].hex()
        at = desc_at + (descsz + 3) // 4 * 4
    return None


def kernel_build_id():
    """The running kernel's GNU build id, from /sys/kernel/notes."""
    with open("/sys/kernel/notes", "rb") as f:
        return gnu_build_id_note(f.read())


def vdso_build_id(pid):
    """The GNU build id of the vDSO process pid maps, read from its memory (PT_NOTE)."""
    with open(f"/proc/{pid}/maps") as f:
        line = next(m for m in f if m.rstrip().endswith("[vdso]"))
    start, end = (int(a, 16) for a in line.split()[0].split("-"))
    with open(f"/proc/{pid}/mem", "rb") as f:
        f.seek(start)
        image = f.read(end - start)
    phoff, = struct.unpack_from("<Q", image, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", image, 0x36)
    for i in range(phnum):
        kind, _, offset, _, _, filesz = struct.unpack_from("<IIQQQQ", image, phoff + i * phentsize)
        if kind == 4:  # PT_NOTE
            return gnu_build_id_note(image[offset:offset + filesz])
    return None


def test_kernel_mapping_carries_the_kernel_build_id():
    """Every mapping carries a build id (the specification's MUST, and a backend's way to
    symbolize): the kernel's, from /sys/kernel/notes, on [kernel.kallsyms]."""
    want = kernel_build_id()
    assert want, "this kernel's /sys/kernel/notes has no GNU build id"
    otlp = os.path.join(WD, "k.otlp")
    dd = start(["dd", "if=/dev/zero", "of=/dev/null", "bs=512"])
    try:
        rc, err = record(["-d", "2", "-F", str(HZ), "-p", str(dd.pid), "-o", otlp])
    finally:
        kill(dd)
    assert rc == 0, err
    Request, _ = rx.classes()
    with open(otlp, "rb") as f:
        d = Request.FromString(f.read()).dictionary
    kernel = [m for m in d.mapping_table[1:]
              if d.string_table[m.filename_strindex] == "[kernel.kallsyms]"]
    assert kernel, "no kernel frames in dd's samples"
    got = rx.attrs_of(d, kernel[0].attribute_indices).get("process.executable.build_id.gnu")
    log(f"  kernel build id {got} (/sys/kernel/notes: {want})")
    assert got == want, (got, want)


VDSO_LOOP = r"""
#include <time.h>
int main(void)
{
	struct timespec t;
	unsigned long s = 0;
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &t);
		s += (unsigned long)t.tv_nsec;
	}
	return (int)(s & 1);
}
"""


def test_vdso_mapping_carries_its_build_id():
    """The vDSO, which is no file, carries the build id of the image the kernel maps (read
    from the workload's own memory here)."""
    src, exe, otlp = (os.path.join(WD, n) for n in ("vdso.c", "vdso", "v.otlp"))
    with open(src, "w") as f:
        f.write(VDSO_LOOP)
    subprocess.run(["gcc", "-O2", "-o", exe, src], check=True)
    wl = start([exe])
    try:
        time.sleep(0.2)
        want = vdso_build_id(wl.pid)
        rc, err = record(["-d", "2", "-F", str(HZ), "-p", str(wl.pid), "-o", otlp])
    finally:
        kill(wl)
    assert rc == 0, err
    assert want, "the vDSO has no GNU build id note"
    Request, _ = rx.classes()
    with open(otlp, "rb") as f:
        d = Request.FromString(f.read()).dictionary
    vdso = [m for m in d.mapping_table[1:] if d.string_table[m.filename_strindex] == "[vdso]"]
    assert vdso, "no vDSO frames in a clock_gettime loop"
    got = rx.attrs_of(d, vdso[0].attribute_indices).get("process.executable.build_id.gnu")
    log(f"  vDSO build id {got} (the workload's memory: {want})")
    assert got == want, (got, want)


def file_functions(path, addresses):
    """{address: the function it is in} by eu-addr2line, reading the file at ELF addresses
    (an inlined body counts for the function it was inlined into, as ember's outermost line)."""
    out = subprocess.run(["eu-addr2line", "-f", "-e", path, *(hex(a) for a in addresses)],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    names = [(n.split(" in ")[-1] if " inlined at " in n else n).split("@")[0]
             for n in out[0::2]]
    return dict(zip(addresses, names))


def split_locations(req):
    """[(location, the split binary's mapping)] of every location in the split binary."""
    d = req.dictionary
    return [(loc, d.mapping_table[loc.mapping_index]) for loc in d.location_table[1:]
            if loc.mapping_index and d.string_table[d.mapping_table[loc.mapping_index].filename_strindex] == SPLIT]


def test_addresses_are_the_files_elf_addresses():
    """OTLP addresses are what a backend resolves against the file its build id names: the
    file's ELF addresses, not where this process loaded it (the split binary is a PIE, loaded
    far from its link address). eu-addr2line, reading the file at each address, names the
    function ember named. With --otlp-symbols backend, the file's frames go unnamed, and those
    addresses alone give the workload's own leaf shares."""
    host, backend = os.path.join(WD, "h.otlp"), os.path.join(WD, "b.otlp")

    def run(p):
        return p, [record(["-d", "3", "-F", str(HZ), "-p", str(p), "-o", out, *extra])
                   for out, extra in ((host, []), (backend, ["--otlp-symbols", "backend"]))]
    pid, runs = with_split(10, run)
    for rc, err in runs:
        assert rc == 0, err
    Request, _ = rx.classes()
    with open(host, "rb") as f:
        req = Request.FromString(f.read())
    d = req.dictionary
    locs = split_locations(req)
    assert locs, "no frames of the split binary"
    truth = file_functions(SPLIT, [loc.address for loc, _ in locs])
    named = [(loc, d.string_table[d.function_table[loc.lines[-1].function_index].name_strindex])
             for loc, _ in locs if loc.lines]
    agree = sum(truth[loc.address] == name for loc, name in named)
    log(f"  host: {agree} of {len(named)} named locations of split agree with eu-addr2line "
        f"at their OTLP address")
    assert named and agree == len(named), [(hex(loc.address), name, truth[loc.address])
                                           for loc, name in named if truth[loc.address] != name][:5]
    # The mapping is the file's: some PT_LOAD starts (page-aligned) at its start and offset.
    out = subprocess.run(["readelf", "-lW", SPLIT], capture_output=True, text=True).stdout
    loads = {(int(v, 16) & ~0xfff, int(o, 16) & ~0xfff) for o, v in re.findall(
        r"^\s*LOAD\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)", out, re.M)}
    m = locs[0][1]
    assert (m.memory_start, m.file_offset) in loads, (hex(m.memory_start), hex(m.file_offset), loads)

    with open(backend, "rb") as f:
        req = Request.FromString(f.read())
    d = req.dictionary
    locs = split_locations(req)
    assert locs and not any(loc.lines for loc, _ in locs), "backend symbols: split's frames named"
    names = file_functions(SPLIT, [loc.address for loc, _ in locs])
    counts = {}
    for _, _, s, _ in rx.samples(req, pid):
        for li in d.stack_table[s.stack_index].location_indices:
            loc = d.location_table[li]
            name = names.get(loc.address) if loc.mapping_index and not loc.lines else None
            if name in ("leaf_a", "leaf_b", "leaf_c"):
                counts[name] = counts.get(name, 0) + rx.sample_count(s)
                break
    total = sum(counts.values())
    log(f"  backend: leaves named from addresses alone {counts}")
    assert total > 1000, counts
    truth = TRUTH.get(pid)
    assert truth, "the workload did not report what it measured"
    for leaf in ("leaf_a", "leaf_b", "leaf_c"):
        assert_close(leaf, 100.0 * counts.get(leaf, 0) / total, round(truth[leaf], 1), 3)


def test_process_context_names_the_resource():
    """A process that publishes its context (OTEP 4719: a memfd named OTEL_CTX) names its own
    resource: its service.name and deployment.environment, not ember's guess; its lie about
    its pid does not stand. One whose context is larger than the cap, or forever being
    updated, is counted as refused and keeps ember's names."""
    src, exe = os.path.join(SRC, "tests", "workloads", "otel_ctx.c"), os.path.join(WD, "otel_ctx")
    subprocess.run(["gcc", "-O1", "-o", exe, src], check=True)
    procs = [start([exe, mode, f"ctx-{mode}", "20"]) for mode in ("good", "huge", "updating")]
    otlp, pprof = os.path.join(WD, "ctx.otlp"), os.path.join(WD, "ctx.pb.gz")
    try:
        time.sleep(0.3)
        rc, err = record(["-d", "2", "-F", str(HZ), *[a for p in procs for a in ("-p", str(p.pid))],
                          "-o", otlp, "-o", pprof])
    finally:
        for p in procs:
            kill(p)
    assert rc == 0, err
    Request, _ = rx.classes()
    with open(otlp, "rb") as f:
        req = Request.FromString(f.read())
    res = {ra["process.pid"]: ra for ra in (rx.resource_attrs(rp) for rp in req.resource_profiles)}
    good, huge, updating = (res.get(p.pid) for p in procs)
    log(f"  published: {good}")
    assert good and good.get("service.name") == "ctx-good", good
    assert good.get("deployment.environment") == "ctx-test", good
    assert good.get("process.executable.name") == "otel_ctx", good
    for r in (huge, updating):
        assert r and r.get("service.name") == "unknown_service:otel_ctx", r
        assert "deployment.environment" not in r, r
    stats = pprof_comments(pprof)
    log(f"  process contexts read {stats.get('symbolizer.process_contexts')}, refused "
        f"{stats.get('symbolizer.process_contexts_refused')}")
    assert stats.get("symbolizer.process_contexts") == 1, stats
    assert stats.get("symbolizer.process_contexts_refused") == 2, stats


def test_container_id_is_podmans():
    """A process in a podman container: its resource's container.id is the id podman gave the
    container (not a rule restated: podman's own answer)."""
    root = os.path.join(WD, "box")
    os.makedirs(root, exist_ok=True)
    static = build_workload("split", root, cflags=("-O2", "-static", "-fno-omit-frame-pointer"))
    otlp = os.path.join(WD, "box.otlp")
    with podman_run(WD, static, "20") as box:
        rc, err = record(["-d", "2", "-F", "99", "-p", str(box.pid), "-o", otlp])
    assert rc == 0, err
    Request, _ = rx.classes()
    with open(otlp, "rb") as f:
        req = Request.FromString(f.read())
    ids = {rx.resource_attrs(rp).get("container.id") for rp in req.resource_profiles
           if rx.resource_attrs(rp).get("process.pid") == box.pid}
    log(f"  podman: container {box.cid}, host pid {box.pid}; OTLP container.id {ids}")
    assert ids == {box.cid}, (ids, box.cid)


def make_pki(d):
    """A CA, a server certificate for 127.0.0.1/localhost, a client certificate."""
    def sh(*cmd):
        subprocess.run(cmd, check=True, capture_output=True, cwd=d)
    sh("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=ember-test-ca",
       "-keyout", "ca.key", "-out", "ca.pem")
    with open(os.path.join(d, "san.ext"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    for name in ("server", "client"):
        sh("openssl", "req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={name}",
           "-keyout", f"{name}.key", "-out", f"{name}.csr")
        sh("openssl", "x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
           "-CAcreateserial", "-days", "2", "-extfile", "san.ext", "-out", f"{name}.pem")
    # The client key is readable by root only: ember must load it before dropping privileges.
    os.chmod(os.path.join(d, "client.key"), 0o600)
    return {k: os.path.join(d, v) for k, v in (("ca", "ca.pem"), ("cert", "server.pem"),
                                               ("key", "server.key"), ("ccert", "client.pem"),
                                               ("ckey", "client.key"))}


def test_tls_with_client_certificates():
    pki = make_pki(WD)
    tls = {"cert": pki["cert"], "key": pki["key"], "client_ca": pki["ca"]}
    for kind, scheme in (("http", "https"), ("grpc", "grpcs")):
        r = rx.HttpReceiver(tls=tls) if kind == "http" else rx.GrpcReceiver(tls=tls)
        try:
            def run(pid):
                return pid, record(["-d", "3", "-F", str(HZ), "-p", str(pid),
                                    "--otlp", f"{scheme}://localhost:{r.port}",
                                    "--otlp-ca", pki["ca"], "--otlp-cert", pki["ccert"],
                                    "--otlp-key", pki["ckey"]])
            pid, (rc, err) = with_split(6, run)
        finally:
            r.stop()
        reqs = unique_requests([r])
        log(f"  {scheme}: rc {rc}, {len(reqs)} requests, {otlp_total(reqs, pid)} samples")
        assert rc == 0, err
        assert reqs and otlp_total(reqs, pid) > 500, err
    # Without the client certificate the receiver refuses the handshake: not delivered.
    r = rx.HttpReceiver(tls=tls)
    _, rc, err = record_split_to(r, 4, "-d", "1",
                                 "--otlp", f"https://localhost:{r.port}", "--otlp-ca", pki["ca"],
                                 "--otlp-deadline", "3s")
    log(f"  without client certificate: rc {rc}")
    assert rc == 1 and "not delivered" in err, err


def test_receiver_absent_at_start():
    port = rx.free_port()
    folded = os.path.join(WD, "a.folded")
    wl = start([SPLIT, "12"])
    CLOCKS[wl.pid] = CpuClock(wl.pid)
    receivers = []
    try:
        time.sleep(0.3)
        args = ["--no-progress", "-d", "7", "-F", str(HZ), "-p", str(wl.pid), "-o", folded,
                "--interval", "1s", "--otlp", f"http://127.0.0.1:{port}"]
        proc, lines, sampling = start_recording(args)
        # The receiver comes up once a batch has failed: after a fixed 3.5 s, a sanitized
        # build on a loaded host had sent no batch yet (8 of 8 delivered at the first attempt).
        deadline = time.time() + 60
        while (not any("retrying" in l for l in lines) and proc.poll() is None
               and time.time() < deadline):
            time.sleep(0.1)
        receivers.append(rx.HttpReceiver(port))
        proc.wait(timeout=120)
        note_sampled(args, sampling)
        err = "".join(lines)
    finally:
        kill(wl)
        for r in receivers:
            r.stop()
    log("  " + err.strip().replace("\n", "\n  "))
    assert proc.returncode == 0, err
    assert "retrying" in err, "the first batches should have failed and been retried"
    expect_nothing_lost(unique_requests(receivers), wl.pid, folded)


def test_503_then_200_is_retried_and_nothing_lost():
    r = rx.HttpReceiver().then(("status", 503, 1), ("status", 503, 1), ("status", 429, None))
    folded = os.path.join(WD, "r.folded")
    pid, rc, err = record_split_to(r, 8, "-d", "5",
                                   "-o", folded, "--interval", "2s", "--otlp",
                                   f"http://127.0.0.1:{r.port}")
    log("  " + err.strip().replace("\n", "\n  "))
    assert rc == 0, err
    reqs = unique_requests([r])
    assert len(r.attempts) == len(reqs) + 3, (len(r.attempts), len(reqs))
    # Retry-After: 1 was honoured between the first two attempts.
    gap = r.attempts[1].time - r.attempts[0].time
    log(f"  {len(r.attempts)} attempts for {len(reqs)} batches; first retry after {gap:.2f} s")
    assert gap >= 0.95, gap
    expect_nothing_lost(reqs, pid, folded)


def test_400_is_dropped_counted_and_not_retried():
    r = rx.HttpReceiver()
    r.default = ("status", 400)
    folded = os.path.join(WD, "b.folded")
    pid, rc, err = record_split_to(r, 7, "-d", "4",
                                   "-o", folded, "--interval", "1s", "--otlp",
                                   f"http://127.0.0.1:{r.port}")
    log("  " + err.strip().replace("\n", "\n  "))
    m = re.search(r"0 of (\d+) profile batches delivered", err)
    assert m, err
    batches = int(m.group(1))
    assert batches >= 3 and len(r.attempts) == batches, (batches, len(r.attempts))
    assert re.search(rf"{batches} batches \(\d+ samples\) not delivered: {batches} rejected", err), err
    assert "not retried" in err and "HTTP 400" in err, err
    # The files are still written; the run says it failed to deliver.
    assert rc == 1 and folded_total(folded) > 100, (rc, err)


def test_grpc_unavailable_is_retried_invalid_argument_dropped():
    r = rx.GrpcReceiver().then(("grpc", "UNAVAILABLE", 1.5), ("grpc", "RESOURCE_EXHAUSTED", None))
    folded = os.path.join(WD, "u.folded")
    pid, rc, err = record_split_to(r, 7, "-d", "4",
                                   "-o", folded, "--interval", "2s", "--otlp",
                                   f"grpc://127.0.0.1:{r.port}")
    log("  " + err.strip().replace("\n", "\n  "))
    assert rc == 0, err
    gap = r.attempts[1].time - r.attempts[0].time
    log(f"  RetryInfo 1.5 s -> retried after {gap:.2f} s")
    assert gap >= 1.45, gap
    expect_nothing_lost(unique_requests([r]), pid, folded)

    r = rx.GrpcReceiver()
    r.default = ("grpc", "INVALID_ARGUMENT")
    _, rc, err = record_split_to(r, 6, "-d", "3",
                                 "--interval", "1s", "--otlp", f"grpc://127.0.0.1:{r.port}")
    m = re.search(r"0 of (\d+) profile batches delivered", err)
    assert m and int(m.group(1)) >= 2 and len(r.attempts) == int(m.group(1)), err
    assert "gRPC status 3" in err and rc == 1, err


def test_hanging_receiver_times_out():
    # Hangs once: the attempt times out, the retry delivers, nothing is lost.
    r = rx.HttpReceiver().then(("hang", 30))
    folded = os.path.join(WD, "t.folded")
    try:
        t0 = time.time()
        pid, (rc, err) = with_split(8, lambda pid: (pid, record(
            ["-d", "4", "-F", str(HZ), "-p", str(pid), "-o", folded, "--interval", "1s",
             "--otlp-timeout", "2s", "--otlp", f"http://127.0.0.1:{r.port}"])))
        took = time.time() - t0
    finally:
        r.stop()
    log(f"  hang once: rc {rc} in {took:.1f} s")
    assert rc == 0, err
    expect_nothing_lost(unique_requests([r]), pid, folded)
    # Hangs forever: sampling goes on, the end waits only until the deadline.
    r = rx.HttpReceiver()
    r.default = ("hang", 120)
    whole = os.path.join(WD, "t.otlp")
    try:
        t0 = time.time()
        pid, (rc, err) = with_split(8, lambda pid: (pid, record(
            ["-d", "4", "-F", str(HZ), "-p", str(pid), "-o", whole, "--interval", "1s",
             "--otlp-timeout", "2s", "--otlp-deadline", "4s", "--otlp", f"http://127.0.0.1:{r.port}"])))
        took = time.time() - t0
    finally:
        r.stop()
    log("  " + err.strip().replace("\n", "\n  "))
    assert rc == 1 and "not delivered" in err, err
    assert took < 4 + 4 + 10, took
    # The whole run was sampled while every export hung: samples in every half second.
    Request, _ = rx.classes()
    with open(whole, "rb") as f:
        req = Request.FromString(f.read())
    stamps = sorted(t for _, _, s, _ in rx.samples(req, pid) for t in s.timestamps_unix_nano)
    lost = int(re.search(r"(\d+) lost", err).group(1))
    buckets = {int((t - stamps[0]) / 1e9) for t in stamps}
    span = (stamps[-1] - stamps[0]) / 1e9
    log(f"  hang always: rc {rc} in {took:.1f} s; {len(stamps)} samples over {span:.1f} s, "
        f"in {len(buckets)} of its seconds, {lost} lost")
    assert span > 3.5 and buckets == set(range(int(span) + 1)), "sampling paused"
    assert lost < 0.05 * len(stamps), f"{lost} samples lost"


def test_receiver_restarted_mid_run():
    port = rx.free_port()
    folded = os.path.join(WD, "s.folded")
    first = rx.HttpReceiver(port)
    second = None
    wl = start([SPLIT, "14"])
    CLOCKS[wl.pid] = CpuClock(wl.pid)
    try:
        time.sleep(0.3)
        args = ["--no-progress", "-d", "9", "-F", str(HZ), "-p", str(wl.pid), "-o", folded,
                "--interval", "1s", "--otlp", f"http://127.0.0.1:{port}"]
        proc, lines, sampling = start_recording(args)
        time.sleep(3.5)
        first.stop()
        time.sleep(2)
        second = rx.HttpReceiver(port)
        proc.wait(timeout=120)
        note_sampled(args, sampling)
        err = "".join(lines)
    finally:
        kill(wl)
        for r in (first, second):
            if r:
                try:
                    r.stop()
                except Exception:  # noqa: BLE001 - already stopped
                    pass
    log("  " + err.strip().replace("\n", "\n  "))
    assert proc.returncode == 0, err
    a, b = unique_requests([first]), unique_requests([second])
    log(f"  {len(a)} batches before the restart, {len(b)} after")
    assert a and b
    expect_nothing_lost(unique_requests([first, second]), wl.pid, folded)


def vm_rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))


def test_full_queue_drops_the_oldest_and_memory_stays_flat():
    port = rx.free_port()  # nobody listens: every batch waits in the queue
    wl = start([SPLIT, "14", "2"])
    try:
        time.sleep(0.3)
        # Its debug log (libbpf's lines among it) is larger than a pipe holds: read as it comes,
        # or ember would block writing it.
        proc, lines, _ = start_recording(["--no-progress", "--log-level", "debug", "-d", "12", "-F", "999",
                                          "-p", str(wl.pid), "--interval", "1s", "--otlp-queue-size",
                                          "48k", "--otlp-deadline", "1s", "--otlp", f"http://127.0.0.1:{port}"])
        sym = None
        for _ in range(200):
            out = subprocess.run(["pgrep", "-P", str(proc.pid), "-f", "ember-symbolizer"],
                                 capture_output=True, text=True).stdout.split()
            if out:
                sym = int(out[0])
                break
            if proc.poll() is not None:
                break
            time.sleep(0.1)
        if not sym:
            # Say why: ember ended early, or its symbolizer never showed within 20 s.
            proc.kill()
            proc.wait(timeout=60)
            raise AssertionError(f"no symbolizer child (ember exit {proc.returncode}): "
                                 f"{''.join(lines)[-2000:]}")
        try:
            # Flat from the moment the queue is full (its warm-up, tables and kernel symbols,
            # comes before that, later on a loaded host), for 4.5 s.
            for _ in range(300):
                if any("the delivery queue is full" in l for l in lines) or proc.poll() is not None:
                    break
                time.sleep(0.1)
            time.sleep(0.5)
            early = vm_rss_kb(sym)
            time.sleep(4.5)
            late = vm_rss_kb(sym)
        except FileNotFoundError:
            proc.wait(timeout=120)
            raise AssertionError(f"the symbolizer ended before its queue was full for 5 s (ember exit "
                                 f"{proc.returncode}): {''.join(l for l in lines if 'libbpf' not in l)[-3000:]}")
        proc.wait(timeout=120)
        for _ in range(100):  # the drain reads up to ember's last line
            if any(re.match(r"ember: \d+ samples, \d+ lost", l) for l in lines):
                break
            time.sleep(0.1)
        err = "".join(l for l in lines if "libbpf" not in l)
    finally:
        kill(wl)
    peak = re.search(r"queue peak (\d+) of (\d+) bytes", err)
    dropped = re.search(r"(\d+) dropped from the full queue", err)
    log(f"  symbolizer RSS {early} kB once the queue was full, {late} kB 4.5 s later; "
        f"{peak.group(0) if peak else '?'}; "
        f"{dropped.group(0) if dropped else '?'}")
    assert proc.returncode == 1, err
    assert peak and int(peak.group(1)) <= int(peak.group(2)) == 48 * 1024, err
    assert dropped and int(dropped.group(1)) > 0, err
    assert "the delivery queue is full" in err, err
    # Not in a sanitized build: ASan's quarantine holds freed blocks back, and grows by design.
    assert SANITIZED or late - early < 2048, \
        f"the symbolizer grew by {late - early} kB while the endpoint was down"


def test_daemons_ship_as_well():
    """ember-collector and ember-symbolizer as daemons: the symbolizer ships each
    interval and writes its files (folded and .otlp) from the same samples."""
    base = os.path.join(WD, "daemons")
    run_dir, out = os.path.join(base, "run"), os.path.join(base, "out")
    os.makedirs(run_dir, exist_ok=True)
    os.makedirs(out, exist_ok=True)
    os.chown(out, 65534, 65534)
    sock = os.path.join(run_dir, "collector.sock")
    r = rx.HttpReceiver()
    truth_file = os.path.join(WD, "daemon-split.truth")
    wl = start([SPLIT, "30"], env=dict(os.environ, EMBER_TRUTH_FILE=truth_file))
    col = sym = None
    try:
        time.sleep(0.3)
        col = start(collector_argv(BUILD, "--user", "nobody", "--runtime-dir", run_dir, "-F", str(HZ),
                                   "-p", str(wl.pid)))
        for _ in range(100):
            if os.path.exists(sock):
                break
            time.sleep(0.1)
        env = dict(os.environ, OTEL_RESOURCE_ATTRIBUTES="deployment.environment=ci")
        sym = subprocess.Popen(symbolizer_argv(BUILD, "--connect", sock, "--output-dir", out,
                                               "--interval", "2s", "--format", "folded", "--format",
                                               "otlp", "--keep", "0",
                                               "--user", "nobody", "--service-name", "ember-it",
                                               "--otlp", f"http://127.0.0.1:{r.port}"),
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        time.sleep(7)
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
        r.stop()
    log("  " + sym_out.strip().replace("\n", "\n  "))
    assert sym.returncode == 0, sym_out
    reqs = unique_requests([r])
    assert len(reqs) >= 3, len(reqs)
    TRUTH[wl.pid] = truth_shares(truth_file)
    check_content(reqs, wl.pid, interval_s=2)
    files = sorted(f for f in os.listdir(out) if not f.startswith("."))
    folded = [os.path.join(out, f) for f in files if f.endswith(".folded")]
    otlp_files = [os.path.join(out, f) for f in files if f.endswith(".otlp")]
    in_files = sum(folded_total(f) for f in folded)
    log(f"  {len(folded)} folded and {len(otlp_files)} .otlp files with {in_files} samples; "
        f"{otlp_total(reqs, wl.pid)} shipped")
    assert folded and len(otlp_files) == len(folded)
    assert otlp_total(reqs, wl.pid) == in_files
    Request, _ = rx.classes()
    for f in otlp_files:
        with open(f, "rb") as fh:
            assert not rx.check_dictionary(Request.FromString(fh.read()))


def test_partial_success_is_logged():
    r = rx.HttpReceiver()
    r.default = ("partial", 1, "one profile too many")
    _, rc, err = record_split_to(r, 5, "-d", "2", "--otlp", f"http://127.0.0.1:{r.port}")
    assert rc == 0, err
    assert "accepted the batch only in part" in err and "one profile too many" in err, err


def test_bad_export_settings_are_clear():
    def expect(args, code, pattern):
        rc, err = record(["-d", "1", *args], timeout=60)
        first = err.strip().splitlines()[0] if err.strip() else ""
        log(f"  {' '.join(args)} -> {rc}: {first}")
        assert rc == code and re.search(pattern, err), (args, rc, err)

    expect(["--otlp", "127.0.0.1:4318"], 2, r"not an OTLP endpoint: give http://")
    expect(["--otlp", "ftp://127.0.0.1"], 2, r"not an OTLP endpoint")
    expect(["--otlp", "http://127.0.0.1", "--otlp-compression", "zip"], 2, r"bad --otlp-compression .zip.")
    expect(["--otlp", "grpc://127.0.0.1:4317/extra"], 2, r"takes no path")
    expect(["--otlp", "http://no-such-host.invalid"], 1, r"cannot resolve")
    expect(["--otlp", "https://127.0.0.1", "--otlp-ca", "/nonexistent.pem"], 1, r"cannot read the CA file")


if __name__ == "__main__":
    run_tests([
        test_http_delivers_the_split,
        test_grpc_delivers_the_split,
        test_large_intervals_go_as_several_requests,
        test_otlp_file_matches_the_folded_file,
        test_kernel_mapping_carries_the_kernel_build_id,
        test_vdso_mapping_carries_its_build_id,
        test_addresses_are_the_files_elf_addresses,
        test_process_context_names_the_resource,
        test_container_id_is_podmans,
        test_tls_with_client_certificates,
        test_receiver_absent_at_start,
        test_503_then_200_is_retried_and_nothing_lost,
        test_400_is_dropped_counted_and_not_retried,
        test_grpc_unavailable_is_retried_invalid_argument_dropped,
        test_hanging_receiver_times_out,
        test_receiver_restarted_mid_run,
        test_full_queue_drops_the_oldest_and_memory_stays_flat,
        test_daemons_ship_as_well,
        test_partial_success_is_logged,
        test_bad_export_settings_are_clear,
    ])
