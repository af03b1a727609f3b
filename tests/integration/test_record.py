#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""ember record end to end with the real eBPF programs: a known CPU split
through distinct callers, pprof readable by `go tool pprof` (quietly, with a
short header, for a whole-system recording too), kernel frames,
the symbolizer running unprivileged, Ctrl-C, the kernel's drop counters, and clear
CLI errors."""
import json
import os
import re
import shutil
import signal
import subprocess
import time

from emberlib import (EMBER, GO, CpuClock, assert_close, assert_workload_ran, assert_samples, build_workload,
                      ember, kill, leaf_shares, log, pprof_comments, read_folded, read_pprof, require_root,
                      run_tests, skip_or_fail, staged_for_others, start, start_recording, truth_shares,
                      workdir)

require_root()
WD = workdir()
SPLIT = build_workload("split", WD)


def record_until_signalled(args, seconds, signals):
    """Runs ember record with args; seconds after it samples, sends signals (5 ms apart) and
    waits for it to end. Returns the process, its output and its "sampling" event."""
    proc, lines, sampling = start_recording(args)
    try:
        assert sampling.wait(timeout=60), "ember did not start: " + "".join(lines)
        time.sleep(seconds)
        for i, sig in enumerate(signals):
            time.sleep(0.005 if i else 0)
            proc.send_signal(sig)
        proc.wait(timeout=60)
        sampling.reader.join(timeout=30)
    finally:
        kill(proc)
    return proc, "".join(lines), sampling


def test_known_split_with_frame_pointers():
    truth_file = os.path.join(WD, "s.truth")
    wl = start([SPLIT, "30"], env=dict(os.environ, EMBER_TRUTH_FILE=truth_file))
    try:
        time.sleep(0.5)
        folded, pprof = os.path.join(WD, "s.folded"), os.path.join(WD, "s.pb.gz")
        ember("record", "-d", "6", "-F", "997", "-p", str(wl.pid), "-o", folded, "-o", pprof)
        wl.send_signal(signal.SIGTERM)  # the workload writes what it measured, then exits
        wl.wait(timeout=30)
    finally:
        kill(wl)
    truth = truth_shares(truth_file)
    rows = read_folded(folded)
    shares, total = leaf_shares(rows, "split", ["leaf_a", "leaf_b", "leaf_c"])
    log(f"  {total} samples of split; the workload measured " +
        ", ".join(f"{k} {v:.1f}%" for k, v in sorted(truth.items())))
    # 3 points must be >= 3 standard errors of a 60% share: at least 1,000 samples.
    assert total > 1000, f"too few samples: {total} (is the machine overloaded?)"
    assert_workload_ran(truth, {"leaf_a": 60, "leaf_b": 30, "leaf_c": 10})
    for leaf in ("leaf_a", "leaf_b", "leaf_c"):
        assert_close(leaf, shares[leaf], round(truth[leaf], 1), 3)
    # Each leaf is reached through its own caller, below main.
    for leaf, caller in (("leaf_a", "caller_a"), ("leaf_b", "caller_b"), ("leaf_c", "caller_c")):
        paths = [f for f, _ in rows if f[-1] == leaf]
        assert paths, f"no stack ends in {leaf}"
        good = sum(n for f, n in rows if f[-1] == leaf and f[-2] == caller and "main" in f)
        allc = sum(n for f, n in rows if f[-1] == leaf)
        log(f"  {leaf}: {100.0 * good / allc:.1f}% of its samples go main -> {caller}")
        assert good >= 0.95 * allc, f"{leaf} not reached through {caller} and main"
    # Only the requested process was recorded.
    comms = {f[0] for f, _ in rows}
    assert comms == {"split"}, f"other processes in a -p recording: {comms}"
    # go tool pprof (Debian's golang-go) reads the pprof file and names the leaves.
    env = dict(os.environ, HOME=WD, GOCACHE=os.path.join(WD, "gocache"), GOFLAGS="-mod=mod")
    r = subprocess.run([GO, "tool", "pprof", "-top", "-symbolize=none", pprof],
                       capture_output=True, text=True, env=env, timeout=120)
    log(r.stdout[:800])
    assert r.returncode == 0, r.stderr
    for leaf in ("leaf_a", "leaf_b", "leaf_c"):
        assert leaf in r.stdout, f"go tool pprof does not name {leaf}"
    # A -p profile is headlined with its program.
    assert r.stdout.startswith("File: split\n"), r.stdout[:200]


def test_whole_system_has_kernel_and_user_frames():
    # A syscall-heavy process guarantees kernel stacks.
    dd = start(["dd", "if=/dev/zero", "of=/dev/null", "bs=1", "count=100000000"])
    wl = start([SPLIT, "6"])
    try:
        folded = os.path.join(WD, "all.folded")
        ember("record", "-d", "3", "-F", "99", "-o", folded)
    finally:
        kill(dd)
        kill(wl)
    rows = read_folded(folded)
    comms = {f[0] for f, _ in rows}
    log(f"  {len(rows)} stacks from {len(comms)} programs")
    assert "split" in comms and "dd" in comms, comms
    dd_frames = {fr for f, _ in rows if f[0] == "dd" for fr in f[1:]}
    kernel = [fr for fr in dd_frames if re.match(r"^(entry_SYSCALL_64|do_syscall_64|__x64_sys_\w+|ksys_\w+|vfs_\w+)", fr)]
    assert kernel, f"no symbolized kernel frames for dd: {sorted(dd_frames)[:40]}"
    # dd's user side: its own code or libc's read/write wrappers, by name or module+offset.
    user = [fr for fr in dd_frames
            if fr in ("main", "__libc_start_main", "read", "__read", "write", "__write", "__GI___libc_write")
            or fr.startswith("dd+0x") or fr.startswith("libc.so.6+0x")]
    assert user, f"no user frames for dd: {sorted(dd_frames)[:40]}"


RUN_FROM_MEMFD = """
import os, sys
fd = os.memfd_create("split-in-memory")
os.write(fd, open(sys.argv[1], "rb").read())
os.execv(f"/proc/self/fd/{fd}", ["split-in-memory", sys.argv[2]])
"""


# Code run from a file that is no ELF (as a JIT that maps its code from a
# file does): two bytes, "jmp .", mapped executable and called.
RUN_FROM_RAW_FILE = """
import ctypes, os, sys
with open(sys.argv[1], "wb") as f:
    f.write(b"\\xeb\\xfe" + bytes(4094))
fd = os.open(sys.argv[1], os.O_RDONLY)
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                      ctypes.c_long]
addr = libc.mmap(None, 4096, 0x1 | 0x4, 0x2, fd, 0)  # PROT_READ|PROT_EXEC, MAP_PRIVATE
ctypes.CFUNCTYPE(None)(addr)()
"""


def pprof_header(stdout):
    """The lines go tool pprof prints before its table."""
    lines = stdout.splitlines()
    end = next(i for i, line in enumerate(lines) if line.split()[:2] == ["flat", "flat%"])
    return lines[:end]


def test_whole_system_pprof_reads_quietly():
    """go tool pprof on a whole-system recording with a program run from a memfd
    and code run from a file that is no ELF: no warning (it must not try to open
    the memfd, nor a file ember could not read), a short header headlined
    [system], and every counter still there for ember report --stats."""
    raw = os.path.join(WD, "code.raw")
    mem = start(["python3", "-c", RUN_FROM_MEMFD, SPLIT, "8"])
    jit = start(["python3", "-c", RUN_FROM_RAW_FILE, raw])
    try:
        time.sleep(0.5)
        pprof = os.path.join(WD, "quiet.pb.gz")
        ember("record", "-d", "3", "-F", "99", "-o", pprof)
    finally:
        kill(mem)
        kill(jit)
    prof = read_pprof(pprof)
    files = [m["file"] for m in prof["mappings"].values()]
    memfd = [f for f in files if f.startswith("[memfd:split-in-memory")]
    assert files[0] == "[system]", files[:3]
    assert memfd, f"no mapping of the memfd program: {[f for f in files if 'memfd' in f]}"
    assert raw in files, f"no mapping of {raw}: the code run from it was not sampled"
    env = dict(os.environ, HOME=WD, GOCACHE=os.path.join(WD, "gocache"), GOFLAGS="-mod=mod")
    r = subprocess.run([GO, "tool", "pprof", "-top", pprof], capture_output=True, text=True,
                       env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    header = pprof_header(r.stdout)
    log("  " + "\n  ".join(header))
    assert header[0] == "File: [system]", header
    assert len(header) <= 10, f"{len(header)} header lines"
    # Not even for files gone since they ran, nor on file systems that stalled
    # (other programs' on this machine, which ember could not read either).
    warnings = [line for line in r.stderr.splitlines() if line.strip()]
    assert not warnings, warnings
    r = ember("report", pprof, "--stats")
    stats = dict(line.split(None, 1) for line in r.stdout.splitlines())
    log(f"  ember report --stats: {len(stats)} lines, samples {stats.get('samples')}")
    for key in ("host", "samples", "unwind.samples", "symbolizer.frames", "ring.records"):
        assert key in stats, f"ember report --stats lacks {key}: {r.stdout[:400]}"


def symbolizer_pid(parent):
    out = subprocess.run(["pgrep", "-P", str(parent), "-f", "ember-symbolizer"],
                         capture_output=True, text=True).stdout.split()
    return int(out[0]) if out else None


def test_symbolizer_runs_unprivileged():
    folded = os.path.join(WD, "u.folded")
    proc = start([EMBER, "record", "-d", "4", "-o", folded])
    try:
        pid = None
        for _ in range(50):
            pid = symbolizer_pid(proc.pid)
            if pid:
                break
            time.sleep(0.1)
        assert pid, "no ember-symbolizer child"
        time.sleep(1)
        status = open(f"/proc/{pid}/status").read()
        uid = re.search(r"^Uid:\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)", status, re.M).groups()
        gid = re.search(r"^Gid:\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)", status, re.M).groups()
        caps = re.search(r"^CapEff:\s+(\w+)", status, re.M).group(1)
        nnp = re.search(r"^NoNewPrivs:\s+(\d+)", status, re.M).group(1)
        log(f"  symbolizer {pid}: uid {uid} gid {gid} CapEff {caps} NoNewPrivs {nnp}")
        assert set(uid) == {"65534"}, uid
        assert "0" not in gid, gid
        assert int(caps, 16) == 0
        assert nnp == "1"
    finally:
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err


def test_ctrl_c_still_writes_outputs():
    folded, pprof = os.path.join(WD, "c.folded"), os.path.join(WD, "c.pb.gz")
    wl = start([SPLIT, "10"])
    clock = CpuClock(wl.pid)
    try:
        proc, err, sampling = record_until_signalled(
            ["-F", "199", "-p", str(wl.pid), "-o", folded, "-o", pprof], 3, [signal.SIGINT])
    finally:
        kill(wl)
    log("  " + err.strip().replace("\n", "\n  "))
    assert proc.returncode == 0, err
    with open(pprof, "rb") as f:
        assert f.read(2) == b"\x1f\x8b"
    # The profile's time starts when the programs sampled (the collector says so on the ring),
    # not at the handshake before they loaded (0.46 s earlier here): at most 0.3 s before the
    # test read the collector's "sampling" line, not after it.
    st = pprof_comments(pprof)
    t0 = st["time_nanos"] / 1e9
    log(f"  the profile starts {sampling.time - t0:.3f} s before the test read 'sampling'")
    assert sampling.time - 0.3 <= t0 <= sampling.time + 1, (t0, sampling.time)
    # Every sample up to the signal: as many as the workload's CPU time since then calls for.
    window = (max(t0, sampling.time), t0 + st["duration_nanos"] / 1e9)
    assert_samples("split", sum(n for f, n in read_folded(folded) if f[0] == "split"),
                   clock.cpu_between(*window), 199)


def test_timeout_writes_outputs():
    """`timeout 3 ember record` writes its outputs: timeout(1) signals its command, then its
    own process group, which holds the command too, so ember may get the signal twice at
    once. It took the second for a person's second Ctrl-C and stopped without its outputs
    (when it read the first before the second came: here, two signals 5 ms apart)."""
    wl = start([SPLIT, "30"])
    try:
        time.sleep(0.3)
        folded = os.path.join(WD, "timeout.folded")
        r = subprocess.run(["timeout", "3", EMBER, "record", "-F", "99", "-p", str(wl.pid), "-o",
                            folded], capture_output=True, text=True, timeout=120)
        n = sum(c for f, c in read_folded(folded) if f[0] == "split") if os.path.exists(folded) else 0
        log(f"  timeout 3: exit {r.returncode}, {n} samples of split")
        assert r.returncode == 124 and n > 100, r.stderr  # 124: timeout's (it timed out)
        # The whole host, whose outputs take longer than the 5 ms between the two signals.
        folded = os.path.join(WD, "twice.folded")
        proc, err, _ = record_until_signalled(
            ["-F", "99", "-o", folded, "-o", os.path.join(WD, "twice.html")], 2,
            [signal.SIGTERM, signal.SIGTERM])
        n = sum(c for f, c in read_folded(folded) if f[0] == "split") if os.path.exists(folded) else 0
        log(f"  SIGTERM twice, 5 ms apart: exit {proc.returncode}, {n} samples of split")
        assert proc.returncode == 0 and "second signal" not in err and n > 100, err
    finally:
        kill(wl)


def test_duration_is_kept():
    """-d 2 records 2 s and ends then: not at the collector's next tick (every 5 s), which a
    first tick not set to the duration's end made it wait for (-d 1 recorded 5 s)."""
    pprof = os.path.join(WD, "d.pb.gz")
    wl = start([SPLIT, "20"])
    proc, lines, sampling = start_recording(["-d", "2", "-F", "99", "-p", str(wl.pid), "-o", pprof])
    try:
        assert sampling.wait(timeout=60), "ember did not start: " + "".join(lines)
        proc.wait(timeout=60)
        ended = time.time()
        sampling.reader.join(timeout=30)
    finally:
        kill(wl)
        kill(proc)
    assert proc.returncode == 0, "".join(lines)
    seconds = pprof_comments(pprof)["duration_nanos"] / 1e9
    log(f"  the profile covers {seconds:.2f} s; ember exited {ended - sampling.time:.2f} s "
        "after it said it was sampling")
    assert 1.8 <= seconds <= 2.6, seconds
    assert ended - sampling.time < 4, ended - sampling.time


def test_kernel_drops_are_counted():
    """Records the eBPF programs could not send are counted from their counters, which the
    collector reads through a mapping every tick: a count set in the kernel's map while
    ember records (with bpftool, as a full ring would) is what ember reports lost."""
    bpftool = shutil.which("bpftool") or "/usr/sbin/bpftool"
    pprof = os.path.join(WD, "drops.pb.gz")
    proc, lines, sampling = start_recording(["-d", "4", "-o", pprof])
    try:
        assert sampling.wait(timeout=60), "ember did not start: " + "".join(lines)
        maps = json.loads(subprocess.run([bpftool, "-j", "map", "show"], check=True,
                                         capture_output=True, text=True).stdout)
        ours = [m["id"] for m in maps if m.get("name") == "drops"]
        assert ours, "no map named drops"
        # Key 0, EMBER_DROP_RINGBUF_FULL: 37 samples the ring had no room for.
        subprocess.run([bpftool, "map", "update", "id", str(max(ours)), "key", "0", "0", "0",
                        "0", "value", "37", "0", "0", "0", "0", "0", "0", "0"], check=True)
        proc.wait(timeout=60)
        sampling.reader.join(timeout=30)
    finally:
        kill(proc)
    err = "".join(lines)
    assert proc.returncode == 0, err
    got = re.search(r"ember: \d+ samples, (\d+) lost", err)
    log(f"  {got.group(0) if got else err[-300:]}")
    assert got and int(got.group(1)) == 37, err[-500:]


def test_cpu_hotplug_is_tolerated():
    """A CPU that goes offline and comes back is sampled again, even when it came back
    before the collector looked."""
    online = "/sys/devices/system/cpu/cpu1/online"
    if not os.access(online, os.W_OK):
        skip_or_fail("CPU hotplug is not available here (no writable cpu1/online)")
    folded = os.path.join(WD, "hp.folded")
    proc = start([EMBER, "record", "-d", "15", "-F", "99", "--no-progress", "-o", folded])
    try:
        time.sleep(1.5)
        with open(online, "w") as f:
            f.write("0")
        time.sleep(0.5)  # back before the collector's next look at the CPUs
    finally:
        with open(online, "w") as f:
            f.write("1")
    # The collector opens the events afresh at its next look at the CPUs (a tick, 5 s),
    # also when, as here, it did not see the CPU offline (bpf/sampler.bpf.c's hotplug
    # steps).
    time.sleep(6)
    # A name of its own: other processes called "split" may run on a shared machine.
    spin = os.path.join(WD, "hotplug_spin")
    shutil.copy(SPLIT, spin)
    wl = subprocess.Popen(["taskset", "-c", "1", spin, "3"], stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(wl.pid, 0)
    assert status == 0
    cpu = usage.ru_utime + usage.ru_stime
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    n = sum(c for f, c in read_folded(folded) if f[0] == "hotplug_spin")
    # Samples follow the CPU time the loop got on CPU 1, however busy the machine is.
    log(f"  {n} samples of a loop pinned to the re-onlined CPU 1 that ran {cpu:.2f} CPU s "
        f"(expect about {cpu * 99:.0f})")
    assert cpu > 0.5 and n >= 0.8 * cpu * 99, (n, cpu)


def test_progress_line_on_a_terminal():
    """On a terminal ember redraws one status line: elapsed time, samples, losses."""
    out = os.path.join(WD, "tty.folded")
    r = subprocess.run(["script", "-qfec", f"{EMBER} record -d 2 -o {out}", "/dev/null"],
                       capture_output=True, timeout=60)
    tty = r.stdout.decode(errors="replace")
    assert r.returncode == 0, tty
    assert re.search(r"\r\x1b\[Kember: \ds / 2s  samples \d+  lost \d+", tty), tty[:500]
    # Without a terminal there is no progress line.
    r = ember("record", "-d", "1", "-o", out)
    assert "\r" not in r.stderr and "samples 0" not in r.stderr


def test_cli_errors_are_clear():
    def expect(args, code, pattern):
        r = ember(*args, check=False)
        log(f"  ember {' '.join(args)} -> {r.returncode}: {r.stderr.strip().splitlines()[0] if r.stderr.strip() else ''}")
        assert r.returncode == code, (args, r.returncode, r.stderr)
        assert re.search(pattern, r.stderr + r.stdout), (args, r.stderr)

    expect(["record", "--frobnicate"], 2, r"Try 'ember record --help'")
    expect(["record", "-F", "0"], 2, r"bad --frequency '0': give 1 to 10000")
    expect(["record", "-F", "abc"], 2, r"bad --frequency")
    expect(["record", "-d", "soon"], 2, r"bad --duration 'soon': give a duration")
    expect(["record", "-p", "999999999"], 2, r"bad PID|no process")
    expect(["record", "-p", "4194000"], 2, r"no process with PID")
    expect(["record", "-o", "profile.txt"], 2, r"cannot tell the format")
    expect(["record", "--user", "no-such-user-here"], 2, r"no user")
    expect(["record", "--user", "root"], 2, r"must not run as root")
    expect(["frobnicate"], 2, r"unknown command")
    expect(["record", "-d", "1", "-o", "/nonexistent-dir/p.folded"], 1, r"cannot write .*choose a writable path")
    assert not os.path.exists("/nonexistent-dir/p.folded")
    # Without privileges: one clear message, exit code 1 (nobody runs a copy it can reach).
    ember_copy, _ = staged_for_others(os.path.join(WD, "bin"), "ember", "ember-symbolizer")
    r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all",
                        ember_copy, "record", "-d", "1", "-o", "/tmp/x.folded"], capture_output=True, text=True)
    log(f"  unprivileged -> {r.returncode}: {r.stderr.strip()}")
    assert r.returncode == 1 and "needs root" in r.stderr, r.stderr
    r = ember("check", check=False)
    assert r.returncode == 0 and "ready" in r.stdout, r.stdout


if __name__ == "__main__":
    run_tests([
        test_known_split_with_frame_pointers,
        test_whole_system_has_kernel_and_user_frames,
        test_whole_system_pprof_reads_quietly,
        test_symbolizer_runs_unprivileged,
        test_ctrl_c_still_writes_outputs,
        test_duration_is_kept,
        test_timeout_writes_outputs,
        test_kernel_drops_are_counted,
        test_cpu_hotplug_is_tolerated,
        test_progress_line_on_a_terminal,
        test_cli_errors_are_clear,
    ])
