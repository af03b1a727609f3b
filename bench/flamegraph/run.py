#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Flame graph benchmark: a synthetic whole-system profile with 100,000
distinct stacks (gen_stacks.py) is turned into HTML by `ember report`; the
page's size and the time headless Chromium takes until it is drawn are
printed and held against the budgets below. `ember top` is timed against
`go tool pprof -top` on the same pprof file.

usage: run.py [--stacks N] [--check] [--keep DIR]
  --check  exit 1 when a budget is exceeded (ctest runs it so)"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.environ.get("EMBER_SOURCE_DIR", os.path.dirname(os.path.dirname(HERE)))
BUILD = os.environ.get("EMBER_BUILD_DIR", os.path.join(SRC, "build"))
EMBER = os.path.join(BUILD, "ember")
sys.path.insert(0, os.path.join(SRC, "tests", "integration"))
from chromium import Browser, find_chromium  # noqa: E402
from emberlib import slowdown  # noqa: E402  (the control for the time budget)

# Budgets for 100,000 distinct stacks from gen_stacks.py (about 1.7 million
# frame-tree nodes, 60 MB of folded text), on a 2-core CI machine. The time
# budget is for a machine that runs nothing else: on a loaded one it grows by
# as much as CPU work is slower there at the time (emberlib.slowdown, measured
# beside each page load).
BUDGET_HTML_BYTES = 24 << 20
BUDGET_READY_S = 4.0


def timed(cmd, env=None, runs=3):
    times = []
    out = None
    for _ in range(runs):
        t = time.perf_counter()
        out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
        times.append(time.perf_counter() - t)
        if out.returncode != 0:
            raise RuntimeError(f"{cmd[0]} failed: {out.stderr[-2000:]}")
    return statistics.median(times), out


def mib(n):
    return f"{n / (1 << 20):.1f} MiB"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--stacks", type=int, default=100000)
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--keep")
    args = ap.parse_args()
    wd = args.keep or tempfile.mkdtemp(prefix="ember-bench-fg-")
    os.makedirs(wd, exist_ok=True)
    folded, html, pb = (os.path.join(wd, n) for n in ("stacks.folded", "stacks.html", "stacks.pb.gz"))
    subprocess.run([sys.executable, os.path.join(HERE, "gen_stacks.py"), str(args.stacks), folded], check=True)

    t_html, _ = timed([EMBER, "report", folded, "-o", html])
    t_pb, _ = timed([EMBER, "report", folded, "-o", pb], runs=1)
    t_pb_html, _ = timed([EMBER, "report", pb, "-o", html], runs=1)
    size_html, size_folded, size_pb = (os.path.getsize(p) for p in (html, folded, pb))

    path, why = find_chromium()
    if not path:
        print(f"bench/flamegraph: {why}", file=sys.stderr)
        return 1 if os.environ.get("CI") == "true" else 77
    ready, render_ms, nodes, zoom_ms, search_ms, slow = [], [], 0, 0, 0, []
    for _ in range(3):
        with Browser(timeout=120) as b:
            slow.append(slowdown())
            ready.append(b.open(html))
            slow.append(slowdown())
            render_ms.append(b.evaluate("emberFlame.renderMs"))
            nodes = b.evaluate("emberFlame.nodes")
            zoom_ms = b.evaluate("(() => { const t = performance.now();"
                                 " emberFlame.zoomTo(emberFlame.find('main'));"
                                 " emberFlame.zoomTo(0); return (performance.now() - t) / 2; })()")
            search_ms = b.evaluate("(() => { const t = performance.now(); emberFlame.search('parse');"
                                   " return performance.now() - t; })()")
            errors = b.errors()
            if errors:
                print(f"console errors: {errors}", file=sys.stderr)
                return 1
            shots = os.path.join(BUILD, "artifacts")
            os.makedirs(shots, exist_ok=True)
            shot = b.screenshot(os.path.join(shots, "bench-flamegraph-100k.png"))

    env = dict(os.environ, HOME=wd, GOCACHE=os.path.join(wd, "gocache"))
    t_top, _ = timed([EMBER, "top", pb, "-n", "20"], runs=1)
    t_gotop, _ = timed(["go", "tool", "pprof", "-top", "-nodecount=20", pb], env=env, runs=1)

    budget_ready = BUDGET_READY_S * statistics.median(slow)
    print(f"flame graph benchmark: {args.stacks} distinct stacks, {nodes} frame-tree nodes")
    print(f"  input: folded {mib(size_folded)}, pprof {mib(size_pb)}")
    print(f"  html:  {mib(size_html)} ({size_html / size_folded:.2f}x the folded text,"
          f" {size_html / nodes:.1f} bytes per node); budget {mib(BUDGET_HTML_BYTES)}")
    print(f"  ember report folded -> html: {t_html:.2f} s; folded -> pprof: {t_pb:.2f} s;"
          f" pprof -> html: {t_pb_html:.2f} s")
    print(f"  chromium: page ready (navigation to first full draw) median {statistics.median(ready):.2f} s"
          f" of {[round(r, 2) for r in ready]}; budget {budget_ready:.1f} s ({BUDGET_READY_S:.1f} s"
          f" times this host's slowdown {statistics.median(slow):.1f})")
    print(f"            script (parse + tree + draw) median {statistics.median(render_ms):.0f} ms;"
          f" zoom redraw {zoom_ms:.0f} ms; search {search_ms:.0f} ms")
    print(f"  top: ember top {t_top:.2f} s, go tool pprof -top {t_gotop:.2f} s"
          f" (ratio {t_gotop / t_top:.1f}x in ember's favour)" if t_top < t_gotop else
          f"  top: ember top {t_top:.2f} s, go tool pprof -top {t_gotop:.2f} s (ratio {t_top / t_gotop:.1f}x slower)")
    print(f"  screenshot: {shot}")
    over = []
    if size_html > BUDGET_HTML_BYTES:
        over.append(f"html {mib(size_html)} > {mib(BUDGET_HTML_BYTES)}")
    if statistics.median(ready) > budget_ready:
        over.append(f"ready {statistics.median(ready):.2f} s > {budget_ready:.1f} s")
    print("  budgets: " + ("exceeded: " + "; ".join(over) if over else "met"))
    if not args.keep:
        shutil.rmtree(wd, ignore_errors=True)
    return 1 if over and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
