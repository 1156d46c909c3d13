#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Limits on the real kernel:
- scale: 1,000 cgroups x 3 resources armed on one agent (it raises its soft open-file limit to
  the hard one) with one descriptor per trigger; a cpu hog in one of them still gets its
  incident; a reload that closes 2,000 of the triggers keeps the other 1,000 working; and the
  agent stops cleanly (the benchmark times the reload and the stop).
- fd exhaustion: under a 96-descriptor limit the agent arms what fits, says so in one clear error
  plus one count, and keeps running.
- max_concurrent_samples 1 with three watches on one busy cgroup: one sample at a time, the
  dropped wakeups counted, and the next incident carries `suppressed`.
- max_incidents_per_minute 2: two incidents, then drops, one warning, counted in the metrics."""

import collections
import json
import os
import re
import resource
import signal
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (ChildCgroup, ScratchCgroup, check, check_kernel, launch_agent, metric, read_lines, run, stop_agent,  # noqa: E402
                    validator, wait_lines, wait_log)

PSIDIAG, WORKLOAD, SCHEMAS = sys.argv[1:4]
N = 1000


def start(tmp, name, config, **kw):
    a = launch_agent(PSIDIAG, tmp, name, config, **kw)
    return a.proc, a.log


def metrics(path):
    return dict(l.rsplit(" ", 1) for l in open(path).read().splitlines() if not l.startswith("#"))


def fd_links(pid):
    """What pid's fds point at (the last part of each link), counted: an fd closed between the
    listing and its readlink (a sample in flight ending) is left out."""
    links = collections.Counter()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            links[os.readlink(f"/proc/{pid}/fd/{fd}").split(":")[0].split("/")[-1]] += 1
        except FileNotFoundError:
            pass
    return links


def main():
    mount = check_kernel()
    validate = validator(SCHEMAS)
    tmp = tempfile.mkdtemp(prefix="psidiag-it-")
    with ScratchCgroup(mount, "scale") as top:
        kids = [f"{top.rel}/c{i}" for i in range(N)]
        for k in kids:
            os.mkdir(os.path.join(mount, k))
        try:
            # 1,000 x 3 armed, and an incident from one of them.
            out = os.path.join(tmp, "scale.ndjson")
            watches = [{"cgroup": k, "triggers": ["cpu some 200ms 2s", "memory some 500ms 2s", "io some 500ms 2s"]}
                       for k in kids]
            agent, err_path = start(tmp, "scale", {"output": out, "sample_ms": 200, "cooldown_ms": 0,
                                                   "watch": watches})
            try:
                m = wait_log(err_path, r"watching: (\d+) triggers armed on (\d+) watches", 60)
                check(int(m.group(1)) == 3 * N and int(m.group(2)) == N, f"armed: {m.group(0)}")
                fds = len(os.listdir(f"/proc/{agent.pid}/fd"))
                # One descriptor per trigger and a few of the agent's own: no epoll instance per
                # trigger, no cgroup directory held open.
                check(fds <= 3 * N + 32, f"{fds} fds for {3 * N} triggers")
                with open(f"/proc/{agent.pid}/status") as f:
                    rss = int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))
                busy = ChildCgroup(top, f"c{N // 2}")  # exists already; only its tasks are ours
                try:
                    for _ in range(4):
                        busy.spawn([WORKLOAD, "spin", "psidiag-spin"])
                    incidents = wait_lines(out, timeout=30)
                finally:
                    busy.kill_all()
                check(incidents, f"no incident among {N} cgroups:\n{open(err_path).read()[-2000:]}")
                validate(incidents[0])
                check(incidents[0]["trigger"]["cgroup"] == "/" + busy.rel, f"{incidents[0]['trigger']}")
                first = incidents[0]["trigger"]["cgroup"]

                # A reload that drops 2,000 triggers (memory and io) and keeps 1,000 (cpu), while a
                # kept cgroup gets busy: its incident still comes, and the closes do not hold up
                # the loop (the benchmark times it).
                with open(os.path.join(tmp, "scale.json"), "w") as f:
                    json.dump({"output": out, "sample_ms": 200, "cooldown_ms": 0,
                               "watch": [{"cgroup": k, "triggers": ["cpu some 200ms 2s"]} for k in kids]}, f)
                busy = ChildCgroup(top, f"c{N // 4}")
                before = len(read_lines(out))
                agent.send_signal(signal.SIGHUP)
                t = time.time()
                try:
                    for _ in range(4):
                        busy.spawn([WORKLOAD, "spin", "psidiag-spin"])
                    incidents = wait_lines(out, lambda ls: any(i["trigger"]["cgroup"] == "/" + busy.rel
                                                               for i in ls[before:]), timeout=60)
                    reload_s = time.time() - t
                finally:
                    busy.kill_all()
                check(any(i["trigger"]["cgroup"] == "/" + busy.rel for i in incidents[before:]),
                      f"no incident from the kept cgroup after the reload:\n{open(err_path).read()[-2000:]}")
                wait_log(err_path, rf"reloaded .*: {N} triggers armed on {N} watches \({N} kept, {2 * N} closed, 0 new\)",
                         30)
                links = fd_links(agent.pid)
                fds_after = sum(links.values())
                # One per trigger, the agent's own, and what the recording and samples in flight hold
                # (bounded by max_concurrent_samples, 4: a recording its cgroup's directory and exit
                # listener, a sample those and its culprit scope's directories).
                check(fds_after <= N + 32 + 4 * 2 + 4 * 4,
                      f"{fds_after} fds for {N} triggers after the reload: {links.most_common(12)}")
            finally:
                t = time.time()
                code = stop_agent(agent, 60)
                stop_s = time.time() - t
            check(code == 0, f"exit {code}")
            print(f"scale: {3 * N} triggers on {N} cgroups armed, {fds} fds, RSS {rss / 1024:.1f} MiB; "
                  f"incident from {first}; reload dropping {2 * N}: incident of a kept cgroup "
                  f"{reload_s:.1f} s after SIGHUP, {fds_after} fds; stopped in {stop_s:.2f} s")

            # Out of descriptors: one error, one count, the rest armed, still running.
            def low_limit():
                resource.setrlimit(resource.RLIMIT_NOFILE, (96, 96))
            agent, err_path = start(tmp, "fds", {"output": os.path.join(tmp, "fds.ndjson"), "sample_ms": 200,
                                                 "watch": watches[:40]}, preexec_fn=low_limit)
            try:
                m = wait_log(err_path, r"watching: (\d+) triggers? armed", 30)
                # Triggers took every descriptor they could: a sample still opens its cgroup.
                busy = ChildCgroup(top, "c0")  # the first watch: armed
                try:
                    for _ in range(4):
                        busy.spawn([WORKLOAD, "spin", "psidiag-spin"])
                    incidents = wait_lines(os.path.join(tmp, "fds.ndjson"), timeout=30)
                finally:
                    busy.kill_all()
                check(agent.poll() is None, "the agent died out of descriptors")
                check(incidents and incidents[0]["trigger"]["cgroup"] == "/" + busy.rel,
                      f"no incident at the descriptor limit:\n{open(err_path).read()[-2000:]}")
            finally:
                stop_agent(agent, 20)
            log = open(err_path).read()
            check(log.count("out of file descriptors (this process's limit, open-file limit 96)") == 1,
                  f"not one clear error:\n{log[-2000:]}")
            n = re.search(r"(\d+) of 120 triggers are not armed: out of file descriptors", log)
            check(n and int(n.group(1)) + int(m.group(1)) == 120 and int(m.group(1)) > 0, f"counts:\n{log[-2000:]}")
            print(f"fd limit 96: {m.group(1)} of 120 armed, {n.group(1)} not, one error; an incident still comes")
        finally:
            for k in kids:
                os.rmdir(os.path.join(mount, k))

    with ScratchCgroup(mount, "limits") as cg:
        for _ in range(4):
            cg.spawn([WORKLOAD, "spin", "psidiag-spin"])
        # One sample at a time for three watches that fire together.
        out = os.path.join(tmp, "cap.ndjson")
        prom = os.path.join(tmp, "cap.prom")
        agent, err_path = start(tmp, "cap", {
            "output": out, "sample_ms": 1500, "cooldown_ms": 0, "max_concurrent_samples": 1, "metrics_file": prom,
            "watch": [{"cgroup": cg.rel, "triggers": ["cpu some 50ms 2s"]} for _ in range(3)]})
        try:
            deadline = time.time() + 30
            while time.time() < deadline and len(read_lines(out)) < 3:
                time.sleep(0.5)
        finally:
            stop_agent(agent, 20)
        incidents = read_lines(out)
        check(len(incidents) >= 2, f"{len(incidents)} incidents:\n{open(err_path).read()[-2000:]}")
        for inc in incidents:
            validate(inc)
        check(any(inc["suppressed"] > 0 for inc in incidents[1:]), f"suppressed: {[i['suppressed'] for i in incidents]}")
        # Never two samples at once: each incident's sample starts after the previous one ended.
        starts = [i["sample"]["start"] for i in incidents]
        check(starts == sorted(starts), "samples out of order")
        met = metrics(prom)
        check(int(met['psidiag_incidents_suppressed_total{reason="capacity"}']) >= 1, f"metrics {met}")
        print(f"max_concurrent_samples 1: {len(incidents)} incidents, suppressed {[i['suppressed'] for i in incidents]}")

        # Two incidents a minute at most.
        out = os.path.join(tmp, "rate.ndjson")
        prom = os.path.join(tmp, "rate.prom")
        agent, err_path = start(tmp, "rate", {
            "output": out, "sample_ms": 100, "cooldown_ms": 0, "max_incidents_per_minute": 2, "metrics_file": prom,
            "watch": [{"cgroup": cg.rel, "triggers": ["cpu some 50ms 2s"]} for _ in range(3)]})
        try:
            # Until two more are dropped, within 45 s of the start: a minute from the first incident
            # has not passed, so the limit still holds at two.
            deadline = time.time() + 45
            while time.time() < deadline and metric(prom, 'psidiag_incidents_suppressed_total{reason="rate_limit"}') < 2:
                time.sleep(0.25)
        finally:
            stop_agent(agent, 20)
        incidents = read_lines(out)
        log = open(err_path).read()
        met = metrics(prom)
        check(len(incidents) == 2, f"{len(incidents)} incidents with a limit of 2 a minute")
        check(log.count("max_incidents_per_minute") == 1, f"warnings:\n{log}")
        dropped = int(met['psidiag_incidents_suppressed_total{reason="rate_limit"}'])
        check(dropped >= 2, f"metrics {met}")
        print(f"max_incidents_per_minute 2: 2 incidents, {dropped} dropped and counted")


run(main)
