#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""--unit under a real systemd. This test host runs no systemd as PID 1, so a
Debian 12 tree (the packaging tests' cached debootstrap tree, made here on
first use) is booted with `systemd-nspawn --boot` in a cgroup of its own: its
systemd (252) runs the units, and their cgroups are a subtree of the host's
v2 hierarchy (/ember-it-machine-N/payload/system.slice/NAME.service).

A transient service (`systemd-run --unit`) runs a busy workload and, once the
host's `ember record --unit NAME` is sampling, forks a child that measures its
own CPU time; an identical busy process runs outside the unit, in another unit
of the container and on the host. Only the service's samples may appear: its
workload's and its child's, as many as the CPU time they used, with the split
of its leaves as the workload measured it. Then the daemon, ember-collector
--unit NAME (its name finder run as nobody) with its symbolizer: intervals of
the service alone, saying what was chosen."""
import os
import shutil
import subprocess
import sys
import time

from emberlib import (BUILD, EMBER, SRC, assert_close, build_workload, collector_argv, kill, log, read_folded,
                      read_pprof, require_root, run_tests, skip_or_fail, start, truth_shares,
                      start_recording, symbolizer_argv, with_root_a_mount, workdir)

sys.path.insert(0, os.path.join(SRC, "tests", "packaging"))
import pkglib  # noqa: E402 - the packaging tests' cached trees

require_root()
for tool in ("systemd-nspawn", "debootstrap", "nsenter"):
    if not shutil.which(tool):
        skip_or_fail(f"{tool} is missing: sudo scripts/install-deps.sh")
WD = workdir()
HZ = 499
LEAVES = ["leaf_a", "leaf_b", "leaf_c"]


def hierarchies():
    """Mount points of the cgroup v2 hierarchy and, on a hybrid host, systemd's named v1 one
    (nspawn places the container by the latter there)."""
    v2, named = None, None
    with open("/proc/self/mountinfo") as f:
        for line in f:
            pre, _, post = line.partition(" - ")
            fstype, opts = post.split()[0], post.split()[2] if len(post.split()) > 2 else ""
            point = pre.split()[4]
            if fstype == "cgroup2" and point in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified"):
                v2 = v2 if v2 == "/sys/fs/cgroup" else point
            elif fstype == "cgroup" and "name=systemd" in opts.split(","):
                named = point
    if not v2:
        skip_or_fail("no cgroup v2 hierarchy (/sys/fs/cgroup or /sys/fs/cgroup/unified)")
    return [v2] + ([named] if named else [])


def remove_cgroup(path):
    for d, _, _ in sorted(os.walk(path), key=lambda x: -len(x[0])):
        try:
            os.rmdir(d)
        except OSError as e:
            log(f"  cannot remove {d}: {e}")


class Machine:
    """The base tree booted read-only (a tmpfs overlay takes its writes), in the host cgroup
    /ember-it-machine-PID, the workloads' directory at /ember-it and an output one at
    /ember-out."""

    def __init__(self, bin_dir, out_dir):
        base = pkglib.base_tree("deb-base", pkglib.SYSTEMD + pkglib.RUNTIME)
        self.rel = f"/ember-it-machine-{os.getpid()}"
        self.cgroups = [h + self.rel for h in hierarchies()]
        for d in self.cgroups:
            os.makedirs(d, exist_ok=True)
        procs = [os.path.join(d, "cgroup.procs") for d in self.cgroups]

        def enter():  # in nspawn's process, before the exec
            for p in procs:
                with open(p, "w") as f:
                    f.write(str(os.getpid()))

        self.log_path = os.path.join(WD, "machine.log")
        self.logf = open(self.log_path, "w")
        nspawn = ["systemd-nspawn", "--quiet", "-D", base, "--volatile=overlay", "--register=no",
                  "--keep-unit", "--boot", "--console=passive", f"--machine=ember-it-{os.getpid()}",
                  f"--bind-ro={bin_dir}:/ember-it", f"--bind={out_dir}:/ember-out"]
        nspawn = with_root_a_mount(nspawn)
        self.proc = subprocess.Popen(nspawn, stdout=self.logf, stderr=subprocess.STDOUT,
                                     preexec_fn=enter)
        try:
            self.leader = pkglib.wait_for(self._leader, 60, "the container's systemd")
            state = pkglib.wait_for(
                lambda: self._state() in ("running", "degraded") and self._state(), 90,
                "the boot to finish")
        except BaseException:
            self.stop()
            raise
        log(f"  booted {base} in {self.rel} (systemd {state}, PID {self.leader} on the host)")

    def _leader(self):
        if self.proc.poll() is not None:
            raise AssertionError(f"systemd-nspawn exited: {open(self.log_path).read()[-2000:]}")
        r = subprocess.run(["pgrep", "-P", str(self.proc.pid), "-x", "systemd"],
                           capture_output=True, text=True)
        return int(r.stdout.split()[0]) if r.stdout.split() else None

    def _state(self):
        return self.sh("systemctl is-system-running", check=False).stdout.strip()

    def sh(self, script, check=True):
        # -r -w: with -a alone, nsenter run from a chroot lands in the real root of the
        # machine's mount namespace, not in the machine's tree.
        return pkglib.run(["nsenter", "-t", str(self.leader), "-a", "-r", "-w", "/bin/sh", "-c",
                           script],
                          check=check, timeout=120)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()  # nspawn halts the container cleanly
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                kill(self.proc)
        self.logf.close()
        for d in self.cgroups:
            remove_cgroup(d)


def host_pid(comm):
    r = subprocess.run(["pgrep", "-x", comm], capture_output=True, text=True)
    pids = [int(p) for p in r.stdout.split()]
    assert len(pids) == 1, f"{len(pids)} processes named {comm}"
    return pids[0]


def cpu_ns(pid):
    """CPU time a process has run (the scheduler's sum_exec_runtime of its threads)."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
            total += int(f.read().split()[0])
    return total


def copy_as(src, name, directory):
    path = os.path.join(directory, name)
    shutil.copy(src, path)
    os.chmod(path, 0o755)


def run_daemon(unit):
    """ember-collector --unit with its symbolizer until it has written two 2-second intervals;
    returns the samples per command and the pprof comments of the second."""
    run_dir, out = os.path.join(WD, "daemon-run"), os.path.join(WD, "daemon-out")
    os.makedirs(out)
    os.chown(out, 65534, 65534)
    col = subprocess.Popen(collector_argv(BUILD, "--user", "nobody", "--runtime-dir", run_dir,
                                          "-F", str(HZ), "--unit", unit),
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    procs = [col]
    try:
        sock = pkglib.wait_for(lambda: os.path.exists(os.path.join(run_dir, "collector.sock")),
                               60, "the collector's socket", interval=0.1)
        procs.append(subprocess.Popen(
            symbolizer_argv(BUILD, "--connect", os.path.join(run_dir, "collector.sock"),
                            "--output-dir", out, "--interval", "2s", "--user", "nobody", "--keep", "0"),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        assert sock
        pb = pkglib.wait_for(lambda: len(sorted(f for f in os.listdir(out) if f.endswith(".pb.gz"))) >= 2
                             and sorted(f for f in os.listdir(out) if f.endswith(".pb.gz")), 60,
                             "two intervals", interval=0.1)
        folded = sorted(f for f in os.listdir(out) if f.endswith(".folded"))
        counts = {}
        for frames, n in read_folded(os.path.join(out, folded[1])):
            counts[frames[0]] = counts.get(frames[0], 0) + n
        return counts, read_pprof(os.path.join(out, pb[1]))["comments"]
    finally:
        for p in reversed(procs):
            p.terminate()
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                kill(p)


def test_unit_of_a_booted_systemd():
    bin_dir, out_dir = os.path.join(WD, "bin"), os.path.join(WD, "out")
    os.makedirs(bin_dir)
    os.makedirs(out_dir)
    # Static, with frame pointers: it runs in the container's tree as it is.
    split = build_workload("split", WD, cflags=("-O2", "-static", "-fno-omit-frame-pointer"))
    for name in ("split_svc", "split_kid", "split_twin", "split_host"):
        copy_as(split, name, bin_dir)
    unit, twin_unit = f"ember-it-svc-{os.getpid()}", f"ember-it-twin-{os.getpid()}"
    machine, host_twin, rec = None, None, None
    try:
        machine = Machine(bin_dir, out_dir)
        # The service: its workload at once; its child once /ember-out/go exists (after the
        # recording started), measuring its own CPU time for 3 s.
        machine.sh(f"systemd-run --quiet --unit={unit} --setenv=EMBER_TRUTH_FILE=/ember-out/svc.truth"
                   " /bin/sh -c '/ember-it/split_svc 60 & "
                   "while [ ! -e /ember-out/go ]; do sleep 0.05; done; "
                   "EMBER_TRUTH_FILE=/ember-out/kid.truth /ember-it/split_kid 3; wait'")
        machine.sh(f"systemd-run --quiet --unit={twin_unit} /ember-it/split_twin 60")
        host_twin = start([os.path.join(bin_dir, "split_host"), "60"])
        time.sleep(1)
        folded = os.path.join(WD, "unit.folded")
        seconds = 8
        rec, err, sampling = start_recording(["-F", str(HZ), "-d", str(seconds), "--no-progress",
                                              "-o", folded, "--unit", unit])
        assert sampling.wait(timeout=120), "ember did not start: " + "".join(err)
        svc, twins = host_pid("split_svc"), [host_pid("split_twin"), host_pid("split_host")]
        t0, svc_cpu0, twins_cpu0 = time.time(), cpu_ns(svc), [cpu_ns(p) for p in twins]
        with open(os.path.join(out_dir, "go"), "w"):
            pass
        # The recording's end, as near as the test can tell (-d counts from when sampling
        # started, a moment before the symbolizer connected).
        time.sleep(max(0.0, t0 + seconds - time.time()))
        svc_cpu = cpu_ns(svc) - svc_cpu0
        twins_cpu = [cpu_ns(p) - c for p, c in zip(twins, twins_cpu0)]
        rec.wait(timeout=120)
        time.sleep(0.2)
        log("  " + "  ".join(err).rstrip())
        assert rec.returncode == 0, "".join(err)
        daemon_counts, daemon_comments = run_daemon(unit)
        machine.sh(f"systemctl stop {unit} {twin_unit}")  # the workload writes its truth
    finally:
        if rec:
            kill(rec)
        if host_twin:
            kill(host_twin)
        if machine:
            machine.stop()
    chosen = [line for line in err if "sampling unit" in line]
    log(f"  {chosen}")
    assert chosen and f"cgroup {machine.rel}/" in chosen[0] and \
        f"/system.slice/{unit}.service" in chosen[0], "".join(err)
    rows = read_folded(folded)
    counts = {}
    for frames, n in rows:
        counts[frames[0]] = counts.get(frames[0], 0) + n
    log(f"  samples per command: {counts}")
    log(f"  the twins ran {twins_cpu[0] / 1e6:.0f} ms (the container's other unit) and "
        f"{twins_cpu[1] / 1e6:.0f} ms (the host) while recorded")
    assert min(twins_cpu) > 5e8, "a twin hardly ran: its zero samples would prove nothing"
    assert counts.get("split_twin", 0) == 0, f"the container's other unit was sampled: {counts}"
    assert counts.get("split_host", 0) == 0, f"the host's twin was sampled: {counts}"
    assert set(counts) <= {"split_svc", "split_kid", "sh", "sleep"}, counts
    # The daemon, given the same option (as ember.conf passes it), its finder run as nobody.
    log(f"  ember-collector --unit {unit}: {daemon_counts}; "
        f"{[c for c in daemon_comments if 'selection' in c]}")
    assert set(daemon_counts) == {"split_svc"} and daemon_counts["split_svc"] > 100, daemon_counts
    assert f"#selection=unit {unit}.service" in daemon_comments, daemon_comments
    # The child forked after the start: its samples against the CPU time it measured.
    with open(os.path.join(out_dir, "kid.truth")) as f:
        kid_ns = sum(int(x.partition("=")[2]) for x in f.read().split())
    kid = sum(n for f, n in rows if f[0] == "split_kid")
    kid_leaves = sum(n for f, n in rows if f[0] == "split_kid" and f[-1] in LEAVES)
    log(f"  split_kid: {kid} samples ({kid_leaves} in its leaves); its leaves measured "
        f"{kid_ns / 1e6:.0f} ms of CPU: {kid_ns * HZ / 1e9:.0f} expected "
        f"(ratio {kid_leaves / (kid_ns * HZ / 1e9):.2f})")
    # The service's workload: its samples against the CPU time it ran while recorded.
    svc_n = counts.get("split_svc", 0)
    log(f"  split_svc: {svc_n} samples; it ran {svc_cpu / 1e6:.0f} ms while recorded: "
        f"{svc_cpu * HZ / 1e9:.0f} expected (ratio {svc_n / (svc_cpu * HZ / 1e9):.2f})")
    # Within 30%: on this shared 2-CPU machine (load 17 while the test was written) the
    # child got 0.4 to 1.0 s of CPU in its 3 s, and its ratio ran 0.76 to 0.95 (the service's
    # 1.01 to 1.08); a child left out, or a twin let in, is far outside.
    kid_ratio, svc_ratio = kid_leaves / (kid_ns * HZ / 1e9), svc_n / (svc_cpu * HZ / 1e9)
    assert 0.7 <= kid_ratio <= 1.3, "the child's samples are not its CPU time"
    assert 0.7 <= svc_ratio <= 1.3, "the service's samples are not its CPU time"
    # And its leaves' split as it measured it.
    want = truth_shares(os.path.join(out_dir, "svc.truth"))
    named = {leaf: sum(n for f, n in rows if f[0] == "split_svc" and f[-1] == leaf)
             for leaf in LEAVES}
    total = sum(named.values())
    assert total > 500, f"too few named samples of the service: {named}"
    for leaf in LEAVES:
        assert_close(leaf, 100.0 * named[leaf] / total, round(want[leaf], 1), 3)


if __name__ == "__main__":
    run_tests([test_unit_of_a_booted_systemd])
