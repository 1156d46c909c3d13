#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""What a node-wide storm makes the agent write and cost, for one or more psidiag binaries in the
same run (node-wide storms: agent/episode.h). Not part of the CI suite: it takes about a minute per
binary. Needs root, PSI, cgroup2 and CAP_NET_ADMIN (exits 77 saying why otherwise); always
removes its cgroups and workloads.

    tests/bench/storm.py WORKLOAD PSIDIAG [PSIDIAG...]   (label=path to name a binary)

WATCHED (100) scratch cgroups under the cgroup2 mount, each with a bursty worker (workload
`blip`: 1 ms of cpu every 100 ms), watched by one agent with the default limits (sample_ms 1000,
cooldown_ms 10000, max_concurrent_samples 4, max_incidents_per_minute 60) and the trigger
`cpu some 50ms 2s`. After SETTLE_S, a node-wide cpu stall for STALL_S (20) seconds: STALL=spinners
(default) runs 3 spinning threads per cpu in one other cgroup; STALL=spread runs one spinner in
each watched cgroup (no cgroup dominates). Then it waits for the samples in flight, stops the
agent and reports: incidents written, distinct episodes (the `episode` field; none before it
existed), wakeups by verdict (metrics_file: psidiag_wakeups_total), culprit passes run (metrics
psidiag_culprit_passes_total, or, before it existed, one per sample with culprits), the agent's
cpu time over the stall (utime + stime of /proc/<pid>/stat), and how many summaries say "no
dominant culprit". The binaries run one after another on the same cgroups and workers, with
QUIET_S between them; ROUNDS (1) repeats the whole sequence."""

import json
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from common import ScratchCgroup, check, check_kernel, run, stop_agent  # noqa: E402

WATCHED = int(os.environ.get("WATCHED", "100"))
STALL_S = float(os.environ.get("STALL_S", "20"))
SETTLE_S = float(os.environ.get("SETTLE_S", "5"))
QUIET_S = float(os.environ.get("QUIET_S", "10"))
ROUNDS = int(os.environ.get("ROUNDS", "1"))
STALL = os.environ.get("STALL", "spinners")
TRIGGER = os.environ.get("TRIGGER", "cpu some 50ms 2s")
TICK = os.sysconf("SC_CLK_TCK")


def cpu_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def metrics(path):
    out = {}
    try:
        text = open(path).read()
    except FileNotFoundError:
        return out
    for m in re.finditer(r"^(psidiag_\w+)(\{[^}]*\})? (\d+)", text, re.M):
        out[m.group(1) + (m.group(2) or "")] = int(m.group(3))
    return out


def read_incidents(path):
    try:
        with open(path, "rb") as f:
            return [json.loads(l) for l in f.read().split(b"\n") if l]
    except FileNotFoundError:
        return []


def one(label, psidiag, workload, mount, cgs, tmp, rnd):
    name = f"{label}-{rnd}"
    out = os.path.join(tmp, f"{name}.ndjson")
    prom = os.path.join(tmp, f"{name}.prom")
    cfg = os.path.join(tmp, f"{name}.json")
    with open(cfg, "w") as f:
        json.dump({"output": out, "metrics_file": prom,
                   "watch": [{"cgroup": cg.rel, "triggers": [TRIGGER]} for cg in cgs]}, f)
    log = os.path.join(tmp, f"{name}.log")
    with open(log, "w") as err:
        agent = subprocess.Popen([psidiag, "--config", cfg, "--enable-delayacct"], stderr=err)
    stall = None
    spinners = []
    try:
        deadline = time.time() + 60
        while "watching:" not in open(log).read():
            check(agent.poll() is None and time.time() < deadline, f"{label} did not start:\n{open(log).read()}")
            time.sleep(0.1)
        time.sleep(SETTLE_S)
        before = read_incidents(out)
        m0 = metrics(prom)
        c0 = cpu_s(agent.pid)
        t0 = time.time()
        if STALL == "spread":
            spinners = [cg.spawn([workload, "spin", "psidiag-spin"]) for cg in cgs]
        else:
            stall = ScratchCgroup(mount, "storm-stall").__enter__()
            stall.spawn([workload, "spin", "psidiag-spin", str(3 * os.cpu_count())])
        time.sleep(STALL_S)
        if stall:
            stall.__exit__(None, None, None)
            stall = None
        for p in spinners:
            p.kill()
            p.wait()
        spinners = []
        c1 = cpu_s(agent.pid)
        t1 = time.time()
        time.sleep(3)  # the samples in flight
        m1 = metrics(prom)
    finally:
        if stall:
            stall.__exit__(None, None, None)
        for p in spinners:
            if p.poll() is None:
                p.kill()
            p.wait()
        stop_agent(agent)
    incidents = [i for i in read_incidents(out)[len(before):] if i.get("type") == "pressure"]
    wake = {k.split('"')[1]: v - m0.get(k, 0) for k, v in m1.items() if k.startswith("psidiag_wakeups_total{")}
    if "psidiag_culprit_passes_total" in m1:
        passes = m1["psidiag_culprit_passes_total"] - m0.get("psidiag_culprit_passes_total", 0)
        shared = m1["psidiag_culprit_passes_shared_total"] - m0.get("psidiag_culprit_passes_shared_total", 0)
    else:
        passes, shared = sum(1 for i in incidents if i.get("culprits")), 0
    return {
        "binary": label,
        "incidents": len(incidents),
        "cgroups": len({i["trigger"]["cgroup"] for i in incidents}),
        "episodes": len({i["episode"] for i in incidents if i.get("episode")}),
        "wakeups": wake,
        "passes": passes,
        "shared": shared,
        "shared_ids": len({i["culprits"]["shared_pass"] for i in incidents
                           if i.get("culprits") and i["culprits"].get("shared_pass")}),
        "no_dominant": sum(1 for i in incidents if "no dominant culprit" in i.get("summary", "")),
        "summary": incidents[0].get("summary") if incidents else None,
        "cpu_s": c1 - c0,
        "wall_s": t1 - t0,
    }


def main():
    mount = check_kernel()
    workload = sys.argv[1]
    binaries = [(a.split("=", 1) if "=" in a else (a, a)) for a in sys.argv[2:]]
    check(binaries, "usage: storm.py WORKLOAD [LABEL=]PSIDIAG...")
    cgs = [ScratchCgroup(mount, f"storm{i}") for i in range(WATCHED)]
    results = []
    try:
        for cg in cgs:
            cg.__enter__()
            cg.spawn([workload, "blip", "psidiag-blip"])
        with tempfile.TemporaryDirectory() as tmp:
            for rnd in range(ROUNDS):
                for label, path in binaries:
                    r = one(label, path, workload, mount, cgs, tmp, rnd)
                    results.append(r)
                    print(json.dumps(r), flush=True)
                    time.sleep(QUIET_S)
    finally:
        for cg in cgs:
            cg.__exit__(None, None, None)
    print(f"\n{WATCHED} watched cgroups, `{TRIGGER}`, stall {STALL} for {STALL_S:.0f} s, {os.cpu_count()} cpus")
    print("| binary | incidents (cgroups) | episodes | sample | capacity | rate_limit | busy+cooldown | "
          "culprit passes (shared) | agent cpu | no dominant |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in results:
        w = r["wakeups"]
        print(f"| {r['binary']} | {r['incidents']} ({r['cgroups']}) | {r['episodes']} | {w.get('sample', 0)} | "
              f"{w.get('capacity', 0)} | {w.get('rate_limit', 0)} | {w.get('busy', 0) + w.get('cooldown', 0)} | "
              f"{r['passes']} ({r['shared']}) | {r['cpu_s']:.2f} s, {100 * r['cpu_s'] / r['wall_s']:.1f}% | "
              f"{r['no_dominant']} |")


if __name__ == "__main__":
    run(main)
