#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Perl frames end to end, with the real eBPF walker and Debian's perl 5.36
(threaded: each thread's interpreter behind PL_thr_key). A known-split
workload (tests/workloads/plsplit.pl) measures its own CPU time per leaf
sub: shares within 3 points of that truth over at least 2,000 leaf
samples; 99% of them complete from the leaf through the main program and
on through perl_run to _start; the leaf's line the hot loop's in 95% of
them, Shop::Cart::handle's the line that calls the leaf; Perl frames typed
"perl" in OTLP and named as caller() names them (Shop::Cart::leaf_a, the
reduce block Shop::__ANON__, with List::Util's C code (XS_List__Util_reduce,
or Util.so+0x... as Debian strips it) between it and Shop::run_split). Then recursion 300 deep (cut with a
marker, counted) and Devel::NYTProf in the same process beside ember (the
leaves' names and hottest lines agree, shares within 5 points).

    sudo python3 tests/integration/test_perl.py     (or ctest -R integration_perl)

What the reader must give: the names above, OTLP profile.frame.type "perl"
on every Perl frame, the .pl file and line, the marker "[perl frames
truncated]" and the statistics perl.processes, perl.frames,
perl.frames_stale and perl.markers_truncated (pprof comments)."""
import collections
import json
import os
import re
import subprocess
import sys

from emberlib import (EMBER, SRC, build_workload, log, read_folded, require_root, run_tests,
                      shipped_build_only, skip_or_fail, workdir)
from interplib import (CTR, assert_shares, check_a_stall, check_hostile_fakes, check_marker_cut,
                       check_peer, follows, in_leaves, leaf_shares, marked_lines, own_namespaces,
                       record_started_after, run_workload as run_split_workload)

WORKLOAD = os.path.join(SRC, "tests", "workloads", "plsplit.pl")
PLSTALL = os.path.join(SRC, "tests", "workloads", "plstall.pl")
PERL = "/usr/bin/perl"
LIBPERL = "/usr/lib/x86_64-linux-gnu/libperl.so.5.36"
LEAVES = ("leaf_a", "leaf_b", "leaf_c")
KIND = "perl"  # OTLP's profile.frame.type for Perl frames
NAMES = {leaf: f"Shop::Cart::{leaf}" for leaf in LEAVES}
LEAF_OF = {name: leaf for leaf, name in NAMES.items()}
HANDLE = "Shop::Cart::handle"
BLOCK = "Shop::__ANON__"  # reduce's block: an anonymous sub
# C between two Perl frames: List::Util's reduce (a static function of a stripped Util.so).
REDUCE = re.compile(r"^(XS_List__Util_reduce|Util\.so\+0x[0-9a-f]+)$")
TRUNCATED = "[perl frames truncated]"
MAIN_ROOT = re.compile(r"^_start$")
SPLIT_PATH = ["main", "Shop::main", "Shop::run_split", BLOCK, HANDLE]
RECURSION_PATH = ["main", "Shop::main", "Shop::run_split", "Shop::recurse"]


MARKS = marked_lines(WORKLOAD)


# Under the debugger's flags ($^P 0x200, as NYTProf sets them) Perl names an anonymous sub by
# where it is defined: Shop::__ANON__[plsplit.pl:105].
ANON_WHERE = re.compile(r"^(\S+::__ANON__)\[.+:\d+\]$")


def plain(name):
    m = ANON_WHERE.match(name)
    return m.group(1) if m else name


def perl_names(frames):
    """The Perl frames' names, root first (anonymous subs' without where they are from)."""
    return [plain(f.name) for f in reversed(frames) if f.kind == KIND]


def innermost_leaf(frames):
    return next((f for f in frames if f.kind == KIND and f.name in LEAF_OF), None)


def c_between(names):
    """List::Util's C code between Shop::run_split and the reduce block (names root first)."""
    if "Shop::run_split" not in names or BLOCK not in names:
        return False
    lo, hi = names.index("Shop::run_split"), names.index(BLOCK)
    return any(REDUCE.match(n) for n in names[lo + 1:hi])


def check_split(label, samples, truth, path, min_samples=2000, tolerance=3.0, between=True):
    """Shares vs truth; stacks complete along path and on to _start; the leaf's line the hot
    loop's; handle's the call's; reduce's C code between Perl frames; Perl frames typed."""
    counts, complete, hot, callers, betw, typed = collections.Counter(), 0, 0, 0, 0, 0
    bad, lines = [], collections.defaultdict(collections.Counter)
    for n, frames, leaf in in_leaves(samples, innermost_leaf):
        key = LEAF_OF[leaf.name]
        counts[key] += n
        lines[key][leaf.line] += n
        names = perl_names(frames)
        user = [f for f in frames if f.kind != "kernel"]
        if names and names[0] == path[0] and follows(names, [*path, leaf.name]) and \
                user and MAIN_ROOT.search(user[-1].name):
            complete += n
        elif len(bad) < 4:
            bad.append(";".join(f.name + ("" if f.kind in (KIND, "kernel") else "(n)")
                                for f in reversed(frames)))
        if leaf.line == MARKS["hot-" + key[-1]] and leaf.file == WORKLOAD:
            hot += n
        handle = next((f for f in frames if f.kind == KIND and f.name == HANDLE), None)
        if handle and handle.line == MARKS["call-" + key[-1]]:
            callers += n
        if c_between([plain(f.name) for f in reversed(frames)]):
            betw += n
        if all(f.kind == KIND for f in frames if f.file.endswith(".pl")):
            typed += n
    result = leaf_shares(label, counts, truth, min_samples, bad, " ((n): native)")
    total = sum(counts.values())
    shares = {leaf: got for leaf, (got, _) in result.items()}
    for leaf in LEAVES:
        log(f"    {NAMES[leaf]}: {shares[leaf]:.1f}% (truth {truth[leaf]:.1f}%), lines "
            f"{dict(lines[leaf].most_common(3))} (hot loop: {MARKS['hot-' + leaf[-1]]})")
    pct = {k: 100.0 * v / total for k, v in (("complete", complete), ("hot", hot),
                                             ("callers", callers), ("between", betw))}
    log(f"    complete to {path[0]} and _start: {pct['complete']:.2f}%, the leaf's line exact: "
        f"{pct['hot']:.2f}%, callers' lines: {pct['callers']:.2f}%, reduce's C code between Perl "
        f"frames: {pct['between']:.2f}%")
    assert_shares(label, result, tolerance)
    assert pct["complete"] >= 99.0, f"{label}: only {pct['complete']:.2f}% complete"
    assert pct["hot"] >= 95.0, f"{label}: the leaf's line exact in only {pct['hot']:.2f}%"
    assert pct["callers"] >= 99.0, f"{label}: callers' lines right in only {pct['callers']:.2f}%"
    if between:
        assert pct["between"] >= 99.0, f"{label}: reduce's C code between in {pct['between']:.2f}%"
    assert typed == total, f"{label}: a .pl frame not typed {KIND} in {total - typed} samples"
    return shares, lines


def run_workload(wd, label, mode, seconds, prefix=(), env=None, min_samples=2000, attempts=4):
    """Runs perl PREFIX plsplit MODE under ember; returns (pid, samples, stats, truth, outs)
    (interplib's run_workload says how; NYTProf writes its file at the end too)."""
    if not os.path.exists(PERL):
        skip_or_fail(f"{PERL} is missing: run scripts/install-deps.sh")
    pid, samples, stats, truth, _, outs = run_split_workload(
        wd, WORKLOAD, LEAVES, innermost_leaf, label, PERL, mode, seconds,
        cmd_prefix=(PERL, *prefix), env=env, min_samples=min_samples, attempts=attempts,
        exit_timeout=120)
    return pid, samples, stats, next(iter(truth.values())), outs


WD = None


def test_known_split():
    _, samples, stats, truth, outs = run_workload(WD, "perl5.36", "split", 8)
    check_split("perl5.36 split", samples, truth, SPLIT_PATH)
    log("  stats: " + ", ".join(f"{k}={v}" for k, v in sorted(stats.items())
                                 if k.startswith("perl.")))
    assert stats.get("perl.processes", 0) >= 1, "no perl.processes in the statistics"
    assert stats.get("perl.frames_stale", 0) <= stats.get("perl.frames", 0) // 100
    rows = [(frames, n) for out in outs for frames, n in read_folded(out["folded"])]
    want = ["Shop::run_split", BLOCK, HANDLE, NAMES["leaf_a"]]
    folded = sum(n for frames, n in rows if follows(frames, want) and c_between(frames))
    log(f"  folded: {folded} samples along {' > '.join(want)}")
    assert folded > 0, "the folded output lacks the Perl frames"


def test_recursion_marker():
    _, samples, stats, truth, _ = run_workload(WD, "perl5.36", "recursion", 8, min_samples=1500)
    check_marker_cut("perl", samples, stats, {l: truth[l] for l in LEAVES}, innermost_leaf,
                     perl_names, lambda name: LEAF_OF[name], TRUNCATED)


def test_process_started_after_ember():
    samples, truth, _ = record_started_after(WD, [PERL, WORKLOAD, "split", "8"], 14, LEAVES)
    check_split("started after", samples, next(iter(truth.values())), SPLIT_PATH,
                min_samples=1000)


def test_process_in_its_own_mount_and_pid_namespace():
    """perl and libperl live only in the process's mount namespace (a tmpfs over
    /opt/ember-ctr): the broker reaches them through the process, not by path."""
    if not os.path.exists(PERL) or not os.path.exists(LIBPERL):
        skip_or_fail(f"{PERL} or {LIBPERL} is missing: run scripts/install-deps.sh")
    with own_namespaces([PERL, LIBPERL]) as (cmd_prefix, ctr_exe):
        _, samples, _, truth, _, _ = run_split_workload(
            WD, WORKLOAD, LEAVES, innermost_leaf, "ctr", ctr_exe, "split", 8,
            cmd_prefix=cmd_prefix, env=dict(os.environ, LD_LIBRARY_PATH=CTR))
    check_split("container", samples, next(iter(truth.values())), SPLIT_PATH)


def test_stalled_perl_process_costs_only_its_frames():
    """A Perl process whose memory-map lock waits on a file system that stopped answering
    (tests/workloads/plstall.pl) cannot have its memory read: the recording still ends on
    time, another Perl process keeps every name, and the stall is counted; the stalled
    process keeps its native frames, its Perl frames unnamed."""
    check_a_stall(WD, "perl", [PERL, PLSTALL], [PERL, WORKLOAD, "split", "120"], kind=KIND,
                  leaf_of=innermost_leaf,
                  complete=lambda fr: follows(perl_names(fr),
                                              [*SPLIT_PATH, innermost_leaf(fr).name]),
                  spinning=["Stall::spin", "Stall::leaf"])


def test_hostile_fake_interpreters():
    """A program that looks like a threaded Perl 5.36 to ember (tests/workloads/fake_perl.c)
    whose context stack leads to garbage, cycles, unmapped memory and forged subs: markers
    or [unknown], never a wrong name, no crash, no stall ("main" and "(eval)" are names the
    reader gives, not memory). Of the forged subs only the well-formed one is named, with
    its file and line; the entry of no known type ends the walk with a marker."""
    fake = build_workload("fake_perl", WD, extra=("-rdynamic",))
    seen = check_hostile_fakes(WD, fake, "perl", KIND,
                               {"Cycle::cyc", "Forged::forged_name", "main", "(eval)"})
    samples, names, _ = seen["forged"]
    assert names["Forged::forged_name"] > 0 and names["[perl frame not readable]"] > 0, names
    for mode, name in (("forged", "Forged::forged_name"), ("cycle", "Cycle::cyc")):
        samples = seen[mode][0]
        where = {(f.file, f.line) for *_, fr in samples for f in fr if f.name == name}
        assert where == {("/fake.pl", 7)}, f"{name}: {where}"


# Reads an nytprof.out: per leaf sub, its exclusive time and its lines' times, as JSON.
NYTPROF_READ = r'''
use strict; use warnings; use JSON::PP; use Devel::NYTProf::Data;
my ($path, $src) = @ARGV;
my $p = Devel::NYTProf::Data->new({filename => $path, quiet => 1});
my $fi = $p->fileinfo_of($src) or die "no $src in $path";
my $lt = $fi->line_time_data || [];
my %out;
for my $si (values %{$p->subname_subinfo_map}) {
    my ($pkg, $name) = $si->subname =~ /^(.*)::(leaf_\w)$/ or next;
    my %lines;
    for my $l ($si->first_line .. $si->last_line) {
        $lines{$l} = $lt->[$l][0] if $lt->[$l] && $lt->[$l][0];
    }
    $out{$name} = {name => $si->subname, excl => $si->excl_time, lines => \%lines};
}
print encode_json(\%out);
'''


@shipped_build_only("agreement with NYTProf")
def test_nytprof_beside():
    """Devel::NYTProf (statements and subs, process CPU time) in the same process while ember
    records it. NYTProf's own cost per statement lands mostly in the leaves' hot loops, so the
    truth (the workload's own clock) still holds for ember; NYTProf's shares are compared with
    ember's."""
    out = os.path.join(WD, "nytprof.out")
    env = dict(os.environ, NYTPROF=f"file={out}:clock=2:addpid=0")
    _, samples, _, truth, _ = run_workload(WD, "perl5.36-nytprof", "split", 8,
                                           prefix=("-d:NYTProf",), env=env, min_samples=1500)
    shares, lines = check_split("perl5.36 with NYTProf", samples, truth, SPLIT_PATH,
                                min_samples=1500)
    peer = json.loads(subprocess.run([PERL, "-e", NYTPROF_READ, out, WORKLOAD], check=True,
                                     capture_output=True, text=True, timeout=300).stdout)
    check_peer("NYTProf", peer, "excl", NAMES, shares, lines, {l: truth[l] for l in LEAVES})


def main():
    global WD
    require_root()
    if not os.path.exists(EMBER):
        skip_or_fail(f"{EMBER} is missing: build first")
    WD = workdir()
    run_tests([test_known_split, test_recursion_marker, test_process_started_after_ember,
               test_process_in_its_own_mount_and_pid_namespace,
               test_stalled_perl_process_costs_only_its_frames, test_hostile_fake_interpreters,
               test_nytprof_beside])


if __name__ == "__main__":
    sys.exit(main())
