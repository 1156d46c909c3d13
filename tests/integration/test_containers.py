#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Container names with the real podman: a container "web" (two busy shells) stalled by a
container "batch" (four spinners), both of an image imported here from busybox, under a cgroup
parent of the test's own; the agent watches that parent for cpu pressure. The incident names the
processes by container name and image (meta.container), the summary and `psidiag show` say
"container <name>, image <image>", every incident matches the schema, and `psidiag check` counts
both containers as podman's, named. Containers, the image
and the cgroups (cgroup2 and the v1 hierarchies podman's cgroupfs driver also makes) are removed
even on failure. Skips when podman or
/bin/busybox is missing, or podman cannot run a container here (the reason printed)."""

import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (ScratchCgroup, check, check_kernel, run, skip, start_watching, stop_agent,  # noqa: E402
                    validator, wait_lines)
from ctrutil import RUN_OPTS, Cleanup, build_image, need_podman, podman, start as ctr_start  # noqa: E402

PSIDIAG, WORKLOAD, SCHEMAS = sys.argv[1:4]
TAG = f"psidiag-it-names-{os.getpid()}"
IMAGE = f"localhost/{TAG}:1"
WEB, BATCH = f"web-{os.getpid()}", f"batch-{os.getpid()}"


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
    need_podman()
    validate = validator(SCHEMAS)
    tmp = tempfile.mkdtemp(prefix="psidiag-it-names-")
    agent = None
    try:
        with ScratchCgroup(mount, "names") as parent, Cleanup() as done:
            done.podman_under(parent, IMAGE, WEB, BATCH)
            try:
                build_image(tmp, IMAGE)
                opts = None
                for o in RUN_OPTS:
                    p = ctr_start(WEB, parent.rel, IMAGE, "while :; do :; done & while :; do :; done", o)
                    if p.returncode == 0:
                        opts = o
                        break
                    podman("rm", "-f", WEB)
                    why = p.stderr.strip()[-300:]
                if opts is None:
                    skip(f"podman cannot run a container here: {why}")
                agent, out, log = start_watching(PSIDIAG, tmp, parent, "names", "cpu some 50ms 2s", top=8)
                p = ctr_start(BATCH, parent.rel, IMAGE, "yes >/dev/null & yes >/dev/null & yes >/dev/null & yes >/dev/null",
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
                # `psidiag check` looks every container of the tree up as an incident would: both
                # of ours are podman's, and named.
                p = subprocess.run([PSIDIAG, "check"], capture_output=True, text=True, timeout=120)
                line = next((l for l in p.stdout.splitlines() if l.split()[1:2] == ["container-names"]), "")
                print(f"  check: {line}")
                m = re.search(r"\bpodman (\d+) of (\d+)\b", line)
                check(line.startswith("ok") and m and m.group(1) == m.group(2) and int(m.group(2)) >= 2,
                      f"psidiag check's container-names line: {line!r}\n{p.stdout}")
            finally:
                if agent is not None:
                    stop_agent(agent)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    run(main)
