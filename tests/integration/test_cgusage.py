#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A cgroup's own counters on the real kernel (probes/cgusage.c): a spinner's cpu time shows in
its cgroup2 cgroup's cpu.stat within physical bounds, and on a hybrid host the cgroup-v1
controllers' files (cpuacct, blkio, memory) parse and add what cgroup2 lacks."""

import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ScratchCgroup, check, check_kernel, find_mount, run  # noqa: E402

PROBE, WORKLOAD = sys.argv[1:3]


def usage(*dirs):
    p = subprocess.run([PROBE, *dirs], capture_output=True, text=True, timeout=30)
    check(p.returncode == 0, f"probe-cgusage {dirs}: {p.returncode} {p.stdout} {p.stderr}")
    return [None if f == "-" else int(f) for f in p.stdout.split()]


def main():
    mount = check_kernel()
    with ScratchCgroup(mount, "cgusage") as cg:
        cpu0, *_ = usage(cg.path)
        check(cpu0 == 0, f"a new cgroup has used {cpu0} us of cpu")
        start = time.monotonic()
        cg.spawn([WORKLOAD, "spin", "cgusage-spin"])
        deadline = start + 30
        while True:
            cpu, *_ = usage(cg.path)
            if cpu >= 200_000:
                break
            check(time.monotonic() < deadline, f"a spinner's cgroup shows {cpu} us of cpu after 30 s")
            time.sleep(0.05)
        elapsed_us = (time.monotonic() - start) * 1e6
        # One single-threaded spinner: never above one cpu of the time it ran.
        check(cpu <= elapsed_us * 1.05 + 10_000, f"{cpu} us of cpu in {elapsed_us:.0f} us from one thread")
        print(f"cgroup2: {cpu / 1e3:.0f} ms of cpu in {elapsed_us / 1e3:.0f} ms")

    v1 = [find_mount("cgroup", c) for c in ("cpuacct", "blkio", "memory")]
    if all(v is None for v in v1):
        print("no cgroup-v1 controllers mounted: a plain cgroup2 host, v1 part not run")
        return
    got = usage(mount, *[v or "-" for v in v1])
    for name, v, value in (("cpuacct", v1[0], got[0]), ("blkio", v1[1], got[1]), ("memory", v1[2], got[3])):
        check(v is None or value is not None, f"{name} is mounted at {v} but gave nothing: {got}")
    check(got[3] is None or got[3] > 0, f"the root memory cgroup charges nothing: {got}")
    print(f"hybrid root: cpu {got[0]} us, read {got[1]} B, written {got[2]} B, memory {got[3]} B")


run(main)
