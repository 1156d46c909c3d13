#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The agent on the real kernel: a cgroup trigger fires under a cpu hog, the incident names a
spinner first with cpu delay, sleepers rank below, the line validates; removing the watched cgroup
leaves the agent running; SIGTERM stops it with exit 0."""

import json
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ScratchCgroup, check, check_kernel, read_lines, run, validator  # noqa: E402

PSIDIAG, WORKLOAD, SCHEMAS = sys.argv[1:4]


def stop(agent):
    if agent.poll() is None:
        agent.send_signal(signal.SIGTERM)
        try:
            return agent.wait(10)
        except subprocess.TimeoutExpired:
            agent.kill()
            agent.wait()
            return None
    return agent.returncode


def main():
    mount = check_kernel()
    validate = validator(SCHEMAS)
    tmp = tempfile.mkdtemp(prefix="psidiag-it-")
    out = os.path.join(tmp, "incidents.ndjson")
    err_path = os.path.join(tmp, "agent.log")

    with ScratchCgroup(mount, "agent") as cg:
        config = {
            "output": out, "top": 8, "sample_ms": 600, "cooldown_ms": 1000,
            "watch": [{"cgroup": cg.rel, "triggers": ["cpu some 50ms 2s"]}],
        }
        cfg_path = os.path.join(tmp, "config.json")
        with open(cfg_path, "w") as f:
            json.dump(config, f)

        with open(err_path, "w") as err:
            agent = subprocess.Popen([PSIDIAG, "--config", cfg_path, "--enable-delayacct", "--log-level", "debug"],
                                     stdout=subprocess.DEVNULL, stderr=err)
        try:
            time.sleep(0.5)
            check(agent.poll() is None, f"the agent exited at start: {open(err_path).read()}")
            # Two cores: four spinners make the cgroup wait for cpu; two sleepers wake every 50 ms.
            spinners = [cg.spawn([WORKLOAD, "spin", "psidiag-spin"]) for _ in range(4)]
            sleepers = [cg.spawn([WORKLOAD, "sleep", "psidiag-nap"]) for _ in range(2)]
            spin_pids = {p.pid for p in spinners}
            nap_pids = {p.pid for p in sleepers}

            deadline = time.time() + 20
            incidents = []
            while time.time() < deadline and len(incidents) < 2:
                time.sleep(0.5)
                incidents = read_lines(out)
            check(incidents, f"no incident within 20 s; agent log:\n{open(err_path).read()}")

            for inc in incidents:
                validate(inc)
            inc = incidents[0]
            check(inc["type"] == "pressure", f"type {inc['type']}")
            t = inc["trigger"]
            check(t["cgroup"] == "/" + cg.rel and t["resource"] == "cpu" and t["stall"] == "some",
                  f"trigger {t}")
            check(t["threshold_us"] == 50000 and t["window_us"] == 2000000 and t["spec"] == "cpu some 50ms 2s",
                  f"trigger {t}")
            check(inc["agent"]["delayacct"] is True, "delayacct not reported on after --enable-delayacct")
            check(isinstance(inc["agent"]["taskstats_version"], int), "no taskstats version")
            check(inc["sample"]["tasks"] >= 6, f"sample {inc['sample']}")
            check(inc["sample"]["stall_us"] is not None and inc["sample"]["stall_us"] > 0,
                  f"no stall growth over the sample: {inc['sample']}")
            check(inc["states"]["source"] == "procfs", f"states {inc['states']}")
            check(inc["states"]["running"] >= 1, f"states {inc['states']}")
            check(inc["pressure"]["cpu"]["some"]["total_us"] > 0, "cpu pressure of the cgroup is zero")

            top = inc["most_delayed"]
            check(top, "most_delayed is empty")
            first = top[0]
            check(first["pid"] in spin_pids, f"first process is not a spinner: {first['pid']} {first['comm']}")
            check(first["comm"] == "psidiag-spin", f"comm {first['comm']!r}")
            check(first["delay_us"]["cpu"] > 0, f"first process has no cpu delay: {first['delay_us']}")
            check(first["score_us"] == first["delay_us"]["cpu"], "cpu score is not the cpu delay")
            check(first["cgroup"] == "/" + cg.rel, f"process cgroup {first['cgroup']}")
            check(first["cmdline"].startswith(WORKLOAD), f"cmdline {first['cmdline']!r}")
            check(first["uid"] == 0, f"uid {first['uid']}")
            check(first["threads"] and first["threads"][0]["tid"] == first["pid"], f"threads {first['threads']}")
            check(all(p["pid"] != agent.pid for p in top), "the agent reported itself")
            ranks = {p["pid"]: i for i, p in enumerate(top)}
            spin_ranks = [ranks[p] for p in spin_pids if p in ranks]
            nap_ranks = [ranks[p] for p in nap_pids if p in ranks]
            check(not nap_ranks or max(spin_ranks) < min(nap_ranks),
                  f"a sleeper ranks above a spinner: {[(p['comm'], p['score_us']) for p in top]}")
            ids = [i["id"] for i in incidents]
            check(len(set(ids)) == len(ids), "incident ids repeat")

            # Removing the watched cgroup: the agent closes the trigger, writes nothing, keeps running.
            before = len(read_lines(out))
            cg.remove()
            time.sleep(3)
            check(agent.poll() is None, f"the agent exited after the cgroup was removed:\n{open(err_path).read()}")
            log = open(err_path).read()
            check("was removed: its triggers are closed" in log, f"no removal message in the log:\n{log}")
            check(log.count("was removed") == 1, "removal logged more than once")
            after = len(read_lines(out))
            check(after - before <= 1, "incidents kept coming after the cgroup was removed")
        finally:
            code = stop(agent)
        check(code == 0, f"the agent exited with {code} on SIGTERM")
        check("received Terminated, stopping" in open(err_path).read(), "no stop message")
        print(f"{len(incidents)} incidents; first: {first['comm']} cpu delay {first['delay_us']['cpu']} us, "
              f"stall {inc['sample']['stall_us']} us")


run(main)
