#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Kills in the gaps of a kill window (docs/kills.md: the window's opening): each case holds the
agent at one point of its code (PSIDIAG_TEST_HOLD: the agent logs "test hold: POINT" and stops
itself with SIGSTOP), kills a watched process there, lets the agent go on (SIGCONT) and wants the
kill incident that names it. The points: the killers' logs being opened (the journal, dlopen of
libsystemd, files: slow), the pressure incident's hook, and systemd-oomd's Notify answered while
its measure is handed to the kill windows (a node-wide watch, the installed default). Last, an
exit storm larger than the exit socket's buffer while the agent is stopped, then a kill: the kill
is reported, with the number of records the kernel dropped; and a process of more threads than the
buffer held at the opening, born while the window is open: the buffer grows for it, and its end
while the agent is stopped loses no record."""

import json
import os
import re
import signal
import socket
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (LimitedCgroup, ScratchCgroup, check, check_kernel, launch_agent, make_file, metric,  # noqa: E402
                    read_lines, run, spawn, stop_agent, uncache, validator, wait_for, wait_lines, wait_log)

PSIDIAG, WORKLOAD, SCHEMAS = sys.argv[1:4]
LIMIT = 48 << 20


def start_agent(tmp, name, watch, hold=None, **config):
    env = dict(os.environ)
    if hold:
        env["PSIDIAG_TEST_HOLD"] = hold
    a = launch_agent(PSIDIAG, tmp, name, {"sample_ms": 500, "cooldown_ms": 0, "kill_window_s": 60, "kill_log_files": [],
                                          "metrics_file": os.path.join(tmp, f"{name}.prom"), **config, "watch": [watch]},
                     ["--log-level", "debug"], env=env, wait=r"watching:")
    return a.proc, a.out, a.log


def state(pid):
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(") ", 1)[1][0]


def held(agent, log, point, timeout=60):
    """Until the agent has stopped itself at point."""
    wait_log(log, rf"test hold: {point}\b", timeout, agent)
    wait_for(f"the agent stopped at {point}", lambda: state(agent.pid) == "T", 10, 0.02)


def kills_of(out):
    return [i for i in read_lines(out) if i["type"] == "kill"]


def await_kill(out, log, timeout=30, about=None):
    lines = wait_lines(out, lambda ls: any(i["type"] == "kill" for i in ls), timeout)
    kills = [i for i in lines if i["type"] == "kill"]
    said = "".join(l for l in open(log) if about and f"pid {about}" in l or "kill window" in l or "test hold" in l)
    check(kills, f"no kill incident; the log on the victim:\n{said[-3000:]}\n{open(log).read()[-2000:]}")
    return kills[0]


def pressured(mount, name, data):
    """A watched cgroup to be put under memory pressure (two thrashers in 48 MiB, started by the
    caller) with a victim asleep in it."""
    uncache(data)
    cg = ScratchCgroup(mount, name).__enter__()
    lim = LimitedCgroup(mount, cg, name, LIMIT).__enter__()
    env = dict(os.environ, PSIDIAG_FILE=data)
    victim = spawn(cg, [WORKLOAD, "sleep", "psidiag-victim"], env, lim.extra)
    return cg, lim, env, victim


def release(cg, lim):
    lim.__exit__(None, None, None)
    cg.__exit__(None, None, None)


def held_kill(tmp, mount, data, validate, point):
    """The victim SIGKILLed while the agent is held at point, after its first memory wakeup."""
    cg, lim, env, victim = pressured(mount, f"gap-{point}", data)
    agent = None
    try:
        agent, out, log = start_agent(tmp, point, {"cgroup": cg.rel, "triggers": ["memory some 50ms 2s"]}, point)
        spawn(cg, [WORKLOAD, "thrash", "psidiag-thrash", "2"], env, lim.extra)
        held(agent, log, point)
        victim.kill()
        victim.wait()
        agent.send_signal(signal.SIGCONT)
        inc = await_kill(out, log, about=victim.pid)
    finally:
        code = stop_agent(agent) if agent else None
        release(cg, lim)
    check(code == 0, f"agent exit {code}:\n{open(log).read()[-3000:]}")
    validate(inc)
    k = inc["kill"]
    check(any(v["pid"] == victim.pid and v["comm"] == "psidiag-victim" for v in k["victims"]),
          f"victims {k['victims']} (want {victim.pid})")
    check(k["pressure"]["incident"], f"pressure {k['pressure']}")
    print(f"held at {point}: {inc['summary']}")


def notify(path, cgroup):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5)
    try:
        s.connect(path)
        s.sendall(json.dumps({"method": "io.systemd.oom.Prekill.Notify", "parameters": {"cgroup": cgroup}}).encode()
                  + b"\0")
        buf = b""
        while b"\0" not in buf:
            chunk = s.recv(65536)
            if not chunk:
                return None
            buf += chunk
        return json.loads(buf[:buf.index(b"\0")])
    finally:
        s.close()


def prekill_node_wide(tmp, mount, validate):
    """Notify answered, the agent held as it hands the measure to the kill windows, then the kill
    systemd-oomd makes (SIGKILL to the cgroup): the node-wide window must have heard it."""
    with ScratchCgroup(mount, "gap-prekill") as cg:
        hook = os.path.join(tmp, "prekill.hook")
        os.mkdir(hook, 0o755)
        sock = os.path.join(hook, "psidiag")
        agent, out, log = start_agent(tmp, "prekill", {"triggers": ["memory some 150ms 2s"]}, "prekill-done",
                                      prekill_socket=sock, prekill_reply_ms=200, prekill_wait_s=5)
        try:
            wait_log(log, r"serving systemd-oomd's prekill hook", 10, agent)
            victims = [cg.spawn([WORKLOAD, "sleep", "psidiag-victim"]) for _ in range(2)]
            wait_for("the victims in the cgroup",
                     lambda: len(open(os.path.join(cg.path, "cgroup.procs")).read().split()) == 2, 10, 0.05)
            r = notify(sock, "/" + cg.rel)
            check(r == {"parameters": {}}, f"Notify: {r}")
            held(agent, log, "prekill-done")
            with open(os.path.join(cg.path, "cgroup.kill"), "w") as f:
                f.write("1")
            for v in victims:
                v.wait()
            agent.send_signal(signal.SIGCONT)
            inc = await_kill(out, log)
        finally:
            code = stop_agent(agent)
        check(code == 0, f"agent exit {code}:\n{open(log).read()[-3000:]}")
        validate(inc)
        k = inc["kill"]
        check(k["prekill"] and k["prekill"]["outcome"] == "killed", f"prekill {k.get('prekill')}:\n"
              f"{open(log).read()[-3000:]}")
        check({v.pid for v in victims} <= {v["pid"] for v in k["victims"]}, f"victims {k['victims']}")
        print(f"prekill, node-wide, held after the answer: {inc['summary']}")


def threads_of(pid):
    with open(f"/proc/{pid}/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("Threads:"))


def crowd_then_victim(agent, crowd, victim):
    """The stopped agent's storm: the crowd ends, then the victim is killed, then the agent goes on."""
    crowd.kill()
    crowd.wait()
    victim.kill()
    victim.wait()
    agent.send_signal(signal.SIGCONT)


def crowd_cleanup(agent, crowd, crowd_cg, cg, lim):
    """Whatever a crowd case left, gone; the agent's exit code (None if it never started)."""
    if crowd and crowd.poll() is None:
        crowd.kill()
        crowd.wait()
    code = stop_agent(agent) if agent else None
    crowd_cg.__exit__(None, None, None)
    release(cg, lim)
    return code


def storm_then_kill(tmp, mount, data, validate):
    """The agent stopped (SIGSTOP) while a process of more threads than the kill window's exit
    socket holds ends, then the victim killed, then the agent let go: the kernel drops records
    (the victim's among them); the kill incident must name the victim all the same (ended
    unheard) and say how many records were lost."""
    cg, lim, env, victim = pressured(mount, "gap-storm", data)
    crowd_cg = ScratchCgroup(mount, "gap-crowd").__enter__()
    agent, crowd = None, None
    try:
        agent, out, log = start_agent(tmp, "storm", {"cgroup": cg.rel, "triggers": ["memory some 50ms 2s"]})
        spawn(cg, [WORKLOAD, "thrash", "psidiag-thrash", "2"], env, lim.extra)
        m = wait_log(log, r"kill window of \S+ open for \d+ s: \d+ processes listed"
                     r"(?:, exit records buffered up to (\d+))?", 60, agent)
        # Before the buffer was sized for the node: 4 MiB asked, 8 MiB given, 2,305 bytes a record.
        room = int(m.group(1)) if m.group(1) else (8 << 20) // 2305
        n = room * 3 // 2 + 1000
        # Stopped before the crowd is born: its buffer cannot grow for it (grown_then_kill's case).
        agent.send_signal(signal.SIGSTOP)
        wait_for("the agent stopped", lambda: state(agent.pid) == "T", 10, 0.02)
        crowd = crowd_cg.spawn([WORKLOAD, "park", "psidiag-crowd", str(n)])
        wait_for(f"{n} threads parked", lambda: threads_of(crowd.pid) >= n, 60, 0.2)
        crowd_then_victim(agent, crowd, victim)
        inc = await_kill(out, log, 30, victim.pid)
        prom = os.path.join(tmp, "storm.prom")
        lost_metric = wait_for("the lost records counted",
                               lambda: metric(prom, "psidiag_exit_records_lost_total"), 10, 0.2)
    finally:
        code = crowd_cleanup(agent, crowd, crowd_cg, cg, lim)
    check(code == 0, f"agent exit {code}:\n{open(log).read()[-3000:]}")
    validate(inc)
    k = inc["kill"]
    v = [v for v in k["victims"] if v["pid"] == victim.pid]
    check(v and v[0]["signal"] is None and k["ended_unheard"] >= 1, f"victims {k['victims']}")
    check(k["lost_exit_records"] > 0 and lost_metric >= k["lost_exit_records"],
          f"lost {k['lost_exit_records']}, metric {lost_metric}")
    print(f"storm of {n} threads ({room} records of room): {k['lost_exit_records']} records lost, "
          f"metric {lost_metric}: {inc['summary']}")


def grown_rooms(log):
    """Every room the agent said its exit buffer grew to, in exit records."""
    with open(log) as f:
        return [int(m.group(1)) for m in re.finditer(
            r"exit listener's buffer grown from \d+ to \d+ bytes \((\d+) exit records\)", f.read())]


def grown_then_kill(tmp, mount, data, validate):
    """A process of more threads than the kill window's exit socket held at its opening is born
    while the window is open: the buffer grows for the node (the agent says so). Then the agent
    is stopped, the crowd ends and the victim is killed: no record is lost, and the victim's own
    exit record is heard (its signal known, not ended unheard)."""
    cg, lim, env, victim = pressured(mount, "gap-grow", data)
    crowd_cg = ScratchCgroup(mount, "gap-growcrowd").__enter__()
    agent, crowd = None, None
    try:
        agent, out, log = start_agent(tmp, "grow", {"cgroup": cg.rel, "triggers": ["memory some 50ms 2s"]})
        spawn(cg, [WORKLOAD, "thrash", "psidiag-thrash", "2"], env, lim.extra)
        m = wait_log(log, r"kill window of \S+ open for \d+ s: \d+ processes listed, exit records buffered up to "
                     r"(\d+)", 60, agent)
        room = int(m.group(1))
        n = room * 3 // 2 + 1000
        crowd = crowd_cg.spawn([WORKLOAD, "park", "psidiag-crowd", str(n)])
        wait_for(f"{n} threads parked", lambda: threads_of(crowd.pid) >= n, 60, 0.2)
        grown = wait_for(f"the exit buffer grown past {n} records",
                         lambda: max(grown_rooms(log) or [0]) > n and max(grown_rooms(log)), 30, 0.2)
        agent.send_signal(signal.SIGSTOP)
        wait_for("the agent stopped", lambda: state(agent.pid) == "T", 10, 0.02)
        crowd_then_victim(agent, crowd, victim)
        inc = await_kill(out, log, 30, victim.pid)
    finally:
        code = crowd_cleanup(agent, crowd, crowd_cg, cg, lim)
    check(code == 0, f"agent exit {code}:\n{open(log).read()[-3000:]}")
    validate(inc)
    k = inc["kill"]
    v = [v for v in k["victims"] if v["pid"] == victim.pid]
    check(v and v[0]["signal"] == "SIGKILL", f"victims {k['victims']} (want {victim.pid} heard, SIGKILL)")
    # (psidiag_exit_records_lost_total counts the samples' own exit socket too: not this one's alone)
    dropped = [l for l in open(log) if "exit listener's buffer of" in l]
    check(k["lost_exit_records"] == 0 and not dropped, f"lost {k['lost_exit_records']}: {dropped}")
    print(f"{n} threads born in the window ({room} records of room at its opening, {grown} after): "
          f"none lost: {inc['summary']}")


CPU1 = "/sys/devices/system/cpu/cpu1/online"


def on_cpu(pid):
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(") ", 1)[1].split()[36])


def hotplug_kill(tmp, mount, data, validate):
    """cpu1 offline when the agent starts, online again before the kill, the victim killed on it:
    the exit listener registered for the possible cpus hears it (one registered for the cpus
    online at the start does not). Skipped where cpu1 cannot be taken offline."""
    if not os.path.exists(CPU1) or os.cpu_count() < 2:
        print("hotplug: no cpu1 to take offline here; not run")
        return
    cg, lim, env, victim = pressured(mount, "gap-hotplug", data)
    agent = None
    try:
        try:
            with open(CPU1, "w") as f:
                f.write("0")
        except OSError as e:
            print(f"hotplug: cpu1 cannot be taken offline ({e}); not run")
            return
        agent, out, log = start_agent(tmp, "hotplug", {"cgroup": cg.rel, "triggers": ["memory some 50ms 2s"]})
        with open(CPU1, "w") as f:
            f.write("1")
        spawn(cg, [WORKLOAD, "thrash", "psidiag-thrash", "2"], env, lim.extra)
        wait_log(log, r"kill window of \S+ open for \d+ s: \d+ processes listed", 60, agent)
        os.sched_setaffinity(victim.pid, {1})
        wait_for("the victim on cpu1", lambda: on_cpu(victim.pid) == 1, 10, 0.05)
        victim.kill()
        victim.wait()
        inc = await_kill(out, log, 30, victim.pid)
    finally:
        with open(CPU1, "w") as f:  # always back online, whatever failed
            f.write("1")
        code = stop_agent(agent) if agent else None
        release(cg, lim)
    check(code == 0, f"agent exit {code}:\n{open(log).read()[-3000:]}")
    validate(inc)
    check(any(v["pid"] == victim.pid for v in inc["kill"]["victims"]), f"victims {inc['kill']['victims']}")
    print(f"killed on cpu1, brought online after the agent started: {inc['summary']}")


def main():
    mount = check_kernel()
    validate = validator(SCHEMAS)
    tmp = tempfile.mkdtemp(prefix="psidiag-it-")
    data = make_file("/var/tmp")
    # PSIDIAG_KILLGAPS=case,case runs only those (to show one failing on a tree without the fix).
    only = set(filter(None, os.environ.get("PSIDIAG_KILLGAPS", "").split(",")))
    cases = [("logs", lambda: held_kill(tmp, mount, data, validate, "kill-logs-open")),
             ("incident", lambda: held_kill(tmp, mount, data, validate, "kill-incident")),
             ("prekill", lambda: prekill_node_wide(tmp, mount, validate)),
             ("storm", lambda: storm_then_kill(tmp, mount, data, validate)),
             ("grow", lambda: grown_then_kill(tmp, mount, data, validate)),
             ("hotplug", lambda: hotplug_kill(tmp, mount, data, validate))]
    try:
        for name, case in cases:
            if not only or name in only:
                case()
    finally:
        os.unlink(data)


run(main)
