#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The shipped deployment files hold together: the Kubernetes manifest parses, asks for exactly
the host access and capabilities docs/deploy.md documents, and its ConfigMap config validates with
psidiag; the Fluent Bit and Vector examples take the incident's `time` as the timestamp (the
format is checked against a real incident) and keep high-cardinality ids out of labels. (Fluent
Bit and Vector themselves are not packaged in Debian 12, so the pipelines are not run here.)"""

import datetime
import json
import os
import re
import subprocess
import sys
import tempfile
import tomllib

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import check, run  # noqa: E402

PSIDIAG = sys.argv[1]
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
DIST = os.path.join(ROOT, "dist")
HIGH_CARDINALITY = ("id", "pid", "cgroup", "comm", "cmdline", "boot_id", "time")


def main():
    with open(os.path.join(DIST, "kubernetes", "psidiag.yaml")) as f:
        docs = {d["kind"]: d for d in yaml.safe_load_all(f)}
    check(set(docs) == {"ConfigMap", "DaemonSet"}, f"manifest kinds {set(docs)}")
    spec = docs["DaemonSet"]["spec"]["template"]["spec"]
    check(spec["hostPID"] is True and spec["hostNetwork"] is True, "hostPID/hostNetwork")
    c = spec["containers"][0]
    sc = c["securityContext"]
    check(sc["capabilities"]["drop"] == ["ALL"], "capabilities not dropped first")
    check(set(sc["capabilities"]["add"]) == {"NET_ADMIN", "SYS_RESOURCE", "SYS_NICE", "IPC_LOCK", "SYSLOG"},
          f"capabilities {sc['capabilities']['add']}")
    check(sc.get("privileged") is False and sc.get("allowPrivilegeEscalation") is False, "privileged")
    # The runtimes' default AppArmor profiles refuse writes under /proc: node-wide triggers.
    check(sc.get("appArmorProfile") == {"type": "Unconfined"}, f"appArmorProfile {sc.get('appArmorProfile')}")
    ann = docs["DaemonSet"]["spec"]["template"]["metadata"].get("annotations") or {}
    check(ann.get(f"container.apparmor.security.beta.kubernetes.io/{c['name']}") == "unconfined",
          f"the AppArmor annotation for clusters before 1.30: {ann}")
    mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
    check(not mounts["/sys/fs/cgroup"].get("readOnly"), "the cgroup mount must be writable to arm triggers")
    check(mounts["/dev/kmsg"].get("readOnly") is True, "/dev/kmsg")
    check("/var/log/psidiag" in mounts and "/etc/psidiag" in mounts, f"mounts {list(mounts)}")
    # Where the runtimes keep the names (containers/containers.c), read-only: without them an agent in
    # a container names no container (the VM's agent-in-container case, tests/vm/containers.py).
    # containerd's meta.db (plain containerd's images) and podman's libpod state (its pods) too.
    for path in ("/var/lib/docker/containers", "/run/containerd/io.containerd.runtime.v2.task",
                 "/run/containers/storage", "/var/lib/containers/storage/overlay-containers",
                 "/var/lib/containerd/io.containerd.metadata.v1.bolt", "/var/lib/containers/storage/libpod"):
        check(mounts.get(path, {}).get("readOnly") is True, f"{path} not mounted read-only: {list(mounts)}")
    check(c["args"] == ["--config", "/etc/psidiag/config.json"], f"args {c['args']}")
    # The image the manifest names is this version's.
    version = subprocess.run([PSIDIAG, "--version"], capture_output=True, text=True, timeout=30).stdout.split()[-1]
    check(c["image"].rsplit(":", 1)[-1] == version, f"the manifest's image {c['image']}, not psidiag {version}")

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "config.json")
        with open(path, "w") as f:
            f.write(docs["ConfigMap"]["data"]["config.json"])
        p = subprocess.run([PSIDIAG, "validate", path], capture_output=True, text=True, timeout=30)
        check(p.returncode == 0, f"the ConfigMap's config does not validate: {p.stderr}")
        print(p.stdout, end="")
    p = subprocess.run([PSIDIAG, "validate", os.path.join(DIST, "config.json")], capture_output=True, text=True)
    check(p.returncode == 0, f"dist/config.json does not validate: {p.stderr}")

    # The timestamp format of both pipelines against a real incident's time.
    with open(os.path.join(ROOT, "schemas", "examples", "incident-pressure.json")) as f:
        t = json.loads(f.readline())["time"]
    parsers = open(os.path.join(DIST, "logging", "parsers-psidiag.conf")).read()
    check(re.search(r"Time_Key\s+time\b", parsers), "Fluent Bit does not take `time`")
    fmt = re.search(r"Time_Format\s+(\S+)", parsers).group(1)
    # Fluent Bit's %L is the fraction of a second; strptime's is %f.
    datetime.datetime.strptime(t, fmt.replace("%L", "%f"))
    fb = open(os.path.join(DIST, "logging", "fluent-bit.conf")).read()
    labels = re.search(r"Labels\s+(.+)", fb).group(1)
    for key in HIGH_CARDINALITY:
        check(not re.search(rf"\b{key}\b\s*=|\['{key}'\]", labels), f"Fluent Bit label uses {key}: {labels}")
    check(re.search(r"Buffer_Max_Size\s+\d+M", fb), "Fluent Bit would skip long incident lines")

    with open(os.path.join(DIST, "logging", "vector.toml"), "rb") as f:
        vec = tomllib.load(f)
    check(vec["sources"]["psidiag"]["max_line_bytes"] >= 1 << 20, "Vector would cut long incident lines")
    remap = vec["transforms"]["psidiag_incident"]["source"]
    check("parse_timestamp!(string!(.time)" in remap and ".timestamp" in remap, "Vector does not take `time`")
    vlabels = vec["sinks"]["loki"]["labels"]
    for name, value in vlabels.items():
        for key in HIGH_CARDINALITY:
            check(not re.search(rf"\b{key}\b", value) or value == "{{ host.hostname }}",
                  f"Vector label {name} uses {key}: {value}")
    print(f"manifest ok; timestamps parse ({t}); labels: {labels} / {sorted(vlabels)}")


run(main)
