#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""taskstats_cgroupstats() (probes/taskstats.h) on the real kernel, through
tests/integration/probe-cgroupstats.c: CGROUPSTATS_CMD_GET counts the states of a cgroup-v1
directory and is refused with EINVAL on cgroup2 (docs/kernel-facts.md: cgroupstats).

cgroupstats_build() compares tsk->__state for equality, so since 6.1 a task sleeping with
TASK_INTERRUPTIBLE|TASK_FREEZABLE (nanosleep, futex waits) is not counted as sleeping (seen on
6.18): the sleeper the test relies on blocks in a pipe read, a plain TASK_INTERRUPTIBLE wait."""

import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import check, check_kernel, find_mount, run, skip  # noqa: E402

PROBE, WORKLOAD = sys.argv[1:3]


def probe(path):
    p = subprocess.run([PROBE, path], capture_output=True, text=True, timeout=30)
    return p.returncode, p.stdout.strip()


def main():
    mount2 = check_kernel()
    code, out = probe(mount2)
    check(code == 1 and out == "error EINVAL", f"cgroupstats on cgroup2: {code} {out!r}")

    v1 = find_mount("cgroup", "cpu") or find_mount("cgroup", "memory") or find_mount("cgroup", "pids")
    if not v1:
        skip("no cgroup-v1 hierarchy is mounted here (a pure cgroup2 host); cgroupstats has nothing to answer for")
    path = os.path.join(v1, f"psidiag-it-cgstats-{os.getpid()}")
    os.mkdir(path)
    procs = []
    try:
        def enter():
            with open(os.path.join(path, "cgroup.procs"), "w") as f:
                f.write(str(os.getpid()))
        procs.append(subprocess.Popen([WORKLOAD, "spin", "cgs-spin"], preexec_fn=enter))
        reader = subprocess.Popen(["cat"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, preexec_fn=enter)
        procs.append(reader)
        procs.append(subprocess.Popen(["sleep", "60"], preexec_fn=enter))  # freezable: counted before 6.1 only
        stopped = subprocess.Popen(["sleep", "60"], preexec_fn=enter)
        procs.append(stopped)
        os.kill(stopped.pid, signal.SIGSTOP)
        time.sleep(0.5)
        code, out = probe(path)
        check(code == 0, f"cgroupstats on {path}: {out}")
        running, sleeping, stopped_n, unint, io_wait = map(int, out.split())
        check(running == 1 and stopped_n == 1 and sleeping in (1, 2),
              f"counts {out!r} (want 1 running, 1 or 2 sleeping, 1 stopped)")
        print(f"cgroupstats of {path}: {out}")
    finally:
        for p in procs:
            p.kill()
            p.wait()
        deadline = time.time() + 5
        while os.path.exists(path) and time.time() < deadline:
            try:
                os.rmdir(path)
            except OSError:
                time.sleep(0.05)


run(main)
