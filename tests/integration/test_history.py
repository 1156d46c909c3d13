#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""No false incident from a cgroup's stall history (kernel-facts.md: trigger-history).

A trigger armed on a cgroup that stalled before it was armed fires on that old stall at the first
new stall the kernel sees, however small. The test builds seconds of cpu stall in a scratch
cgroup, leaves a quiet service in it (three processes doing 2 ms of work every 20 ms: a little new
stall, far below the threshold), then starts the agent on it: three windows and more without an
incident, the kernel's firing counted as below_threshold in the metrics. Then a real neighbour
(four spinners) joins the cgroup, and its incident comes."""

import json
import os
import re
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (ScratchCgroup, check, check_kernel, read_lines, run, stop_agent,  # noqa: E402
                    start_watching, wait_lines)

PSIDIAG, WORKLOAD, SCHEMAS = sys.argv[1:4]
THRESHOLD_US, WINDOW_S = 500000, 2
TRIGGER = f"cpu some {THRESHOLD_US // 1000}ms {WINDOW_S}s"


def some_total(cg):
    with open(os.path.join(cg.path, "cpu.pressure")) as f:
        return int(f.readline().split("total=")[1])


def wakeups(prom):
    """psidiag_wakeups_total by verdict, from the metrics textfile."""
    try:
        text = open(prom).read()
    except FileNotFoundError:
        return {}
    return {m[1]: int(m[2]) for m in re.finditer(r'psidiag_wakeups_total\{verdict="(\w+)"\} (\d+)', text)}


def main():
    mount = check_kernel()
    ncpu = os.cpu_count() or 2

    with ScratchCgroup(mount, "history") as cg, tempfile.TemporaryDirectory() as tmp:
        # Seconds of stall history: more spinners than cpus, until some= holds 3 s.
        hogs = [cg.spawn([WORKLOAD, "spin", "psidiag-old"]) for _ in range(ncpu + 2)]
        deadline = time.time() + 60
        while some_total(cg) < 3000000:
            check(time.time() < deadline, f"no stall history after 60 s: {some_total(cg)} us")
            time.sleep(0.1)
        for h in hogs:
            h.kill()
            h.wait()
        history = some_total(cg)

        # The quiet service, and the agent armed on the cgroup.
        for _ in range(ncpu + 1):
            cg.spawn([WORKLOAD, "tick", "psidiag-quiet"])
        prom = os.path.join(tmp, "history.prom")
        agent, out, log = start_watching(PSIDIAG, tmp, cg, "history", TRIGGER, metrics_file=prom)
        try:
            armed_at, armed_total = time.time(), some_total(cg)
            # Three windows at least; up to ten more seconds for the kernel's firing on the
            # history (it comes at the first averaging update that sees new stall).
            while True:
                elapsed = time.time() - armed_at
                check(not read_lines(out), f"an incident {elapsed:.1f} s after arming on a quiet cgroup with "
                      f"{history / 1e6:.1f} s of stall history (new stall {(some_total(cg) - armed_total) / 1000:.0f} "
                      f"ms): {read_lines(out)[:1]}")
                check(agent.poll() is None, f"the agent exited:\n{open(log).read()}")
                below = wakeups(prom).get("below_threshold", 0)
                if elapsed >= 3 * WINDOW_S and (below >= 1 or elapsed >= 3 * WINDOW_S + 10):
                    break
                time.sleep(0.2)
            quiet_growth = some_total(cg) - armed_total
            check(quiet_growth < THRESHOLD_US, f"the quiet service stalled {quiet_growth} us since arming: the "
                  f"test's premise (less than the threshold) does not hold on this machine")
            if below:
                print(f"quiet: the kernel fired on {history / 1e6:.1f} s of history with {quiet_growth / 1000:.0f} ms "
                      f"of new stall; counted below_threshold {below}x, no incident in {elapsed:.1f} s")
            else:
                print(f"quiet: the kernel did not fire on the history in {elapsed:.1f} s (new stall "
                      f"{quiet_growth / 1000:.0f} ms); no incident")

            # A real neighbour: its incident must come.
            for _ in range(ncpu + 2):
                cg.spawn([WORKLOAD, "spin", "psidiag-hog"])
            t = time.time()
            lines = wait_lines(out, timeout=60)
            check(lines, f"no incident within 60 s of the neighbour's start:\n{open(log).read()[-3000:]}")
            i = lines[0]
            check(i["trigger"]["resource"] == "cpu" and i["trigger"]["threshold_us"] == THRESHOLD_US,
                  f"trigger: {i['trigger']}")
            check(i["sample"]["stall_us"] > 0, f"a real incident with no stall in its sample: {i['sample']}")
            comms = [p["comm"] for p in i["most_delayed"]]
            check("psidiag-hog" in comms, f"the neighbour is not among the most delayed: {comms}")
            print(f"neighbour: incident {time.time() - t:.1f} s after it started, most delayed {comms[:3]}")
        finally:
            stop_agent(agent)
        check(wakeups(prom).get("sample", 0) >= 1, f"metrics: {wakeups(prom)}")


run(main)
