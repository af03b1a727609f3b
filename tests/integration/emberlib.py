# SPDX-License-Identifier: Apache-2.0
"""Helpers for ember's integration tests: root checks, workloads, running
ember, reading folded output. Tests that need root or eBPF fail under CI=true
instead of skipping (exit code 77 means "skipped" to ctest)."""
import collections
import gzip
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

SKIP = 77
SRC = os.environ.get("EMBER_SOURCE_DIR", os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
BUILD = os.environ.get("EMBER_BUILD_DIR", os.path.join(SRC, "build"))
EMBER = os.path.join(BUILD, "ember")
IN_CI = os.environ.get("CI", "") == "true"
# A sanitized build (ASan+UBSan: -DEMBER_FUZZ=ON, scripts/test.sh's build-fuzz), told by the
# build's ctest (tests/integration/CMakeLists.txt).
SANITIZED = os.environ.get("EMBER_SANITIZED") == "1"


class SanitizerLog:
    """Where a sanitized build's programs write their sanitizer reports (tests/sanitizer/report.c):
    one file for this script, which every process it starts inherits through the environment,
    and every user can append to (the symbolizer runs as nobody). A report in any of them, a
    sandboxed symbolizer, a broker worker or a reader too, fails the test that was running
    (run_tests), however the test treats that process's exit and stderr.

    The programs' own defaults (report.c) keep off two things their filters rightly forbid:
    LeakSanitizer's check at exit (it ptraces the process from a clone of it) and
    symbolization inside the process (it forks llvm-symbolizer). The options given here
    (scripts/test.sh's, a developer's) must not turn them back on."""

    def __init__(self):
        d = tempfile.mkdtemp(prefix="ember-sanitizer-")
        os.chmod(d, 0o755)
        self.path = os.path.join(d, "reports.log")
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        os.fchmod(fd, 0o666)
        os.close(fd)
        self.read_to = 0
        os.environ["EMBER_SANITIZER_LOG"] = self.path
        for name in ("ASAN_OPTIONS", "UBSAN_OPTIONS"):
            os.environ[name] = os.environ.get(name, "") + \
                (":detect_leaks=0" if name == "ASAN_OPTIONS" else "") + ":symbolize=0"

    def new_reports(self):
        """What the programs wrote to the log since the last call: their sanitizer reports, and
        what the helper processes log (in a sanitized build their stderr is this file).
        Returns "" when that holds no sanitizer report."""
        with open(self.path, errors="replace") as f:
            f.seek(self.read_to)
            text = f.read()
            self.read_to = f.tell()
        return text if re.search(r"Sanitizer|runtime error:", text) else ""


SANITIZER_LOG = SanitizerLog() if SANITIZED else None


def _reports_outside_tests():
    """A report written outside run_tests's tests (a file's set-up, its last processes) fails
    the file at exit."""
    reports = SANITIZER_LOG.new_reports()
    if reports:
        print(reports + f"\nFAIL: sanitizer reports outside a test ({SANITIZER_LOG.path})",
              flush=True)
        os._exit(1)


if SANITIZER_LOG:
    import atexit
    atexit.register(_reports_outside_tests)


# The daemons' command lines, in one place: every test and benchmark that starts
# the collector or the symbolizer daemon builds its argv here.
def collector_argv(build, *args):
    """argv that runs BUILD's collector daemon with ARGS."""
    return [os.path.join(build, "ember"), "collector", *args]


def symbolizer_argv(build, *args):
    """argv that runs BUILD's symbolizer daemon with ARGS."""
    return [os.path.join(build, "ember"), "symbolizer", *args]


# The build's programs symbolizer_argv runs: what staged_for_others must copy for a
# symbolizer daemon run as another user.
SYMBOLIZER_PROGRAMS = ("ember", "ember-symbolizer")


class KernelLog:
    """The kernel's log from the moment this is made on (/dev/kmsg, records of other
    writers included): what a test's processes made the kernel say."""

    def __init__(self):
        self.fd = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        os.lseek(self.fd, 0, os.SEEK_END)
        self.seen = []

    def lines(self):
        while True:
            try:
                rec = os.read(self.fd, 8192)
            except BlockingIOError:
                break
            except BrokenPipeError:  # records overwritten before they were read: go on
                continue
            self.seen.append(rec.decode(errors="replace").split(";", 1)[-1].strip())
        return self.seen

    def seccomp_events(self, *where):
        """The audit records of seccomp actions (type=1326) of programs under any of WHERE."""
        return [l for l in self.lines() if "type=1326" in l and any(f'exe="{w}' in l for w in where)]

    def close(self):
        os.close(self.fd)


# Debian's Go (golang-go, scripts/install-deps.sh): what a fresh machine has, whatever else PATH
# finds first.
GO = "/usr/bin/go" if os.path.exists("/usr/bin/go") else (shutil.which("go") or "go")


def log(*args):
    print(*args, flush=True)


class Skipped(Exception):
    """Raised by skip_or_fail inside a test run by run_tests: that test alone is skipped."""


_current_test = None  # the test run_tests is running, if any


def skip_or_fail(reason):
    """Skip outside CI, fail in CI: a test that cannot run must not pass silently. Inside a
    test (run_tests) it skips or fails that test alone, and run_tests goes on with the others;
    outside one (a file's set-up) it ends the file: exit 77 (ctest's "skipped") or 1."""
    if _current_test:
        if IN_CI:
            raise AssertionError(f"CI=true, cannot skip: {reason}")
        raise Skipped(reason)
    if IN_CI:
        log(f"FAIL (CI=true, cannot skip): {reason}")
        sys.exit(1)
    log(f"SKIP {os.path.basename(sys.argv[0])}: {reason}")
    sys.exit(SKIP)


def require_otlp_classes(rx):
    """The tests that decode OTLP with the upstream schema: protoc must be there; then the
    classes of otlp_receiver (rx) are made once."""
    if subprocess.run(["sh", "-c", "command -v protoc"], capture_output=True).returncode:
        skip_or_fail("protoc is missing (Debian: protobuf-compiler)")
    rx.classes()


def require_root():
    if os.geteuid() != 0:
        skip_or_fail("needs root to load eBPF programs (run the tests with sudo)")
    if not os.path.exists("/sys/kernel/btf/vmlinux"):
        skip_or_fail("the kernel has no BTF (/sys/kernel/btf/vmlinux)")


def workdir():
    d = tempfile.mkdtemp(prefix="ember-it-")
    os.chmod(d, 0o755)
    return d


def staged_for_others(directory, *names):
    """Copies the build's programs NAMES (e.g. "ember", "ember-symbolizer") into
    DIRECTORY, which becomes reachable by every user, and returns the copies'
    paths. A test that runs a program as another user (nobody) must run such a
    copy: the build tree of a checkout in a home directory (0700 on Debian 12) is
    out of that user's reach. `ember` finds ember-symbolizer beside itself, so
    stage the two together."""
    os.makedirs(directory, exist_ok=True)
    os.chmod(directory, 0o755)
    d = directory
    while d not in ("/", ""):
        mode = os.stat(d).st_mode
        assert mode & 0o001, f"{d} (mode {mode & 0o777:o}) keeps other users out: stage elsewhere"
        d = os.path.dirname(d)
    out = []
    for name in names:
        src = name if os.path.isabs(name) else os.path.join(BUILD, name)
        dst = os.path.join(directory, os.path.basename(src))
        shutil.copy2(src, dst)
        os.chmod(dst, 0o755)
        out.append(dst)
    return out


FRAME_POINTERS = ("-O2", "-fno-omit-frame-pointer", "-mno-omit-leaf-frame-pointer", "-fno-optimize-sibling-calls")


def build_workload(name, out_dir, cflags=FRAME_POINTERS, extra=()):
    src = os.path.join(SRC, "tests", "workloads", name + ".c")
    out = os.path.join(out_dir, name)
    cmd = ["gcc", *cflags, "-g", "-pthread", "-o", out, src, *extra]
    subprocess.run(cmd, check=True)
    return out


def root_is_a_mount():
    """False in a chroot whose directory is no mount point, such as a new user's test tree
    (os.path.ismount("/") is always True: / is its own parent); mountinfo lists mount
    points as this process sees them."""
    with open("/proc/self/mountinfo") as f:
        return any(line.split()[4] == "/" for line in f)


def with_root_a_mount(cmd):
    """cmd as it must run where / is no mount point: tools that make / a private or slave
    mount (systemd-nspawn, podman's layer unpacking: "remount /: invalid argument") run
    chrooted in a mount namespace of their own where / is bound onto a directory. Every
    exec keeps the PID. Elsewhere cmd itself."""
    if root_is_a_mount():
        return list(cmd)
    os.makedirs("/run/ember-it-root", exist_ok=True)
    return ["unshare", "-m", "--propagation", "unchanged", "sh", "-c",
            'mount --rbind / /run/ember-it-root && cd /run/ember-it-root && exec chroot . "$@"',
            "sh", *cmd]


class podman_run:
    """A podman container that runs a static program (copied into an image of its own), as a
    context: .cid is podman's own id of it (64 hex digits), .pid its process on the host.
    Skips (fails under CI) without podman."""

    def __init__(self, wd, program, *args):
        self.exe = shutil.which("podman")
        if not self.exe:
            skip_or_fail("podman is not installed (scripts/install-deps.sh installs it)")
        self.wd, self.program, self.args = wd, program, args
        self.image = f"localhost/ember-it-{os.path.basename(program)}:{os.getpid()}"
        self.cid = None
        # This test host's quirks: no CAP_SYS_RESOURCE for podman's default limits, and crun
        # refuses a hybrid cgroup layout that runc accepts.
        conf = os.path.join(wd, "containers.conf")
        with open(conf, "w") as f:
            f.write('[containers]\ndefault_ulimits = ["nofile=20000:20000", "nproc=4096:4096"]\n'
                    '[engine]\nruntime = "runc"\n')
        self.env = dict(os.environ, CONTAINERS_CONF=conf)

    def podman(self, *args, check=True, **kw):
        r = subprocess.run(with_root_a_mount([self.exe, *args]), capture_output=True,
                           env=self.env, timeout=120, **kw)
        if check and r.returncode:
            err = r.stderr if isinstance(r.stderr, str) else r.stderr.decode(errors="replace")
            raise AssertionError(f"podman {args[0]}: {err[-1000:]}")
        return r

    def __enter__(self):
        root = tempfile.mkdtemp(dir=self.wd)
        name = os.path.basename(self.program)
        shutil.copy(self.program, os.path.join(root, name))
        tar = subprocess.run(["tar", "-C", root, "-c", name], capture_output=True, check=True)
        self.podman("import", "-q", "-", self.image, input=tar.stdout)
        try:
            self.cid = self.podman("run", "-d", "--rm", self.image, f"/{name}", *self.args,
                                   text=True).stdout.strip()
            self.pid = int(self.podman("inspect", "--format", "{{.State.Pid}}", self.cid,
                                       text=True).stdout)
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc):
        if self.cid:
            self.podman("rm", "-f", self.cid, check=False)
        self.podman("rmi", "-f", self.image, check=False)


def start_recording(args, env=None):
    """Starts ember record; returns (process, lines of stderr so far, an event set once it
    samples: the collector says so once its programs are attached, after the symbolizer
    connected; its .time is when the test read that line, its .reader the thread that reads
    the log: joined, the log is whole)."""
    proc = subprocess.Popen([EMBER, "record", *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, env=env)
    lines, sampling = [], threading.Event()

    def drain():
        for line in proc.stderr:
            lines.append(line)
            if re.match(r"ember: sampling \d+ CPUs at", line):
                sampling.time = time.time()
                sampling.set()

    sampling.reader = threading.Thread(target=drain, daemon=True)
    sampling.reader.start()
    return proc, lines, sampling


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


def _fields(data):
    """(field number, wire type, value) of each field of a protobuf message."""
    i = 0

    def varint():
        nonlocal i
        shift = value = 0
        while True:
            b = data[i]
            i += 1
            value |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                return value

    while i < len(data):
        key = varint()
        field, wire = key >> 3, key & 7
        if wire == 0:
            yield field, wire, varint()
        elif wire == 1:
            yield field, wire, data[i:i + 8]
            i += 8
        elif wire == 5:
            yield field, wire, data[i:i + 4]
            i += 4
        elif wire == 2:
            n = varint()
            yield field, wire, data[i:i + n]
            i += n
        else:
            raise AssertionError(f"unexpected wire type {wire}")


def _packed(wire, v):
    """The integers of a repeated varint field, packed (wire type 2) or not."""
    if wire == 0:
        return [v]
    out, j = [], 0
    while j < len(v):
        shift = x = 0
        while True:
            b = v[j]
            j += 1
            x |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                break
        out.append(x)
    return out


def read_pprof(path):
    """A gzipped pprof profile as plain data: {"mappings": {id: {...}}, "locations": {id:
    {"address", "mapping", "names", "lines": [(name, file, line), innermost first]}},
    "samples": [(count, [location ids, leaf first])], "comments": [...], "strings": [...]}
    (profile.proto field numbers)."""
    data = gzip.decompress(open(path, "rb").read())
    top = collections.defaultdict(list)
    for field, wire, v in _fields(data):
        top[field].append((wire, v))
    strings = [v.decode() for _, v in top[6]]

    def message(raw):
        m = collections.defaultdict(list)
        for field, wire, v in _fields(raw):
            m[field].append((wire, v))
        return m

    def one(m, field, default=0):
        return m[field][0][1] if m[field] else default

    functions, files = {}, {}
    for _, raw in top[5]:
        m = message(raw)
        functions[one(m, 1)] = strings[one(m, 2)]
        files[one(m, 1)] = strings[one(m, 4)]
    mappings = {}
    for _, raw in top[3]:
        m = message(raw)
        mappings[one(m, 1)] = {"start": one(m, 2), "limit": one(m, 3), "offset": one(m, 4),
                               "file": strings[one(m, 5)]}
    locations = {}
    for _, raw in top[4]:
        m = message(raw)
        lines = [(functions.get(one(ln, 1), ""), files.get(one(ln, 1), ""), one(ln, 2))
                 for ln in (message(raw_line) for _, raw_line in m[4])]
        locations[one(m, 1)] = {"mapping": one(m, 2), "address": one(m, 3),
                                "names": [name for name, _, _ in lines], "lines": lines}
    samples = []
    for _, raw in top[2]:
        m = message(raw)
        ids = [x for w, v in m[1] for x in _packed(w, v)]
        values = [x for w, v in m[2] for x in _packed(w, v)]
        samples.append((values[0] if values else 0, ids))
    comments = [strings[x] for w, v in top[13] for x in _packed(w, v)]
    return {"mappings": mappings, "locations": locations, "samples": samples,
            "comments": comments, "strings": strings}


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


def truth_seconds(path):
    """The CPU time (seconds) the workloads measured in their leaves (the same lines as
    truth_shares), summed: what the samples in those leaves should add up to at a rate."""
    total = 0
    with open(path) as f:
        for line in f:
            total += sum(int(field.partition("=")[2]) for field in line.split())
    return total / 1e9


def cpu_seconds(path):
    """The CPU time (seconds) the known-split processes wrote to their EMBER_CPU_FILE at exit
    (tests/workloads/known_split.h), summed."""
    with open(path) as f:
        return sum(int(line.partition("=")[2]) for line in f if line.startswith("cpu_ns=")) / 1e9


def assert_samples(name, got, cpu_s, hz, low=0.85, high=None):
    """got samples of a process that measured cpu_s seconds of CPU time, sampled at hz: at
    least low (85%) of what that time calls for, and when high is given at most high of it."""
    want = cpu_s * hz
    ratio = got / want if want else 0.0
    log(f"  {name}: {got} samples, {cpu_s:.2f} s of CPU at {hz} Hz calls for {want:.0f} "
        f"({100 * ratio:.0f}%)")
    assert want > 0, f"{name}: no CPU time measured"
    assert ratio >= low, f"{name}: {got} samples, {100 * low:.0f}% of {want:.0f} wanted"
    assert high is None or ratio <= high, f"{name}: {got} samples, more than {100 * high:.0f}% of {want:.0f}"


def assert_workload_ran(truth, nominal):
    """The workload measured each leaf near its nominal share: a leaf that did not run, or
    not as written, breaks the workload, not ember. Near, not within a few points: the same
    binary measures 60/30/10 as 60/30/10 on one CPU and 66/25/9 on another, whose loop runs
    the six-unit call faster per unit; ember is compared with the measurement, not with this."""
    for leaf, share in nominal.items():
        assert 0.5 * share <= truth.get(leaf, 0) <= 1.5 * share, \
            f"the workload itself is off: {truth} (nominal {nominal})"


def assert_close(name, got, want, tolerance):
    ok = abs(got - want) <= tolerance
    log(f"  {name}: {got:.1f}% (want {want}% +/- {tolerance}) {'ok' if ok else 'FAIL'}")
    if not ok:
        raise AssertionError(f"{name} share {got:.1f}% is not within {tolerance} of {want}%")


def html_data(path):
    """The data an HTML flame graph embeds (its <script id="ember-data"> JSON), parsed: "strings",
    "funcs" [(name, file, line, kind)], "nodes" [(function, depth, value[, base value])] in
    preorder (the base value in a diff, or the off-CPU value on a page with both), "diff" (None,
    or base_samples and the "changes" rows: name, kind, self base, self new, total base, total
    new) and the metadata."""
    import json
    with open(path, encoding="utf-8") as f:
        page = f.read()
    head = '<script type="application/json" id="ember-data">'
    start = page.index(head) + len(head)
    data = json.loads(page[start:page.index("</script>", start)])
    stride = 4 if data["diff"] or data["off_cpu"] else 3
    flat = data["nodes"]
    data["nodes"] = [tuple(flat[i:i + stride]) for i in range(0, len(flat), stride)]
    flat = data["funcs"]
    data["funcs"] = [tuple(flat[i:i + 4]) for i in range(0, len(flat), 4)]
    return data


def pprof_comments(path):
    """The comments (our statistics, "#name=value") of a gzipped pprof profile."""
    strings, comment_ids, header = [], [], {}
    for field, wire, v in _fields(gzip.decompress(open(path, "rb").read())):
        if field == 6:
            strings.append(v.decode())
        elif field == 13:
            comment_ids.extend(_packed(wire, v))
        elif field in (9, 10) and wire == 0:
            header[field] = v
    stats = {}
    for c in comment_ids:
        name, _, value = strings[c].removeprefix("#").partition("=")
        stats[name] = int(value) if value.isdigit() else value
    stats["time_nanos"], stats["duration_nanos"] = header.get(9, 0), header.get(10, 0)
    return stats


class CpuClock:
    """Follows a process's CPU time (utime+stime) so that the samples an
    interval should hold can be computed: CPU seconds in it times the rate."""

    def __init__(self, pid):
        self.pid, self.points, self.stop = pid, [], False
        self.tick = os.sysconf("SC_CLK_TCK")
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stop:
            try:
                f = open(f"/proc/{self.pid}/stat").read().rsplit(")", 1)[1].split()
                self.points.append((time.time(), (int(f[11]) + int(f[12])) / self.tick))
            except (OSError, IndexError):
                return
            time.sleep(0.05)

    def cpu_between(self, t0, t1):
        def at(t):
            prev = self.points[0]
            for p in self.points:
                if p[0] >= t:
                    if p[0] == prev[0]:
                        return p[1]
                    return prev[1] + (p[1] - prev[1]) * (t - prev[0]) / (p[0] - prev[0])
                prev = p
            return prev[1]
        return at(t1) - at(t0)


def slowdown(cpu_seconds=0.3):
    """How many times slower than on an idle host CPU work runs here now: the wall-clock time
    a busy loop of cpu_seconds of this thread's CPU time takes, over cpu_seconds (1 when idle,
    about 10 when ten runnable threads share each CPU). A control run for wall-clock bounds:
    a bound of B seconds on an idle host is B * slowdown() on a loaded one."""
    w0, c0 = time.monotonic(), time.thread_time()
    while time.thread_time() - c0 < cpu_seconds:
        pass
    return max(1.0, (time.monotonic() - w0) / (time.thread_time() - c0))


def kill(proc):
    if proc.poll() is None:
        proc.send_signal(signal.SIGKILL)
        proc.wait()


def shipped_build_only(reason):
    """Marks a test that the sanitized pass (scripts/test.sh, EMBER_SANITIZED=1) leaves to
    the shipped build's: one whose point is agreement with a peer profiler, whose code paths
    the tests beside it already take under the sanitizers. reason says which."""
    def mark(test):
        test.shipped_build_only = reason
        return test
    return mark


def run_tests(tests):
    """Runs test functions in order; prints a summary, with a "SKIP file test: reason" line
    for each test that skipped (scripts/test.sh lists them after the run). Exits 1 when one
    failed, 77 (skipped) when all of them skipped, else 0. Under the sanitizers, the tests
    marked shipped_build_only are named, with their reason, and not run (not a skip: the
    shipped build's pass runs them)."""
    global _current_test
    failed, skipped = [], []
    name = os.path.basename(sys.argv[0])
    if SANITIZED:
        for t in tests:
            if getattr(t, "shipped_build_only", None):
                log(f"== {t.__name__}: in the shipped build's pass only ({t.shipped_build_only})")
        tests = [t for t in tests if not getattr(t, "shipped_build_only", None)]
    # EMBER_ONLY=test_a,test_b runs only those (a developer's loop; CI runs all).
    if os.environ.get("EMBER_ONLY"):
        tests = [t for t in tests if t.__name__ in os.environ["EMBER_ONLY"].split(",")]
    for t in tests:
        log(f"== {t.__name__}")
        start_t = time.time()
        _current_test = t.__name__
        outcome = "passed"
        try:
            t()
        except Skipped as e:
            skipped.append((t.__name__, str(e)))
            outcome = f"skipped: {e}"
        except Exception as e:  # noqa: BLE001 - report every failure and go on
            outcome = f"FAILED: {e!r}"
        finally:
            _current_test = None
        # A sanitizer's report from any process the test started fails it, whatever else
        # the test saw.
        reports = SANITIZER_LOG.new_reports() if SANITIZER_LOG else ""
        if reports:
            log(reports.rstrip("\n"))
            first = next((ln.strip() for ln in reports.splitlines()
                          if "ERROR:" in ln or "runtime error:" in ln), "")
            outcome = f"FAILED: sanitizer reports above ({SANITIZER_LOG.path}; {first})" + \
                ("" if outcome == "passed" else f"; and {outcome}")
            if skipped and skipped[-1][0] == t.__name__:
                skipped.pop()
        if outcome == "passed":
            log(f"   passed ({time.time() - start_t:.1f}s)")
        else:
            log(f"   {outcome}")
            if outcome.startswith("FAILED"):
                failed.append((t.__name__, outcome))
    for test, reason in skipped:
        log(f"SKIP {name} {test}: {reason}")
    # One line a failure, which test.sh lists again at the end of its output: CI keeps the
    # end of a long log, not always the middle where the failure was printed.
    for test, outcome in failed:
        log(f"FAILED {name} {test}: {outcome.removeprefix('FAILED: ')[:1000]}")
    log(f"{len(tests) - len(failed) - len(skipped)}/{len(tests)} passed, {len(skipped)} "
        f"skipped, {len(failed)} failed")
    sys.exit(1 if failed else SKIP if len(skipped) == len(tests) else 0)
