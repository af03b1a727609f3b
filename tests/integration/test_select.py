#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Choosing what to profile, end to end with the real eBPF programs:
`ember record -- COMMAND` (the command and every process it starts, from its
first instruction, ember exiting as the command did, Ctrl-C) and `--cgroup`
(a cgroup v2 subtree filtered in eBPF: a busy process outside it gives no
sample, a child forked inside it after the start does, and so does a cgroup
created at the chosen path after the start, as a restarted service's)."""
import os
import signal
import subprocess
import time

from emberlib import (EMBER, CpuClock, assert_close, assert_samples, build_workload, collector_argv,
                      cpu_seconds, kill, log, pprof_comments, read_folded,
                      podman_run, read_pprof, require_root, run_tests, skip_or_fail, start,
                      start_recording, symbolizer_argv, truth_shares, workdir, SRC)

require_root()
WD = workdir()
SPLIT = build_workload("split", WD)
LEAVES = ["leaf_a", "leaf_b", "leaf_c"]


def copy_as(name):
    """The split workload under another name (its comm), to tell processes apart."""
    path = os.path.join(WD, name)
    if not os.path.exists(path):
        with open(SPLIT, "rb") as src, open(path, "wb") as dst:
            dst.write(src.read())
        os.chmod(path, 0o755)
    return path


def comm_counts(rows):
    counts = {}
    for frames, n in rows:
        counts[frames[0]] = counts.get(frames[0], 0) + n
    return counts


def record_command(*command, hz="997", extra=(), env=None):
    folded = os.path.join(WD, "cmd.folded")
    if os.path.exists(folded):
        os.unlink(folded)
    r = subprocess.run([EMBER, "record", "-F", hz, "--no-progress", "-o", folded, *extra, "--",
                        *command], capture_output=True, text=True, timeout=180, env=env)
    log(f"  ember record -- {' '.join(command)}: exit {r.returncode}")
    return r, folded


def test_command_and_its_children():
    """sh starts two programs, one in the background: both are sampled, with the split each
    measured, and nothing else is; ember exits with the command's status."""
    truth = os.path.join(WD, "cmd.truth")
    a, b = copy_as("split_one"), copy_as("split_two")
    cpu = {n: os.path.join(WD, f"{n}.cpu") for n in ("split_one", "split_two")}
    env = dict(os.environ, EMBER_TRUTH_FILE=truth)
    r, folded = record_command("sh", "-c", f"EMBER_CPU_FILE={cpu['split_one']} {a} 6 & "
                               f"EMBER_CPU_FILE={cpu['split_two']} {b} 6; wait; exit 3", env=env)
    assert r.returncode == 3, f"ember exited {r.returncode}, the command 3: {r.stderr}"
    rows = read_folded(folded)
    counts = comm_counts(rows)
    log(f"  samples per command: {counts}")
    assert set(counts) <= {"sh", "split_one", "split_two"}, f"other processes: {counts}"
    # Sampled from their first instruction: as many samples as the CPU time each measured.
    for name in cpu:
        assert_samples(name, counts.get(name, 0), cpu_seconds(cpu[name]), 997)
    want = truth_shares(truth)
    # Shares among the samples that end in a leaf, as the truth is among the leaves' times
    # (a sample taken before the symbolizer read a new process's mappings is not named).
    mine = [(f, n) for f, n in rows if f[0] in ("split_one", "split_two")]
    named = {leaf: sum(n for f, n in mine if f[-1] == leaf) for leaf in LEAVES}
    total = sum(named.values())
    log(f"  {total} of {sum(n for _, n in mine)} samples of split_one and split_two name a leaf")
    assert total > 1000, f"too few samples: {total} (is the machine overloaded?)"
    for leaf in LEAVES:
        assert_close(leaf, 100.0 * named[leaf] / total, round(want[leaf], 1), 3)


def test_command_from_its_first_instruction():
    """A short command's samples match the CPU time it measured itself (its process CPU
    clock, from its exec to its exit): none lost to start-up (with sampling started after the
    exec, a third of a 0.3 s run would be missing), none counted twice. Every run, not the
    best of them. (cpu-clock samples the time a task is on a CPU, which on a loaded virtual
    machine includes steal time that the task's CPU clock does not count: the upper bound
    leaves room for it.)"""
    cpu = os.path.join(WD, "short.cpu")
    for _ in range(3):
        if os.path.exists(cpu):
            os.unlink(cpu)
        r, folded = record_command(SPLIT, "0.3", env=dict(os.environ, EMBER_CPU_FILE=cpu))
        assert r.returncode == 0, r.stderr
        samples = sum(n for f, n in read_folded(folded) if f[0] == "split")
        assert_samples("split 0.3", samples, cpu_seconds(cpu), 997, high=1.25)


def test_exit_status_signal_and_user():
    r, _ = record_command("true", hz="99")
    assert r.returncode == 0, r.stderr
    r, _ = record_command("sh", "-c", "exit 7", hz="99")
    assert r.returncode == 7, r.returncode
    r, _ = record_command("sh", "-c", "kill -TERM $$", hz="99")
    assert r.returncode == -signal.SIGTERM, f"not killed by SIGTERM: {r.returncode}"
    r, _ = record_command("/nonexistent/program", hz="99")
    assert r.returncode == 127 and "cannot run /nonexistent/program" in r.stderr, r.stderr
    # --run-as: the command runs as that user (and the profile is still written by nobody).
    r, folded = record_command("sh", "-c", 'test "$(id -u)" = 65534', hz="99",
                               extra=("--run-as", "nobody"))
    assert r.returncode == 0, f"the command did not run as nobody: {r.stderr}"
    # As the user who ran sudo, when there is one.
    env = dict(os.environ, SUDO_UID="65534", SUDO_GID="65534")
    r, folded = record_command("sh", "-c", 'test "$(id -u):$(id -g)" = 65534:65534', hz="99",
                               env=env)
    assert r.returncode == 0, f"the command did not run as SUDO_UID: {r.stderr}"


def test_programs_refused_command_never_runs():
    """The kernel refuses the eBPF programs (under a seccomp filter that fails every program
    load with EACCES, as a verifier's refusal does): ember says why and exits 1 at once, and
    the command, held at its gate until sampling is ready, never runs."""
    helper = os.path.join(WD, "refuse_bpf_load")
    subprocess.run(["gcc", "-O2", "-o", helper,
                    os.path.join(SRC, "tests", "integration", "refuse_bpf_load.c"), "-lseccomp"],
                   check=True)
    ran = os.path.join(WD, "command-ran")
    start_at = time.monotonic()
    proc = subprocess.Popen([helper, EMBER, "record", "-d", "2", "-o",
                             os.path.join(WD, "refused.folded"), "--", "touch", ran],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        subprocess.run(["pkill", "-KILL", "-f", ran], check=False)  # the command at its gate
        raise AssertionError("ember did not end within 30 s of its programs being refused")
    took = time.monotonic() - start_at
    log(f"  exit {proc.returncode} after {took:.2f} s: " + err.strip().splitlines()[-2])
    assert proc.returncode == 1 and "cannot load the sampler eBPF program" in err, err
    assert not os.path.exists(ran), "the command ran, unprofiled"


def test_ctrl_c_goes_to_the_command():
    """Ctrl-C (SIGINT to the terminal's process group) ends the command; ember writes the
    profile and exits as the command did."""
    folded = os.path.join(WD, "int.folded")
    truth = os.path.join(WD, "int.truth")
    proc = subprocess.Popen([EMBER, "record", "-F", "499", "--no-progress", "-o", folded, "--",
                             SPLIT, "60"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True,
                            env=dict(os.environ, EMBER_TRUTH_FILE=truth))
    try:
        time.sleep(3)
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        kill(proc)
    log(f"  ember exited {proc.returncode} after Ctrl-C")
    assert os.path.exists(truth), "the command did not end by its SIGINT handler"
    assert proc.returncode == 0, f"ember exited {proc.returncode} (split exits 0): {err}"
    assert comm_counts(read_folded(folded)).get("split", 0) > 0, "no samples of the command"


class Cgroup:
    """A cgroup v2 directory made for a test, removed (its processes killed) at the end."""

    def __init__(self, rel):
        self.root = cgroup_root()
        self.rel = rel
        self.path = self.root + rel

    def make(self):
        os.makedirs(self.path, exist_ok=True)
        return self

    def enter(self, pid):
        with open(os.path.join(self.path, "cgroup.procs"), "w") as f:
            f.write(str(pid))

    def remove(self):
        for d, _, _ in sorted(os.walk(self.path), key=lambda x: -len(x[0])):
            try:
                with open(os.path.join(d, "cgroup.procs")) as f:
                    for pid in f.read().split():
                        os.kill(int(pid), signal.SIGKILL)
                time.sleep(0.2)
                os.rmdir(d)
            except OSError:
                pass


def cgroup_root():
    """Where the cgroup v2 hierarchy is mounted (at .../unified on a hybrid system)."""
    with open("/proc/self/mountinfo") as f:
        mounts = [line.split()[4] for line in f if " - cgroup2 " in line]
    for root in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified"):
        if root in mounts:
            return root
    skip_or_fail("no cgroup v2 hierarchy (/sys/fs/cgroup or /sys/fs/cgroup/unified)")


IDLE_OUTSIDE = 80


def test_cgroup_only_its_processes():
    """--cgroup: a busy process inside, its twin outside; a child forked inside after the
    recording started; a cgroup created at a chosen path after the start; CPU and off-CPU."""
    top = Cgroup(f"/ember-it-{os.getpid()}").make()
    later = Cgroup(top.rel + "-later")
    inside, outside = copy_as("split_inside"), copy_as("split_outside")
    child_name, later_name = copy_as("split_child"), copy_as("split_later")
    procs = []
    try:
        sub = Cgroup(top.rel + "/svc").make()  # the subtree counts, not only the cgroup
        p_in = start([inside, "30"])
        sub.enter(p_in.pid)
        # A task beside it that switches out every 50 us: the off-CPU program judges its
        # cgroup the moment it is attached, before a CPU sample could.
        p_nap = subprocess.Popen(["python3", "-c", "import time\nwhile 1: time.sleep(5e-5)"])
        sub.enter(p_nap.pid)
        p_out = start([outside, "30"])
        # Idle processes outside: were unselected processes listed at the start, each would
        # have its unwind tables loaded (checked below), however few the host runs itself.
        idle = [subprocess.Popen(["sleep", "60"]) for _ in range(IDLE_OUTSIDE)]
        procs += idle
        # A shell inside that forks its child once the recording runs.
        p_sh = subprocess.Popen(["sh", "-c", f"read go; exec {child_name} 30"],
                                stdin=subprocess.PIPE, text=True)
        sub.enter(p_sh.pid)
        procs += [p_in, p_nap, p_out, p_sh]
        folded, pprof = os.path.join(WD, "cg.folded"), os.path.join(WD, "cg.pb.gz")
        # Off-CPU too: its programs run before the first CPU sample and judge cgroups first.
        rec, err, sampling = start_recording(
            ["-F", "499", "-d", "6", "--no-progress", "-o", folded, "-o", pprof, "--off-cpu",
             "--view",
             "both", "--cgroup", top.rel, "--cgroup", later.path])
        assert sampling.wait(timeout=120), "ember did not start: " + "".join(err)
        p_sh.stdin.write("go\n")
        p_sh.stdin.flush()
        later.make()  # as systemd makes a service's cgroup again when it restarts
        p_later = start([later_name, "30"])
        later.enter(p_later.pid)
        procs.append(p_later)
        rec.wait(timeout=120)
        time.sleep(0.2)
        log("  " + "  ".join(err).rstrip())
        assert rec.returncode == 0, "".join(err)
        assert "no cgroup" in "".join(err), "a chosen cgroup not there yet is not reported"
    finally:
        for p in procs:
            kill(p)
        top.remove()
        later.remove()
    counts = comm_counts(read_folded(folded))  # microseconds on and off CPU
    log(f"  microseconds on and off CPU per command: {counts}")
    assert counts.get("split_outside", 0) == 0, f"a process outside the cgroup: {counts}"
    assert counts.get("split_inside", 0) > 1000000, counts
    assert counts.get("split_child", 0) > 500000, f"the child forked inside is missing: {counts}"
    assert counts.get("split_later", 0) > 500000, f"the cgroup made later is missing: {counts}"
    assert counts.get("python3", 0) > 0, f"the task that sleeps inside is missing: {counts}"
    assert set(counts) <= {"split_inside", "split_child", "split_later", "sh", "python3"}, counts
    # Of the host's processes, only the chosen ones had their unwind tables loaded.
    stats = dict(c[1:].split("=", 1) for c in read_pprof(pprof)["comments"] if "=" in c)
    loads = int(stats["unwind.process_loads"])
    log(f"  unwind tables loaded {loads} times ({IDLE_OUTSIDE} idle processes outside the "
        f"cgroup)")
    # Loads, not processes: a chosen process is loaded again after a miss (a new library),
    # each of the five a few times; listing the host's processes would load every one of
    # them, the idle ones outside included.
    assert loads < IDLE_OUTSIDE, f"unwind tables loaded {loads} times: unselected ones listed?"


def record_counts(args, seconds=4):
    """Records seconds at 499 Hz with args; returns the samples per command, the log and the
    time sampled (start, end: seconds since the epoch): the profile's window from when ember
    said it samples (the profile's own starts with ember, 0.4-1 s before its programs sample)."""
    folded, pprof = os.path.join(WD, "named.folded"), os.path.join(WD, "named.pb.gz")
    rec, err, sampling = start_recording(["-F", "499", "-d", str(seconds), "--no-progress", "-o",
                                          folded, "-o", pprof, *args])
    rec.wait(timeout=120)
    time.sleep(0.2)
    assert rec.returncode == 0, "".join(err)
    assert sampling.is_set(), "ember never said it samples: " + "".join(err)
    start, end = profile_window(pprof)
    return comm_counts(read_folded(folded)), "".join(err), (max(start, sampling.time), end)


def profile_window(pprof):
    """(start, end) of the time a pprof profile covers, in seconds since the epoch."""
    st = pprof_comments(pprof)
    return st["time_nanos"] / 1e9, (st["time_nanos"] + st["duration_nanos"]) / 1e9


def assert_sampled_as_measured(name, count, clock, window, hz):
    """count samples of clock's process in the profile window: at least 85% of what the CPU
    time it used meanwhile (/proc/PID/stat) calls for."""
    assert_samples(name, count, clock.cpu_between(*window), hz)


def test_unit_and_pod_by_name():
    """--unit and --pod find their cgroup by name wherever it is in the hierarchy (here made by
    hand in systemd's and the kubelet's layouts: systemd does not run on this test host)."""
    tag = f"ember-it-{os.getpid()}"
    uid = f"{os.getpid():08x}-1111-2222-3333-444455556666"
    unit = Cgroup(f"/{tag}.slice/{tag}-app.service").make()
    pod = Cgroup(f"/{tag}-kubepods/burstable/pod{uid}/c0ffee").make()
    procs = []
    try:
        for cg, name in ((unit, "split_unit"), (pod, "split_pod")):
            p = start([copy_as(name), "30"])
            cg.enter(p.pid)
            procs.append(p)
        clocks = {name: CpuClock(p.pid) for p, name in zip(procs, ("split_unit", "split_pod"))}
        procs.append(start([copy_as("split_outside"), "30"]))
        counts, err, window = record_counts(["--unit", f"{tag}-app"])
        log(f"  --unit {tag}-app: {counts}")
        assert f"cgroup /{tag}.slice/{tag}-app.service" in err, err
        assert set(counts) == {"split_unit"}, counts
        assert_sampled_as_measured("split_unit", counts["split_unit"], clocks["split_unit"], window, 499)
        counts, err, window = record_counts(["--pod", uid])
        log(f"  --pod {uid}: {counts}")
        assert set(counts) == {"split_pod"}, counts
        assert_sampled_as_measured("split_pod", counts["split_pod"], clocks["split_pod"], window, 499)
    finally:
        for p in procs:
            kill(p)
        Cgroup(f"/{tag}.slice").remove()
        Cgroup(f"/{tag}-kubepods").remove()


def test_container():
    """--container with a podman container running the workload beside the same workload
    outside it: only the container's samples."""
    root = os.path.join(WD, "image")
    os.makedirs(root, exist_ok=True)
    static = build_workload("split", root, cflags=("-O2", "-static", "-fno-omit-frame-pointer"))
    os.rename(static, os.path.join(root, "split_box"))
    twin = start([copy_as("split_twin"), "30"])
    try:
        with podman_run(WD, os.path.join(root, "split_box"), "30") as box:
            clock = CpuClock(box.pid)
            counts, err, window = record_counts(["--container", box.cid[:12]])
            log(f"  --container {box.cid[:12]}: {counts}")
            assert "sampling container" in err, err
            assert set(counts) == {"split_box"}, counts
            assert_sampled_as_measured("split_box", counts["split_box"], clock, window, 499)
    finally:
        kill(twin)


def test_daemon_takes_the_selection():
    """ember-collector --cgroup (as its configuration file passes options): the intervals its
    symbolizer writes hold only the chosen cgroup's samples, and say what was chosen."""
    tag = f"ember-it-{os.getpid()}-daemon"
    cg = Cgroup(f"/{tag}").make()
    run_dir, out = os.path.join(WD, "daemon-run"), os.path.join(WD, "daemon-out")
    os.makedirs(out, exist_ok=True)
    os.chown(out, 65534, 65534)
    procs = []
    try:
        inside = start([copy_as("split_daemon"), "60"])
        clock = CpuClock(inside.pid)
        cg.enter(inside.pid)
        procs += [inside, start([copy_as("split_outside"), "60"])]
        col = subprocess.Popen(collector_argv(os.path.dirname(EMBER), "--user", "nobody",
                                              "--runtime-dir", run_dir, "-F", "499", "--cgroup", f"/{tag}"),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(col)
        sock = os.path.join(run_dir, "collector.sock")
        for _ in range(600):
            if os.path.exists(sock):
                break
            time.sleep(0.1)
        sym = subprocess.Popen(symbolizer_argv(os.path.dirname(EMBER), "--connect", sock,
                                               "--output-dir", out, "--interval", "2s", "--user",
                                               "nobody", "--keep", "0"),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(sym)
        pb = []
        for _ in range(600):
            pb = sorted(f for f in os.listdir(out) if f.endswith(".pb.gz"))
            if len(pb) >= 2:
                break
            time.sleep(0.1)
        assert len(pb) >= 2, f"no intervals in {out}: {os.listdir(out)}"
        folded = sorted(f for f in os.listdir(out) if f.endswith(".folded"))
        counts = comm_counts(read_folded(os.path.join(out, folded[1])))
        comments = read_pprof(os.path.join(out, pb[1]))["comments"]
        log(f"  daemon interval: {counts}; {[c for c in comments if 'selection' in c]}")
        assert set(counts) == {"split_daemon"}, counts
        assert_sampled_as_measured("split_daemon", counts["split_daemon"], clock,
                                   profile_window(os.path.join(out, pb[1])), 499)
        assert f"#selection=cgroup /{tag}" in comments, comments
    finally:
        for p in reversed(procs):
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                kill(p)
        cg.remove()


def test_selection_in_the_profile():
    """The profile says what was chosen: pprof's comment and headline name the command, and
    OTLP's resources have it as service.name (unless one is configured)."""
    import otlp_receiver as rx
    pprof, otlp = os.path.join(WD, "sel.pb.gz"), os.path.join(WD, "sel.otlp")
    env = {k: v for k, v in os.environ.items() if k != "OTEL_SERVICE_NAME"}
    r = subprocess.run([EMBER, "record", "-F", "99", "--no-progress", "-o", pprof, "-o", otlp,
                        "--", SPLIT, "0.5"], capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    p = read_pprof(pprof)
    log(f"  comments: {[c for c in p['comments'] if not c.startswith('#') or 'selection' in c]}")
    assert f"#selection=command {SPLIT} 0.5" in p["comments"], p["comments"]
    first = p["mappings"].get(1, {}).get("file")
    assert first == "split", f"the headline mapping is {first!r}, not the command's name"
    Request, _ = rx.classes()
    with open(otlp, "rb") as f:
        req = Request.FromString(f.read())
    names = {rx.resource_attrs(rp).get("service.name") for rp in req.resource_profiles}
    log(f"  OTLP service.name: {names}")
    assert names == {"split"}, names


def test_cli_errors():
    def expect(args, code, text):
        r = subprocess.run([EMBER, "record", *args], capture_output=True, text=True, timeout=30)
        assert r.returncode == code and text in r.stderr, (args, r.returncode, r.stderr)

    expect(["--run-as", "nobody"], 2, "--run-as needs a command")
    expect(["--run-as", "no-such-user-x", "--", "true"], 2, "no user 'no-such-user-x'")
    expect(["--cgroup", "/a/../b", "--", "true"], 2, "bad '/a/../b'")
    expect(["--container", "xyz"], 2, "bad 'xyz'")
    expect(["--container", "abcdef0123"], 1, "no cgroup of container abcdef0123")


if __name__ == "__main__":
    run_tests([test_command_and_its_children, test_command_from_its_first_instruction,
               test_exit_status_signal_and_user, test_programs_refused_command_never_runs,
               test_ctrl_c_goes_to_the_command,
               test_cgroup_only_its_processes, test_unit_and_pod_by_name, test_container,
               test_daemon_takes_the_selection,
               test_selection_in_the_profile, test_cli_errors])
