# SPDX-License-Identifier: Apache-2.0
"""What the interpreter tests (test_python.py, test_ruby.py, test_php.py, test_perl.py)
share. Their known-split workloads (tests/workloads/pysplit.py, rbsplit.rb, phpsplit.php,
plsplit.pl) mark their lines ("# hot-a", "// call-a")
and write their truth ("tid=... leaf_a=NS leaf_b=NS leaf_c=NS ...", one line a thread) to
$EMBER_TRUTH_FILE when they end; each test records them here and decodes the OTLP output
into frames, then checks them against what its runtime must give (its own file: names,
paths, lines, frame types). Also here: a workload started after ember, one in its own mount
and PID namespaces, and one whose memory-map lock waits on a file system that stopped
answering (tests/integration/stallfs)."""
import collections
import contextlib
import ctypes
import os
import re
import signal
import subprocess
import time

import otlp_receiver as rx
from emberlib import BUILD, EMBER, ember, kill, log, pprof_comments, skip_or_fail, start

HZ = 997

Frame = collections.namedtuple("Frame", "name file line kind")


def decode_otlp(path):
    """[(pid, tid, count, [Frame] leaf first)] of every sample in an .otlp file."""
    req_cls, _ = rx.classes()
    req = req_cls()
    with open(path, "rb") as f:
        req.ParseFromString(f.read())
    d = req.dictionary
    st = d.string_table
    out = []
    for rp in req.resource_profiles:
        pid = rx.resource_attrs(rp).get("process.pid")
        for sp in rp.scope_profiles:
            for p in sp.profiles:
                for s in p.samples:
                    frames = []
                    for li in d.stack_table[s.stack_index].location_indices:
                        loc = d.location_table[li]
                        kind = rx.attrs_of(d, loc.attribute_indices).get("profile.frame.type")
                        for line in loc.lines:
                            fn = d.function_table[line.function_index]
                            frames.append(Frame(st[fn.name_strindex], st[fn.filename_strindex],
                                                line.line, kind))
                        if not loc.lines:
                            frames.append(Frame(rx.unnamed(d, loc), "", 0, kind))
                    tid = rx.attrs_of(d, s.attribute_indices).get("thread.id")
                    out.append((pid, tid, rx.sample_count(s), frames))
    return out


def stats_of(pprof):
    """The profile's statistics (its pprof comments "#name=value" with a number)."""
    return {k: v for k, v in pprof_comments(pprof).items() if isinstance(v, int)}


def marked_lines(path):
    """{mark: line} of a workload's marked lines ("# hot-a", "// call-a", ...)."""
    marks = {}
    with open(path) as f:
        for n, text in enumerate(f, 1):
            m = re.search(r"(?:#|//) (\w+-\w+)$", text.rstrip())
            if m:
                marks[m.group(1)] = n
    return marks


def line_ranges(defs):
    """{name: (first, last line)} of functions [(name, line of its def)] in file order: each
    runs to the line before the next one's def."""
    return {name: (n, defs[i + 1][1] - 1 if i + 1 < len(defs) else 10 ** 6)
            for i, (name, n) in enumerate(defs)}


def read_truth(path, leaves):
    """{tid: {leaf: share %}} from a workload's truth lines, and {tid: {field: value}}
    of the lines' other numbers."""
    truth, extra = {}, {}
    with open(path) as f:
        for line in f:
            fields = dict(kv.split("=", 1) for kv in line.split())
            ns = {leaf: int(fields[leaf]) for leaf in leaves}
            total = sum(ns.values())
            if total:
                truth[int(fields["tid"])] = {leaf: 100.0 * v / total for leaf, v in ns.items()}
            extra[int(fields["tid"])] = {k: int(v) for k, v in fields.items()
                                         if k not in ("tid", "name", *leaves)}
    assert truth, f"no truth in {path}"
    return truth, extra


def matches(name, want):
    """name is want (a string) or matches it whole (a compiled pattern)."""
    return bool(want.fullmatch(name)) if isinstance(want, re.Pattern) else name == want


def follows(names, path):
    """path appears in names in this order (other frames may sit between)."""
    it = iter(names)
    return all(any(matches(n, p) for n in it) for p in path)


def in_leaves(samples, leaf_of, tid=None):
    """(count, frames, leaf) of each sample (of thread tid, when given) in a leaf: leaf_of(frames)
    is its innermost leaf frame, or None."""
    for _, t, n, frames in samples:
        if tid is not None and t != tid:
            continue
        leaf = leaf_of(frames)
        if leaf:
            yield n, frames, leaf


def leaf_shares(label, counts, truth, min_samples, incomplete=(), legend=""):
    """{leaf: (its share %, the truth's)} of counts ({leaf: samples}) against truth ({leaf:
    share %}), whose leaves must hold min_samples at least. Logs their number and
    incomplete, a few of the stacks that were not complete (legend: how they are written)."""
    total = sum(counts.values())
    log(f"  {label}: {total} samples in the leaves")
    for ex in incomplete:
        log(f"    incomplete{legend}: {ex}")
    assert total >= min_samples, f"{label}: too few samples ({total})"
    return {leaf: (100.0 * counts[leaf] / total, want) for leaf, want in truth.items()}


def assert_shares(label, shares, tolerance):
    """Each leaf's share within tolerance points of the truth's (leaf_shares)."""
    for leaf, (got, want) in shares.items():
        assert abs(got - want) <= tolerance, f"{label}: {leaf} {got:.1f}% vs truth {want:.1f}%"


def check_marker_cut(runtime, samples, stats, truth, leaf_of, names_of, leaf_name, marker,
                     min_samples=1500):
    """A recursion deeper than the frame budget: 99% of the leaf samples end their runtime's
    frames in marker, its statistic counts the marker, and the leaves' shares still follow
    the truth (leaf_name: the truth's leaf of a leaf frame's name; names_of: a sample's
    frames of the runtime, for the depth logged)."""
    leaves = list(in_leaves(samples, leaf_of))
    marked = sum(n for n, frames, _ in leaves if any(f.name == marker for f in frames))
    leaf = sum(n for n, _, _ in leaves)
    depth = max((len(names_of(frames)) for _, frames, _ in leaves), default=0)
    counted = stats.get(f"{runtime}.markers_truncated", 0)
    log(f"  recursion: {marked} of {leaf} leaf samples end their {runtime} frames in {marker}, "
        f"{depth} {runtime} frames at most; {runtime}.markers_truncated={counted}")
    assert leaf >= min_samples, f"too few leaf samples ({leaf})"
    assert marked >= 0.99 * leaf, "the recursion's samples lack the marker"
    assert counted > 0, f"{runtime}.markers_truncated counts nothing"
    counts = collections.Counter()
    for n, _, f in leaves:
        counts[leaf_name(f.name)] += n
    for l, want in truth.items():
        got = 100.0 * counts[l] / leaf
        log(f"    {l}: {got:.1f}% (truth {want:.1f}%)")
        assert abs(got - want) <= 3.0, f"{l}: {got:.1f}% vs truth {want:.1f}%"


def check_peer(peer_name, peer, weight, names, shares, lines, truth, tolerance=5.0,
               lines_agree=True):
    """A peer profiler beside ember in the same process: peer is {leaf: {"name", weight,
    "lines": {line: weight}}}; each leaf's name is names[leaf], ember's hottest line (lines:
    {leaf: Counter of lines}) carries at least a third of the peer's weight in that leaf
    (unless not lines_agree: a peer whose lines are not the truth, only printed), its share
    within tolerance points of ember's."""
    total = sum(v[weight] for v in peer.values())
    assert total > 0, f"{peer_name} measured nothing in the leaves"
    for leaf in truth:
        got = 100.0 * peer[leaf][weight] / total
        hottest = max(peer[leaf]["lines"], key=peer[leaf]["lines"].get)
        ours = lines[leaf].most_common(1)[0][0]
        peer_lines = {int(k): v for k, v in peer[leaf]["lines"].items()}
        at_ours = peer_lines.get(ours, 0) / max(sum(peer_lines.values()), 1e-9)
        log(f"    {peer_name} {peer[leaf]['name']}: {got:.1f}% (ember {shares[leaf]:.1f}%, "
            f"truth {truth[leaf]:.1f}%), hottest line {hottest} (ember {ours}, where "
            f"{peer_name} has {100 * at_ours:.0f}%)")
        assert peer[leaf]["name"] == names[leaf], f"{peer_name} names {leaf} {peer[leaf]['name']}"
        assert at_ours >= 1 / 3 or not lines_agree, \
            f"hottest lines of {leaf}: {peer_name} {hottest}, ember {ours} " \
            f"({peer_name}'s lines: {dict(sorted(peer_lines.items()))})"
        assert abs(got - shares[leaf]) <= tolerance, \
            f"{leaf}: {peer_name} {got:.1f}% vs {shares[leaf]:.1f}%"


def record(wd, name, pids, seconds, extra=()):
    """Records pids for seconds at HZ into wd/NAME.{otlp,folded,pb.gz}; returns their paths."""
    outs = {ext: os.path.join(wd, f"{name}.{ext}") for ext in ("otlp", "folded", "pb.gz")}
    args = ["record", "-d", str(seconds), "-F", str(HZ), *extra]
    for pid in pids:
        args += ["-p", str(pid)]
    for path in outs.values():
        args += ["-o", path]
    ember(*args, timeout=seconds + 120)
    return outs


def exe_of(pid):
    try:
        return os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return ""


def workload_pid(pid, exe, script):
    """The interpreter's pid: pid itself, or its descendant running exe on script (under
    unshare)."""
    for _ in range(50):
        if exe_of(pid) == os.path.realpath(exe):
            return pid
        r = subprocess.run(["pgrep", "-f", script], capture_output=True, text=True)
        for p in map(int, r.stdout.split()):
            # In a chroot (a new user's test tree) a file of another mount namespace is
            # named from the real root: /var/tmp/.../opt/ember-ctr/python3.11.
            if p != pid and (exe_of(p) == exe or exe_of(p).endswith(exe)):
                return p
        time.sleep(0.1)
    raise AssertionError(f"no process runs {exe}")


def run_workload(wd, script, leaves, counted, label, exe, mode, seconds, cmd_prefix=(), env=None,
                 min_samples=1000, attempts=4, check_pid=None, exit_timeout=60,
                 record_extra=()):
    """Runs exe SCRIPT MODE (a known-split workload) under ember; returns (pid, samples,
    stats, truth, extra, outs): its samples, the statistics summed over the recordings, its
    truth and the truth's other numbers (read_truth), and each recording's files. On a busy
    machine the workload gets less CPU: it is recorded again (up to attempts times) until
    min_samples of its samples are counted (counted(frames), the test's: those in the
    leaves). With cmd_prefix, that command runs the workload (its arguments appended) and
    exe is what it executes; check_pid, when given, is called with the interpreter's pid
    before the recording; record_extra, ember record's options beyond the defaults. At
    SIGTERM the workload writes its truth (and a peer profiler its results) and exits, within
    exit_timeout seconds."""
    truth_file = os.path.join(wd, f"{label}-{mode}.truth")
    argv = [script, mode, str(attempts * seconds + 60)]
    wl = start([*cmd_prefix, *argv] if cmd_prefix else [exe, *argv],
               env=dict(env or os.environ, EMBER_TRUTH_FILE=truth_file))
    samples, stats, outs = [], collections.Counter(), []
    try:
        time.sleep(1.0)  # the interpreter starts
        pid = workload_pid(wl.pid, exe, script)
        if check_pid:
            check_pid(pid)
        for attempt in range(attempts):
            out = record(wd, f"{label}-{mode}-{attempt}", [pid], seconds, record_extra)
            outs.append(out)
            samples += [s for s in decode_otlp(out["otlp"]) if s[0] == pid]
            stats.update(stats_of(out["pb.gz"]))
            got = sum(n for *_, n, f in samples if counted(f))
            if got >= min_samples:
                break
            log(f"  {label} {mode}: {got} samples so far (busy machine?): recording again")
        os.kill(pid, signal.SIGTERM)
        wl.wait(timeout=exit_timeout)
    finally:
        kill(wl)
    return (pid, samples, stats, *read_truth(truth_file, leaves), outs)


def record_started_after(wd, argv, seconds, leaves):
    """Records the whole host for seconds and, 3 s in, starts argv (a known-split workload
    that ends by itself); returns its samples, its truth and the truth's other numbers."""
    truth_file = os.path.join(wd, "after.truth")
    outs = {ext: os.path.join(wd, f"after.{ext}") for ext in ("otlp", "pb.gz")}
    rec = start([EMBER, "record", "-d", str(seconds), "-F", str(HZ), "-o", outs["otlp"],
                 "-o", outs["pb.gz"]])
    wl = None
    try:
        time.sleep(3)
        wl = start(argv, env=dict(os.environ, EMBER_TRUTH_FILE=truth_file))
        wl.wait(timeout=60)
        out, err = rec.communicate(timeout=120)
    finally:
        kill(rec)
        if wl is not None:
            kill(wl)
    assert rec.returncode == 0, err
    samples = [s for s in decode_otlp(outs["otlp"]) if s[0] == wl.pid]
    return (samples, *read_truth(truth_file, leaves))


CTR = "/opt/ember-ctr"


@contextlib.contextmanager
def own_namespaces(files, exe=None):
    """Yields (cmd_prefix, exe): a command prefix that runs its arguments in new mount and
    PID namespaces, where a tmpfs over CTR holds copies of files (the interpreter first,
    then the libraries it loads from there; a directory is copied whole), and the
    interpreter's path there (exe, a path within the copies, when it is not the first
    file). The files live only in that namespace: the broker reaches them through the
    process, not by path (checked when the body ends: CTR is empty outside)."""
    exe = os.path.join(CTR, exe or os.path.basename(files[0]))
    dirs = [f for f in files if os.path.isdir(f)]
    plain = [f for f in files if not os.path.isdir(f)]
    copies = " && ".join([*(f"cp -a {d} {CTR}/" for d in dirs),
                          *([f"cp {' '.join(plain)} {CTR}/"] if plain else [])])
    script = f"mount -t tmpfs none {CTR} && {copies} && exec {exe} \"$@\""
    os.makedirs(CTR, exist_ok=True)
    # CTR made a private mount of its own, so the tmpfs mounted over it in the new
    # namespace stays there (unshare --propagation private changes / itself, which fails
    # where / is no mount point: a chroot such as a new user's test tree).
    subprocess.run(["mount", "--bind", CTR, CTR], check=True)
    subprocess.run(["mount", "--make-private", CTR], check=True)
    try:
        yield (("unshare", "--mount", "--pid", "--fork", "--propagation", "unchanged",
                "sh", "-c", script, "sh"), exe)
        assert not os.listdir(CTR), "the interpreter was not in its own namespace"
    finally:
        subprocess.run(["umount", CTR], check=False)
        os.rmdir(CTR)


def mapped_from_namespace(lib, want):
    """A check_pid for run_workload: the process maps lib (a file name) only from want, its
    copy in own_namespaces' tmpfs (a reader in a chroot sees the path from the real root,
    hence the suffix)."""
    def check(pid):
        with open(f"/proc/{pid}/maps") as f:
            libs = {line.split()[-1] for line in f if line.rstrip().endswith("/" + lib)}
        assert libs and all(path.endswith(want) for path in libs), libs
    return check


def record_beside_a_stall(wd, stalled_argv, other_argv, seconds):
    """A process whose memory-map lock waits on a file system that stopped answering,
    recorded for seconds beside another. stalled_argv, with the path of a file on stallfs
    appended, prints "ready", spins, and at "go" on its stdin has one thread read a page of
    that file through /proc/self/mem and another map memory (it waits for the lock);
    other_argv (a known-split workload) is not stalled. Returns (the stalled pid, the
    other's, the recording's files, the seconds it took); stallfs and both processes are
    gone by then."""
    stallfs = os.path.join(BUILD, "tests", "integration", "stallfs")
    if not os.path.exists(stallfs) or not os.path.exists("/dev/fuse"):
        skip_or_fail(f"{stallfs} or /dev/fuse missing: install libfuse3-dev and fuse3")
    d = os.path.join(wd, "stall")
    mnt, ctl, data = os.path.join(d, "mnt"), os.path.join(d, "ctl"), os.path.join(d, "data")
    os.makedirs(mnt)
    open(ctl, "w").close()
    with open(data, "wb") as f:
        f.write(b"\0" * (1 << 20))
    libc = ctypes.CDLL(None, use_errno=True)
    fs = subprocess.Popen([stallfs, mnt, ctl, "60", f"data.bin={data}"],
                          preexec_fn=lambda: libc.prctl(1, signal.SIGKILL, 0, 0, 0))
    stalled = other = dev = None
    try:
        deadline = time.time() + 10
        while not os.path.ismount(mnt):
            assert fs.poll() is None and time.time() < deadline, "stallfs did not mount"
            time.sleep(0.05)
        dev = os.stat(mnt).st_dev
        stalled = subprocess.Popen([*stalled_argv, os.path.join(mnt, "data.bin")],
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert stalled.stdout.readline().strip() == "ready", \
            f"{os.path.basename(stalled_argv[-1])} did not start"
        other = start(other_argv,
                      env=dict(os.environ, EMBER_TRUTH_FILE=os.path.join(d, "other.truth")))
        with open(ctl + ".new", "w") as f:
            f.write("read\n")
        os.replace(ctl + ".new", ctl)
        stalled.stdin.write("go\n")
        stalled.stdin.flush()
        time.sleep(1.0)
        t0 = time.time()
        outs = record(wd, "stalled", [stalled.pid, other.pid], seconds)
        return stalled.pid, other.pid, outs, time.time() - t0
    finally:
        # Every waiting request fails at once, then the mount goes (stat on it could wait).
        if dev is not None:
            conn = f"/sys/fs/fuse/connections/{os.minor(dev)}/abort"
            if os.path.exists(conn):
                with open(conn, "w") as f:
                    f.write("1")
            if libc.umount2(mnt.encode(), 1) != 0:  # MNT_FORCE aborts a FUSE connection too
                libc.umount2(mnt.encode(), 2)  # MNT_DETACH
        for p in (fs, stalled, other):
            if p is not None:
                kill(p)


def check_a_stall(wd, label, stalled_argv, other_argv, kind, leaf_of, complete, spinning):
    """record_beside_a_stall, then what must hold: the recording ended on time; none of the
    stalled process's frames of kind named among spinning (its memory cannot be read: its
    native frames stand, its interpreter's frames unnamed); the other process's leaf
    samples (leaf_of(frames) not None) complete (complete(frames)); and the stall counted.
    The stalled process must have spun: at least half as many samples as the other (both
    spin one thread), or the names it keeps back were never put to the test. Returns the
    stalled process's samples."""
    stalled, other, outs, took = record_beside_a_stall(wd, stalled_argv, other_argv, 6)
    samples = decode_otlp(outs["otlp"])
    stats = stats_of(outs["pb.gz"])
    mine = [s for s in samples if s[0] == stalled]
    theirs = [s for s in samples if s[0] == other]
    named = collections.Counter(f.name for *_, fr in mine for f in fr if f.kind == kind)
    leaves = sum(n for *_, n, fr in theirs if leaf_of(fr))
    whole = sum(n for *_, n, fr in theirs if leaf_of(fr) and complete(fr))
    stall = {k: v for k, v in stats.items() if "stall" in k and v}
    log(f"  {label}: ember took {took:.1f}s; stalled process: "
        f"{sum(n for *_, n, _ in mine)} samples, {kind} frames {dict(named.most_common(4))}; "
        f"the other: {whole} of {leaves} leaf samples complete; {stall}")
    assert took < 6 + 30, f"ember took {took:.1f}s"
    spun, ran = sum(n for *_, n, _ in mine), sum(n for *_, n, _ in theirs)
    assert spun >= 0.5 * ran, f"the stalled process did not spin: {spun} samples, the other {ran}"
    assert leaves >= 100 and whole >= 0.99 * leaves, (whole, leaves)
    assert not set(spinning) & set(named), named
    assert stats.get("symbolizer.stalled_reads", 0) + \
        stats.get("broker.stalled_refused", 0) > 0, stall
    return mine


def check_hostile_fakes(wd, fake, runtime, kind, well_formed, seconds=2):
    """A fake interpreter (tests/workloads/fake_RUNTIME.c, built with -rdynamic: ember takes
    it for the runtime) in each of its modes, recorded for seconds: the recording ends on
    time, the process is taken for the runtime, and its interpreted frames are markers,
    [unknown] or the well-formed names the fake made; a cycle is cut by the truncation
    marker, an unmapped frame shows the unreadable one, and native unwinding goes on below
    the interpreter loop (native main in at least 95% of the samples of those two modes). Returns
    {mode: (samples, Counter of the interpreted frames' names, statistics)}."""
    prefix = f"[{runtime} "
    truncated, unreadable = f"[{runtime} frames truncated]", f"[{runtime} frame not readable]"
    seen = {}
    for mode in ("cycle", "garbage", "unmapped", "forged", "churn"):
        wl = start([fake, mode, "30"])
        try:
            time.sleep(0.5)
            t0 = time.time()
            outs = record(wd, f"fake-{runtime}-{mode}", [wl.pid], seconds)
            took = time.time() - t0
        finally:
            kill(wl)
        samples = [s for s in decode_otlp(outs["otlp"]) if s[0] == wl.pid]
        stats = stats_of(outs["pb.gz"])
        names = collections.Counter()
        for *_, n, frames in samples:
            for f in frames:
                if f.kind == kind or f.name.startswith(prefix):
                    names[f.name] += n
        total = sum(n for *_, n, _ in samples)
        with_main = sum(n for *_, n, frames in samples
                        if any(f.name == "main" and f.kind != kind for f in frames))
        log(f"  {mode}: {total} samples in {took:.1f}s, main in {with_main}; {runtime} frames "
            f"{dict(names.most_common(5))}; frames={stats.get(f'{runtime}.frames')} "
            f"unreadable={stats.get(f'{runtime}.frames_unreadable')} "
            f"stale={stats.get(f'{runtime}.frames_stale')} "
            f"truncated={stats.get(f'{runtime}.markers_truncated')}")
        assert took < seconds + 20, f"{mode}: ember took {took:.1f}s"
        assert stats.get(f"{runtime}.processes", 0) == 1, f"the fake was not taken for {runtime}"
        assert total > 0, f"{mode}: no samples"
        assert set(names) <= {"[unknown]", truncated, unreadable, *well_formed}, names
        if mode == "cycle":
            assert names[truncated] > 0 and stats.get(f"{runtime}.markers_truncated", 0) > 0
        if mode == "unmapped":
            assert names[unreadable] > 0 and stats.get(f"{runtime}.markers_unreadable", 0) > 0
        if mode in ("cycle", "unmapped"):
            assert with_main >= 0.95 * total, f"{mode}: main in {with_main} of {total}"
        seen[mode] = (samples, names, stats)
    return seen
