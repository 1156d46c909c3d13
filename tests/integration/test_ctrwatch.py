#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A watch by container name with the real podman: the agent starts with one watch
`"container": "<unique>-web*"` (cpu some 50ms 2s) while no such container exists; then a container
"<unique>-web-1" (two busy shells) and a stalling neighbour "<unique>-batch" (four spinners) start,
both of an image imported here from busybox, under a cgroup parent of the test's own. The agent arms
the web container's own cgroup as it appears (and never the neighbour's), writes a pressure incident
whose trigger is that cgroup and which names the container (meta.container), every incident
matching the schema. A reload (SIGHUP) keeps that watch and arms a new one by image on both
containers; when the container is removed its watches are disarmed. The metrics' watch label
is the selector, never the container's name. Containers, the image and the cgroups are removed even
on failure. Skips when podman or /bin/busybox is missing, or podman cannot run a container here."""

import json
import os
import re
import shutil
import signal
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (ScratchCgroup, check, check_kernel, launch_agent, metric, run, stop_agent, validator,  # noqa: E402
                    wait_for, wait_lines, wait_log)
from ctrutil import Cleanup, build_image, need_podman, podman, run_opts, start  # noqa: E402

PSIDIAG, WORKLOAD, SCHEMAS = sys.argv[1:4]
UNIQUE = f"psidiag-it-cw{os.getpid()}"
IMAGE = f"localhost/{UNIQUE}:1"
WEB, BATCH = f"{UNIQUE}-web-1", f"{UNIQUE}-batch"
SELECTOR = f"{UNIQUE}-web*"


def config(tmp, more):
    return {"output": os.path.join(tmp, "ctrwatch.ndjson"), "sample_ms": 1000, "cooldown_ms": 0,
            "metrics_file": os.path.join(tmp, "ctrwatch.prom"),
            "watch": [{"container": SELECTOR, "triggers": ["cpu some 50ms 2s"], "top": 8}, *more]}


def start_agent(tmp):
    a = launch_agent(PSIDIAG, tmp, "ctrwatch", config(tmp, []), ["--enable-delayacct"])
    return a.proc, a.out, a.log, a.prom, a.cfg


def container_of(inc):
    """The names of the containers the incident's most delayed processes are in."""
    return {((o.get("meta") or {}).get("container") or {}).get("name") for o in inc["most_delayed"]}


def main():
    mount = check_kernel()
    need_podman()
    validate = validator(SCHEMAS)
    tmp = tempfile.mkdtemp(prefix="psidiag-it-ctrwatch-")
    agent = None
    try:
        with ScratchCgroup(mount, "ctrwatch") as parent, Cleanup() as done:
            done.podman_under(parent, IMAGE, WEB, BATCH)
            try:
                build_image(tmp, IMAGE)
                opts = run_opts(parent.rel, IMAGE)
                agent, out, log, prom, cfg = start_agent(tmp)
                wait_log(log, re.escape(f"no container matches container={SELECTOR} yet"), 60, agent)
                wait_log(log, r"watching: 0 triggers armed on 0 watches", 30, agent)

                p = start(WEB, parent.rel, IMAGE, "while :; do :; done & while :; do :; done", opts)
                check(p.returncode == 0, f"podman run {WEB}: {p.stderr}")
                cid = podman("inspect", "--format", "{{.Id}}", WEB).stdout.strip()
                check(re.fullmatch(r"[0-9a-f]{64}", cid), f"podman inspect {WEB}: {cid!r}")
                armed = wait_log(log, r"container (\S+) \(podman ([0-9a-f]{12}), image (\S+)\) matches "
                                 + re.escape(f"container={SELECTOR}") + r": arming (\S+)", 30, agent)
                check(armed.group(1) == WEB and cid.startswith(armed.group(2)) and armed.group(3) == IMAGE,
                      f"armed: {armed.group(0)}")
                cgroup = armed.group(4)
                check(cgroup.startswith(parent.rel + "/") and cid in cgroup, f"armed on {cgroup}, not {WEB}'s")
                print(f"  armed: {armed.group(0)}")

                p = start(BATCH, parent.rel, IMAGE, "yes >/dev/null & yes >/dev/null & yes >/dev/null & "
                          "yes >/dev/null", opts)
                check(p.returncode == 0, f"podman run {BATCH}: {p.stderr}")

                def of_web(lines):
                    return [inc for inc in lines if inc["trigger"]["cgroup"] == "/" + cgroup]

                lines = wait_lines(out, lambda ls: of_web(ls), timeout=90)
                check(lines, f"no incident of {WEB}'s cgroup within 90 s:\n{open(log).read()[-3000:]}")
                for inc in lines:
                    validate(inc)
                    check(inc["trigger"]["cgroup"] == "/" + cgroup,
                          f"an incident of another cgroup: {inc['trigger']['cgroup']} (the neighbour is not watched)")
                inc = of_web(lines)[0]
                check(WEB in container_of(inc), f"the incident does not name {WEB}: {container_of(inc)}\n"
                      f"{inc['summary']}")
                print(f"  summary: {inc['summary']}")
                check(f"matches container={SELECTOR}: arming {parent.rel}/" not in
                      open(log).read().replace(armed.group(0), ""), "another container was armed")

                series = wait_for("the incident in the metrics",
                                  lambda: metric(prom, f'psidiag_incidents_total{{watch="container={SELECTOR}",'
                                                 'type="pressure",resource="cpu"}'), 30, log=log)
                check(series >= 1, f"metrics: {series}")
                check(WEB not in open(prom).read(), "a container's name is a metrics label")

                # A reload keeps the watch of the same selector, and arms a new one by image on both
                # containers (the image is this test's own).
                with open(cfg, "w") as f:
                    json.dump(config(tmp, [{"image": IMAGE, "triggers": ["cpu some 1s 2s"]}]), f)
                agent.send_signal(signal.SIGHUP)
                wait_log(log, r"reloaded .*: 3 triggers armed on 3 watches \(1 kept, 0 closed, 2 new\)", 30, agent)
                print("  reloaded: the container watch kept, the image one armed on both containers")

                p = podman("rm", "-f", "-t", "0", WEB)
                check(p.returncode == 0, f"podman rm {WEB}: {p.stderr}")
                wait_log(log, re.escape(f"cgroup {cgroup} was removed: its triggers are closed"), 30, agent)
                print(f"  disarmed when {WEB} ended")
            finally:
                if agent is not None:
                    stop_agent(agent)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    run(main)
