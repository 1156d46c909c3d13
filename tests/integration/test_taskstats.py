#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A TGID query counts the threads that already ended (docs/kernel-facts.md: tgid-totals), which
per-thread queries lose: the ground the process-first snapshots stand on. And when a
multi-threaded process ends, its AGGR_TGID exit record (whose payload the kernel never stamps with
a version) reads as the sum of its threads' records (docs/kernel-facts.md: exit-records).

A process keeps 4 threads alive that each spin for 50 ms and end, next to spinners that keep the
cpus contended. Over one second, its TGID totals grow by at least 0.3 s of cpu time used and by
some cpu delay, while the threads alive at both ends of the second (only the main thread, which
waits) account for less than half of that.

A contended spinner's own thread reports its longest single cpu wait (v15+, docs/kernel-facts.md:
delay-maxima): non-zero, at most its total cpu delay, and on v17+ stamped with a CLOCK_REALTIME
time inside the spinner's life."""

import itertools
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ScratchCgroup, check, check_kernel, run  # noqa: E402

PROBE, WORKLOAD = sys.argv[1:3]


def probe(pid):
    p = subprocess.run([PROBE, str(pid)], capture_output=True, text=True, timeout=30)
    check(p.returncode == 0, f"probe-taskstats {pid}: {p.returncode} {p.stdout} {p.stderr}")
    tgid, tids = None, {}
    for line in p.stdout.splitlines():
        f = line.split()
        if f[0] == "tgid":
            tgid = (int(f[1]), int(f[2]))
        else:
            tids[int(f[1])] = (int(f[2]), int(f[3]))
    return tgid, tids


def probe_max(pid):
    """(version, cpu delay, cpu max or None, its timestamp or None) of the thread pid."""
    p = subprocess.run([PROBE, str(pid)], capture_output=True, text=True, timeout=30)
    check(p.returncode == 0, f"probe-taskstats {pid}: {p.returncode} {p.stdout} {p.stderr}")
    f = next(line.split() for line in p.stdout.splitlines() if line.startswith(f"tid {pid} "))
    return int(f[4]), int(f[2]), None if f[5] == "-" else int(f[5]), None if f[6] == "-" else int(f[6])


def maxima(spinner, started_ns):
    """The worst single cpu wait of a spinner that has shared the cpus for a while."""
    version, total, worst, at = probe_max(spinner.pid)
    if version < 15:
        print(f"delay maxima: version {version} has none")
        return
    check(worst is not None, f"version {version} without cpu_delay_max")
    check(0 < worst <= total, f"cpu max {worst} ns against a total of {total} ns")
    if version >= 17:
        now = time.time_ns()
        check(at is not None and started_ns - 1_000_000_000 <= at <= now,
              f"cpu max timestamp {at} outside the spinner's life [{started_ns}, {now}] (CLOCK_REALTIME)")
    else:
        check(at is None, f"version {version} has a max timestamp {at}")
    print(f"delay maxima: version {version}, worst cpu wait {worst / 1e6:.1f} ms of {total / 1e6:.0f} ms"
          + (f", {(time.time_ns() - at) / 1e9:.1f} s ago" if at else ""))


def main():
    mount = check_kernel()
    with ScratchCgroup(mount, "tgid") as cg:
        started_ns = time.time_ns()
        spinners = [cg.spawn([WORKLOAD, "spin", "tgid-spin"]) for _ in range(os.cpu_count() or 2)]
        churner = cg.spawn([WORKLOAD, "churn", "tgid-churn", "4"])
        deadline = time.time() + 30
        while len(os.listdir(f"/proc/{churner.pid}/task")) < 2:
            check(time.time() < deadline, "the churner started no threads")
            time.sleep(0.05)
        (delay_a, run_a), tids_a = probe(churner.pid)
        time.sleep(1.0)  # the window measured, not a wait for a condition
        (delay_b, run_b), tids_b = probe(churner.pid)
        ran, waited = run_b - run_a, delay_b - delay_a
        both = set(tids_a) & set(tids_b)
        per_thread = sum(tids_b[t][1] - tids_a[t][1] for t in both)
        check(ran >= 300_000_000, f"the process used {ran / 1e6:.0f} ms of cpu in the second, by TGID")
        check(waited > 0, "no cpu delay by TGID under contention")
        check(per_thread < ran / 2,
              f"threads alive at both ends account for {per_thread / 1e6:.0f} ms of {ran / 1e6:.0f} ms")
        print(f"TGID: {ran / 1e6:.0f} ms of cpu used and {waited / 1e6:.0f} ms waited in 1 s; the "
              f"{len(both)} thread(s) alive at both ends: {per_thread / 1e6:.0f} ms")
        maxima(spinners[0], started_ns)
        exit_records(cg)
    registration()


def registration():
    """The kernel's answer to an exit listener's registration is read (NLM_F_ACK): the possible
    cpus are taken, a cpu beyond them refused at once, not at a later read (kernel-facts.md:
    exit-socket-drops)."""
    possible = open("/sys/devices/system/cpu/possible").read().strip()
    ok = subprocess.run([PROBE, "--register", possible], capture_output=True, text=True, timeout=30)
    check(ok.stdout.strip() == "ok", f"registering for the possible cpus {possible}: {ok.stdout}{ok.stderr}")
    beyond = str(os.cpu_count() + 4096)
    bad = subprocess.run([PROBE, "--register", beyond], capture_output=True, text=True, timeout=30)
    check(bad.returncode == 1 and bad.stdout.startswith("error E"), f"cpu {beyond} not refused: {bad.stdout}")
    print(f"registration: the possible cpus {possible} acknowledged, cpu {beyond} refused ({bad.stdout.strip()})")


def exit_records(cg):
    """A 4-thread spinner killed while probe-taskstats --exit listens."""
    victim = cg.spawn([WORKLOAD, "spin", "tgid-victim", "4"])
    deadline = time.time() + 30
    while len(os.listdir(f"/proc/{victim.pid}/task")) < 4:
        check(time.time() < deadline, "the victim started no threads")
        time.sleep(0.05)
    # Until the process's record and all 4 threads': another thread's can come after the process's
    # (kernel-facts.md: exit-records-order).
    listener = subprocess.Popen([PROBE, "--exit", str(victim.pid), "4"], stdout=subprocess.PIPE, text=True)
    try:
        check(listener.stdout.readline().strip() == "ready", "the exit listener did not start")
        victim.send_signal(signal.SIGKILL)
        out, _ = listener.communicate(timeout=60)
    finally:
        if listener.poll() is None:
            listener.kill()
            listener.wait()
    check(listener.returncode == 0, f"no AGGR_TGID record for the killed process: {out}")
    threads = [line.split() for line in out.splitlines() if line.startswith("thread ")]
    process = next(line.split() for line in out.splitlines() if line.startswith("process "))
    check(len(threads) == 4, f"{len(threads)} thread records for 4 threads: {out}")
    version = int(threads[0][2])
    check(int(process[1]) == version and version > 0, f"the aggregate read with the thread's layout: {out}")
    summed = sum(int(t[4]) for t in threads)
    whole = int(process[3])
    # The aggregate holds the threads that reached taskstats_exit() before the one that sent it:
    # all of them but when a thread that decremented `live` first comes later (kernel-facts.md:
    # exit-records-order; 6.12 under TCG once: 58.7 ms of the 4 threads' 148.4 ms). So it is the
    # sum of some of the threads' records, and of all of them as a rule.
    subsets = [sum(int(t[4]) for t in c) for k in range(1, len(threads) + 1)
               for c in itertools.combinations(threads, k)]
    near = [x for x in subsets if abs(whole - x) <= x // 10 + 1_000_000]
    check(near, f"the aggregate's cpu time {whole} is no sum of its threads' {[int(t[4]) for t in threads]}")
    if abs(whole - summed) > summed // 10 + 1_000_000:
        print(f"  the aggregate ({whole} ns) lacks threads that exited after it was sent (all: {summed} ns)")
    check(int(process[4]) == os.getpid(), f"the aggregate's parent {process[4]} is not ours")
    print(f"exit records: 4 threads, {summed / 1e6:.0f} ms of cpu; the AGGR_TGID record: {whole / 1e6:.0f} ms")


run(main)
