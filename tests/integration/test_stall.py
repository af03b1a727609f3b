#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Nothing a profiled process or a file system does can freeze ember.

A process (tests/workloads/stall_app.c) runs code from a shared library on a
FUSE file system (stallfs.c) that then stops answering: its opens, its reads,
or both; in the lock case a thread of the process also waits in the file
system holding the process's memory-map lock while another waits to map
memory. In each case a whole-system `ember record -d 10` must exit 0 within
15 s; another CPU-bound workload (split) must have as many samples as its
measured CPU time calls for (within 10%), every frame named; the stalled
process's frames that do not need the stalled file must be named (those in
it stay module+0xoffset); and the statistics must name the stall. A file
system that answers again gives its frames back; the daemons keep writing
their intervals on time and SIGTERM ends both.

Other engineers run whole-system recordings on this machine: a stalled mount
would hang theirs. Every stall here is short, stallfs answers every request
after 60 s whatever happens, dies with the test (PR_SET_PDEATHSIG), and each
test aborts the FUSE connection and unmounts it before it ends."""
import ctypes
import os
import signal
import subprocess
import time

from emberlib import (BUILD, EMBER, CpuClock, SRC, build_workload, kill, log, pprof_comments,
                      read_folded, require_root, run_tests, start, workdir)

require_root()
WD = workdir()
STALLFS = os.path.join(BUILD, "tests", "integration", "stallfs")
COLLECTOR = os.path.join(BUILD, "ember-collector")
SYMBOLIZER = os.path.join(BUILD, "ember-symbolizer")
NOBODY = 65534
HZ = 99
LIBC = ctypes.CDLL(None, use_errno=True)
PR_SET_PDEATHSIG, MNT_FORCE, MNT_DETACH = 1, 1, 2

if not os.path.exists(STALLFS):
    from emberlib import skip_or_fail
    skip_or_fail(f"{STALLFS} was not built: install libfuse3-dev (scripts/install-deps.sh)")
if not os.path.exists("/dev/fuse"):
    from emberlib import skip_or_fail
    skip_or_fail("/dev/fuse is missing: this kernel or container has no FUSE")

SPLIT = build_workload("split", WD)
APP = os.path.join(WD, "stall_app")
LIB = os.path.join(WD, "libstallwork.so")
subprocess.run(["gcc", "-O2", "-g", "-pthread", "-fno-omit-frame-pointer", "-o", APP,
                os.path.join(SRC, "tests", "workloads", "stall_app.c"), "-ldl"], check=True)
subprocess.run(["gcc", "-O2", "-g", "-fPIC", "-shared", "-fno-omit-frame-pointer", "-o", LIB,
                os.path.join(SRC, "tests", "workloads", "stall_lib.c")], check=True)


def die_with_test():
    LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


class StallFS:
    """stallfs serving LIB at WD/NAME/mnt, its stalls switched through a control file."""

    def __init__(self, name):
        self.dir = os.path.join(WD, name)
        self.mnt = os.path.join(self.dir, "mnt")
        self.ctl = os.path.join(self.dir, "ctl")
        self.lib = os.path.join(self.mnt, "libstallwork.so")
        os.makedirs(self.mnt, exist_ok=True)
        open(self.ctl, "w").close()
        self.proc = subprocess.Popen([STALLFS, self.mnt, self.ctl, "60",
                                      f"libstallwork.so={LIB}"], preexec_fn=die_with_test)
        deadline = time.time() + 10
        while not os.path.ismount(self.mnt):
            assert self.proc.poll() is None and time.time() < deadline, "stallfs did not mount"
            time.sleep(0.05)
        self.dev = os.stat(self.mnt).st_dev  # before anything stalls
        self.devname = f"{os.major(self.dev)}:{os.minor(self.dev)}"

    def stall(self, *ops):
        tmp = self.ctl + ".new"
        with open(tmp, "w") as f:
            f.write(" ".join(ops) + "\n")
        os.replace(tmp, self.ctl)
        log(f"  stallfs {self.devname}: {' '.join(ops) or 'answers'}")

    def answer(self):
        self.stall()

    def drop_cache(self):
        """Pages of the file nobody maps leave the page cache: reading them needs the daemon."""
        fd = os.open(self.lib, os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)

    def close(self):
        """Aborts the connection (every waiting request fails at once) and unmounts."""
        abort = f"/sys/fs/fuse/connections/{os.minor(self.dev)}/abort"
        if os.path.exists(abort):
            with open(abort, "w") as f:
                f.write("1")
        # MNT_FORCE aborts a FUSE connection too (fuse_umount_begin), also without fusectl.
        if LIBC.umount2(self.mnt.encode(), MNT_FORCE) != 0:
            LIBC.umount2(self.mnt.encode(), MNT_DETACH)
        kill(self.proc)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class App:
    """stall_app running LIB from the stalling file system."""

    def __init__(self, fs, seconds=60):
        self.proc = subprocess.Popen([APP, fs.lib, str(seconds)], stdout=subprocess.PIPE,
                                     text=True)
        assert self.proc.stdout.readline().strip() == "ready", "stall_app did not start"

    def lock_case(self):
        self.proc.send_signal(signal.SIGUSR1)
        time.sleep(0.5)

    def stop(self):
        kill(self.proc)


def record(name, seconds=10, extra=()):
    """Whole-system ember record; returns (seconds it took, rows, stats, log)."""
    folded, pprof = os.path.join(WD, name + ".folded"), os.path.join(WD, name + ".pb.gz")
    t0 = time.time()
    r = subprocess.run([EMBER, "record", "-d", str(seconds), "-F", str(HZ), "-o", folded,
                        "-o", pprof, *extra], capture_output=True, text=True, timeout=120)
    took = time.time() - t0
    log(f"  ember record -d {seconds}: exit {r.returncode} after {took:.1f} s")
    assert r.returncode == 0, r.stderr
    return took, read_folded(folded), pprof_comments(pprof), r.stderr


def unnamed(frame):
    return frame == "[unknown]" or "+0x" in frame


def check_other(rows, stats, clock):
    """split: as many samples as its CPU time calls for, every frame named."""
    t0 = stats["time_nanos"] / 1e9
    want = clock.cpu_between(t0, t0 + stats["duration_nanos"] / 1e9) * HZ
    got = sum(n for frames, n in rows if frames[0] == "split")
    bad = sum(n for frames, n in rows if frames[0] == "split" and any(map(unnamed, frames)))
    log(f"  split: {got} samples, its CPU time calls for {want:.0f}; {bad} with unnamed frames")
    assert abs(got - want) <= 0.10 * want, (got, want)
    assert bad <= 0.01 * got, [f for f, n in rows if f[0] == "split" and any(map(unnamed, f))][:5]


def check_app(rows, remote_named):
    """stall_app: local_work named; remote_work named only when its file could be read."""
    local = sum(n for f, n in rows if f[0] == "stall_app" and "local_work" in f)
    remote = sum(n for f, n in rows if f[0] == "stall_app" and "remote_work" in f)
    in_lib = sum(n for f, n in rows if f[0] == "stall_app" and
                 any(x.startswith("libstallwork.so+0x") for x in f))
    log(f"  stall_app: local_work {local}, remote_work {remote}, libstallwork.so+0x... {in_lib}")
    assert local > 50, "the stalled process's own frames are not named"
    if remote_named:
        assert remote > 50, "the recovered file's frames did not come back"
    else:
        assert remote == 0 and in_lib > 50, "frames in the stalled file"


def stall_stats(stats):
    return {k: v for k, v in stats.items() if "stall" in k}


def run_case(name, ops, lock=False, recover_after=None):
    other = start([SPLIT, "60"])
    clock = CpuClock(other.pid)
    try:
        with StallFS(name) as fs:
            app = App(fs)
            try:
                fs.drop_cache()
                fs.stall(*ops)
                if lock:
                    app.lock_case()
                if recover_after is not None:
                    timer = subprocess.Popen(["sh", "-c", f"sleep {recover_after}; : > {fs.ctl}"])
                took, rows, stats, text = record(name)
                if recover_after is not None:
                    timer.wait()
                log(f"  statistics: {stall_stats(stats)}")
                assert took < 15, f"ember record -d 10 took {took:.1f} s"
                check_other(rows, stats, clock)
                check_app(rows, remote_named=recover_after is not None)
                return stats, text, fs
            finally:
                app.stop()
    finally:
        clock.stop = True
        kill(other)


def test_open_stall():
    stats, text, fs = run_case("open", ["open"])
    assert stats.get(f"broker.stalled_fs.{fs.devname}.fuse", 0) > 0, stall_stats(stats)
    assert f"device {fs.devname} (fuse) did not answer" in text, text


def test_read_stall():
    stats, text, fs = run_case("read", ["read"])
    assert stats.get("symbolizer.stalled_reads", 0) > 0, stall_stats(stats)


def test_lock_stall():
    stats, text, fs = run_case("lock", ["read"], lock=True)
    assert stats.get("symbolizer.stalled_reads", 0) + stats.get("broker.stalled_refused", 0) > 0


def test_recovery():
    stats, text, fs = run_case("recover", ["open", "read"], recover_after=3)


if __name__ == "__main__":
    run_tests([test_open_stall, test_read_stall, test_lock_stall, test_recovery])
