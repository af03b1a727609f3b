#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The .gopclntab reader against Go programs built here, now, by three Go toolchains, with Go's
own reader as the truth: Debian's Go (golang-go: 1.19, pclntab magic 0xfffffff0), Go 1.22 (magic
0xfffffff1) fetched as a module (golang.org/toolchain) from the Go module proxy, and Go 1.26
(magic 0xfffffff1, no textStart in its header, a .go.module section), which Go 1.22 fetches
itself when asked for it (GOTOOLCHAIN). Each builds tests/workloads/gosplit.go; the program
stripped of its symbols and DWARF (.gopclntab alone) is read by ember's symbolizer code
(bench/symbolize's driver) at every function's entry and one byte into it, and each answer
must be go tool addr2line's on the program before it was stripped: the function, the file and
the line. (tests/unit/test_gopclntab.c reads the older third-party binaries of
../shared/testdata, which a clone does not have.)

The toolchains are kept in EMBER_GO_CACHE (default ~/.cache/ember-tests/go): a later run
downloads nothing. Without the proxy (GOPROXY, default https://proxy.golang.org) the newer two
skip, or fail under CI."""
import json
import os
import platform
import shutil
import stat
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.environ.get("EMBER_SOURCE_DIR", os.path.dirname(os.path.dirname(HERE)))
BUILD = os.environ.get("EMBER_BUILD_DIR", os.path.join(SRC, "build"))
sys.path.insert(0, os.path.join(SRC, "tests", "integration"))
from emberlib import log, run_tests, skip_or_fail  # noqa: E402

DEBIAN_GO = "/usr/bin/go"
FETCHED = "go1.22.12"   # golang.org/toolchain from the module proxy, with Debian's go
SWITCHED = "go1.26.3"   # fetched by that one (GOTOOLCHAIN)
CACHE = os.environ.get("EMBER_GO_CACHE", os.path.join(os.path.expanduser("~"), ".cache", "ember-tests", "go"))
DRIVER = os.path.join(BUILD, "bench", "symbolize", "ember-symbolize-bench")
PROGRAM = os.path.join(SRC, "tests", "workloads", "gosplit.go")
ARCH = {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())
WD = tempfile.mkdtemp(prefix="ember-gopclntab-")


def go_env(extra=None):
    env = dict(os.environ, GOMODCACHE=os.path.join(CACHE, "mod"), GOCACHE=os.path.join(CACHE, "build"),
               GOPATH=os.path.join(CACHE, "path"), GOFLAGS="-mod=mod", CGO_ENABLED="0",
               HOME=os.environ.get("HOME", WD))
    env.setdefault("GOPROXY", "https://proxy.golang.org")
    env.pop("GOROOT", None)
    env.update(extra or {})
    return env


def run(cmd, env, **kw):
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900, **kw)
    if r.returncode:
        raise subprocess.CalledProcessError(r.returncode, cmd, r.stdout, r.stderr)
    return r.stdout


def debian_go():
    if not os.access(DEBIAN_GO, os.X_OK):
        skip_or_fail(f"{DEBIAN_GO} is missing: scripts/install-deps.sh installs golang-go")
    return DEBIAN_GO, go_env({"GOTOOLCHAIN": "local"})


def fetched_go():
    """Go FETCHED: the golang.org/toolchain module, downloaded with Debian's go (which
    predates GOTOOLCHAIN) from the module proxy and checked against sum.golang.org."""
    go, env = debian_go()
    mod = tempfile.mkdtemp(dir=WD)
    with open(os.path.join(mod, "go.mod"), "w") as f:
        f.write("module fetch\n\ngo 1.19\n")
    try:
        out = run([go, "mod", "download", "-json",
                   f"golang.org/toolchain@v0.0.1-{FETCHED}.linux-{ARCH}"], env, cwd=mod)
    except subprocess.CalledProcessError as e:
        skip_or_fail(f"cannot fetch {FETCHED} through the Go module proxy: {e.stdout[-500:]}{e.stderr[-500:]}")
    root = json.loads(out)["Dir"]
    # The module cache keeps files read-only and not executable: the programs are made so.
    for d in (os.path.join(root, "bin"), os.path.join(root, "pkg", "tool", f"linux_{ARCH}")):
        for name in os.listdir(d):
            p = os.path.join(d, name)
            os.chmod(p, os.stat(p).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return os.path.join(root, "bin", "go"), go_env({"GOTOOLCHAIN": "local"})


def switched_go():
    """Go SWITCHED, which FETCHED downloads from the module proxy and runs itself."""
    go, _ = fetched_go()
    return go, go_env({"GOTOOLCHAIN": SWITCHED})


def build(go, env, name):
    """gosplit.go built by that toolchain, and the same program stripped: (full, stripped)."""
    full, stripped = os.path.join(WD, name + "-full"), os.path.join(WD, name)
    try:
        version = run([go, "version"], env).strip()
        run([go, "build", "-o", full, PROGRAM], env, cwd=WD)
    except subprocess.CalledProcessError as e:
        skip_or_fail(f"{name}: {' '.join(e.cmd[:3])} failed: {e.stdout[-500:]}{e.stderr[-500:]}")
    subprocess.run(["objcopy", "--strip-all", full, stripped], check=True)
    log(f"  {version}")
    return full, stripped


def go_answers(go, env, full, addrs):
    """{address: (function, "file:line")} as go tool addr2line reads the unstripped program."""
    out = run([go, "tool", "addr2line", full], env, input="".join(f"{a:#x}\n" for a in addrs))
    lines = out.splitlines()
    # No line there (padding after a function's last instruction): Go says ":-1", ember "??:0".
    return {a: (lines[2 * i], "??:0" if lines[2 * i + 1] in (":-1", "?:0") else lines[2 * i + 1])
            for i, a in enumerate(addrs)}


def ember_answers(stripped, addrs):
    """{address: (physical function, innermost "file:line")} as ember's symbolizer code reads
    the stripped program (the driver prints each address's frames innermost first)."""
    out = subprocess.run([DRIVER, "--print", "--passes", "1", stripped], input="".join(
        f"{a:x}\n" for a in addrs), capture_output=True, text=True, timeout=300, check=True).stdout
    answers, frames, addr = {}, [], None
    for line in out.splitlines() + ["0x"]:
        if line.startswith("0x"):
            if addr is not None:
                names = frames[0::2]
                answers[addr] = (names[-1] if names else "??", frames[1] if len(frames) > 1 else "??:0")
            addr, frames = (int(line, 16) if line != "0x" else None), []
        else:
            frames.append(line)
    return answers


def check(go, env, name):
    full, stripped = build(go, env, name)
    sections = subprocess.run(["readelf", "-SW", stripped], capture_output=True, text=True).stdout
    assert ".symtab" not in sections and ".debug_info" not in sections, "not stripped"
    nm = run([go, "tool", "nm", full], env)
    entries = sorted({int(f[0], 16) for f in (line.split() for line in nm.splitlines())
                      if len(f) >= 3 and f[1] == "T"})
    addrs = [a for e in entries for a in (e, e + 1)]
    want = go_answers(go, env, full, addrs)
    got = ember_answers(stripped, addrs)
    checked = [a for a in addrs if want[a][0] != "?"]
    wrong = [(hex(a), got.get(a), want[a]) for a in checked if got.get(a) != want[a]]
    mains = sum(1 for a in checked if want[a][0].startswith("main."))
    log(f"  {name}: {len(checked)} addresses ({len(entries)} functions' entries and the byte "
        f"after, {mains} in main.*), {len(checked) - len(wrong)} as go tool addr2line reads them")
    assert len(checked) > 1000 and mains >= 4, (len(checked), mains)
    assert not wrong, wrong[:10]


def test_debian_go():
    go, env = debian_go()
    check(go, env, "debian")


def test_go_from_the_module_proxy():
    go, env = fetched_go()
    check(go, env, FETCHED)


def test_go_it_switches_to():
    go, env = switched_go()
    check(go, env, SWITCHED)


if __name__ == "__main__":
    if not os.access(DRIVER, os.X_OK):
        skip_or_fail(f"{DRIVER} is not built")
    os.makedirs(CACHE, exist_ok=True)
    try:
        run_tests([test_debian_go, test_go_from_the_module_proxy, test_go_it_switches_to])
    finally:
        shutil.rmtree(WD, ignore_errors=True)
