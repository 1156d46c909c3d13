#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The trigger set (triggers/psi.h) on real PSI triggers, through tests/integration/probe-psiset.c:
- of two triggers on one cgroup's cpu.pressure, only the one that fired is reported. The kernel
  wakes every trigger of a pressure file when one fires (kernfs_notify()), and a set nested in
  the loop's epoll would lose the fired one's EPOLLPRI to the loop's readiness check: the set
  must tell them apart all the same.
- removing the cgroup reports each of its triggers as gone, once."""

import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ScratchCgroup, check, check_kernel, run  # noqa: E402

PROBE, WORKLOAD = sys.argv[1:3]


def results(out):
    lines = [l.split() for l in out.splitlines() if l and l != "armed"]
    return {int(f[0]): (int(f[2]), int(f[4])) for f in lines}


def main():
    mount = check_kernel()

    with ScratchCgroup(mount, "set") as cg:
        for _ in range((os.cpu_count() or 2) + 2):
            cg.spawn([WORKLOAD, "spin", "psidiag-spin"])
        pressure = os.path.join(cg.path, "cpu.pressure")
        # Two spinners more than cpus: "some" grows all the time; "full" (every runnable task of
        # the cgroup waiting) stays far below 95% of the window.
        p = subprocess.run([PROBE, "60", "2", f"{pressure}:some 50000 2000000", f"{pressure}:full 1900000 2000000"],
                           capture_output=True, text=True, timeout=120)
        check(p.returncode == 0, f"probe: {p.returncode} {p.stderr}")
        r = results(p.stdout)
        check(r[0][0] >= 2, f"the firing trigger was reported {r[0][0]} times in 60 s: {p.stdout}")
        check(r[1][0] == 0, f"its sibling on the same file was reported {r[1][0]} times: {p.stdout}")
        print(f"siblings on one cpu.pressure: 'some 50ms' fired {r[0][0]} times, 'full 1.9s' {r[1][0]}")

    cg = ScratchCgroup(mount, "gone")
    with cg:
        pressure = os.path.join(cg.path, "memory.pressure")
        probe = subprocess.Popen([PROBE, "60", "1000", f"{pressure}:some 500000 2000000",
                                  f"{pressure}:full 500000 2000000"],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            first = probe.stdout.readline().strip()
            check(first == "armed", f"probe said {first!r}")
            t = time.time()
            cg.remove()
            out, err = probe.communicate(timeout=90)
        finally:
            if probe.poll() is None:
                probe.kill()
                probe.wait()
        r = results(out)
        check(probe.returncode == 0, f"probe: {probe.returncode} {err}")
        check(r[0] == (0, 1) and r[1] == (0, 1), f"after rmdir: {out}")
        print(f"rmdir: both triggers reported gone, {time.time() - t:.2f} s")


run(main)
