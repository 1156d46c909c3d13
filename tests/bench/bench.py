#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""psidiag's performance on the real kernel, against floors measured in the same run. Prints one
table. Run with `meson test -C build --benchmark` or `scripts/bench`; needs root, PSI, cgroup2 and
CAP_NET_ADMIN (exits 77 saying why otherwise). Always removes its cgroups and workloads.

1. Snapshot cost: `psidiag snapshot CG --sample-ms 0` on a cgroup of 1,000 / 4,000 / 10,000
   parked threads in one process, beside the floor (tests/bench/floor.c: read cgroup.threads and
   one raw TASKSTATS_CMD_GET per thread, nothing else) and beside the floor plus every thread's
   /proc/<tid>/task/<tid>/stat (what procfs scraping adds). Wall time of the whole command,
   median of 15 runs each, interleaved. And on 9,900 threads in 300 processes (target 0.25x:
   process-first asks once per process), beside the per-thread floor and beside the floor of the
   process-first method itself (floor.c --process-first: its kernel calls alone, raw), the three
   in a shuffled order in each of 15 rounds.
2. Idle cost: the agent with 300 armed triggers (100 cgroups x cpu, memory, io) and no pressure,
   for IDLE_S seconds: CPU ticks, voluntary and involuntary context switches, RSS, fds.
3. Agent time per incident: from the trigger's wakeup to the incident written, the sample window
   left out (both snapshots, the ranking, the JSON, the write), p50 and p99 over the incidents of
   a cgroup of 1,000 / 10,000 threads under a cpu hog (the agent's debug log gives each one).
4. Teardown: the agent armed with 3,000 triggers on 1,000 cgroups; a SIGHUP that keeps 1,000 and
   drops 2,000 while a kept cgroup is made busy (time from the SIGHUP to its incident); then the
   time from SIGTERM to exit. The floor is one thread closing triggers one after another (what the
   kernel does at exit with fds left open), timed on TEARDOWN_FLOOR triggers and scaled. Then the
   same exit with as many triggers as the open-file hard limit allows, up to 30,000.
5. The recorder: its cost per recorded second on a watched cgroup of 10, 300 and 3,000 processes
   (entries, time on the agent's loop, the agent's cpu), against the floor of one snapshot of the
   cgroup (floor.c --process-first), and the agent's peak RSS (recorder_cost()).
6. Container names: what naming the containers of one incident (16 containers: its processes'
   and cgroups') adds, cold (every container's runtime files read and parsed: docker's 16
   config.v2.json, or podman's containers.json of 200 containers) and warm (cached), by
   tests/bench/containers.c, against the floor of one snapshot of a cgroup of 10 processes
   (floor.c --process-first), measured in the same run.
7. The prekill hook (prekill_cost()): Notify calls as systemd-oomd makes them, the time from the
   call to its answer at the client, p50/p99 of PREKILL_CALLS calls for a cgroup that is gone (the
   protocol alone; target p99 < 10 ms), and for a cgroup of 10, 300 and 3,000 processes the answer
   (target: within prekill_reply_ms, 200 ms) and the whole measure (the agent's debug log; target
   < 1 s at 3,000)."""

import json
import os
import socket
import random
import re
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from common import (ChildCgroup, ScratchCgroup, check, check_kernel, read_lines, rmdir_retry, run, stop_agent,  # noqa: E402
                    wait_log)

PSIDIAG, WORKLOAD, FLOOR, CONTAINERS = sys.argv[1:5]
SIZES = [1000, 4000, 10000]
RUNS = 15
IDLE_S = int(os.environ.get("PSIDIAG_BENCH_IDLE_S", "60"))
INCIDENTS = int(os.environ.get("PSIDIAG_BENCH_INCIDENTS", "40"))
TEARDOWN_FLOOR = 300
ONLY = os.environ.get("PSIDIAG_BENCH_ONLY")  # "teardown": that part alone
RESOURCES = ("cpu", "memory", "io")


def wall(argv):
    t = time.perf_counter()
    p = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=120)
    dt = time.perf_counter() - t
    check(p.returncode == 0, f"{argv} failed: {p.stderr.decode(errors='replace')}")
    return dt


def park(cg, n):
    cg.spawn([WORKLOAD, "park", "psidiag-park", str(n)])
    deadline = time.time() + 30
    while time.time() < deadline:
        with open(os.path.join(cg.path, "cgroup.threads")) as f:
            if len(f.read().split()) >= n:
                return
        time.sleep(0.1)
    check(False, f"{n} threads did not start")


def park_many(cg, procs, per):
    for i in range(procs):
        cg.spawn([WORKLOAD, "park", f"psidiag-p{i}", str(per)])
    deadline = time.time() + 60
    while time.time() < deadline:
        with open(os.path.join(cg.path, "cgroup.threads")) as f:
            if len(f.read().split()) >= procs * per:
                return
        time.sleep(0.1)
    check(False, f"{procs} x {per} threads did not start")


def process_first_cost(mount):
    """`snapshot --sample-ms 0` on 9,900 threads in 300 processes against the per-thread floor and
    against the process-first method's own floor (floor.c --process-first: the kernel calls the
    method cannot do without, raw): the three run back to back in a shuffled order, each ratio the
    median of its per-round ratios to the round's per-thread floor."""
    procs, per = 300, 33
    rng = random.Random(15)
    with ScratchCgroup(mount, "benchprocs") as cg:
        park_many(cg, procs, per)
        runs = {
            "ours": [PSIDIAG, "--log-level", "error", "snapshot", cg.rel, "--sample-ms", "0"],
            "method": [FLOOR, cg.path, "--process-first"],
        }
        ratios = {k: [] for k in runs}
        times = {k: [] for k in runs}
        floor = []
        for _ in range(RUNS):
            f = wall([FLOOR, cg.path])
            floor.append(f)
            for k in rng.sample(list(runs), len(runs)):
                t = wall(runs[k])
                times[k].append(t)
                ratios[k].append(t / f)
        med = statistics.median
        return (procs * per, procs, med(floor), med(times["ours"]), med(ratios["ours"]), med(times["method"]),
                med(ratios["method"]), med([o / m for o, m in zip(times["ours"], times["method"])]))


def snapshot_cost(mount):
    rows = []
    for n in SIZES:
        with ScratchCgroup(mount, f"bench{n}") as cg:
            park(cg, n)
            floor, states, ours = [], [], []
            for _ in range(RUNS):
                floor.append(wall([FLOOR, cg.path]))
                states.append(wall([FLOOR, cg.path, "--states"]))
                ours.append(wall([PSIDIAG, "--log-level", "error", "snapshot", cg.rel, "--sample-ms", "0"]))
            f, s, o = (statistics.median(x) for x in (floor, states, ours))
            rows.append((n, f, s, o))
    return rows


def idle_cost(mount, tmp):
    cgs = [ScratchCgroup(mount, f"idle{i}") for i in range(100)]
    for cg in cgs:
        cg.__enter__()
    try:
        cfg = os.path.join(tmp, "idle.json")
        with open(cfg, "w") as f:
            json.dump({"output": os.path.join(tmp, "idle.ndjson"),
                       "watch": [{"cgroup": cg.rel, "triggers": ["cpu some 500ms 2s", "memory some 500ms 2s",
                                                                 "io some 500ms 2s"]} for cg in cgs]}, f)
        err = open(os.path.join(tmp, "idle.log"), "w")
        agent = subprocess.Popen([PSIDIAG, "--config", cfg], stderr=err)
        try:
            time.sleep(2)
            check(agent.poll() is None, "the idle agent exited")

            def sample():
                # Ticks of the whole process; switches summed over its threads (the trigger set's
                # waiter included).
                with open(f"/proc/{agent.pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                with open(f"/proc/{agent.pid}/status") as f:
                    st = dict(l.split(":", 1) for l in f if ":" in l)
                vol = invol = 0
                for tid in os.listdir(f"/proc/{agent.pid}/task"):
                    with open(f"/proc/{agent.pid}/task/{tid}/status") as f:
                        ts = dict(l.split(":", 1) for l in f if ":" in l)
                    vol += int(ts["voluntary_ctxt_switches"])
                    invol += int(ts["nonvoluntary_ctxt_switches"])
                return int(fields[11]) + int(fields[12]), vol, invol, int(st["VmRSS"].split()[0])
            t0, v0, i0, _ = sample()
            time.sleep(IDLE_S)
            t1, v1, i1, rss = sample()
            fds = len(os.listdir(f"/proc/{agent.pid}/fd"))
            log = open(os.path.join(tmp, "idle.log")).read()
            armed = int(re.search(r"(\d+) triggers armed", log).group(1))
        finally:
            agent.send_signal(signal.SIGTERM)
            agent.wait(10)
        return armed, t1 - t0, v1 - v0, i1 - i0, rss, fds
    finally:
        for cg in cgs:
            cg.__exit__(None, None, None)


def agent_time(mount, tmp, n):
    with ScratchCgroup(mount, f"lat{n}") as cg:
        park(cg, n)
        cfg = os.path.join(tmp, f"lat{n}.json")
        log_path = os.path.join(tmp, f"lat{n}.log")
        # Five watches on the same cgroup: five triggers, so five incidents per 2 s window.
        with open(cfg, "w") as f:
            json.dump({"output": os.path.join(tmp, f"lat{n}.ndjson"), "sample_ms": 100, "cooldown_ms": 0,
                       "watch": [{"cgroup": cg.rel, "triggers": ["cpu some 20ms 2s"]} for _ in range(5)]}, f)
        with open(log_path, "w") as err:
            agent = subprocess.Popen([PSIDIAG, "--config", cfg, "--log-level", "debug"], stderr=err)
        try:
            for _ in range(4):
                cg.spawn([WORKLOAD, "spin", "psidiag-spin"])
            deadline = time.time() + 120
            times = []
            while time.time() < deadline and len(times) < INCIDENTS:
                time.sleep(1)
                times = [int(x) for x in re.findall(r"agent time (\d+) us", open(log_path).read())]
        finally:
            agent.send_signal(signal.SIGTERM)
            agent.wait(10)
        check(len(times) >= 10, f"only {len(times)} incidents at {n} threads")
        times.sort()
        p50 = times[len(times) // 2]
        p99 = times[min(len(times) - 1, int(len(times) * 0.99))]
        return n, len(times), p50, p99


RECORD_S = int(os.environ.get("PSIDIAG_BENCH_RECORD_S", "20"))


def metric(prom, name):
    try:
        text = open(prom).read()
    except FileNotFoundError:
        return 0.0
    m = re.search(rf"^{name} ([0-9.]+)$", text, re.M)
    return float(m.group(1)) if m else 0.0


def recorder_cost(mount, tmp, procs):
    """The recorder's cost per recorded second on a watched cgroup of `procs` one-thread processes:
    one incident (spinners in the cgroup for a moment) starts the recording, which goes on for
    RECORD_S seconds without a wakeup; the agent's metrics say how many entries it took and how
    long they took on its loop, and the agent's cpu time over the recording is read from /proc.
    The floor, in the same run: floor.c --process-first of the cgroup (its listing, one TGID query
    per process and 256 thread states: what one entry of the watch's scope cannot do without),
    median of RUNS runs. An entry also measures the culprit scope (here the node: its cgroups and
    processes), which the floor does not."""
    with ScratchCgroup(mount, f"rec{procs}") as cg:
        park_many(cg, procs, 1)
        floor = statistics.median(wall([FLOOR, cg.path, "--process-first", "0", "256"]) for _ in range(RUNS))
        prom = os.path.join(tmp, f"rec{procs}.prom")
        cfg = os.path.join(tmp, f"rec{procs}.json")
        with open(cfg, "w") as f:
            json.dump({"output": os.path.join(tmp, f"rec{procs}.ndjson"), "metrics_file": prom, "cooldown_ms": 0,
                       "record_s": RECORD_S, "watch": [{"cgroup": cg.rel, "triggers": ["cpu some 50ms 2s"]}]}, f)
        log_path = os.path.join(tmp, f"rec{procs}.log")
        with open(log_path, "w") as err:
            agent = subprocess.Popen([PSIDIAG, "--config", cfg, "--enable-delayacct", "--log-level", "debug"],
                                     stderr=err)
        try:
            wait_log(log_path, "watching:", 60, agent)
            hogs = [cg.spawn([WORKLOAD, "spin", "psidiag-hog"]) for _ in range(4)]
            deadline = time.time() + 60
            while metric(prom, "psidiag_recordings_total") < 1:
                check(time.time() < deadline, f"no recording began:\n{open(log_path).read()[-2000:]}")
                time.sleep(0.1)
            for h in hogs:
                h.kill()
                h.wait()

            def cpu_s():
                with open(f"/proc/{agent.pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
            # The recording after the load: from its first quiet entry to its end.
            time.sleep(3)
            e0, s0, c0, t0 = (metric(prom, "psidiag_recorder_entries_total"),
                              metric(prom, "psidiag_recorder_seconds_total"), cpu_s(), time.time())
            deadline = time.time() + RECORD_S + 30
            while metric(prom, "psidiag_recording_seconds_total") == 0:
                check(time.time() < deadline, f"the recording did not end:\n{open(log_path).read()[-1500:]}\n"
                      f"{open(prom).read()[-1500:]}")
                time.sleep(0.25)
            with open(f"/proc/{agent.pid}/status") as f:
                rss = int(next(l for l in f if l.startswith("VmHWM:")).split()[1])
            e1, s1, c1, t1 = (metric(prom, "psidiag_recorder_entries_total"),
                              metric(prom, "psidiag_recorder_seconds_total"), cpu_s(), time.time())
            recorded = metric(prom, "psidiag_recording_seconds_total")
        finally:
            stop_agent(agent)
        entries, loop_s = e1 - e0, s1 - s0
        check(entries > 0, "no entry was taken")
        span = t1 - t0
        return procs, entries / span, loop_s / span, (c1 - c0) / span, loop_s / entries, floor, rss, recorded


def containers_cost(mount, tmp):
    """(docker cold, docker warm, podman cold, podman warm) us per incident, and the floor in s."""
    root = os.path.join(tmp, "containers-root")
    os.mkdir(root)
    p = subprocess.run([CONTAINERS, root], capture_output=True, text=True, timeout=300)
    check(p.returncode == 0, f"{CONTAINERS} failed: {p.stderr}")
    costs = [float(x) for x in p.stdout.split()]
    with ScratchCgroup(mount, "ctrfloor") as cg:
        park_many(cg, 10, 1)
        floor = statistics.median(wall([FLOOR, cg.path, "--process-first", "0", "256"]) for _ in range(RUNS))
    return costs, floor


def make_cgroups(mount, name, n):
    top = ScratchCgroup(mount, name)
    top.__enter__()
    kids = [f"{top.rel}/c{i}" for i in range(n)]
    for k in kids:
        os.mkdir(os.path.join(mount, k))
    return top, kids


def remove_cgroups(mount, top, kids):
    for k in kids:
        rmdir_retry(os.path.join(mount, k))
    top.__exit__(None, None, None)


def serial_close_floor(mount, kids):
    """Seconds per trigger close when one thread closes them one after another."""
    fds = []
    try:
        for k in kids:
            for res in RESOURCES:
                fd = os.open(os.path.join(mount, k, f"{res}.pressure"), os.O_RDWR | os.O_NONBLOCK)
                fds.append(fd)
                os.write(fd, b"some 500000 2000000\0")
                if len(fds) == TEARDOWN_FLOOR:
                    break
            if len(fds) == TEARDOWN_FLOOR:
                break
        t = time.perf_counter()
        while fds:
            os.close(fds.pop())
        return (time.perf_counter() - t) / TEARDOWN_FLOOR
    finally:
        for fd in fds:
            os.close(fd)


def start_agent(tmp, name, config):
    cfg = os.path.join(tmp, f"{name}.json")
    with open(cfg, "w") as f:
        json.dump(config, f)
    log_path = os.path.join(tmp, f"{name}.log")
    with open(log_path, "w") as err:
        agent = subprocess.Popen([PSIDIAG, "--config", cfg], stderr=err)
    return agent, cfg, log_path


def armed_agent(tmp, name, config, n):
    """The agent with config, once it says it armed n triggers (killed if it never does)."""
    agent, cfg, log_path = start_agent(tmp, name, config)
    try:
        wait_log(log_path, rf"watching: {n} triggers armed", 600, agent)
    except BaseException:
        agent.kill()
        agent.wait()
        raise
    return agent, cfg, log_path


def stop_time(agent):
    t = time.perf_counter()
    agent.send_signal(signal.SIGTERM)
    code = agent.wait(120)
    dt = time.perf_counter() - t
    check(code == 0, f"the agent exited {code}")
    return dt


def teardown(mount, tmp):
    n = 1000
    top, kids = make_cgroups(mount, "teardown", n)
    try:
        per_close = serial_close_floor(mount, kids)
        out = os.path.join(tmp, "teardown.ndjson")
        agent, cfg, log_path = armed_agent(tmp, "teardown", {
            "output": out, "sample_ms": 200, "cooldown_ms": 0,
            "watch": [{"cgroup": k, "triggers": [f"{r} some 200ms 2s" for r in RESOURCES]} for k in kids]}, 3 * n)
        try:
            fds = len(os.listdir(f"/proc/{agent.pid}/fd"))
            with open(cfg, "w") as f:
                json.dump({"output": out, "sample_ms": 200, "cooldown_ms": 0,
                           "watch": [{"cgroup": k, "triggers": ["cpu some 200ms 2s"]} for k in kids]}, f)
            busy = ChildCgroup(top, f"c{n // 2}")  # exists already; only its tasks are ours
            t = time.perf_counter()
            agent.send_signal(signal.SIGHUP)
            try:
                for _ in range(4):
                    busy.spawn([WORKLOAD, "spin", "psidiag-spin"])
                deadline = time.time() + 60
                while time.time() < deadline and not any(i["trigger"]["cgroup"] == "/" + busy.rel
                                                         for i in read_lines(out)):
                    time.sleep(0.05)
                reload_s = time.perf_counter() - t
            finally:
                busy.kill_all()
            check(reload_s < 60, "no incident from the kept cgroup after the reload")
            wait_log(log_path, rf"reloaded .*\(1000 kept, 2000 closed", 30, agent)
            # Arm all three again, then time the exit.
            with open(cfg, "w") as f:
                json.dump({"output": out, "watch": [{"cgroup": k, "triggers": [f"{r} some 200ms 2s" for r in RESOURCES]}
                                                    for k in kids]}, f)
            agent.send_signal(signal.SIGHUP)
            wait_log(log_path, r"reloaded .*: 3000 triggers armed", 120, agent)
        except BaseException:
            agent.kill()
            agent.wait()
            raise
        exit_s = stop_time(agent)
    finally:
        remove_cgroups(mount, top, kids)

    # As many triggers as the hard open-file limit allows (it needs CAP_SYS_RESOURCE to raise).
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    big = min(30000, (hard - 200) // 3 * 3)
    top, kids = make_cgroups(mount, "teardown-big", big // 3)
    try:
        agent, _, _ = armed_agent(tmp, "teardown-big", {
            "output": os.path.join(tmp, "big.ndjson"),
            "watch": [{"cgroup": f"{top.rel}/*", "triggers": [f"{r} some 500ms 2s" for r in RESOURCES]}]}, big)
        big_exit_s = stop_time(agent)
    finally:
        remove_cgroups(mount, top, kids)
    return per_close, fds, reload_s, exit_s, big, big_exit_s


PREKILL_CALLS = 200
PREKILL_REPLY_MS = 200


def notify(path, cgroup):
    """One Notify as sd-varlink sends it; the seconds until the reply's NUL."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5)
    s.connect(path)
    t = time.perf_counter()
    s.sendall(json.dumps({"method": "io.systemd.oom.Prekill.Notify", "parameters": {"cgroup": cgroup}}).encode() +
              b"\0")
    buf = b""
    while b"\0" not in buf:
        chunk = s.recv(4096)
        check(chunk, "the prekill hook hung up")
        buf += chunk
    dt = time.perf_counter() - t
    s.close()
    check(json.loads(buf[:buf.index(b"\0")]) == {"parameters": {}}, f"Notify: {buf!r}")
    return dt


def prekill_cost(mount, tmp):
    """The hook's answer and measure: see the module's docstring, part 6."""
    hook = os.path.join(tmp, "hook")
    os.mkdir(hook)
    sock = os.path.join(hook, "psidiag")
    rows = []
    with ScratchCgroup(mount, "prekill") as watched:
        cfg = os.path.join(tmp, "prekill.json")
        with open(cfg, "w") as f:
            json.dump({"output": os.path.join(tmp, "prekill.ndjson"), "prekill_socket": sock,
                       "prekill_reply_ms": PREKILL_REPLY_MS,
                       "watch": [{"cgroup": watched.rel, "triggers": ["cpu some 50ms 2s"]}]}, f)
        log_path = os.path.join(tmp, "prekill.log")
        with open(log_path, "w") as err:
            agent = subprocess.Popen([PSIDIAG, "--config", cfg, "--enable-delayacct", "--log-level", "debug"],
                                     stderr=err)
        try:
            wait_log(log_path, "serving systemd-oomd's prekill hook", 60, agent)
            gone = sorted(notify(sock, "/psidiag-bench-gone") for _ in range(PREKILL_CALLS))
            for procs in (10, 300, 3000):
                with ScratchCgroup(mount, f"prekill{procs}") as cg:
                    park_many(cg, procs, 1)
                    answer = notify(sock, "/" + cg.rel)
                    m = wait_log(log_path, r"prekill hook: /" + re.escape(cg.rel) +
                                 r" measured, (\d+) of (\d+) processes, (\d+) us after the call", 30, agent)
                    rows.append((procs, answer, int(m.group(1)), int(m.group(3)) / 1e6))
        finally:
            stop_agent(agent)
    return gone[len(gone) // 2], gone[len(gone) * 99 // 100], rows


def want(part):
    return ONLY in (None, part)


def main():
    mount = check_kernel()
    tmp = tempfile.mkdtemp(prefix="psidiag-bench-")
    with open("/proc/cpuinfo") as f:
        cpu = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "?")
    print(f"psidiag benchmark: {os.uname().release}, {os.cpu_count()} cpus ({cpu})")

    rows = snapshot_cost(mount) if want("snapshot") else []
    pf = process_first_cost(mount) if ONLY in (None, "snapshot", "procs") else None
    idle = idle_cost(mount, tmp) if want("idle") else None
    lat = [agent_time(mount, tmp, n) for n in (1000, 10000)] if want("snapshot") else []
    td = teardown(mount, tmp) if want("teardown") else None
    rec = [recorder_cost(mount, tmp, n) for n in (10, 300, 3000)] if want("recorder") else []
    ctr = containers_cost(mount, tmp) if want("containers") else None
    pk = prekill_cost(mount, tmp) if want("prekill") else None
    floor_of = {n: f for n, f, _, _ in rows}

    print("\n| measurement | psidiag | floor, same run | ratio or target |")
    print("| --- | ---: | ---: | --- |")
    for n, f, st, o in rows:
        print(f"| `snapshot --sample-ms 0`, {n:,} threads | {o * 1e3:.1f} ms ({o / n * 1e6:.1f} us/thread) | "
              f"{f * 1e3:.1f} ms (with every task stat: {st * 1e3:.1f} ms, {st / f:.1f}x) | "
              f"**{o / f:.2f}x**{' (target 1.5x)' if n == 4000 else ''} |")
    if pf:
        n, procs, f, o, ratio, m, m_ratio, over = pf
        print(f"| `snapshot --sample-ms 0`, {n:,} threads in {procs} processes | {o * 1e3:.1f} ms | "
              f"{f * 1e3:.1f} ms (per-thread floor) | **{ratio:.2f}x** (median of rounds, target 0.25x) |")
        print(f"| the same, the process-first method's floor (its kernel calls alone) | {o * 1e3:.1f} ms | "
              f"{m * 1e3:.1f} ms ({m_ratio:.2f}x the per-thread floor) | **{over:.2f}x** |")
    if idle:
        armed, ticks, vol, invol, rss, fds = idle
        print(f"| idle {IDLE_S} s, {armed} armed triggers: cpu ticks | {ticks} | | 0 |")
        print(f"| idle: voluntary / involuntary context switches | {vol} / {invol} | | 0 / - |")
        print(f"| idle: RSS, open fds | {rss / 1024:.1f} MiB, {fds} | | < 8 MiB, <= 330 fds |")
    for n, k, p50, p99 in lat:
        two = 2 * floor_of[n]
        print(f"| agent time per incident, {n:,} threads, {k} incidents: p50 / p99 | "
              f"{p50 / 1e3:.1f} / {p99 / 1e3:.1f} ms | two netlink passes: {two * 1e3:.1f} ms | "
              f"{p50 / 1e6 / two:.2f}x / {p99 / 1e6 / two:.2f}x |")
    if td:
        per_close, td_fds, reload_s, exit_s, big, big_exit_s = td
        print(f"| exit after SIGTERM, 3,000 triggers on 1,000 cgroups ({td_fds} fds) | {exit_s:.2f} s | "
              f"one thread closing them: {3000 * per_close:.1f} s ({per_close * 1e3:.1f} ms each) | "
              f"**{exit_s / (3000 * per_close):.3f}x**, target < 3 s |")
        print(f"| exit after SIGTERM, {big:,} triggers | {big_exit_s:.2f} s | one thread: {big * per_close:.1f} s | "
              f"**{big_exit_s / (big * per_close):.3f}x**, target < 10 s at 30,000 |")
        print(f"| SIGHUP dropping 2,000 of 3,000 triggers: incident of a kept cgroup made busy then | "
              f"{reload_s:.2f} s after the SIGHUP | | target < 6 s |")

    for n, per_s, loop_s, cpu_s, per_entry, floor, rss, recorded in rec:
        print(f"| recorder, {n:,} processes: per recorded second | {per_s:.1f} entries, {loop_s * 1e3:.1f} ms on the "
              f"loop ({cpu_s * 1e3:.0f} ms cpu) | one snapshot's floor: {floor * 1e3:.1f} ms | "
              f"**{per_entry / floor:.2f}x** the floor per entry; peak RSS {rss / 1024:.1f} MiB |")

    if ctr:
        (dc, dw, pc, pw), floor = ctr
        for what, cold, warm in (("docker, 16 config.v2.json", dc, dw), ("podman, containers.json of 200", pc, pw)):
            print(f"| container names of one incident (16 containers; {what}): cold / warm | "
                  f"{cold / 1e3:.2f} / {warm / 1e3:.3f} ms | one snapshot of 10 processes: {floor * 1e3:.1f} ms | "
                  f"**{cold / 1e6 / floor:.2f}x / {warm / 1e6 / floor:.3f}x** |")
    if pk:
        p50, p99, pk_rows = pk
        print(f"| prekill Notify, cgroup gone ({PREKILL_CALLS} calls): p50 / p99 | {p50 * 1e3:.2f} / "
              f"{p99 * 1e3:.2f} ms | | target p99 < 10 ms |")
        for n, answer, measured, whole in pk_rows:
            print(f"| prekill Notify, {n:,} processes: answer, whole measure | {answer * 1e3:.0f} ms, "
                  f"{whole * 1e3:.0f} ms ({measured} measured) | | answer <= {PREKILL_REPLY_MS} ms, measure < 1 s |")

    subprocess.run(["rm", "-rf", tmp])
    # Targets: within 1.5x the floor at 4,000 threads; idle: no ticks, no wakeups, < 8 MiB.
    if rows:
        four = next(r for r in rows if r[0] == 4000)
        check(four[3] / four[1] <= 1.5, f"snapshot at 4,000 threads is {four[3] / four[1]:.2f}x the floor")
    if pf:
        # The target. This VM misses it: the method's kernel calls alone cost about 0.30x
        # (docs/performance.md: Process first).
        check(pf[4] <= 0.25, f"snapshot of {pf[0]} threads in {pf[1]} processes is {pf[4]:.2f}x the per-thread floor "
              f"(the process-first method's own floor: {pf[6]:.2f}x)")
    if idle:
        check(ticks == 0 and vol == 0 and rss < 8 * 1024, "the idle agent woke up or grew")
        # One descriptor per trigger (300 triggers: at most 330).
        check(fds <= 330, f"{fds} fds for {armed} triggers")
    if pk:
        check(pk[1] < 0.010, f"prekill Notify p99 {pk[1] * 1e3:.2f} ms")
        for n, answer, measured, whole in pk[2]:
            # The answer's bound, with the client's own scheduling on a loaded host beside it.
            check(answer < PREKILL_REPLY_MS / 1e3 + 0.05, f"Notify of {n} processes answered in {answer * 1e3:.0f} ms")
            check(whole < 1 or n < 3000, f"measuring {n} processes took {whole:.2f} s")
    if td:
        # Teardown off the loop. 30,000 triggers need a hard limit above 30,000; the
        # target is scaled to what this host allows.
        check(exit_s < 3, f"exit with 3,000 triggers took {exit_s:.2f} s")
        check(big_exit_s < 10 * big / 30000 + 1, f"exit with {big} triggers took {big_exit_s:.2f} s")
        check(reload_s < 6, f"the kept cgroup's incident came {reload_s:.2f} s after the SIGHUP")


run(main)
