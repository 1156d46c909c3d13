#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Container names with the real podman: a container "web" (two busy shells) stalled by a
container "batch" (four spinners), both of an image imported here from busybox, under a cgroup
parent of the test's own; the agent watches that parent for cpu pressure. The incident names the
processes by container name and image (meta.container), the summary and `psidiag show` say
"container <name>, image <image>", and every incident matches the schema. Containers, the image
and the cgroups (cgroup2 and the v1 hierarchies podman's cgroupfs driver also makes) are removed
even on failure. Skips when podman or
/bin/busybox is missing, or podman cannot run a container here (the reason printed)."""

import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (Failed, ScratchCgroup, check, check_kernel, run, skip, start_watching, stop_agent,  # noqa: E402
                    validator, wait_lines)

PSIDIAG, WORKLOAD, SCHEMAS = sys.argv[1:4]
TAG = f"psidiag-it-names-{os.getpid()}"
IMAGE = f"localhost/{TAG}:1"
WEB, BATCH = f"web-{os.getpid()}", f"batch-{os.getpid()}"


def podman(*args, timeout=120):
    return subprocess.run(["podman", *args], capture_output=True, text=True, timeout=timeout)


def build_image(tmp):
    """A busybox rootfs as an image, offline."""
    root = os.path.join(tmp, "rootfs")
    os.makedirs(os.path.join(root, "bin"))
    shutil.copy("/bin/busybox", os.path.join(root, "bin", "busybox"))
    for applet in ("sh", "yes", "sleep"):
        os.symlink("busybox", os.path.join(root, "bin", applet))
    tar = os.path.join(tmp, "rootfs.tar")
    subprocess.run(["tar", "-C", root, "-cf", tar, "."], check=True)
    p = podman("import", tar, IMAGE)
    if p.returncode != 0:
        skip(f"podman import failed: {p.stderr.strip()[-300:]}")


# crun refuses hybrid hosts ("cgroups in hybrid mode not supported"); runc runs there. The default
# RLIMIT_NOFILE and RLIMIT_NPROC podman asks for may be above our hard limits.
LIMITS = ["--ulimit", "nofile=1024:1024", "--ulimit", "nproc=4096:4096"]
RUN_OPTS = [LIMITS, ["--runtime", "runc", *LIMITS]]


def start(name, parent, script, opts):
    return podman("run", "-d", *opts, "--name", name, "--cgroup-parent", "/" + parent, "--network", "none", IMAGE,
                  "/bin/sh", "-c", script)


def v1_cleanup(rel):
    """podman's cgroupfs driver makes the parent in every v1 hierarchy too."""
    for top in os.listdir("/sys/fs/cgroup"):
        path = os.path.join("/sys/fs/cgroup", top, rel)
        if top != "unified" and os.path.isdir(path):
            for d, _, _ in sorted(os.walk(path), key=lambda w: -len(w[0])):
                try:
                    os.rmdir(d)
                except OSError:
                    pass


def names_in(inc):
    """(name, image) of every process and cgroup the incident names that is in a container."""
    out = []
    c = inc.get("culprits") or {}
    for o in inc["most_delayed"] + c.get("processes", []) + c.get("cgroups", []) + inc.get("cgroups", []):
        ct = (o.get("meta") or {}).get("container")
        if ct:
            out.append((ct["name"], ct["image"]))
    return out


def main():
    mount = check_kernel()
    if not shutil.which("podman"):
        skip("podman is not installed (apt-get install podman)")
    if not os.path.exists("/bin/busybox"):
        skip("/bin/busybox is missing (apt-get install busybox-static): the test image is made of it")
    validate = validator(SCHEMAS)
    tmp = tempfile.mkdtemp(prefix="psidiag-it-names-")
    agent = None
    try:
        with ScratchCgroup(mount, "names") as parent:
            try:
                build_image(tmp)
                opts = None
                for o in RUN_OPTS:
                    p = start(WEB, parent.rel, "while :; do :; done & while :; do :; done", o)
                    if p.returncode == 0:
                        opts = o
                        break
                    podman("rm", "-f", WEB)
                    why = p.stderr.strip()[-300:]
                if opts is None:
                    skip(f"podman cannot run a container here: {why}")
                agent, out, log = start_watching(PSIDIAG, tmp, parent, "names", "cpu some 50ms 2s", top=8)
                p = start(BATCH, parent.rel, "yes >/dev/null & yes >/dev/null & yes >/dev/null & yes >/dev/null",
                          opts)
                check(p.returncode == 0, f"podman run {BATCH}: {p.stderr}")

                def both(lines):
                    seen = {n for inc in lines for n, _ in names_in(inc)}
                    return WEB in seen and BATCH in seen

                try:
                    lines = wait_lines(out, both, timeout=90)
                finally:
                    stop_agent(agent)
                check(lines, f"no incident within 90 s:\n{open(log).read()[-3000:]}")
                for inc in lines:
                    validate(inc)
                named = {n: img for inc in lines for n, img in names_in(inc)}
                check(WEB in named and BATCH in named,
                      f"incidents do not name both containers: {named}\n{[l['summary'] for l in lines]}")
                check(named[WEB] == IMAGE and named[BATCH] == IMAGE, f"images: {named}")
                ids = {(o.get("meta") or {}).get("container_runtime") for inc in lines for o in inc["most_delayed"]}
                check("podman" in ids, f"container_runtime: {ids}")
                summaries = [l["summary"] for l in lines]
                check(any(f"container {WEB}, image {IMAGE}" in s or f"container {BATCH}, image {IMAGE}" in s
                          for s in summaries), f"no summary names a container: {summaries}")
                shown = subprocess.run([PSIDIAG, "show", out], capture_output=True, text=True, timeout=60).stdout
                check(f"container {WEB}, image {IMAGE}" in shown or f"container {BATCH}, image {IMAGE}" in shown,
                      f"psidiag show names no container:\n{shown[-2000:]}")
                print(f"  named: {named}")
                print(f"  summary: {summaries[0]}")
            finally:
                if agent is not None:
                    stop_agent(agent)
                podman("rm", "-f", "-t", "0", WEB, BATCH)
                podman("rmi", "-f", IMAGE)
                parent.kill_all()
                v1_cleanup(parent.rel)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    run(main)
