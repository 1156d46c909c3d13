#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""What on-cpu stacks cost, against `perf record` of the same window, in one
run: a busy node (two spinners built without frame pointers and Debian's xz compressing, in a
scratch cgroup) sampled node-wide for WINDOW_S seconds at HZ with 16 KiB user stack copies, by

- psidiag: `psidiag snapshot --sample-ms WINDOW --stacks-hz HZ` (node-wide), minus the floor of
  the same snapshot without stacks: the capture's cpu (user + system), peak RSS and the bytes of
  the incident's `stacks`, with what the capture itself reports (samples, unwind_ms, end_ms);
- perf: `perf record -F HZ -a -g --call-graph dwarf,16384 -- sleep WINDOW` then `perf script`
  (Debian's linux-perf): their cpu, peak RSS, and perf.data's bytes plus perf script's.

ROUNDS rounds, interleaved; medians. Prints one table and the ratios; exits 1 if psidiag's capture
costs more cpu than perf's. Needs root and perf; removes its cgroup and workloads."""

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from common import ScratchCgroup, find_mount  # noqa: E402

PSIDIAG, WORKLOAD = sys.argv[1:3]
HZ = 99
WINDOW_S = 5
ROUNDS = 3


def hwm_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            return next(int(l.split()[1]) for l in f if l.startswith("VmHWM:"))
    except (OSError, StopIteration):
        return 0


def timed(argv, keep_output=True):
    """argv run to its end: (cpu seconds, peak RSS KiB, stdout bytes). The peak is the process's
    VmHWM read every 20 ms while it runs (its rusage's maxrss would be the forking Python's)."""
    with tempfile.TemporaryFile() as out:
        p = subprocess.Popen(argv, stdout=out if keep_output else subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        peak = 0
        while True:
            peak = max(peak, hwm_kib(p.pid))
            pid, status, ru = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            time.sleep(0.02)
        p.returncode = os.waitstatus_to_exitcode(status)
        if p.returncode != 0:
            raise SystemExit(f"{argv[:3]} exited {p.returncode}")
        out.seek(0)
        return ru.ru_utime + ru.ru_stime, peak, out.read()


def psidiag_round(stacks):
    argv = [PSIDIAG, "snapshot", "--sample-ms", str(WINDOW_S * 1000), "--top", "5"]
    cpu, rss, out = timed(argv + (["--stacks-hz", str(HZ)] if stacks else []))
    inc = json.loads(out)
    return cpu, rss, inc.get("stacks")


def perf_round(tmp):
    data = os.path.join(tmp, "perf.data")
    rec_cpu, rec_rss, _ = timed(["perf", "record", "-q", "-F", str(HZ), "-a", "-g", "--call-graph", "dwarf,16384",
                                 "-o", data, "--", "sleep", str(WINDOW_S)], keep_output=False)
    size = os.path.getsize(data)
    scr_cpu, scr_rss, out = timed(["perf", "script", "-i", data])
    return rec_cpu + scr_cpu, max(rec_rss, scr_rss), size + len(out), rec_cpu, scr_cpu


def main():
    if os.geteuid() != 0:
        print("SKIP: needs root")
        sys.exit(77)
    if not shutil.which("perf"):
        print("SKIP: no perf (Debian's linux-perf)")
        sys.exit(77)
    mount = find_mount("cgroup2")
    rows = {"floor": [], "stacks": [], "perf": []}
    with ScratchCgroup(mount, "benchstacks") as cg, tempfile.TemporaryDirectory(prefix="psidiag-bench-") as tmp:
        cg.spawn([WORKLOAD])
        cg.spawn([WORKLOAD])
        cg.spawn(["sh", "-c", "exec xz -6 -T1 -c < /dev/urandom > /dev/null"])
        time.sleep(1)
        for _ in range(ROUNDS):
            rows["floor"].append(psidiag_round(False))
            rows["stacks"].append(psidiag_round(True))
            rows["perf"].append(perf_round(tmp))
    med = statistics.median
    floor_cpu = med(r[0] for r in rows["floor"])
    st_cpu = med(r[0] for r in rows["stacks"])
    capture_cpu = max(st_cpu - floor_cpu, 0.0)
    st_rss, floor_rss = med(r[1] for r in rows["stacks"]), med(r[1] for r in rows["floor"])
    st_bytes = med(len(json.dumps(r[2])) for r in rows["stacks"])
    samples = med(r[2]["samples"] + r[2]["idle_samples"] for r in rows["stacks"])
    unwind_ms = med(r[2]["unwind_ms"] for r in rows["stacks"])
    end_ms = max(r[2]["end_ms"] for r in rows["stacks"])
    perf_cpu = med(r[0] for r in rows["perf"])
    perf_rss = med(r[1] for r in rows["perf"])
    perf_bytes = med(r[2] for r in rows["perf"])
    print(f"{WINDOW_S} s node-wide at {HZ} Hz, 16 KiB stack copies, {ROUNDS} rounds (medians):")
    print(f"  {'':28} {'cpu s':>8} {'peak RSS KiB':>13} {'bytes':>10}")
    print(f"  {'psidiag snapshot, no stacks':28} {floor_cpu:8.3f} {floor_rss:13.0f} {'':>10}")
    print(f"  {'psidiag snapshot, stacks':28} {st_cpu:8.3f} {st_rss:13.0f} {st_bytes:10.0f}")
    print(f"  {'  the capture (minus floor)':28} {capture_cpu:8.3f} {max(st_rss - floor_rss, 0):13.0f} {st_bytes:10.0f}")
    print(f"  {'perf record + perf script':28} {perf_cpu:8.3f} {perf_rss:13.0f} {perf_bytes:10.0f}")
    print(f"  perf record alone {med(r[3] for r in rows['perf']):.3f} s, perf script {med(r[4] for r in rows['perf']):.3f} s")
    print(f"psidiag's capture: {samples:.0f} samples, {unwind_ms:.0f} ms unwinding, its end at most {end_ms} ms")
    print(f"ratios psidiag/perf: cpu {capture_cpu / perf_cpu:.3f}, bytes {st_bytes / perf_bytes:.5f}, "
          f"peak RSS {st_rss / perf_rss:.2f}")
    if capture_cpu > perf_cpu:
        print("FAIL: the capture costs more cpu than perf")
        sys.exit(1)


main()
