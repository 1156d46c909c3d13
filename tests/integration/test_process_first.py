#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Process-first snapshots on the real kernel (docs/incident.md: How it works, "Process first").

1. Under cpu contention, a 1 s `snapshot`: two 4-thread spinners and a process that keeps 4
   short-lived (50 ms) spinning threads alive rank first, each reported process's threads add up
   to no more than the process's own delay, and the churner reports at least the sample's length
   in cpu delay: the threads that ended inside the sample are in its TGID totals.
2. A multi-threaded spinner that exits in the middle of the sample is reported `ended`, with its
   final counters from the kernel's exit records (integration-taskstats checks the AGGR_TGID record
   itself).
3. A shell that keeps starting short-lived children: children that started and ended inside the
   sample are placed in the cgroup by their parent (`parent`, the parent's cgroup).
4. A threaded cgroup, which has no cgroup.procs of its own, names the process of the thread in it.
5. States by process: 2,000 threads in twenty processes, four of them stopped (SIGSTOP): the
   state sample, 256 threads evenly spaced over all of them (each process's dozen found by seeking
   its /proc/<pid>/task), counts the stopped 400 within a few threads."""

import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ScratchCgroup, check, check_kernel, rmdir_retry, run, snapshot, spawn, validator  # noqa: E402

PSIDIAG, WORKLOAD, SCHEMAS = sys.argv[1:4]


def wait_threads(pid, n, timeout=30):
    deadline = time.time() + timeout
    while len(os.listdir(f"/proc/{pid}/task")) < n:
        check(time.time() < deadline, f"process {pid} did not start {n} threads")
        time.sleep(0.05)


def contend(cg, name):
    """Two 2-thread spinners: the cpus of a 2-vCPU machine and more, contended."""
    for i in range(2):
        cg.spawn([WORKLOAD, "spin", f"{name}{i}", "2"])


def by_pid(inc):
    return {p["pid"]: p for p in inc["most_delayed"]}


def threads_within(inc):
    for p in inc["most_delayed"]:
        for res in p["delay_us"]:
            total = sum(t["delay_us"][res] or 0 for t in p["threads"])
            check(total <= (p["delay_us"][res] or 0),
                  f"threads of {p['pid']} add up to {total} us of {res}, more than the process's {p['delay_us'][res]}")


def contention(validate, mount):
    with ScratchCgroup(mount, "pfirst") as cg:
        spin = [cg.spawn([WORKLOAD, "spin", f"pf-spin{i}", "4"]) for i in range(2)]
        churn = cg.spawn([WORKLOAD, "churn", "pf-churn", "4"])
        nap = cg.spawn([WORKLOAD, "sleep", "pf-nap"])
        for p in spin:
            wait_threads(p.pid, 4)
        wait_threads(churn.pid, 2)
        inc = snapshot(PSIDIAG, cg.rel, "--resource", "cpu", "--sample-ms", "1000", "--top", "5", "--enable-delayacct")
        validate(inc)
        s = inc["sample"]
        check(s["processes"] == 4, f"processes: {s}")
        # Threads, not processes: 8 spinner threads, the sleeper, and churn's main thread are there
        # for sure; churn's 50 ms workers may all be between two at the listing (seen under ASan).
        check(s["tasks"] >= 10, f"tasks counts threads: {s}")
        check(s["threads_ms"] is not None and 0 < s["threads_ms"] <= s["duration_ms"], f"threads_ms: {s}")
        first = [p["pid"] for p in inc["most_delayed"][:3]]
        check(set(first) == {spin[0].pid, spin[1].pid, churn.pid},
              f"the busy processes do not rank first: {first}, nap {nap.pid}")
        threads_within(inc)
        got = by_pid(inc)[churn.pid]["delay_us"]["cpu"]
        check(got >= s["duration_ms"] * 1000,
              f"the churner reports {got / 1e3:.0f} ms of cpu delay in a {s['duration_ms']} ms sample")
        for p in spin:
            check(len(by_pid(inc)[p.pid]["threads"]) > 0, f"spinner {p.pid} has no thread detail")
        print(f"contention: churner {got / 1e3:.0f} ms of cpu delay in {s['duration_ms']} ms; "
              f"spinners {[by_pid(inc)[p.pid]['delay_us']['cpu'] // 1000 for p in spin]} ms")


def ended(validate, mount):
    with ScratchCgroup(mount, "pfend") as cg:
        contend(cg, "pf-bg")
        env = dict(os.environ, PSIDIAG_EXIT_MS="2500")
        dying = spawn(cg, [WORKLOAD, "spin-exit", "pf-dying", "4"], env)
        wait_threads(dying.pid, 4)
        inc = snapshot(PSIDIAG, cg.rel, "--resource", "cpu", "--sample-ms", "6000", "--top", "10", "--enable-delayacct")
        validate(inc)
        check(dying.poll() is not None, "the dying spinner outlived the sample")
        p = by_pid(inc).get(dying.pid)
        check(p is not None, f"the process that ended in the sample is not reported: {inc['most_delayed']}")
        check(p["ended"] is True and p["cmdline"] is None, f"not reported as ended: {p}")
        check(p["comm"] == "pf-dying", f"comm from the exit record: {p['comm']}")
        check(p["delay_us"]["cpu"] > 0, f"the ended process's final counters: {p['delay_us']}")
        check(inc["sample"]["exit_records"] >= 4, f"exit records: {inc['sample']}")
        print(f"ended: pid {dying.pid} reported with {p['delay_us']['cpu'] / 1e3:.0f} ms of cpu delay "
              f"from its exit record")


def short_lived(validate, mount):
    with ScratchCgroup(mount, "pfshort") as cg:
        contend(cg, "pf-load")
        # Each child spins for a moment in the shell and ends.
        loop = cg.spawn(["/bin/sh", "-c",
                         "while :; do /bin/sh -c 'i=0; while [ $i -lt 3000 ]; do i=$((i+1)); done'; done"])
        deadline = time.time() + 30
        while True:
            inc = snapshot(PSIDIAG, cg.rel, "--resource", "cpu", "--sample-ms", "1000", "--top", "100", "--enable-delayacct")
            validate(inc)
            placed = [p for p in inc["most_delayed"] if p["parent"] == loop.pid]
            if placed:
                break
            check(time.time() < deadline, f"no child of the shell {loop.pid} was placed: {inc['sample']}")
        p = placed[0]
        check(p["ended"] is True, f"a placed child is not ended: {p}")
        check(p["cgroup"] == "/" + cg.rel, f"a placed child's cgroup is its parent's: {p['cgroup']} vs /{cg.rel}")
        check(isinstance(inc["sample"]["unattributed"], dict), f"unattributed: {inc['sample']}")
        print(f"short-lived: {len(placed)} children of the shell placed, "
              f"{inc['sample']['unattributed']['processes']} processes of the host unattributed")


def threaded(validate, mount):
    """A threaded cgroup (no cgroup.procs of its own) still names the process its thread is of."""
    with ScratchCgroup(mount, "pfthr") as cg:
        spinner = cg.spawn([WORKLOAD, "spin", "pf-thr", "3"])
        wait_threads(spinner.pid, 3)
        child = os.path.join(cg.path, "t")
        os.mkdir(child)
        try:
            with open(os.path.join(child, "cgroup.type"), "w") as f:
                f.write("threaded")
            tid = next(int(t) for t in os.listdir(f"/proc/{spinner.pid}/task") if int(t) != spinner.pid)
            with open(os.path.join(child, "cgroup.threads"), "w") as f:
                f.write(str(tid))
            inc = snapshot(PSIDIAG, f"{cg.rel}/t", "--resource", "cpu", "--sample-ms", "0", "--enable-delayacct")
            validate(inc)
            check(inc["sample"]["processes"] == 1 and inc["sample"]["tasks"] == 1, f"threaded: {inc['sample']}")
            # Its state is the thread's in the threaded cgroup (a spinner: R), not its leader's.
            check(inc["states"]["read"] == 1 and inc["states"]["running"] == 1, f"threaded: states {inc['states']}")
            check([p["pid"] for p in inc["most_delayed"]] == [spinner.pid],
                  f"the threaded cgroup's process is not named: {inc['most_delayed']}")
        finally:
            spinner.kill()
            spinner.wait()
            rmdir_retry(child)
        print(f"threaded: thread {tid} of {spinner.pid} in a threaded cgroup, its process named")


def stopped_states(validate, mount):
    """Whole processes in one state: the sample reads every process in proportion to its threads."""
    with ScratchCgroup(mount, "pfstates") as cg:
        parks = [cg.spawn([WORKLOAD, "park", f"pf-park{i}", "100"]) for i in range(20)]
        for p in parks:
            wait_threads(p.pid, 100)
        for p in parks[3:7]:
            os.kill(p.pid, signal.SIGSTOP)
        deadline = time.time() + 30
        while True:
            states = []
            for p in parks[3:7]:
                for t in os.listdir(f"/proc/{p.pid}/task"):
                    with open(f"/proc/{p.pid}/task/{t}/stat") as f:
                        states.append(f.read().rsplit(")", 1)[1].split()[0])
            if all(st == "T" for st in states):
                break
            check(time.time() < deadline, f"stopped processes' threads are not all stopped: {set(states)}")
            time.sleep(0.05)
        inc = snapshot(PSIDIAG, cg.rel, "--sample-ms", "0", "--enable-delayacct")
        validate(inc)
        st = inc["states"]
        check(inc["sample"]["tasks"] == 2000, f"tasks {inc['sample']['tasks']}")
        check(st["read"] == 256 and st["scaled"], f"states {st}")
        check(370 <= st["stopped"] <= 430 and st["running"] <= 40 and 1560 <= st["sleeping"] <= 1630,
              f"400 stopped threads of 2,000 counted as {st}")
        for p in parks[3:7]:
            os.kill(p.pid, signal.SIGCONT)
        print(f"states: 400 of 2,000 threads stopped, counted {st['stopped']} from {st['read']} reads")


def main():
    mount = check_kernel()
    validate = validator(SCHEMAS)
    contention(validate, mount)
    ended(validate, mount)
    short_lived(validate, mount)
    threaded(validate, mount)
    stopped_states(validate, mount)


run(main)
