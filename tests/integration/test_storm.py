#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A node-wide cpu stall wakes many watches at once (node-wide storms: agent/episode.h): 20 watched
cgroups, each with a bursty worker (workload blip), and spinners in another cgroup taking every
cpu. The incidents of the storm carry one `episode`; overlapping samples share one node culprit
pass, which the incidents say in `culprits.shared_pass` (the same id on several of them, with the
pass's `window` beginning no later than their own sample; a watch's later incident, which starts
from its recording, has a pass of its own from the recorded entry) and the metrics count
(psidiag_culprit_passes_shared_total); a later, separate stall is a new episode. Every cgroup and
process is removed whatever happens."""

import json
import os
import re
import sys
import tempfile
import time

from common import (ScratchCgroup, check, check_kernel, launch_agent, metric, read_lines, run,
                    stop_agent, validator, wait_lines, wait_log)

PSIDIAG, WORKLOAD, SCHEMAS = sys.argv[1:4]
WATCHED = 20
TRIGGER = "cpu some 50ms 2s"  # two windows (4 s) of quiet end an episode
QUIET_S = 6  # the test waits this long without a wakeup: more than two windows


def counters(path):
    """The wakeup, sample and incident counters of the agent's metrics file: they move with every
    wakeup and every sample's end, whatever its verdict."""
    try:
        text = open(path).read()
    except FileNotFoundError:
        return None
    return sorted(re.findall(r"^psidiag_(?:wakeups_total|samples_total|incidents_written_total)\b.*$", text, re.M))


def wait_quiet(prom, quiet_s, timeout=90):
    """Waits until the counters have stood still for quiet_s; returns how long they stood."""
    deadline = time.time() + timeout
    last, since = counters(prom), time.time()
    while time.time() - since < quiet_s:
        check(time.time() < deadline, f"no {quiet_s} s without a wakeup within {timeout} s of the stall's end")
        time.sleep(0.2)
        now = counters(prom)
        if now != last:
            last, since = now, time.time()
    return time.time() - since


def timeline(incidents):
    """One line an incident, for a failure's message."""
    return "\n".join(f"{i['time']} {i['trigger']['cgroup']} {i['episode']} {i['window']['basis']} "
                     f"{i['window']['start']} stall {i['window']['stall_us']} us" for i in incidents)


def stall_for(mount, out, since, want, timeout=90):
    """Spinners in a cgroup of their own (3 threads a cpu) until want incidents have been written
    after since; returns those incidents, all of them written while the spinners ran."""
    with ScratchCgroup(mount, "storm-stall") as stall:
        stall.spawn([WORKLOAD, "spin", "psidiag-spin", str(3 * os.cpu_count())])
        lines = wait_lines(out, lambda l: len(l) - since >= want, timeout=timeout)
    check(len(lines) - since >= want, f"only {len(lines) - since} incidents under the stall within {timeout} s")
    return lines[since:]


def main():
    mount = check_kernel()
    validate = validator(SCHEMAS)
    cgs = [ScratchCgroup(mount, f"storm{i}") for i in range(WATCHED)]
    agent = None
    try:
        for cg in cgs:
            cg.__enter__()
            cg.spawn([WORKLOAD, "blip", "psidiag-blip"])
        with tempfile.TemporaryDirectory() as tmp:
            a = launch_agent(PSIDIAG, tmp, "storm", {
                "metrics_file": os.path.join(tmp, "storm.prom"), "sample_ms": 1000, "cooldown_ms": 0,
                "max_concurrent_samples": WATCHED, "max_incidents_per_minute": 0,
                "watch": [{"cgroup": cg.rel, "triggers": [TRIGGER]} for cg in cgs]}, ["--enable-delayacct"])
            agent, out, prom, log = a.proc, a.out, a.prom, a.log
            try:
                wait_log(log, "watching:", 60, agent)
                time.sleep(2)

                # The storm.
                first = stall_for(mount, out, len(read_lines(out)), want=2 * WATCHED // 3)
                for i in first:
                    validate(i)
                episodes = {i["episode"] for i in first}
                check(len(episodes) == 1, f"one stall, {len(episodes)} episodes: {sorted(episodes)}")
                passes = {}
                for i in first:
                    c = i["culprits"]
                    check(c is not None and c["scope"] == "/", f"no node culprits: {c}")
                    # A watch's later incident starts from its recording, with a pass of its own
                    # from the recorded entry.
                    if i["window"]["basis"] == "recorded":
                        check(c["shared_pass"] is None and c["window"]["start"] <= i["window"]["start"],
                              f"a recorded window's pass: {c['shared_pass']} {c['window']} {i['window']}")
                        continue
                    check(c["shared_pass"], f"a cgroup's node pass has no id: {c}")
                    check(c["window"]["start"] <= i["sample"]["start"],
                          f"the pass began after the sample: {c['window']} {i['sample']['start']}")
                    passes.setdefault(c["shared_pass"], []).append(i)
                shared = max(len(v) for v in passes.values())
                check(shared >= 2, f"no culprit pass served two incidents: {len(passes)} passes for {len(first)}")
                # Every incident of a pass reports the same measurement, each with its own victims.
                for v in passes.values():
                    check(len({json.dumps(i["culprits"]["total"]) for i in v}) == 1, "one pass, different totals")
                    check(len({i["culprits"]["window"]["start"] for i in v}) == 1, "one pass, different windows")
                check(metric(prom, "psidiag_culprit_passes_shared_total") >= 1, "the metrics count no shared pass")
                check(metric(prom, "psidiag_culprit_passes_total") < metric(prom, "psidiag_samples_total"),
                      "as many culprit passes as samples")
                print(f"storm: {len(first)} incidents, one episode, {len(passes)} culprit passes "
                      f"(at most {shared} incidents on one)")

                # Quiet: the samples in flight end, the triggers' last windows with stall in them fire,
                # then more than two windows pass without a wakeup or a sample's end.
                quiet = wait_quiet(prom, QUIET_S)
                n = len(read_lines(out))

                second = stall_for(mount, out, n, want=3)
                again = {i["episode"] for i in second}
                check(not again & episodes,
                      f"a separate stall after {quiet:.1f} s without a wakeup kept the episode {episodes}:\n"
                      + timeline(read_lines(out)))
                check(len(again) == 1, f"the second stall has {len(again)} episodes")
                check(metric(prom, "psidiag_episodes_total") >= 2, "the metrics count fewer than two episodes")
                print(f"second stall: {len(second)} incidents, a new episode")
            finally:
                # Stopped before its directory goes: it writes its metrics and output there.
                stop_agent(agent)

    finally:
        if agent and agent.poll() is None:
            stop_agent(agent)
        for cg in cgs:
            cg.__exit__(None, None, None)


run(main)
