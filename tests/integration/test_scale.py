#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Limits on the real kernel:
- scale: 1,000 cgroups x 3 resources armed on one agent (it raises its soft open-file limit to
  the hard one); a cpu hog in one of them still gets its incident.
- fd exhaustion: under a 64-descriptor limit the agent arms what fits, says so in one clear error
  plus one count, and keeps running.
- max_concurrent_samples 1 with three watches on one busy cgroup: one sample at a time, the
  dropped wakeups counted, and the next incident carries `suppressed`.
- max_incidents_per_minute 2: two incidents, then drops, one warning, counted in the metrics."""

import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ChildCgroup, ScratchCgroup, check, check_kernel, read_lines, run, stop_agent, validator  # noqa: E402

PSIDIAG, WORKLOAD, SCHEMAS = sys.argv[1:4]
N = 1000


def start(tmp, name, config, **kw):
    cfg = os.path.join(tmp, f"{name}.json")
    with open(cfg, "w") as f:
        json.dump(config, f)
    err_path = os.path.join(tmp, f"{name}.log")
    with open(err_path, "w") as err:
        agent = subprocess.Popen([PSIDIAG, "--config", cfg], stderr=err, **kw)
    return agent, err_path


def wait_log(err_path, pattern, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        m = re.search(pattern, open(err_path).read())
        if m:
            return m
        time.sleep(0.25)
    check(False, f"no {pattern!r} within {timeout} s:\n{open(err_path).read()[-3000:]}")


def metrics(path):
    return dict(l.rsplit(" ", 1) for l in open(path).read().splitlines() if not l.startswith("#"))


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
                with open(f"/proc/{agent.pid}/status") as f:
                    rss = int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))
                busy = ChildCgroup(top, f"c{N // 2}")  # exists already; only its tasks are ours
                try:
                    for _ in range(4):
                        busy.spawn([WORKLOAD, "spin", "psidiag-spin"])
                    deadline = time.time() + 20
                    while time.time() < deadline and not read_lines(out):
                        time.sleep(0.5)
                finally:
                    busy.kill_all()
                incidents = read_lines(out)
                check(incidents, f"no incident among {N} cgroups:\n{open(err_path).read()[-2000:]}")
                validate(incidents[0])
                check(incidents[0]["trigger"]["cgroup"] == "/" + busy.rel, f"{incidents[0]['trigger']}")
            finally:
                code = stop_agent(agent, 20)
            check(code == 0, f"exit {code}")
            print(f"scale: {3 * N} triggers on {N} cgroups armed, {fds} fds, RSS {rss / 1024:.1f} MiB; "
                  f"incident from {incidents[0]['trigger']['cgroup']}")

            # Out of descriptors: one error, one count, the rest armed, still running.
            def low_limit():
                resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
            agent, err_path = start(tmp, "fds", {"output": os.path.join(tmp, "fds.ndjson"),
                                                 "watch": watches[:40]}, preexec_fn=low_limit)
            try:
                m = wait_log(err_path, r"watching: (\d+) triggers? armed", 30)
                time.sleep(0.5)
                check(agent.poll() is None, "the agent died out of descriptors")
            finally:
                stop_agent(agent, 20)
            log = open(err_path).read()
            check(log.count("out of file descriptors (this process's limit, open-file limit 64)") == 1,
                  f"not one clear error:\n{log[-2000:]}")
            n = re.search(r"(\d+) of 120 triggers are not armed: out of file descriptors", log)
            check(n and int(n.group(1)) + int(m.group(1)) == 120 and int(m.group(1)) > 0, f"counts:\n{log[-2000:]}")
            print(f"fd limit 64: {m.group(1)} of 120 armed, {n.group(1)} not, one error")
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
            time.sleep(9)
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
