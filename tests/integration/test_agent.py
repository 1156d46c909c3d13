#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The agent on the real kernel: a cgroup trigger fires under a cpu hog, the incident names a
spinner first with cpu delay, sleepers rank below, the line validates; SIGHUP after a logrotate
rename writes to the new file; removing the watched cgroup leaves the agent running; SIGTERM stops
it with exit 0, and SIGTERM during a sample drops the sample and says so."""

import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ScratchCgroup, check, check_kernel, launch_agent, read_lines, run, stop_agent, validator  # noqa: E402

PSIDIAG, WORKLOAD, SCHEMAS = sys.argv[1:4]


def main():
    mount = check_kernel()
    validate = validator(SCHEMAS)
    tmp = tempfile.mkdtemp(prefix="psidiag-it-")

    with ScratchCgroup(mount, "agent") as cg:
        a = launch_agent(PSIDIAG, tmp, "agent", {"top": 8, "sample_ms": 600, "cooldown_ms": 1000,
                                                 "watch": [{"cgroup": cg.rel, "triggers": ["cpu some 50ms 2s"]}]},
                         ["--enable-delayacct", "--log-level", "debug"], stdout=subprocess.DEVNULL)
        agent, out, err_path = a.proc, a.out, a.log
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

            # logrotate with "create": the file is renamed, SIGHUP makes the agent open a new one.
            rotated = out + ".1"
            os.rename(out, rotated)
            agent.send_signal(signal.SIGHUP)
            deadline = time.time() + 15
            while time.time() < deadline and not read_lines(out):
                time.sleep(0.5)
            check(read_lines(out), f"no incident in the reopened file after SIGHUP:\n{open(err_path).read()}")
            check(oct(os.stat(out).st_mode & 0o777) == "0o640", f"output mode {oct(os.stat(out).st_mode)}")
            check(f"reopened {out}" in open(err_path).read(), "no reopen message")
            for inc2 in read_lines(out):
                validate(inc2)

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
            code = stop_agent(agent)
        check(code == 0, f"the agent exited with {code} on SIGTERM")
        check("received Terminated, stopping" in open(err_path).read(), "no stop message")
        print(f"{len(incidents)} incidents; first: {first['comm']} cpu delay {first['delay_us']['cpu']} us, "
              f"stall {inc['sample']['stall_us']} us")

    # SIGTERM while a (long) sample is in flight: dropped, logged, no incident, exit 0.
    with ScratchCgroup(mount, "term") as cg:
        a = launch_agent(PSIDIAG, tmp, "term", {"sample_ms": 20000,
                                                "watch": [{"cgroup": cg.rel, "triggers": ["cpu some 50ms 2s"]}]},
                         ["--log-level", "debug"], stdout=subprocess.DEVNULL)
        agent, out2, err_path = a.proc, a.out, a.log
        try:
            for _ in range(4):
                cg.spawn([WORKLOAD, "spin", "psidiag-spin"])
            deadline = time.time() + 20
            while time.time() < deadline and "fired: sampling" not in open(err_path).read():
                time.sleep(0.2)
            check("fired: sampling" in open(err_path).read(), f"no sample started:\n{open(err_path).read()}")
        finally:
            code = stop_agent(agent)
        log = open(err_path).read()
        check(code == 0, f"exit {code} on SIGTERM during a sample")
        check(f"dropped the sample in flight for {cg.rel} (stopping)" in log, f"drop not logged:\n{log}")
        check(not read_lines(out2), "an incident was written for a dropped sample")


run(main)
