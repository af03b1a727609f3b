#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The container image and the Kubernetes pod, run for real with podman:

- the manifests (packaging/kubernetes) as Pod Security Admission and a
  reviewer would read them: the namespace's level, the collector's exact
  capabilities and Localhost profile, every "restricted" control on the
  symbolizer;
- the image built from packaging/container/Containerfile with the .deb
  (its Debian 12 base made with debootstrap, no registry needed);
- the pod with `podman kube play` (podman 4.3 ignores hostPID: the pod runs,
  confined, but cannot name user frames);
- the same pod generated into `podman pod create` + `podman run --pid host`
  (packaging/kubernetes/podman-pod.py): a host workload's user frames named,
  profiles shipped over OTLP with the node's name, the containers' status in
  /proc, and their CPU and memory measured against the manifest's requests
  and limits."""
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time

import yaml

from pkglib import (CAP, SRC, WORK, caps, dist_file, log, require, run, run_tests, wait_for)

sys.path.insert(0, os.path.join(SRC, "tests", "integration"))

require(["podman", "debootstrap", "gcc"])
os.environ["CONTAINERS_CONF"] = os.path.join(SRC, "tests", "packaging", "containers.conf")
K8S = os.path.join(SRC, "packaging", "kubernetes")
GEN = os.path.join(K8S, "podman-pod.py")
BASE_IMAGE = "localhost/debian:12-slim"
IMAGE = "localhost/ember:pkgtest"
COLLECTOR_CAPS = {"BPF", "PERFMON", "SYS_PTRACE", "DAC_READ_SEARCH", "SYSLOG", "CHECKPOINT_RESTORE"}
state = {}


def load_generator():
    import importlib.util
    spec = importlib.util.spec_from_file_location("podman_pod", GEN)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


podman_pod = load_generator()


def manifests():
    ds, config, ns = podman_pod.load_kustomization(K8S)
    spec = ds["spec"]["template"]["spec"]
    return ds, {c["name"]: c for c in spec["containers"]}, config


def gateway():
    net = json.loads(run(["podman", "network", "inspect", "podman"]).stdout)[0]
    return net["subnets"][0]["gateway"]


def go_seconds(d):
    """Seconds in a Go duration string ("1m2.5s", "29.6ms", "850µs")."""
    units = {"h": 3600, "m": 60, "s": 1, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}
    return sum(float(v) * units[u] for v, u in re.findall(r"([0-9.]+)(h|ms|m|s|us|µs|ns)", d))


def status_of(text):
    return dict(line.split(":\t", 1) for line in text.splitlines() if ":\t" in line)


def host_status(container):
    pid = run(["podman", "inspect", "--format", "{{.State.Pid}}", container]).stdout.strip()
    with open(f"/proc/{pid}/status") as f:
        return status_of(f.read())


def test_manifests_meet_their_security_levels():
    ds, c, config = manifests()
    spec = ds["spec"]["template"]["spec"]
    with open(os.path.join(K8S, "namespace.yaml")) as f:
        ns = yaml.safe_load(f)
    assert ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"
    assert spec["hostPID"] is True and not spec.get("hostNetwork") and not spec.get("hostIPC")
    assert spec["automountServiceAccountToken"] is False
    assert all("emptyDir" in v for v in spec["volumes"]), "hostPath or other node volumes"
    col = c["collector"]["securityContext"]
    assert col["privileged"] is False and col["allowPrivilegeEscalation"] is False
    assert col["readOnlyRootFilesystem"] is True and col["capabilities"]["drop"] == ["ALL"]
    assert set(col["capabilities"]["add"]) == COLLECTOR_CAPS, col["capabilities"]["add"]
    prof = col["seccompProfile"]
    assert prof["type"] == "Localhost"
    ann = ds["spec"]["template"]["metadata"]["annotations"]
    assert ann["container.seccomp.security.alpha.kubernetes.io/collector"] == "localhost/" + prof["localhostProfile"]
    # The "restricted" standard's container controls, all of them.
    sym = c["symbolizer"]["securityContext"]
    assert sym["runAsNonRoot"] is True and sym["runAsUser"] != 0 and sym["runAsGroup"] != 0
    assert sym["allowPrivilegeEscalation"] is False and sym.get("privileged") is False
    assert sym["capabilities"] == {"drop": ["ALL"]}
    assert sym["seccompProfile"]["type"] in ("RuntimeDefault", "Localhost")
    assert sym["readOnlyRootFilesystem"] is True
    assert not c["symbolizer"].get("ports") and not c["collector"].get("ports")
    for name, ctr in c.items():
        assert ctr["resources"]["requests"] and ctr["resources"]["limits"]["memory"], name
    env = {e["name"]: e for e in c["symbolizer"]["env"]}
    assert env["NODE_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"
    with open(os.path.join(K8S, prof["localhostProfile"])) as f:
        profile = json.load(f)
    assert profile["defaultAction"] == "SCMP_ACT_ERRNO"
    for call, cap in (("bpf", "CAP_BPF"), ("perf_event_open", "CAP_PERFMON")):
        rules = [r for r in profile["syscalls"] if call in r["names"] and r["action"] == "SCMP_ACT_ALLOW"]
        conds = sorted(tuple(r.get("includes", {}).get("caps", [])) for r in rules)
        assert conds == sorted([(cap,), ("CAP_SYS_ADMIN",)]), (call, conds)
    r = subprocess.run(["kubectl", "kustomize", K8S], capture_output=True, text=True) \
        if subprocess.run(["sh", "-c", "command -v kubectl"], capture_output=True).returncode == 0 else None
    if r is not None:
        assert r.returncode == 0, r.stderr
        theirs = next(d for d in yaml.safe_load_all(r.stdout) if d["kind"] == "DaemonSet")
        for a, b in zip(theirs["spec"]["template"]["spec"]["containers"], spec["containers"]):
            assert a["securityContext"] == b["securityContext"] and a["image"] == b["image"], a["name"]
        log("  kubectl kustomize renders the same containers")
    log(f"  collector adds {sorted(COLLECTOR_CAPS)}; symbolizer at every restricted control")


def test_sidecar_selects_its_own_pod():
    """packaging/kubernetes/sidecar.yaml: the DaemonSet's two containers beside an application,
    the collector given --pod with the pod's uid from the downward API."""
    ds, c, _ = manifests()
    with open(os.path.join(K8S, "sidecar.yaml")) as f:
        dep = yaml.safe_load(f)
    tpl = dep["spec"]["template"]
    spec = tpl["spec"]
    side = {ctr["name"]: ctr for ctr in spec["containers"]}
    assert spec["hostPID"] is True and not spec.get("hostNetwork") and not spec.get("hostIPC")
    assert all("emptyDir" in v for v in spec["volumes"]), "hostPath or other node volumes"
    ann = "container.seccomp.security.alpha.kubernetes.io/collector"
    assert tpl["metadata"]["annotations"][ann] == ds["spec"]["template"]["metadata"]["annotations"][ann]
    for name in ("collector", "symbolizer"):
        for key in ("securityContext", "resources", "volumeMounts"):
            assert side[name][key] == c[name][key], (name, key)
    cmd = side["collector"]["command"]
    assert cmd[:len(c["collector"]["command"])] == c["collector"]["command"], cmd
    assert cmd[-2:] == ["--pod", "$(POD_UID)"], cmd
    env = {e["name"]: e for e in side["collector"]["env"]}
    assert env["POD_UID"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.uid"
    log(f"  sidecar: collector {' '.join(cmd[-2:])}, POD_UID from metadata.uid; containers as the DaemonSet's")


def test_image_builds_from_the_deb():
    if subprocess.run(["podman", "image", "exists", BASE_IMAGE]).returncode != 0:
        run([os.path.join(SRC, "packaging", "container", "make-base-image.sh"), BASE_IMAGE], timeout=1800)
    ctx = tempfile.mkdtemp(prefix="ember-image-", dir=WORK)
    run(["cp", dist_file("ember_*.deb"), ctx])
    t = time.time()
    run(["podman", "build", "-q", "--build-arg", f"BASE={BASE_IMAGE}", "-f",
         os.path.join(SRC, "packaging", "container", "Containerfile"), "-t", IMAGE, ctx], timeout=1200)
    run(["rm", "-rf", ctx])
    size = int(run(["podman", "image", "inspect", "--format", "{{.Size}}", IMAGE]).stdout)
    out = run(["podman", "run", "--rm", "--user", "65532:65532", IMAGE, "sh", "-c",
               "ember version; id; ls -ld /run/ember /var/lib/ember/profiles"]).stdout
    log(f"  {IMAGE}: {size / 1e6:.0f} MB, built in {time.time() - t:.0f}s\n    " + out.strip().replace("\n", "\n    "))
    assert "uid=65532(ember) gid=65532(ember)" in out


def test_kube_play():
    d = tempfile.mkdtemp(prefix="ember-kube-", dir=WORK)
    text = run([GEN, "pod-yaml", "--image", IMAGE, "--set", "OTLP_ENDPOINT=http://127.0.0.1:9"]).stdout
    pod, cm = list(yaml.safe_load_all(text))
    pod_file, cm_file = os.path.join(d, "pod.yaml"), os.path.join(d, "configmap.yaml")
    for path, doc in ((pod_file, pod), (cm_file, cm)):
        with open(path, "w") as f:
            yaml.safe_dump(doc, f)
    state["kube"] = pod_file
    run(["podman", "kube", "play", "--configmap", cm_file, "--seccomp-profile-root", K8S, pod_file])
    wait_for(lambda: "connected" in run(["podman", "logs", "ember-collector"]).stderr, 30, "the symbolizer")
    sym = host_status("ember-symbolizer")
    col = host_status("ember-collector")
    assert sym["Uid"].split()[0] == "65532" and int(sym["CapEff"], 16) == 0 and sym["Seccomp"] == "2"
    assert col["Seccomp"] == "2" and CAP["CAP_BPF"] not in caps(col["CapEff"])
    run(["podman", "kill", "--signal", "HUP", "ember-symbolizer"])
    files = wait_for(lambda: run(["podman", "exec", "ember-symbolizer", "sh", "-c",
                                  "ls /var/lib/ember/profiles/*.folded 2>/dev/null"], check=False).stdout.split(),
                     15, "a profile")
    log(f"  kube play: pod running, confined; {files[0]} written (hostPID ignored by podman 4.3)")
    run(["podman", "kube", "play", "--down", pod_file])
    state.pop("kube")
    run(["rm", "-rf", d])


def test_pod_with_host_pid_names_a_host_workload():
    try:
        pod_with_host_pid()
    except Exception:
        containers_report(["ember-collector", "ember-symbolizer"])
        raise


def pod_with_host_pid():
    from otlp_receiver import HttpReceiver, resource_attrs
    gw = gateway()
    rx = HttpReceiver(host=gw)
    state["rx"] = rx
    run([GEN, "down"])
    state["pod"] = True
    run([GEN, "up", "--image", IMAGE, "--set", f"OTLP_ENDPOINT=http://{gw}:{rx.port}"])
    wait_for(lambda: "connected" in run(["podman", "logs", "ember-collector"]).stderr, 30, "the symbolizer")
    # What the issue asks of the symbolizer container, in a process of its own and in the symbolizer.
    inside = status_of(run(["podman", "exec", "ember-symbolizer", "cat", "/proc/self/status"]).stdout)
    sym = host_status("ember-symbolizer")
    col = host_status("ember-collector")
    for who, s in (("exec in symbolizer", inside), ("symbolizer", sym), ("collector", col)):
        log(f"  {who}: Uid {s['Uid'].split()[0]} CapEff {s['CapEff']} CapBnd {s['CapBnd']} "
            f"NoNewPrivs {s['NoNewPrivs']} Seccomp {s['Seccomp']}")
    for s in (inside, sym):
        assert s["Uid"].split()[0] != "0" and int(s["CapEff"], 16) == 0
        assert s["NoNewPrivs"] == "1" and s["Seccomp"] == "2"
    priv = run(["podman", "inspect", "--format", "{{.HostConfig.Privileged}}", "ember-collector"]).stdout.strip()
    assert priv == "false", "the collector container is privileged"
    assert caps(col["CapBnd"]) <= {CAP["CAP_" + c] for c in COLLECTOR_CAPS}, col["CapBnd"]
    assert col["NoNewPrivs"] == "1" and col["Seccomp"] == "2"

    # Usage while a host workload runs, sampled every second.
    usage = {"ember-collector": [], "ember-symbolizer": []}
    done = threading.Event()

    def sample():
        while not done.is_set():
            r = subprocess.run(["podman", "stats", "--no-stream", "--no-reset", "--format", "json"],
                               capture_output=True, text=True)
            if r.returncode == 0:
                for s in json.loads(r.stdout or "[]"):
                    if s["name"] in usage:
                        mem = s["mem_usage"].split("/")[0].strip()
                        usage[s["name"]].append((time.monotonic(), go_seconds(s["cpu_time"]),
                                                 podman_pod.quantity_bytes(mem.replace("B", "").replace("k", "K"))))
            done.wait(1)
    # A daemon thread, stopped by cleanup() too: a failure below must not leave
    # it sampling forever (the interpreter would wait for it at exit).
    t = threading.Thread(target=sample, daemon=True)
    state["sampler"] = done
    t.start()
    exe = os.path.join(WORK, "split")
    run(["gcc", "-O2", "-g", "-pthread", "-o", exe, os.path.join(SRC, "tests", "workloads", "split.c")])
    run([exe, "12"], timeout=60)
    run(["podman", "kill", "--signal", "HUP", "ember-symbolizer"])
    vol = run(["podman", "volume", "inspect", "--format", "{{.Mountpoint}}", "ember-profiles"]).stdout.strip()
    folded = wait_for(lambda: sorted(f for f in os.listdir(vol) if f.endswith(".folded")), 15, "a profile")
    time.sleep(1)
    counts = {}
    for name in folded:
        with open(os.path.join(vol, name)) as f:
            for line in f:
                stack, _, n = line.rstrip("\n").rpartition(" ")
                if stack.startswith("split;"):
                    counts[stack] = counts.get(stack, 0) + int(n)
    named = {s: n for s, n in counts.items() if re.search(r";main;run;caller_[abc];leaf_[abc]$", s)}
    total = sum(counts.values())
    log(f"  split: {total} samples, {sum(named.values())} in named stacks, e.g.")
    for s, n in sorted(named.items(), key=lambda kv: -kv[1])[:3]:
        log(f"    {s} {n}")
    assert total and sum(named.values()) >= 0.8 * total, counts
    assert rx.wait_for(1, 30), "no OTLP request from the pod"
    attrs = [resource_attrs(rp) for req in rx.delivered() for rp in req.resource_profiles]
    node = run(["hostname"]).stdout.strip()
    assert attrs and all(a.get("service.name") == node and a.get("k8s.node.name") == node for a in attrs), attrs[:2]
    log(f"  OTLP: {len(rx.delivered())} requests, {len(attrs)} resources, service.name {node}")
    done.set()
    t.join()
    _, c, _ = manifests()
    for name, rows in usage.items():
        ctr = c[name.split("-", 1)[1]]
        assert len(rows) >= 3, f"too few usage samples of {name}"
        rates = sorted(100 * (b[1] - a[1]) / (b[0] - a[0]) for a, b in zip(rows, rows[1:]))
        whole = 100 * (rows[-1][1] - rows[0][1]) / (rows[-1][0] - rows[0][0])
        mib = max(r[2] for r in rows) / 2**20
        limit = podman_pod.quantity_bytes(ctr["resources"]["limits"]["memory"]) / 2**20
        log(f"  {name}: CPU {whole:.1f}% of one core over {rows[-1][0] - rows[0][0]:.0f}s (per second: median "
            f"{rates[len(rates) // 2]:.1f}%, max {rates[-1]:.1f}%); memory max {mib:.0f} MiB "
            f"(request {ctr['resources']['requests']['memory']}, limit {limit:.0f} MiB)")
        assert mib < limit, f"{name} near its memory limit"


def containers_report(names):
    """What became of each container (state, exit code, OOM kill) and the end of
    its log: the first thing to read when a pod test fails."""
    for name in names:
        r = subprocess.run(["podman", "inspect", "--format",
                            "{{.State.Status}} exit {{.State.ExitCode}} oom-killed {{.State.OOMKilled}}", name],
                           capture_output=True, text=True)
        if r.returncode != 0:
            continue
        logs = subprocess.run(["podman", "logs", "--tail", "15", name], capture_output=True, text=True)
        log(f"  {name}: {r.stdout.strip()}\n    " +
            (logs.stdout + logs.stderr).strip().replace("\n", "\n    "))


def cleanup():
    if "sampler" in state:
        state["sampler"].set()
    if "kube" in state:
        subprocess.run(["podman", "kube", "play", "--down", state["kube"]], capture_output=True)
    if "pod" in state:
        subprocess.run([GEN, "down"], capture_output=True)
    if "rx" in state:
        state["rx"].stop()


if __name__ == "__main__":
    run_tests([test_manifests_meet_their_security_levels, test_sidecar_selects_its_own_pod, test_image_builds_from_the_deb, test_kube_play,
               test_pod_with_host_pid_names_a_host_workload], cleanup=cleanup)
