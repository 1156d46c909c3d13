#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""proc_task_nth() on the real kernel: seeking /proc/<pid>/task to entry k + 2 and reading one
entry gives the k-th thread of a listing, for every k, last to first and first to last (each seek
where the last read stopped), and -ESRCH one past the last (what the state sample relies on: kernel-facts.md: task-dir-seek)."""

import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import check, check_kernel, run  # noqa: E402

PROBE, WORKLOAD = sys.argv[1:3]


def main():
    check_kernel()
    threads = 40
    park = subprocess.Popen([WORKLOAD, "park", "nth-park", str(threads)])
    try:
        deadline = time.time() + 30
        while len(os.listdir(f"/proc/{park.pid}/task")) < threads and time.time() < deadline:
            time.sleep(0.05)
        check(len(os.listdir(f"/proc/{park.pid}/task")) >= threads, f"{threads} threads did not start")
        p = subprocess.run([PROBE, str(park.pid)], capture_output=True, text=True, timeout=30)
        check(p.returncode == 0, f"probe failed: {p.stdout} {p.stderr}")
        lines = dict(line.split(" ", 1) for line in p.stdout.strip().split("\n"))
        check(lines["procfs"] == "1", "the real /proc is not recognised as procfs")
        listed = [int(t) for t in lines["listed"].split()]
        check(len(listed) >= threads and listed[0] == park.pid, f"listing {listed}")
        nth = {int(k): int(t) for k, t in (pair.split(":") for pair in lines["nth"].split())}
        check(nth == dict(enumerate(listed)), f"seeking does not give the listing's threads: {nth} vs {listed}")
        check(lines["end"] == f"{len(listed)} ESRCH", f"one past the last: {lines['end']!r}")
        asc = {int(k): int(t) for k, t in (pair.split(":") for pair in lines["asc"].split())}
        check(asc == dict(enumerate(listed)), f"seeking first to last does not give the listing: {asc}")
        print(f"{len(listed)} threads of {park.pid}: every k found by seeking, ESRCH past the end")
    finally:
        park.kill()
        park.wait()


run(main)
