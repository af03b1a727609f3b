#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Flame graphs people open: `ember report`, `ember diff` and `ember top` on
files (no root needed), and the generated pages loaded in headless Chromium:
no console errors, no request but the page itself, the function names drawn,
a click that zooms, search, tooltip, icicle view, the diff table. Screenshots
are kept in build/artifacts/. As root, also `ember record -o profile.html` of
a known workload."""
import collections
import os
import re
import shutil
import subprocess
import time

from chromium import Browser as _Browser, find_chromium
from emberlib import (BUILD, EMBER, GO, SRC, build_workload, ember, kill, log, read_folded, run_tests,
                      skip_or_fail, staged_for_others, start, workdir)

WD = workdir()
ARTIFACTS = os.path.join(BUILD, "artifacts")
os.makedirs(ARTIFACTS, exist_ok=True)

BASE = """\
app;_start;main;parse_config;read_file;do_syscall_64_[k];ksys_read_[k] 30
app;_start;main;handle_request;decode_json 200
app;_start;main;handle_request;render_page 150
app;_start;main;handle_request;render_page;escape_html 50
app;_start;main;gc_collect 70
worker;_start;main;run_queue;compress_block 300
worker;_start;main;run_queue;checksum 100
evil</script><b>x;main;f\\"q 5
"""
# In NEW, decode_json grows and render_page shrinks; gc_collect disappears.
NEW = """\
app;_start;main;parse_config;read_file;do_syscall_64_[k];ksys_read_[k] 30
app;_start;main;handle_request;decode_json 600
app;_start;main;handle_request;render_page 50
app;_start;main;handle_request;render_page;escape_html 20
worker;_start;main;run_queue;compress_block 300
worker;_start;main;run_queue;checksum 100
"""


def write(name, text):
    p = os.path.join(WD, name)
    with open(p, "w") as f:
        f.write(text)
    return p


def folded_dict(path):
    return {";".join(f): n for f, n in read_folded(path)}


def test_report_converts_between_formats():
    src = write("base.folded", BASE)
    html, pb, fo = (os.path.join(WD, n) for n in ("base.html", "base.pb.gz", "base2.folded"))
    ember("report", src, "-o", html, "-o", pb, "-o", fo)
    want = {k.replace("_[k]", ""): v for k, v in folded_dict(src).items()}
    assert folded_dict(fo) == want, folded_dict(fo)
    back = os.path.join(WD, "back.folded")
    ember("report", pb, "-o", back)
    assert folded_dict(back) == want, "pprof round trip changed the stacks"
    with open(html, encoding="utf-8") as f:
        page = f.read()
    assert page.count("</script>") == 2, "a frame name ended a script element"
    assert "http://" not in page and "https://" not in page and " src=" not in page
    log(f"  {html}: {len(page)} bytes")


def descendants(pid):
    """PIDs of the living descendants of pid."""
    children = {}
    for d in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{d}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(d))
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def proc_status(pid):
    with open(f"/proc/{pid}/status") as f:
        return dict(line.rstrip("\n").split(":\t", 1) for line in f if ":\t" in line)


def test_report_runs_without_root_and_drops_root():
    """As root, `ember report` reads the profile in a process of nobody's, with no capability,
    in its sandbox (seen from outside while it waits for its input on a pipe), and writes the
    output through the descriptor opened before; as nobody it runs too."""
    src = write("u.folded", BASE)
    if os.geteuid() != 0:
        skip_or_fail("not root: dropping root cannot be checked (run the tests with sudo)")
    out = os.path.join(WD, "u.html")
    proc = subprocess.Popen([EMBER, "report", "-", "-o", out], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        reader, deadline = None, time.time() + 30
        while not reader and time.time() < deadline and proc.poll() is None:
            for pid in descendants(proc.pid):
                try:
                    st = proc_status(pid)
                except OSError:
                    continue
                if st.get("Seccomp") == "2":
                    reader = (pid, st)
            time.sleep(0.02)
        assert reader, f"no confined reader under ember report ({proc.poll()})"
        pid, st = reader
        log(f"  reader {pid}: Uid {st['Uid']} Gid {st['Gid']} CapEff {st['CapEff']} "
            f"CapPrm {st['CapPrm']} NoNewPrivs {st['NoNewPrivs']} Seccomp {st['Seccomp']}")
        assert set(st["Uid"].split()) == {"65534"} and set(st["Gid"].split()) == {"65534"}, \
            (st["Uid"], st["Gid"])
        assert "0" not in st["Groups"].split(), st["Groups"]
        assert int(st["CapEff"], 16) == 0 and int(st["CapPrm"], 16) == 0, (st["CapEff"], st["CapPrm"])
        assert st["NoNewPrivs"] == "1", st["NoNewPrivs"]
        _, err = proc.communicate(BASE.encode(), timeout=60)
    finally:
        kill(proc)
    assert proc.returncode == 0, err
    with open(out, encoding="utf-8") as f:
        assert "decode_json" in f.read()
    # nobody runs copies it can reach (a checkout in a 0700 home is out of its reach).
    ember_copy, _ = staged_for_others(os.path.join(WD, "bin"), "ember", "ember-symbolizer")
    mine = os.path.join("/tmp", f"ember-u-{os.getpid()}.html")
    r = subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
                        ember_copy, "report", src, "-o", mine], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert os.stat(mine).st_uid == 65534 and os.path.getsize(mine) > 1000
    os.unlink(mine)


def test_report_errors_are_clear_and_leave_no_file():
    bad_out = os.path.join(WD, "never.html")
    r = ember("report", os.path.join(WD, "missing.folded"), "-o", bad_out, check=False)
    assert r.returncode == 1 and "cannot open" in r.stderr, r.stderr
    assert not os.path.exists(bad_out)
    r = ember("report", write("x.folded", BASE), "-o", os.path.join(WD, "x.txt"), check=False)
    assert r.returncode == 2 and "end it in .html, .pb.gz or .folded" in r.stderr, r.stderr
    junk = os.path.join(WD, "junk.pb.gz")
    with open(junk, "wb") as f:
        f.write(b"\x1f\x8b\x08\x00garbage-not-deflate")
    r = ember("report", junk, "-o", bad_out, check=False)
    assert r.returncode == 1 and "not a profile" in r.stderr, r.stderr
    assert not os.path.exists(bad_out), "a failed report left its output behind"
    r = ember("report", junk, "-o", junk.replace(".pb.gz", ".html"), "-o", junk, check=False)
    assert r.returncode == 2 and "also an input" in r.stderr, r.stderr
    r = ember("diff", junk, "-o", os.path.join(WD, "d.html"), check=False)
    assert r.returncode == 2 and "BASE and NEW" in r.stderr, r.stderr
    r = ember("diff", junk, junk, "-o", os.path.join(WD, "d.pb.gz"), check=False)
    assert r.returncode == 2 and "HTML" in r.stderr, r.stderr


def test_top_matches_go_tool_pprof():
    src = write("top.folded", BASE)
    pb = os.path.join(WD, "top.pb.gz")
    ember("report", src, "-o", pb)
    r = ember("top", pb, "-n", "4")
    log(r.stdout)
    lines = r.stdout.splitlines()
    assert lines[0].startswith("905 samples"), lines[0]
    rows = [l.split() for l in lines[3:]]
    assert [row[-1] for row in rows] == ["compress_block", "decode_json", "render_page", "checksum"], rows
    assert rows[0][0] == "300" and rows[0][1] == "33.1%", rows[0]
    r = ember("top", src, "--sort", "total", "-n", "2")
    assert [l.split()[-1] for l in r.stdout.splitlines()[3:]] == ["main", "_start"], r.stdout
    env = dict(os.environ, HOME=WD, GOCACHE=os.path.join(WD, "gocache"))
    g = subprocess.run([GO, "tool", "pprof", "-top", "-nodecount=4", pb], capture_output=True,
                       text=True, env=env, timeout=120)
    assert g.returncode == 0, g.stderr
    flat = {l.split()[-1]: l.split()[0] for l in g.stdout.splitlines() if l.strip().endswith(
        ("compress_block", "decode_json", "render_page", "checksum"))}
    log(f"  go tool pprof flat: {flat}")
    for row in rows:
        assert flat.get(row[-1]) == row[0], f"{row[-1]}: ember {row[0]}, pprof {flat.get(row[-1])}"


def test_reads_a_profile_go_wrote():
    """A CPU profile Go's own runtime/pprof wrote (tests/workloads/gopprof.go), read by ember:
    every function's samples, on its own and with its callees, as go tool pprof counts them."""
    src = os.path.join(SRC, "tests", "workloads", "gopprof.go")
    exe, prof, folded = (os.path.join(WD, n) for n in ("gopprof", "go.pprof", "go.folded"))
    env = dict(os.environ, HOME=WD, GOCACHE=os.path.join(WD, "gocache"), CGO_ENABLED="0")
    subprocess.run([GO, "build", "-o", exe, src], check=True, env=env, timeout=600)
    subprocess.run([exe, "1.5", prof], check=True, capture_output=True, timeout=60)
    ember("report", prof, "-o", folded)
    rows = read_folded(folded)
    flat, cum = collections.Counter(), collections.Counter()
    for frames, n in rows:
        flat[frames[-1]] += n
        for f in set(frames[1:]):
            cum[f] += n
    g = subprocess.run([GO, "tool", "pprof", "-top", "-nodecount=10000", "-sample_index=samples", prof],
                       capture_output=True, text=True, env=env, timeout=120)
    assert g.returncode == 0, g.stderr
    go_flat, go_cum = {}, {}
    for line in g.stdout.splitlines():
        # An inlined function's line ends in "(inline)": a seventh field.
        f = line.split()
        if f and f[-1] == "(inline)":
            f.pop()
        if len(f) == 6 and f[0].isdigit() and f[3].isdigit():
            go_flat[f[5]], go_cum[f[5]] = int(f[0]), int(f[3])
    total = int(re.search(r"of (\d+) total", g.stdout).group(1))
    log(f"  {total} samples; go tool pprof: {go_flat}; ember: {dict(flat)}")
    assert total > 50 and sum(n for _, n in rows) == total, (total, rows[:5])
    assert {k: v for k, v in flat.items() if v} == {k: v for k, v in go_flat.items() if v}, (flat, go_flat)
    assert dict(cum) == go_cum, (cum, go_cum)


def Browser():
    """A headless Chromium; the test that needs one skips (fails under CI) without it."""
    path, why = find_chromium()
    if not path:
        skip_or_fail(why)
    return _Browser()


def open_checked(b, page):
    t = b.open(page)
    log(f"  {os.path.basename(page)} ready in {t:.2f} s")
    return t


def assert_clean(b, page):
    errors = b.errors()
    assert not errors, f"console errors on {page}: {errors}"
    others = [u for u in b.requests() if not u.startswith("file://" + WD)]
    assert not others, f"the page made requests: {others}"


def test_flame_graph_in_chromium():
    src = write("page.folded", BASE)
    page = os.path.join(WD, "page.html")
    ember("report", src, "-o", page)
    with Browser() as b:
        open_checked(b, page)
        labels = b.evaluate("emberFlame.visibleLabels()")
        for name in ("all", "app", "worker", "main", "handle_request", "decode_json",
                     "compress_block", "run_queue"):
            assert name in labels, f"{name} not drawn: {labels}"
        assert b.evaluate("document.getElementById('subtitle').textContent").startswith("905 samples")
        # Narrow frames are drawn with a shortened label; the kernel legend is shown.
        assert "ksys\u2026" in labels and b.evaluate("emberFlame.find('ksys_read')") > 0, labels
        assert "kernel" in b.evaluate("document.getElementById('legend').textContent")
        shot = b.screenshot(os.path.join(ARTIFACTS, "flamegraph.png"))
        print(f"screenshot: {shot}", flush=True)

        # A click on handle_request zooms into it: it then spans the whole width.
        i = b.evaluate("emberFlame.find('handle_request')")
        r = b.evaluate(f"emberFlame.rectOf({i})")
        width = b.evaluate("document.getElementById('flame').getBoundingClientRect().width")
        assert r["w"] < width * 0.6, r
        b.click(r["x"] + r["w"] / 2, r["y"] + r["h"] / 2)
        st = b.evaluate("emberFlame.state()")
        assert st["zoomName"] == "handle_request", st
        r2 = b.evaluate(f"emberFlame.rectOf({i})")
        assert abs(r2["w"] - width) < 2, (r2, width)
        assert b.evaluate("emberFlame.rectOf(emberFlame.find('compress_block'))") is None
        assert "handle_request" in b.evaluate("document.getElementById('zoominfo').textContent")
        shot = b.screenshot(os.path.join(ARTIFACTS, "flamegraph-zoomed.png"))
        print(f"screenshot: {shot}", flush=True)
        # Clicking a faded ancestor zooms back out.
        a = b.evaluate("emberFlame.rectOf(emberFlame.find('all'))")
        b.click(a["x"] + 5, a["y"] + a["h"] / 2)
        assert b.evaluate("emberFlame.state()")["zoom"] == 0

        # Search highlights and reports the share: render_page frames hold 200 of 905.
        share = b.evaluate("emberFlame.search('render_page'), emberFlame.state().matchedShare")
        assert abs(share - 200 / 905) < 1e-9, share
        assert "22.10%" in b.evaluate("document.getElementById('match').textContent")
        share = b.evaluate("emberFlame.search('^(render_page|escape_html)$'), emberFlame.state().matchedShare")
        assert abs(share - 200 / 905) < 1e-9, "nested matches were counted twice"

        # The tooltip names the frame with its samples and shares.
        j = b.evaluate("emberFlame.find('decode_json')")
        r = b.evaluate(f"emberFlame.rectOf({j})")
        b.hover(r["x"] + r["w"] / 2, r["y"] + r["h"] / 2)
        tip = b.evaluate("document.getElementById('tooltip').hidden ? '' : document.getElementById('tooltip').textContent")
        assert "decode_json" in tip and "200 samples" in tip and "22.10%" in tip, tip

        # Icicle view: the root goes to the top.
        flame_y = b.evaluate("emberFlame.rectOf(0).y")
        b.evaluate("emberFlame.setView('icicle')")
        icicle_y = b.evaluate("emberFlame.rectOf(0).y")
        assert icicle_y < flame_y, (icicle_y, flame_y)
        shot = b.screenshot(os.path.join(ARTIFACTS, "flamegraph-icicle.png"))
        print(f"screenshot: {shot}", flush=True)
        # The hostile name is shown as text, not markup.
        assert b.evaluate("document.querySelectorAll('b').length") == 0
        assert b.evaluate("emberFlame.find('evil</script><b>x')") > 0
        assert_clean(b, page)


def test_deep_stacks_scroll_in_a_window_sized_canvas():
    # 3,000 frames: taller than any canvas may be; the canvas stays window-sized
    # and draws the rows scrolled into view.
    deep = "deep;" + ";".join(f"f{i}" for i in range(3000)) + " 5\ndeep;f0;side 5\n"
    page = os.path.join(WD, "deep.html")
    ember("report", write("deep.folded", deep), "-o", page)
    with Browser() as b:
        open_checked(b, page)
        h, inner = b.evaluate("[document.getElementById('flame').height, window.innerHeight]")
        assert h <= inner, (h, inner)
        assert b.evaluate("emberFlame.rectOf(0)") is not None, "the root is not in view at first"
        assert b.evaluate("emberFlame.rectOf(emberFlame.find('f2999'))") is None
        b.evaluate("document.getElementById('chart').scrollTop = 0")
        time.sleep(0.3)
        assert b.evaluate("emberFlame.rectOf(emberFlame.find('f2999'))") is not None
        assert "f2999" in b.evaluate("emberFlame.visibleLabels()")
        assert_clean(b, page)


def test_diff_in_chromium():
    base, new = write("d-base.folded", BASE), write("d-new.folded", NEW)
    page = os.path.join(WD, "diff.html")
    ember("diff", base, new, "-o", page)
    with Browser() as b:
        open_checked(b, page)
        rows = b.evaluate("[...document.querySelectorAll('#changes-table tbody tr')]"
                          ".map(r => [...r.cells].map(c => c.textContent))")
        log(f"  changes: {rows[:4]}")
        assert rows[0][0] == "decode_json" and rows[0][3].startswith("+"), rows[0]
        names = [r[0] for r in rows[:4]]
        assert "gc_collect" in names and "render_page" in names, names
        # Frames are coloured by the change: decode_json red, render_page blue.
        red = b.evaluate("(() => { const r = emberFlame.rectOf(emberFlame.find('decode_json'));"
                         "const c = document.getElementById('flame').getContext('2d');"
                         "return [...c.getImageData(r.x - c.canvas.getBoundingClientRect().left + 2,"
                         " r.y - c.canvas.getBoundingClientRect().top + 2, 1, 1).data]; })()")
        blue = b.evaluate("(() => { const r = emberFlame.rectOf(emberFlame.find('render_page'));"
                          "const c = document.getElementById('flame').getContext('2d');"
                          "return [...c.getImageData(r.x - c.canvas.getBoundingClientRect().left + 2,"
                          " r.y - c.canvas.getBoundingClientRect().top + 2, 1, 1).data]; })()")
        log(f"  decode_json pixel {red}, render_page pixel {blue}")
        assert red[0] > red[2] + 60, red
        assert blue[2] > blue[0] + 60, blue
        assert "gc_collect" not in b.evaluate("emberFlame.visibleLabels()")
        shot = b.screenshot(os.path.join(ARTIFACTS, "diff.png"))
        print(f"screenshot: {shot}", flush=True)
        assert_clean(b, page)


def test_record_html_of_a_workload():
    if os.geteuid() != 0:
        skip_or_fail("not root: cannot record (run the tests with sudo)")
    split = build_workload("split", WD)
    wl = start([split, "8"])
    rec = os.path.join(WD, "rec")
    os.makedirs(rec)
    try:
        time.sleep(0.5)
        # Without -o, ember record writes profile.html.
        r = subprocess.run([EMBER, "record", "-d", "3", "-F", "199", "-p", str(wl.pid)], cwd=rec,
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
    finally:
        kill(wl)
    page = os.path.join(rec, "profile.html")
    assert os.path.exists(page), os.listdir(rec)
    with Browser() as b:
        open_checked(b, page)
        sub = b.evaluate("document.getElementById('subtitle').textContent")
        assert "199 Hz" in sub and "lost" in sub and "UTC" in sub, sub
        title = b.evaluate("document.getElementById('title').textContent")
        assert os.uname().nodename in title, title
        labels = b.evaluate("emberFlame.visibleLabels()")
        for name in ("main", "caller_a", "leaf_a", "caller_b", "leaf_b"):
            assert name in labels, f"{name} not drawn: {labels}"
        i = b.evaluate("emberFlame.find('caller_a')")
        r = b.evaluate(f"emberFlame.rectOf({i})")
        b.click(r["x"] + r["w"] / 2, r["y"] + r["h"] / 2)
        assert b.evaluate("emberFlame.state()")["zoomName"] == "caller_a"
        b.evaluate("emberFlame.zoomTo(0)")
        b.hover(1, 1)
        shot = b.screenshot(os.path.join(ARTIFACTS, "record.png"))
        print(f"screenshot: {shot}", flush=True)
        assert_clean(b, page)


run_tests([
    test_report_converts_between_formats,
    test_report_runs_without_root_and_drops_root,
    test_report_errors_are_clear_and_leave_no_file,
    test_top_matches_go_tool_pprof,
    test_reads_a_profile_go_wrote,
    test_flame_graph_in_chromium,
    test_deep_stacks_scroll_in_a_window_sized_canvas,
    test_diff_in_chromium,
    test_record_html_of_a_workload,
])
shutil.rmtree(WD, ignore_errors=True)
