# SPDX-License-Identifier: Apache-2.0
"""Helpers for ember's integration tests: root checks, workloads, running
ember, reading folded output. Tests that need root or eBPF fail under CI=true
instead of skipping (exit code 77 means "skipped" to ctest)."""
import collections
import os
import signal
import subprocess
import sys
import tempfile
import time

SKIP = 77
SRC = os.environ.get("EMBER_SOURCE_DIR", os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
BUILD = os.environ.get("EMBER_BUILD_DIR", os.path.join(SRC, "build"))
EMBER = os.path.join(BUILD, "ember")
IN_CI = os.environ.get("CI", "") == "true"


def log(*args):
    print(*args, flush=True)


def skip_or_fail(reason):
    """Skip outside CI, fail in CI: a test that cannot run must not pass silently."""
    if IN_CI:
        log(f"FAIL (CI=true, cannot skip): {reason}")
        sys.exit(1)
    log(f"SKIP: {reason}")
    sys.exit(SKIP)


def require_root():
    if os.geteuid() != 0:
        skip_or_fail("needs root to load eBPF programs (run the tests with sudo)")
    if not os.path.exists("/sys/kernel/btf/vmlinux"):
        skip_or_fail("the kernel has no BTF (/sys/kernel/btf/vmlinux)")


def workdir():
    d = tempfile.mkdtemp(prefix="ember-it-")
    os.chmod(d, 0o755)
    return d


FRAME_POINTERS = ("-O2", "-fno-omit-frame-pointer", "-mno-omit-leaf-frame-pointer", "-fno-optimize-sibling-calls")


def build_workload(name, out_dir, cflags=FRAME_POINTERS, extra=()):
    src = os.path.join(SRC, "tests", "workloads", name + ".c")
    out = os.path.join(out_dir, name)
    cmd = ["gcc", *cflags, "-g", "-pthread", "-o", out, src, *extra]
    subprocess.run(cmd, check=True)
    return out


def start(cmd, **kw):
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def ember(*args, timeout=120, check=True):
    """Runs ember; returns the CompletedProcess. check=True asserts exit code 0."""
    r = subprocess.run([EMBER, *args], capture_output=True, text=True, timeout=timeout)
    if check and r.returncode != 0:
        log("ember", *args)
        log(r.stdout)
        log(r.stderr)
        raise AssertionError(f"ember exited with {r.returncode}")
    return r


def read_folded(path):
    """[(frames list, count)] from a .folded file; frames[0] is the comm."""
    rows = []
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            stack, _, count = line.rpartition(" ")
            rows.append((stack.split(";"), int(count)))
    return rows


def leaf_shares(rows, comm, leaves):
    """Share (percent) of each leaf among the samples of `comm` that end in one of the leaves."""
    counts = collections.Counter()
    total = 0
    for frames, n in rows:
        if frames[0] != comm:
            continue
        total += n
        for leaf in leaves:
            if frames[-1] == leaf:
                counts[leaf] += n
    return {leaf: 100.0 * counts[leaf] / total if total else 0.0 for leaf in leaves}, total


def truth_shares(path):
    """The leaves' shares (percent) as the workloads measured them (tests/workloads/known_split.h):
    every line a process appended to its EMBER_TRUTH_FILE, summed."""
    ns = collections.Counter()
    with open(path) as f:
        for line in f:
            for field in line.split():
                leaf, _, value = field.partition("=")
                ns[leaf] += int(value)
    total = sum(ns.values())
    assert total > 0, f"no ground truth in {path}"
    return {leaf: 100.0 * n / total for leaf, n in ns.items()}


def assert_close(name, got, want, tolerance):
    ok = abs(got - want) <= tolerance
    log(f"  {name}: {got:.1f}% (want {want}% +/- {tolerance}) {'ok' if ok else 'FAIL'}")
    if not ok:
        raise AssertionError(f"{name} share {got:.1f}% is not within {tolerance} of {want}%")


def kill(proc):
    if proc.poll() is None:
        proc.send_signal(signal.SIGKILL)
        proc.wait()


def run_tests(tests):
    """Runs test functions in order; prints a summary; exits non-zero on failure."""
    failed = 0
    for t in tests:
        log(f"== {t.__name__}")
        start_t = time.time()
        try:
            t()
            log(f"   passed ({time.time() - start_t:.1f}s)")
        except Exception as e:  # noqa: BLE001 - report every failure and go on
            failed += 1
            log(f"   FAILED: {e!r}")
    log(f"{len(tests) - failed}/{len(tests)} passed")
    sys.exit(1 if failed else 0)
