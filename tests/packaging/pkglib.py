# SPDX-License-Identifier: Apache-2.0
"""Helpers for the packaging tests (scripts/test-packages.sh): the packages in
dist/, fresh Debian 12 trees made with debootstrap (cached), a tree booted
with systemd-nspawn, podman. Everything they make lives under WORK (outside
the checkout) and is removed again, but for the cached base trees.

Under CI=true a test that cannot run fails; otherwise it skips (exit 77)."""
import fcntl
import glob
import os
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
DIST = os.environ.get("EMBER_DIST", os.path.join(SRC, "dist"))
WORK = os.environ.get("EMBER_PKGTEST_DIR", "/var/tmp/ember-pkgtest")
MIRROR = os.environ.get("MIRROR", "http://deb.debian.org/debian")
IN_CI = os.environ.get("CI", "") == "true"
SKIP = 77
# What the daemons link, preinstalled in the base tree so that installing the
# package needs no network (the package's own Depends are checked by dpkg).
RUNTIME = ["libbpf1", "libseccomp2", "libsodium23", "libelf1", "libdw1", "libprotobuf-c1",
           "libcurl4", "zlib1g", "liblzma5", "libdeflate0", "libstdc++6", "passwd"]
SYSTEMD = ["systemd", "systemd-sysv", "dbus"]
# Capabilities and system calls the collector needs inside nspawn; nspawn's
# own filter denies bpf and perf_event_open, and the symbolizer's sandbox uses Landlock.
NSPAWN_CAPS = "CAP_BPF,CAP_PERFMON,CAP_SYSLOG,CAP_DAC_READ_SEARCH,CAP_CHECKPOINT_RESTORE,CAP_SYS_PTRACE"
NSPAWN_CALLS = "bpf perf_event_open landlock_create_ruleset landlock_add_rule landlock_restrict_self"


def log(*args):
    print(*args, flush=True)


class Skipped(Exception):
    """Raised by skip_or_fail inside a test run by run_tests: that test alone is skipped."""


_current_test = None  # the test run_tests is running, if any


def skip_or_fail(reason):
    """Inside a test (run_tests): skips that test alone, or under CI=true fails it. Outside
    one (a file's set-up): ends the file, exit 77 (skipped) or under CI=true 1."""
    if _current_test:
        if IN_CI:
            raise AssertionError(f"CI=true, cannot skip: {reason}")
        raise Skipped(reason)
    if IN_CI:
        log(f"FAIL (CI=true, cannot skip): {reason}")
        sys.exit(1)
    log(f"SKIP {os.path.basename(sys.argv[0])}: {reason}")
    sys.exit(SKIP)


def require(tools, root=True):
    if root and os.geteuid() != 0:
        skip_or_fail("the packaging tests need root (debootstrap, nspawn, podman): run them with sudo")
    missing = [t for t in tools if not shutil.which(t)]
    if missing:
        skip_or_fail(f"missing {', '.join(missing)}: sudo scripts/install-deps.sh --packaging")


def run(cmd, check=True, timeout=600, **kw):
    """Runs cmd (a list); returns the CompletedProcess with text output."""
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
    if check and r.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} exited with {r.returncode}:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    return r


def dist_file(pattern):
    files = sorted(glob.glob(os.path.join(DIST, pattern)))
    if not files:
        raise AssertionError(f"no {pattern} in {DIST}: build it with scripts/package.sh")
    return files[-1]


def wait_for(cond, timeout, what, interval=0.5):
    end = time.time() + timeout
    while True:
        v = cond()
        if v:
            return v
        if time.time() > end:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


def base_tree(name, packages):
    """A Debian 12 minbase tree with `packages`, made once (debootstrap) and
    kept in WORK/NAME; returns its path. Concurrent callers wait for each other."""
    os.makedirs(WORK, exist_ok=True)
    path = os.path.join(WORK, name)
    with open(path + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        stamp = os.path.join(path, ".ember-base")
        want = " ".join(sorted(packages))
        if os.path.exists(stamp) and open(stamp).read() == want:
            return path
        shutil.rmtree(path, ignore_errors=True)
        log(f"  making {path} (debootstrap, once)")
        t = time.time()
        r = run(["debootstrap", "--variant=minbase", "--include=" + ",".join(sorted(packages)),
                 "bookworm", path, MIRROR], check=False, timeout=1800)
        if r.returncode:
            shutil.rmtree(path, ignore_errors=True)
            raise AssertionError(f"debootstrap failed (is {MIRROR} reachable?):\n{r.stdout[-2000:]}{r.stderr[-2000:]}")
        run(["chroot", path, "apt-get", "clean"])
        with open(stamp, "w") as f:
            f.write(want)
        log(f"  made in {time.time() - t:.0f}s")
        return path


def fresh_tree(base, name):
    """A copy of a base tree at WORK/NAME (any earlier one removed)."""
    path = os.path.join(WORK, name)
    remove_tree(path)
    run(["cp", "-a", base, path])
    return path


def remove_tree(path):
    for m in ("proc", "sys", "dev"):
        subprocess.run(["umount", "-l", os.path.join(path, m)], capture_output=True)
    shutil.rmtree(path, ignore_errors=True)


class Booted:
    """A tree booted with systemd-nspawn -b: systemd as its PID 1, the
    collector's capabilities and system calls allowed, the host's network."""

    def __init__(self, tree):
        self.tree = tree
        self.log_path = tree + ".console.log"
        self.logf = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            ["systemd-nspawn", "--quiet", "-D", tree, "--register=no", "--keep-unit", "--boot",
             "--console=passive", f"--capability={NSPAWN_CAPS}", f"--system-call-filter={NSPAWN_CALLS}"],
            stdout=self.logf, stderr=subprocess.STDOUT)
        self.leader = wait_for(self._leader, 60, "the container's systemd")
        state = wait_for(lambda: self._state() in ("running", "degraded") and self._state(), 90,
                         "the boot to finish")
        log(f"  booted {os.path.basename(tree)} (systemd {state})")

    def _leader(self):
        if self.proc.poll() is not None:
            raise AssertionError(f"systemd-nspawn exited: {open(self.log_path).read()[-2000:]}")
        r = subprocess.run(["pgrep", "-P", str(self.proc.pid), "-x", "systemd"], capture_output=True, text=True)
        return int(r.stdout.split()[0]) if r.stdout.split() else None

    def _state(self):
        return self.sh("systemctl is-system-running", check=False).stdout.strip()

    def sh(self, script, check=True, timeout=300):
        """Runs a shell script inside the booted container."""
        return run(["nsenter", "-t", str(self.leader), "-a", "/bin/sh", "-c", script],
                   check=check, timeout=timeout)

    def read(self, path):
        with open(os.path.join(self.tree, path.lstrip("/")), "rb") as f:
            return f.read()

    def status(self, pid):
        """/proc/PID/status of a process of the container (its PID there) as a dict."""
        out = self.sh(f"cat /proc/{pid}/status").stdout
        return dict(line.split(":\t", 1) for line in out.splitlines() if ":\t" in line)

    def main_pid(self, unit):
        return int(self.sh(f"systemctl show -p MainPID --value {unit}").stdout.strip())

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)  # nspawn halts the container cleanly
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.logf.close()


def caps(hexmask):
    """Capability numbers in a /proc status mask."""
    v = int(hexmask, 16)
    return {i for i in range(64) if v >> i & 1}


CAP = {"CAP_CHOWN": 0, "CAP_DAC_OVERRIDE": 1, "CAP_DAC_READ_SEARCH": 2, "CAP_KILL": 5, "CAP_SETGID": 6,
       "CAP_SETUID": 7, "CAP_SETPCAP": 8, "CAP_NET_ADMIN": 12, "CAP_SYS_PTRACE": 19, "CAP_SYS_ADMIN": 21,
       "CAP_SYSLOG": 34, "CAP_PERFMON": 38, "CAP_BPF": 39, "CAP_CHECKPOINT_RESTORE": 40}


def run_tests(tests, cleanup=None):
    """Runs the tests in order, each skip reported per test ("SKIP file test: reason"); exits
    1 when one failed, 77 when all skipped, else 0."""
    global _current_test
    failed, skipped = 0, []
    name = os.path.basename(sys.argv[0])
    try:
        for t in tests:
            log(f"== {t.__name__}")
            start = time.time()
            _current_test = t.__name__
            try:
                t()
                log(f"   passed ({time.time() - start:.1f}s)")
            except Skipped as e:
                skipped.append((t.__name__, str(e)))
                log(f"   skipped: {e}")
            except Exception as e:  # noqa: BLE001 - report every failure and go on
                failed += 1
                log(f"   FAILED: {e}")
                # scripts/test-packages.sh lists every failure again at its end, where a
                # long log's tail (CI's) still shows it.
                if os.environ.get("EMBER_PKG_FAILURES"):
                    with open(os.environ["EMBER_PKG_FAILURES"], "a") as f:
                        f.write(f"  {name} {t.__name__}: {str(e)[:300]}\n")
            finally:
                _current_test = None
    finally:
        if cleanup:
            cleanup()
    for test, reason in skipped:
        log(f"SKIP {name} {test}: {reason}")
    log(f"{len(tests) - failed - len(skipped)}/{len(tests)} passed, {len(skipped)} skipped, "
        f"{failed} failed")
    sys.exit(1 if failed else SKIP if len(skipped) == len(tests) else 0)
