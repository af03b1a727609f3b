#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the collector's Localhost seccomp profile: a container runtime's
default profile with `bpf` allowed for CAP_BPF and `perf_event_open` for
CAP_PERFMON.

The runtimes' default profiles (moby's, containerd's, containers-common's)
allow those two calls only to containers with CAP_SYS_ADMIN, which the
collector is not given: with CAP_BPF and CAP_PERFMON alone it would get
EPERM ("Couldn't load trivial BPF program"). Nothing else changes.

    make-seccomp-profile.py [DEFAULT_PROFILE] > ember-collector.json

DEFAULT_PROFILE defaults to containers-common's
/usr/share/containers/seccomp.json (podman, CRI-O); the committed
ember-collector.json was made from golang-github-containers-common 0.50
(Debian 12)."""
import json
import sys

ADDED = {"bpf": "CAP_BPF", "perf_event_open": "CAP_PERFMON"}


def collector_profile(default):
    profile = json.loads(json.dumps(default))
    for rule in profile["syscalls"]:
        caps = rule.get("includes", {}).get("caps", []) + rule.get("excludes", {}).get("caps", [])
        # Keep CAP_SYS_ADMIN's allowance; drop the rule that refuses the two
        # calls to containers without it (it would contradict the new ones).
        if caps == ["CAP_SYS_ADMIN"] and rule.get("action") != "SCMP_ACT_ALLOW":
            rule["names"] = [n for n in rule["names"] if n not in ADDED]
    profile["syscalls"] = [r for r in profile["syscalls"] if r["names"]]
    for name, cap in ADDED.items():
        profile["syscalls"].append({"names": [name], "action": "SCMP_ACT_ALLOW",
                                    "includes": {"caps": [cap]}, "excludes": {}})
    return profile


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "/usr/share/containers/seccomp.json"
    with open(path) as f:
        default = json.load(f)
    json.dump(collector_profile(default), sys.stdout, indent=2)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
