#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Limits, wchans and blocked threads on the real kernel (probes/limits*.c, probes/wchan.c,
sampling/blocked.c through tests/integration/probe-limits.c):

- a cpu cgroup with a 50 ms quota per 100 ms period and a spinner: the finder names that cgroup
  (on a hybrid host a v1 cgroup with another path than the cgroup2 one, learnt from the spinner's
  /proc/<pid>/cgroup), and nr_throttled and the throttled time grow over a sample;
- a 128 MiB memory cgroup with an unlimited child holding a process: the finder walks up from the
  child to the limit, 134217728;
- a writer doing O_DIRECT writes under an io throttle rule: the device, named from
  /sys/dev/block, shows written bytes growing;
- wchans: a sleeping thread's symbol, "0" for a running one and for a reader without ptrace
  access, the stack refused without CAP_SYS_ADMIN, and a thread held in D (a CLONE_VFORK parent)
  grouped by its wchan over three looks."""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (ChildCgroup, ScratchCgroup, V1Group, check, check_kernel, find_mount, run, spawn,  # noqa: E402
                    whole_disk)

PROBE, WORKLOAD = sys.argv[1:3]
QUOTA_US, PERIOD_US = 50_000, 100_000
MEMORY_LIMIT = 128 << 20


def probe(*args, ok=True, prefix=()):
    p = subprocess.run([*prefix, PROBE, *map(str, args)], capture_output=True, text=True, timeout=60)
    check(not ok or p.returncode == 0, f"probe-limits {args}: {p.returncode} {p.stdout} {p.stderr}")
    return p.stdout


def fields(line):
    return dict(kv.split("=", 1) for kv in line.split() if "=" in kv)


def locate(res, cg):
    return fields(probe("locate", res, cg.rel))


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def v1_rel(mount, group):
    return "/" + os.path.relpath(group.path, mount)


def test_cpu(mount, source):
    with ScratchCgroup(mount, "limits-cpu") as cg:
        group = None
        try:
            if source == "cgroup-v1":
                v1 = find_mount("cgroup", "cpu")
                group = V1Group(v1, "limits-cpu").__enter__()
                write(os.path.join(group.path, "cpu.cfs_period_us"), str(PERIOD_US))
                write(os.path.join(group.path, "cpu.cfs_quota_us"), str(QUOTA_US))
                want = v1_rel(v1, group)
                spinner = spawn(cg, [WORKLOAD, "spin", "limits-spin"], None, [group.path])
            else:
                write(os.path.join(mount, "cgroup.subtree_control"), "+cpu")
                write(os.path.join(cg.path, "cpu.max"), f"{QUOTA_US} {PERIOD_US}")
                want = "/" + cg.rel
                spinner = cg.spawn([WORKLOAD, "spin", "limits-spin"])
            time.sleep(0.3)
            loc = locate("cpu", cg)
            check(loc["source"] == source and loc["limited"] == "1" and loc["limited_path"] == want and
                  loc["path"] == want, f"cpu limit of {cg.rel}: {loc}, want {want}")
            check(source != "cgroup-v1" or loc["via_pid"] == str(spinner.pid), f"learnt from {loc['via_pid']}")
            got = fields(probe("read", "cpu", source, loc["limited_path"]))
            check(got["quota_us"] == str(QUOTA_US) and got["period_us"] == str(PERIOD_US), f"cpu limit {got}")
            d = fields(probe("sample", "cpu", cg.rel, 2000))
            periods, throttled, throttled_us = int(d["nr_periods"]), int(d["nr_throttled"]), int(d["throttled_us"])
            # A spinner wanting 1 cpu under half a cpu: throttled in most of the ~20 periods of two
            # seconds, for about half of each on an idle machine (less when other work leaves it
            # short of its quota; up to 2x when its runqueues on 2 cpus are both throttled).
            check(15 <= periods <= 25 and 3 <= throttled <= periods, f"cpu delta over 2 s: {d}")
            check(20_000 <= throttled_us <= 2 * 2_000_000, f"throttled {throttled_us} us in 2 s: {d}")
            print(f"cpu ({source}): limit {QUOTA_US}/{PERIOD_US} us at {want} (tasks' cgroup2 path /{cg.rel}); "
                  f"in 2 s: {periods} periods, {throttled} throttled, {throttled_us / 1e3:.0f} ms throttled")
        finally:
            cg.kill_all()
            if group:
                group.__exit__(None, None, None)


def test_memory(mount, source):
    with ScratchCgroup(mount, "limits-mem") as cg:
        parent = child = None
        try:
            if source == "cgroup-v1":
                v1 = find_mount("cgroup", "memory")
                parent = V1Group(v1, "limits-mem").__enter__()
                write(os.path.join(parent.path, "memory.limit_in_bytes"), str(MEMORY_LIMIT))
                child = V1Group(parent.path, "child").__enter__()
                spawn(cg, ["sleep", "60"], None, [child.path])
                want_limit, want_path = v1_rel(v1, parent), v1_rel(v1, child)
                where = cg
            else:
                write(os.path.join(mount, "cgroup.subtree_control"), "+memory")
                write(os.path.join(cg.path, "memory.max"), str(MEMORY_LIMIT))
                write(os.path.join(cg.path, "cgroup.subtree_control"), "+memory")
                child = ChildCgroup(cg, "child").__enter__()
                child.spawn(["sleep", "60"])
                want_limit, want_path = "/" + cg.rel, "/" + child.rel
                where = child
            time.sleep(0.2)
            loc = locate("memory", where)
            check(loc["limited"] == "1" and loc["limited_path"] == want_limit and loc["path"] == want_path,
                  f"memory limit of {where.rel}: {loc}, want {want_limit} above {want_path}")
            got = fields(probe("read", "memory", source, loc["limited_path"]))
            check(got["max"] == str(MEMORY_LIMIT), f"memory limit read as {got}")
            own = fields(probe("read", "memory", source, loc["path"]))
            check(own["max"] == "max" and own["current"] != "-", f"the child's own reading: {own}")
            print(f"memory ({source}): {where.rel} is {want_path}, limited at {want_limit} to {got['max']} B; "
                  f"child current {own['current']} B")
        finally:
            cg.kill_all()
            for g in (child, parent):
                if g:
                    g.__exit__(None, None, None)


def test_io(mount, source, tmp):
    dev, name = whole_disk(tmp)
    if not os.path.exists(f"/sys/dev/block/{dev}"):
        print(f"io: {tmp} is not on a block device ({dev}), io part not run")
        return
    data = os.path.join(tmp, "limits-io")
    writer = ["sh", "-c", f"while :; do dd if=/dev/zero of={data} bs=1M count=8 oflag=direct 2>/dev/null; done"]
    with ScratchCgroup(mount, "limits-io") as cg:
        group = None
        try:
            # A throttle rule far above what a disk does: on v1 the blkio.throttle counters count
            # only on a queue where some cgroup has a rule (blk_should_throtl()), and it makes the
            # cgroup one that sets an io limit.
            if source == "cgroup-v1":
                v1 = find_mount("cgroup", "blkio")
                group = V1Group(v1, "limits-io").__enter__()
                write(os.path.join(group.path, "blkio.throttle.write_bps_device"), f"{dev} {1 << 40}")
                want = v1_rel(v1, group)
                spawn(cg, writer, None, [group.path])
            else:
                write(os.path.join(mount, "cgroup.subtree_control"), "+io")
                write(os.path.join(cg.path, "io.max"), f"{dev} wbps={1 << 40}")
                want = "/" + cg.rel
                cg.spawn(writer)
            time.sleep(0.5)
            loc = locate("io", cg)
            check(loc["limited"] == "1" and loc["limited_path"] == want and loc["path"] == want,
                  f"io limit of {cg.rel}: {loc}, want {want}")
            lines = probe("sample", "io", cg.rel, 1000).splitlines()
            devs = {fields(l)["device"]: fields(l) for l in lines[1:]}
            check(dev in devs, f"no {dev} in the io delta: {lines}")
            d = devs[dev]
            check(d["name"] == name, f"device {dev} named {d['name']}, /sys says {name}")
            check(int(d["wbytes"]) >= 1 << 20 and int(d["wios"]) >= 1, f"1 s of O_DIRECT writes: {d}")
            check(d["wbps"] == str(1 << 40), f"the rule read back: {d}")
            print(f"io ({source}): {name} ({dev}) written {int(d['wbytes']) / (1 << 20):.0f} MiB in "
                  f"{d['wios']} writes over 1 s, rule wbps={d['wbps']} at {want}")
        finally:
            cg.kill_all()
            if group:
                group.__exit__(None, None, None)
            if os.path.exists(data):
                os.unlink(data)


def test_wchan(mount):
    with ScratchCgroup(mount, "limits-wchan") as cg:
        sleeper = cg.spawn(["sleep", "60"])
        spinner = cg.spawn([WORKLOAD, "spin", "limits-spin"])
        holder = cg.spawn([PROBE, "hold-d", "30"])
        time.sleep(0.5)
        # clock_nanosleep sleeps in do_nanosleep(), which is __sched, so the wchan is its caller.
        w = probe("wchan", sleeper.pid, sleeper.pid).split()[1]
        check(re.search(r"nanosleep|nsleep", w), f"a sleeping thread's wchan: {w}")
        frames = [l.split()[1] for l in probe("stack", sleeper.pid, sleeper.pid).splitlines()]
        check(w in frames, f"{w} not in the stack {frames}")
        # Running (TASK_RUNNING, even when preempted): "0".
        check(probe("wchan", spinner.pid, spinner.pid).split()[1] == "0", "a spinner has a wchan")
        # No ptrace access (nobody reading root's task): "0" too, however it sleeps.
        nobody = probe("wchan", sleeper.pid, sleeper.pid, prefix=["setpriv", "--reuid=65534", "--regid=65534",
                                                                   "--clear-groups"])
        check(nobody.split() == ["wchan", "0"], f"nobody read {nobody!r}")
        denied = probe("stack", sleeper.pid, sleeper.pid, ok=False, prefix=["setpriv", "--bounding-set=-sys_admin"])
        check(denied.startswith("error EACCES needs CAP_SYS_ADMIN"), f"a stack without CAP_SYS_ADMIN: {denied!r}")

        with open(f"/proc/{holder.pid}/status") as f:
            state = next(l.split()[1] for l in f if l.startswith("State:"))
        check(state == "D", f"the CLONE_VFORK parent is in {state}, not D")
        hw = probe("wchan", holder.pid, holder.pid).split()[1]
        check(hw != "0", "a thread in D has no wchan")
        with open(f"/proc/{holder.pid}/task/{holder.pid}/children") as f:
            child = f.read().split()
        check(len(child) == 1, f"the holder's children: {child}")
        out = probe("blocked", 3, 100, holder.pid, child[0], sleeper.pid, spinner.pid).splitlines()
        head = fields(out[0])
        check(head["looks"] == "3" and head["seen"] == "3" and head["groups"] == "1", f"blocked: {out}")
        check(out[1].split()[:2] == ["group", hw] and fields(out[1]) == {"seen": "3", "threads": "1"},
              f"blocked group: {out}")
        check(out[2].split()[:4] == ["thread", str(holder.pid), str(holder.pid), "3"], f"blocked thread: {out}")
        print(f"wchan: sleep in {w}, spinner 0, nobody 0, stack without CAP_SYS_ADMIN refused; "
              f"held in D at {hw}: {out[1]}")


def main():
    mount = check_kernel()
    sources = dict(kv.split("=") for kv in probe("hierarchy").split())
    print(f"controllers: {sources}")
    tmp = tempfile.mkdtemp(prefix="psidiag-it-limits-", dir="/var/tmp")
    try:
        for res, fn in (("cpu", test_cpu), ("memory", test_memory), ("io", None)):
            check(sources[res] != "none", f"no {res} controller on cgroup2 nor cgroup-v1")
            if fn:
                fn(mount, sources[res])
        test_io(mount, sources["io"], tmp)
        test_wchan(mount)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


run(main)
