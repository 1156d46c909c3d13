#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""On-cpu samples on the real kernel (probes/perfring.c, probes/perfsample.c): the events opened
for a scratch cgroup2 cgroup on every online cpu, a spinner started in it after they are enabled:
the rings hold samples of the spinner's pid, each with a user stack copy of the size asked (and
some of it copied), x86-64 user registers (abi 64, an sp inside that stack's range, an ip), and an
MMAP2 record of the spinner's own binary (with a build-id where the kernel gives them), read with
no record rejected."""

import os
import platform
import select
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ScratchCgroup, check, find_mount, run, skip  # noqa: E402

PROBE, WORKLOAD = sys.argv[1:3]
STACK = 16384
FREQ = 199
RUN_MS = 4000


def main():
    if os.geteuid() != 0:
        skip("needs root (a scratch cgroup, cpu-wide perf events)")
    if platform.machine() != "x86_64":
        skip(f"the sampled user registers are x86-64's; this is {platform.machine()}")
    mount = find_mount("cgroup2")
    if not mount:
        skip("no cgroup2 mount in /proc/self/mountinfo")
    with open("/proc/sys/kernel/perf_event_paranoid") as f:
        paranoid = int(f.read())
    with ScratchCgroup(mount, "perfsample") as cg:
        probe = subprocess.Popen([PROBE, cg.path, str(FREQ), str(STACK), str(RUN_MS)], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
        try:
            ready, _, _ = select.select([probe.stdout], [], [], 30)
            check(ready, "probe-perfsample printed nothing in 30 s")
            first = probe.stdout.readline().split()
            if first[:2] == ["error", "EACCES"] or first[:2] == ["error", "EPERM"]:
                skip(f"perf_event_open refused ({first[1]}, perf_event_paranoid {paranoid}, no CAP_PERFMON?)")
            # (the message is built whether or not the check fails: no read of stderr here, which
            # would wait for the probe to end)
            check(first and first[0] == "info", f"probe-perfsample said {first}")
            info = dict(kv.split("=") for kv in first[1:])
            print(f"opened: {' '.join(first[1:])} (perf_event_paranoid {paranoid})")
            spinner = cg.spawn([WORKLOAD, "spin", "perf-spin"])
            out, err = probe.communicate(timeout=RUN_MS / 1000 + 60)
        finally:
            if probe.poll() is None:
                probe.kill()
                probe.wait()
        check(probe.returncode == 0, f"probe-perfsample exited {probe.returncode}: {out} {err}")
    lines = [line.split() for line in out.splitlines()]
    samples = [line for line in lines if line[0] == "sample"]
    mmaps = [line for line in lines if line[0] == "mmap2"]
    stats = next(line for line in lines if line[0] == "stats")
    records, n_samples, n_mmap2, _, _, lost, malformed, corrupt, wrapped = (int(x) for x in stats[1:])
    print(f"{records} records: {n_samples} samples, {n_mmap2} mmap2, {lost} lost, {malformed} malformed, "
          f"{corrupt} corrupt, {wrapped} wrapped")

    check(malformed == 0 and corrupt == 0, f"records rejected on the real kernel: {stats}")
    ours = [s for s in samples if int(s[1]) == spinner.pid]
    # A spinner on a shared two-cpu machine gets at least a few of 199 Hz * 4 s.
    check(len(ours) >= 5, f"{len(ours)} samples of the spinner (pid {spinner.pid}) of {len(samples)}: {samples[:5]}")
    for s in ours:
        _, pid, tid, cpu, n_kernel, n_user, size, dyn, abi, sp, ip = s
        check(int(size) == STACK, f"a stack copy of {size} bytes, {STACK} asked: {s}")
        check(0 < int(dyn) <= STACK, f"dyn_size {dyn} of a user stack: {s}")
        check(int(abi) == 2, f"user registers with abi {abi}, not PERF_SAMPLE_REGS_ABI_64: {s}")
        check(int(sp, 16) != 0 and int(ip, 16) != 0, f"no sp or ip: {s}")
        check(int(n_user) >= 1, f"no user callchain: {s}")
    binary = os.path.realpath(WORKLOAD)
    own = [m for m in mmaps if int(m[1]) == spinner.pid and m[6] == binary]
    check(own, f"no MMAP2 of {binary} for pid {spinner.pid}: {mmaps[:10]}")
    if info["build_ids"] == "1":
        check(all(m[5] == "20" for m in own), f"MMAP2 of {binary} without its 20-byte build-id: {own}")
    print(f"{len(ours)} of the samples printed are the spinner's, stacks of {STACK} bytes; MMAP2 of {binary}: {own[0][2:6]}")


run(main)
