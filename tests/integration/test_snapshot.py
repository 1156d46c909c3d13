#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""`psidiag snapshot` on the real kernel: a cgroup with a spinner and a sleeper, ranked by cpu;
node-wide without a resource; the agent starting with the default config and stopping."""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ScratchCgroup, check, check_kernel, launch_agent, run, snapshot, validator  # noqa: E402

PSIDIAG, WORKLOAD, SCHEMAS = sys.argv[1:4]


def main():
    mount = check_kernel()
    validate = validator(SCHEMAS)

    with ScratchCgroup(mount, "snap") as cg:
        # Two spinners per core make cpu delay; a hostile task name must come out as valid JSON.
        spin = [cg.spawn([WORKLOAD, "spin", "spin) Z \"x\"", "2"]) for _ in range(2)]
        cg.spawn([WORKLOAD, "sleep", "psidiag-nap"])
        time.sleep(0.5)

        inc = snapshot(PSIDIAG, cg.rel, "--resource", "cpu", "--sample-ms", "500", "--top", "3", "--enable-delayacct")
        validate(inc)
        check(inc["type"] == "snapshot" and inc["trigger"] is None, "not a snapshot")
        check(inc["sample"]["duration_ms"] >= 450, f"sample too short: {inc['sample']}")
        check(inc["sample"]["tasks"] == 5, f"expected 5 threads, got {inc['sample']['tasks']}")
        check(inc["sample"]["stall_us"] is not None, "stall_us missing with --resource")
        top = inc["most_delayed"]
        check(len(top) <= 3 and top, f"top {len(top)}: {json.dumps(inc)}")
        check(top[0]["pid"] in {p.pid for p in spin}, f"first is not a spinner: {top[0]['comm']!r}")
        check(top[0]["comm"] == "spin) Z \"x\"", f"comm {top[0]['comm']!r}")
        check(top[0]["delay_us"]["cpu"] > 0, "no cpu delay")
        check(len(top[0]["threads"]) == 2, f"threads {top[0]['threads']}")

        check(inc["sample"]["basis"] == "delta", f"basis {inc['sample']}")
        check(inc["states"]["read"] == 5 and inc["states"]["scaled"] is False, f"states {inc['states']}")

        check(inc["sample"]["exit_records"] == 0 and inc["sample"]["lost_exit_records"] == 0, f"{inc['sample']}")

        # A 0 ms sample: one snapshot, lifetime totals, said so; the spinners still lead.
        inc = snapshot(PSIDIAG, cg.rel, "--resource", "cpu", "--sample-ms", "0", "--top", "3")
        validate(inc)
        check(inc["sample"]["basis"] == "lifetime" and inc["sample"]["duration_ms"] == 0, f"sample {inc['sample']}")
        check(inc["sample"]["stall_us"] is None, "a lifetime snapshot has no stall growth")
        check(inc["most_delayed"] and inc["most_delayed"][0]["pid"] in {p.pid for p in spin},
              f"lifetime ranking: {[(p['comm'], p['score_us']) for p in inc['most_delayed']]}")

        # Node-wide, ranked by all delays: our cgroup's spinners are among the processes named.
        inc = snapshot(PSIDIAG, "--sample-ms", "300", "--top", "20")
        validate(inc)
        check(inc["sample"]["stall_us"] is None, "stall_us without --resource")
        check(inc["sample"]["tasks"] > 5, "node-wide snapshot measured too few threads")
        # Above 256 threads the states come from an evenly spaced sample, scaled to the whole.
        st = inc["states"]
        if inc["sample"]["tasks"] > 256:
            check(st["scaled"] and 250 <= st["read"] <= 256, f"states {st}")
        check(abs(st["running"] + st["sleeping"] + st["uninterruptible"] + st["stopped"] - inc["sample"]["tasks"])
              <= inc["sample"]["tasks"] // 10 + 4, f"states {st} do not add up to {inc['sample']['tasks']}")
        check(any(p["cgroup"] == "/" + cg.rel for p in inc["most_delayed"]),
              "node-wide snapshot does not name the busy cgroup")
        # The snapshot process itself, not this test (whose command line names both as well and
        # which a loaded machine can delay).
        check(not any((p["cmdline"] or "").split(" ")[0] == PSIDIAG and "snapshot" in (p["cmdline"] or "")
                      for p in inc["most_delayed"]), "the snapshot reported itself")

        bad = subprocess.run([PSIDIAG, "snapshot", "no-such-cgroup-here"], capture_output=True)
        check(bad.returncode == 1, f"missing cgroup exit {bad.returncode}")
        check(b"no-such-cgroup-here" in bad.stderr, "missing cgroup not named")

    # --pid: one process and every delayed thread of it, with its cgroup's pressure.
    with ScratchCgroup(mount, "pid") as cg:
        p = cg.spawn([WORKLOAD, "spin", "psidiag-pid", "5"])
        time.sleep(0.3)
        inc = snapshot(PSIDIAG, "--pid", str(p.pid), "--resource", "cpu", "--sample-ms", "500")
        validate(inc)
        top = inc["most_delayed"]
        check(inc["sample"]["tasks"] == 5 and len(top) == 1 and top[0]["pid"] == p.pid, f"--pid: {inc['sample']} {top}")
        check(len(top[0]["threads"]) == 5 and all(t["delay_us"]["cpu"] > 0 for t in top[0]["threads"]),
              f"--pid threads: {top[0]['threads']}")
        check(inc["pressure"]["cpu"]["some"]["total_us"] > 0 and top[0]["cgroup"] == "/" + cg.rel, "--pid cgroup")
        bad = subprocess.run([PSIDIAG, "snapshot", "--pid", "999999999"], capture_output=True)
        check(bad.returncode == 1 and b"no process 999999999" in bad.stderr, f"--pid missing: {bad}")

    # Workers that die mid-sample keep their delay: the exit listener hands over their final
    # counters. Without it they would vanish from the ranking.
    with ScratchCgroup(mount, "exits") as cg:
        env = dict(os.environ, PSIDIAG_EXIT_MS="700")
        dying = set()
        for _ in range(4):
            path = cg.path

            def enter():
                with open(os.path.join(path, "cgroup.procs"), "w") as f:
                    f.write(str(os.getpid()))
            p = subprocess.Popen([WORKLOAD, "spin-exit", "psidiag-dying"], preexec_fn=enter, env=env)
            cg.procs.append(p)
            dying.add(p.pid)
        time.sleep(0.1)
        inc = snapshot(PSIDIAG, cg.rel, "--resource", "cpu", "--sample-ms", "1500", "--enable-delayacct")
        validate(inc)
        s = inc["sample"]
        check(s["tasks"] == 4 and s["exited"] == 4 and s["exit_records"] == 4 and s["lost_exit_records"] == 0,
              f"exits not followed: {s}")
        named = {p["pid"] for p in inc["most_delayed"]}
        check(named == dying, f"the dead workers are not all named: {named} vs {dying}")
        check(all(p["delay_us"]["cpu"] > 0 for p in inc["most_delayed"]),
              f"{[(p['pid'], p['delay_us']['cpu']) for p in inc['most_delayed']]}")

    # Without CAP_NET_ADMIN the kernel refuses taskstats: one warning, a valid incident with pressure
    # and states, no per-process delays, and no per-thread error flood.
    p = subprocess.run(["setpriv", "--bounding-set=-net_admin", "--inh-caps=-net_admin", PSIDIAG, "snapshot",
                        "--sample-ms", "100"], capture_output=True, timeout=60)
    check(p.returncode == 0, f"snapshot without CAP_NET_ADMIN exited {p.returncode}: {p.stderr!r}")
    inc = json.loads(p.stdout)
    validate(inc)
    check(inc["agent"]["taskstats_version"] is None and inc["most_delayed"] == [], "delays without taskstats?")
    check(inc["sample"]["tasks"] > 0 and inc["sample"]["errors"] == 0, f"sample {inc['sample']}")
    check(inc["states"]["sleeping"] > 0 and inc["pressure"]["cpu"] is not None, "no states or pressure")
    check(p.stderr.count(b"taskstats is unavailable") == 1, f"warning: {p.stderr!r}")

    # The agent with the embedded default config arms node-wide triggers and stops cleanly.
    tmp = tempfile.mkdtemp(prefix="psidiag-it-")
    a = launch_agent(PSIDIAG, tmp, "default", args=["--log-level", "info"], stdout=subprocess.PIPE)
    agent = a.proc
    time.sleep(1)
    check(agent.poll() is None, "the agent with the default config exited")
    agent.send_signal(signal.SIGINT)
    out, _ = agent.communicate(timeout=10)
    with open(a.log, "rb") as f:
        err = f.read()
    shutil.rmtree(tmp, ignore_errors=True)
    check(agent.returncode == 0, f"default agent exit {agent.returncode}")
    check(b"3 triggers armed on 1 watch" in err, f"default config did not arm 3 triggers: {err!r}")
    for line in out.split(b"\n"):
        if line:
            validate(json.loads(line))


run(main)
