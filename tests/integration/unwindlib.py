# SPDX-License-Identifier: Apache-2.0
"""What the unwinding tests share: the known-split workload's leaves and the
callers each must have (tests/workloads/unwind.c), what makes its stack
complete, starting a workload stopped before its exec, and the profile's
statistics."""
import ctypes
import os
import re
import signal
import subprocess
import time

from emberlib import GO

LEAVES = {"leaf_a": 60, "leaf_b": 30, "leaf_c": 10}
# What each leaf's callers must be, innermost last; None: any frames (libc's qsort internals).
PATHS = {
    "leaf_a": ["run", "caller_a", "leaf_a"],
    "leaf_b": ["run", "caller_b", None, "cmp_b", "leaf_b"],
    "leaf_c": ["run", "caller_c", "leaf_c"],
}
THREAD_START = re.compile(r"^(start_thread|clone3?|__clone3?|libc\.so\.6\+0x[0-9a-f]+)$")


def user_frames(frames, leaf):
    """The frames of a stack from the outermost to the last occurrence of leaf
    (kernel frames above a leaf, from an interrupt, are not the user stack)."""
    last = max(i for i, f in enumerate(frames) if f == leaf)
    return frames[1:last + 1]


def follows(frames, path):
    """True if frames end with path (None matches one or more frames)."""
    i = len(frames)
    for want in reversed(path):
        if want is None:
            # At least one frame, then the rest of the path must be found further out.
            j = i - 2
            rest = path[:path.index(None)]
            while j >= 0 and frames[j] != rest[-1]:
                j -= 1
            if j < 0 or j >= i - 1:
                return False
            i = j + 1
            continue
        if i == 0 or frames[i - 1] != want:
            return False
        i -= 1
    return True


def complete(frames, leaf):
    """Leaf to main and _start, or leaf to thread_entry and the thread's start in libc."""
    f = user_frames(frames, leaf)
    if any(x.startswith("[unwind stopped") for x in f) or not follows(f, PATHS[leaf]):
        return False
    top = f[:f.index("run")]
    if top[-1:] == ["main"]:
        # __libc_start_main_impl is its name in libc's DWARF (libc6-dbg installed).
        return top[0] == "_start" and ("__libc_start_main" in top or
                                       "__libc_start_main_impl" in top)
    if top[-1:] == ["thread_entry"]:
        outer = top[:-1]
        return 1 <= len(outer) <= 3 and all(THREAD_START.match(x) for x in outer)
    return False


PR_SET_PDEATHSIG = 1


def start_stopped(argv):
    """Forks a child that stops itself before it execs argv, so that ember can
    follow the PID from its exec on. Returns the PID, stopped. The child is
    killed when the test process ends: a test that failed before continuing it
    left it stopped, holding ctest's output pipe, and ctest waited for its
    900 s timeout."""
    pid = os.fork()
    if pid == 0:
        try:
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 1)
            os.kill(os.getpid(), signal.SIGSTOP)
            os.execv(argv[0], argv)
        finally:
            os._exit(127)
    os.waitpid(pid, os.WUNTRACED)
    return pid


def wait_for_symbolizer(parent, timeout=30):
    end = time.time() + timeout
    while time.time() < end:
        r = subprocess.run(["pgrep", "-P", str(parent), "-f", "ember-symbolizer"],
                           capture_output=True, text=True)
        if r.stdout.strip():
            return
        time.sleep(0.1)
    raise AssertionError("ember-symbolizer did not start")


def profile_stats(pprof, wd):
    """The profile's statistics (pprof comments "name=value")."""
    env = dict(os.environ, HOME=wd, GOCACHE=os.path.join(wd, "gocache"), GOFLAGS="-mod=mod")
    r = subprocess.run([GO, "tool", "pprof", "-raw", pprof], capture_output=True, text=True,
                       env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"Comment: #?([\w.]+)=(\d+)", r.stdout)}
