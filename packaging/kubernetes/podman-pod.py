#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""ember's Kubernetes pod, run with podman on one host: the settings of
packaging/kubernetes (kustomization, DaemonSet, ConfigMap) turned into the
commands that give the same pod, so that nothing is written twice by hand.

    podman-pod.py commands   print `podman pod create` + `podman run` commands
    podman-pod.py up         run them (a pod named ember, volumes ember-*)
    podman-pod.py down       remove the pod and its volumes
    podman-pod.py pod-yaml   print the DaemonSet's pod as a Pod and its
                             ConfigMap, for `podman kube play` (which has no
                             DaemonSet)

Options: --dir DIR (the kustomization, default this script's directory),
--image IMAGE (instead of the kustomization's image), --set NAME=VALUE (a
ConfigMap value, e.g. OTLP_ENDPOINT=...; repeatable), --name NAME (default
ember), --seccomp-dir DIR (where Localhost profiles are; default --dir).

Every security setting of a container maps to a podman option (hostPID:
--pid host; runAsUser/runAsGroup: --user; allowPrivilegeEscalation false:
no-new-privileges; readOnlyRootFilesystem: --read-only; capabilities:
--cap-drop/--cap-add; seccompProfile: --security-opt seccomp=...; limits:
--memory, --cpus); a setting it does not know stops it with an error
rather than being dropped. podman 4.3's `kube play` ignores hostPID and
securityContext.seccompProfile: this form is the one that runs the pod as
Kubernetes would."""
import argparse
import copy
import json
import os
import re
import shlex
import socket
import subprocess
import sys

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))


class Unsupported(Exception):
    pass


def load_kustomization(directory, image=None, overrides=None):
    """(DaemonSet, ConfigMap data, namespace) as kustomize would render them:
    the resources, the namespace, configMapGenerator literals and images."""
    with open(os.path.join(directory, "kustomization.yaml")) as f:
        kz = yaml.safe_load(f)
    docs = []
    for res in kz.get("resources", []):
        with open(os.path.join(directory, res)) as f:
            docs += [d for d in yaml.safe_load_all(f) if d]
    daemonsets = [d for d in docs if d["kind"] == "DaemonSet"]
    if len(daemonsets) != 1:
        raise Unsupported(f"expected one DaemonSet in {directory}, found {len(daemonsets)}")
    ds = copy.deepcopy(daemonsets[0])
    namespace = kz.get("namespace", ds["metadata"].get("namespace", "default"))
    config = {}
    for gen in kz.get("configMapGenerator", []):
        for lit in gen.get("literals", []):
            k, _, v = lit.partition("=")
            config[(gen["name"], k)] = v
    for k, v in (overrides or {}).items():
        names = {n for (n, key) in config if key == k}
        if not names:
            raise Unsupported(f"--set {k}: no ConfigMap key {k} in the kustomization")
        for n in names:
            config[(n, k)] = v
    for c in ds["spec"]["template"]["spec"]["containers"]:
        for img in kz.get("images", []):
            name, _, tag = c["image"].partition(":")
            if name == img["name"]:
                c["image"] = f'{img.get("newName", name)}:{img.get("newTag", tag)}'
        if image:
            c["image"] = image
    return ds, config, namespace


def expand(value, env):
    """Kubernetes' $(VAR) expansion: known variables replaced, $$ escapes."""
    def sub(m):
        if m.group(0) == "$$":
            return "$"
        return env.get(m.group(1), m.group(0))
    return re.sub(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)", sub, value)


def container_env(c, config, node_name):
    env = {}
    for e in c.get("env", []):
        if "value" in e:
            env[e["name"]] = expand(e["value"], env)
            continue
        src = e.get("valueFrom", {})
        if src.get("fieldRef", {}).get("fieldPath") == "spec.nodeName":
            env[e["name"]] = node_name
        elif "configMapKeyRef" in src:
            ref = src["configMapKeyRef"]
            key = (ref["name"], ref["key"])
            if key not in config:
                raise Unsupported(f"env {e['name']}: no ConfigMap value {ref['name']}/{ref['key']}")
            env[e["name"]] = config[key]
        else:
            raise Unsupported(f"env {e['name']}: unsupported source {src}")
    return env


def quantity_bytes(q):
    units = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "K": 10**3, "M": 10**6, "G": 10**9}
    m = re.fullmatch(r"([0-9.]+)([KMG]i?)?", str(q))
    if not m:
        raise Unsupported(f"memory quantity {q}")
    return int(float(m.group(1)) * units.get(m.group(2) or "", 1))


def quantity_cpus(q):
    q = str(q)
    return float(q[:-1]) / 1000 if q.endswith("m") else float(q)


KNOWN_SECURITY = {"runAsUser", "runAsGroup", "runAsNonRoot", "privileged", "allowPrivilegeEscalation",
                  "readOnlyRootFilesystem", "capabilities", "seccompProfile"}
KNOWN_POD = {"hostPID", "serviceAccountName", "automountServiceAccountToken", "enableServiceLinks",
             "priorityClassName", "terminationGracePeriodSeconds", "tolerations", "volumes",
             "containers"}


def podman_commands(ds, config, name, seccomp_dir, node_name=None):
    """The podman commands (argument lists) that create the pod as `name`."""
    spec = ds["spec"]["template"]["spec"]
    unknown = set(spec) - KNOWN_POD
    if unknown:
        raise Unsupported(f"pod settings not mapped to podman: {sorted(unknown)}")
    node_name = node_name or socket.gethostname()
    cmds = [["podman", "pod", "create", "--name", name, "--hostname", node_name]]
    volumes = {}
    for v in spec.get("volumes", []):
        if "emptyDir" not in v:
            raise Unsupported(f"volume {v['name']}: only emptyDir is mapped")
        vol = f"{name}-{v['name']}"
        create = ["podman", "volume", "create"]
        # sizeLimit is not mapped: podman 4.3 sizes a volume only on file
        # systems with project quotas.
        if v["emptyDir"].get("medium") == "Memory":
            create += ["--opt", "type=tmpfs", "--opt", "device=tmpfs", "--opt", "o=nodev,nosuid,noexec"]
        cmds.append(create + [vol])
        volumes[v["name"]] = vol
    grace = spec.get("terminationGracePeriodSeconds")
    for c in spec["containers"]:
        sc = c.get("securityContext", {})
        unknown = set(sc) - KNOWN_SECURITY
        if unknown:
            raise Unsupported(f"container {c['name']}: securityContext {sorted(unknown)} not mapped")
        if sc.get("privileged"):
            raise Unsupported(f"container {c['name']} is privileged: ember's never is")
        uid, gid = sc.get("runAsUser"), sc.get("runAsGroup")
        if uid is None:
            raise Unsupported(f"container {c['name']}: give runAsUser (the image's user is not assumed)")
        if sc.get("runAsNonRoot") and uid == 0:
            raise Unsupported(f"container {c['name']}: runAsNonRoot with runAsUser 0")
        run = ["podman", "run", "--detach", "--pod", name, "--name", f"{name}-{c['name']}",
               "--user", f"{uid}:{gid if gid is not None else uid}"]
        if spec.get("hostPID"):
            run += ["--pid", "host"]
        if sc.get("allowPrivilegeEscalation") is False:
            run += ["--security-opt", "no-new-privileges"]
        if sc.get("readOnlyRootFilesystem"):
            # Kubernetes mounts no tmpfs over /run, /tmp, /var/tmp: neither here.
            run += ["--read-only", "--read-only-tmpfs=false"]
        caps = sc.get("capabilities", {})
        for cap in caps.get("drop", []):
            run += ["--cap-drop", cap]
        if caps.get("add"):
            run += ["--cap-add", ",".join(caps["add"])]
        prof = sc.get("seccompProfile", {"type": "RuntimeDefault"})
        if prof["type"] == "Localhost":
            run += ["--security-opt", "seccomp=" + os.path.join(seccomp_dir, prof["localhostProfile"])]
        elif prof["type"] == "Unconfined":
            run += ["--security-opt", "seccomp=unconfined"]
        elif prof["type"] != "RuntimeDefault":
            raise Unsupported(f"container {c['name']}: seccompProfile {prof}")
        res = c.get("resources", {})
        if "memory" in res.get("limits", {}):
            run += ["--memory", str(quantity_bytes(res["limits"]["memory"]))]
        if "cpu" in res.get("limits", {}):
            run += ["--cpus", str(quantity_cpus(res["limits"]["cpu"]))]
        if "memory" in res.get("requests", {}):
            run += ["--memory-reservation", str(quantity_bytes(res["requests"]["memory"]))]
        if "cpu" in res.get("requests", {}):
            run += ["--cpu-shares", str(max(2, int(quantity_cpus(res["requests"]["cpu"]) * 1024)))]
        if grace is not None:
            run += ["--stop-timeout", str(grace)]
        env = container_env(c, config, node_name)
        for k, v in env.items():
            run += ["--env", f"{k}={v}"]
        for m in c.get("volumeMounts", []):
            opts = ",ro" if m.get("readOnly") else ""
            run += ["--volume", f"{volumes[m['name']]}:{m['mountPath']}{opts}"]
        argv = [expand(a, env) for a in c.get("command", []) + c.get("args", [])]
        if not argv:
            raise Unsupported(f"container {c['name']}: no command")
        run += ["--entrypoint", json.dumps(argv[:1]), c["image"], *argv[1:]]
        cmds.append(run)
    return cmds


def pod_yaml(ds, config, namespace, name, node_name=None):
    """The DaemonSet's pod template as a Pod, and its ConfigMaps, for kube play.
    podman 4.3 has no spec.nodeName for the downward API and expands no $(VAR)
    in commands: both are done here, as the kubelet would (the pod runs on
    this host)."""
    tmpl = copy.deepcopy(ds["spec"]["template"])
    node_name = node_name or socket.gethostname()
    for c in tmpl["spec"]["containers"]:
        env = container_env(c, config, node_name)
        for e in c.get("env", []):
            if e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == "spec.nodeName":
                e.pop("valueFrom")
                e["value"] = node_name
        for key in ("command", "args"):
            if key in c:
                c[key] = [expand(a, env) for a in c[key]]
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "namespace": namespace, **tmpl.get("metadata", {})},
           "spec": tmpl["spec"]}
    maps = {}
    for (cm, key), v in config.items():
        maps.setdefault(cm, {})[key] = v
    cms = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": cm, "namespace": namespace},
            "data": data} for cm, data in maps.items()]
    return yaml.safe_dump(pod, sort_keys=False), yaml.safe_dump_all(cms, sort_keys=False)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("action", choices=["commands", "up", "down", "pod-yaml"])
    ap.add_argument("--dir", default=HERE)
    ap.add_argument("--image")
    ap.add_argument("--set", action="append", default=[], metavar="NAME=VALUE")
    ap.add_argument("--name", default="ember")
    ap.add_argument("--seccomp-dir")
    a = ap.parse_args()
    overrides = dict(s.split("=", 1) for s in a.set)
    try:
        ds, config, namespace = load_kustomization(a.dir, a.image, overrides)
        if a.action == "pod-yaml":
            pod, cms = pod_yaml(ds, config, namespace, a.name)
            sys.stdout.write(pod + "---\n" + cms)
            return 0
        if a.action == "down":
            subprocess.run(["podman", "pod", "rm", "--force", "--ignore", a.name], check=True)
            spec = ds["spec"]["template"]["spec"]
            vols = [f"{a.name}-{v['name']}" for v in spec.get("volumes", [])]
            subprocess.run(["podman", "volume", "rm", "--force", *vols], check=False,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            return 0
        cmds = podman_commands(ds, config, a.name, a.seccomp_dir or a.dir)
    except Unsupported as e:
        print(f"podman-pod: {e}; change the manifest or teach podman-pod.py the setting", file=sys.stderr)
        return 2
    for cmd in cmds:
        if a.action == "commands":
            print(shlex.join(cmd))
        else:
            r = subprocess.run(cmd, stdout=subprocess.DEVNULL)
            if r.returncode:
                print(f"podman-pod: failed ({r.returncode}): {shlex.join(cmd)}", file=sys.stderr)
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
