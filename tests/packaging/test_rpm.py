#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The RPM package: rpmlint, its payload, and its scriptlets run by
`rpm --root` in a scratch Debian 12 tree (no RPM distribution is reachable
from the project's machines: dependency resolution and a boot on Fedora or
RHEL are not tested here). The tree gets Fedora's default preset ("disable
*"), so the units are enabled by ember's own preset file, as on Fedora."""
import os
import subprocess

from pkglib import (RUNTIME, SRC, SYSTEMD, base_tree, dist_file, fresh_tree, log, remove_tree, require, run,
                    run_tests)

require(["rpm", "rpmlint", "debootstrap"])
RPM = dist_file("ember-[0-9]*.x86_64.rpm")
DEBUGINFO = dist_file("ember-debuginfo-*.rpm")
SRPM = dist_file("ember-*.src.rpm")
UNITS = ("ember-collector.service", "ember-symbolizer.service")
state = {}


def rpm_root(*args, check=True):
    return run(["rpm", "--root", state["tree"], *args], check=check)


def test_rpmlint():
    r = run(["rpmlint", "-r", os.path.join(SRC, "packaging", "rpm", "ember.rpmlintrc"), RPM, DEBUGINFO, SRPM,
             os.path.join(SRC, "packaging", "rpm", "ember.spec")], check=False)
    summary = r.stdout.strip().splitlines()[-1]
    for line in r.stdout.splitlines():
        if ": E: " in line or ": W: " in line:
            log("    " + line)
    log(f"  rpmlint: {summary.strip()}")
    assert r.returncode == 0 and " 0 errors, 0 warnings" in summary, r.stdout[-3000:]


def test_payload():
    files = set(run(["rpm", "-qpl", RPM]).stdout.split())
    want = {"/usr/bin/ember", "/usr/libexec/ember/ember-collector", "/usr/libexec/ember/ember-symbolizer",
            "/etc/ember/ember.conf", "/usr/lib/systemd/system/ember-collector.service",
            "/usr/lib/systemd/system/ember-symbolizer.service", "/usr/lib/systemd/system-preset/50-ember.preset",
            "/usr/lib/sysusers.d/ember.conf", "/usr/lib/tmpfiles.d/ember.conf",
            "/usr/share/ember/otlp-network.conf", "/usr/share/man/man1/ember.1.gz",
            "/usr/share/man/man8/ember-collector.8.gz", "/usr/share/man/man8/ember-symbolizer.8.gz"}
    assert want <= files, f"missing from the rpm: {sorted(want - files)}"
    conf = run(["rpm", "-qpc", RPM]).stdout.split()
    assert conf == ["/etc/ember/ember.conf"], conf
    dbg = run(["rpm", "-qpl", DEBUGINFO]).stdout.split()
    debug_files = sorted(f for f in dbg if f.startswith("/usr/lib/debug/usr/") and f.endswith(".debug"))
    log(f"  {len(files)} paths; conffile {conf[0]}; debuginfo: {', '.join(debug_files)}")
    assert len(debug_files) == 3, debug_files
    # Stripped: the debug information went to the debuginfo package.
    body = run(["sh", "-c", f"rpm2cpio {RPM} | cpio -i --to-stdout ./usr/libexec/ember/ember-collector 2>/dev/null | "
                "file -"]).stdout
    assert "stripped" in body and "not stripped" not in body, body


def test_install_creates_user_and_enables_units():
    base = base_tree("deb-base", SYSTEMD + RUNTIME)
    tree = fresh_tree(base, "rpm-root")
    state["tree"] = tree
    os.makedirs(os.path.join(tree, "etc/systemd/system-preset"), exist_ok=True)
    with open(os.path.join(tree, "etc/systemd/system-preset/99-default-disable.preset"), "w") as f:
        f.write("disable *\n")
    run(["mount", "-t", "proc", "proc", os.path.join(tree, "proc")])
    rpm_root("--initdb")
    out = rpm_root("-ivh", "--nodeps", RPM)
    log("  " + " | ".join(l.strip() for l in (out.stdout + out.stderr).splitlines() if "ember" in l.lower()))
    user = run(["chroot", tree, "getent", "passwd", "ember"]).stdout.strip()
    assert user.startswith("ember:"), user
    for unit in UNITS:
        link = os.path.join(tree, "etc/systemd/system/multi-user.target.wants", unit)
        assert os.path.islink(link), f"{unit} not enabled"
    st = os.stat(os.path.join(tree, "var/lib/ember/profiles"))
    uid = int(user.split(":")[2])
    assert st.st_uid == uid and st.st_mode & 0o777 == 0o750, (st.st_uid, oct(st.st_mode))
    log(f"  user {user}; both units enabled; /var/lib/ember/profiles 0750 ember")


def test_erase_disables_units():
    rpm_root("-e", "--nodeps", "ember")
    for unit in UNITS:
        assert not os.path.lexists(os.path.join(state["tree"], "etc/systemd/system/multi-user.target.wants",
                                                unit)), f"{unit} still enabled"
    for p in ("usr/libexec/ember/ember-collector", "etc/ember/ember.conf", "usr/lib/systemd/system/ember-collector.service"):
        assert not os.path.lexists(os.path.join(state["tree"], p)), f"/{p} remains"
    q = rpm_root("-q", "ember", check=False)
    assert q.returncode != 0, q.stdout


def cleanup():
    if "tree" in state:
        subprocess.run(["umount", os.path.join(state["tree"], "proc")], capture_output=True)
        remove_tree(state["tree"])


if __name__ == "__main__":
    run_tests([test_rpmlint, test_payload, test_install_creates_user_and_enables_units,
               test_erase_disables_units], cleanup=cleanup)
