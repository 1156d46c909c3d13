#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""On what, on the real kernel: `limits` and `blocked` in the incidents.
1. A cgroup capped at half a CPU (cpu.max, or on a hybrid host the same-named v1 cpu cgroup's
   cfs quota) running two spinners: a trigger on it gives verdict "throttled", quota 50 ms of
   100 ms, throttled time at least 30% of the sample, and culprits scoped to the cgroup itself.
2. An uncapped cgroup beside a sibling's spinners: verdict "contention", no quota.
3. A 128 MiB memory-limited cgroup with a grower: the limit is found, max_bytes = 128 MiB.
4. O_DIRECT writers (under a throttle rule far above the disk's speed: v1 counts only where a rule
   is): the io limits name the block device with written bytes, and the blocked threads are
   grouped under a non-empty wchan, and the node's own counters (node_devices) name the disk too.
5. The same writers without a rule: node_devices names the disk with its utilisation, and
   devices_source says whose counters saw the io: "node" on a hybrid host whose disk never had a
   throttle rule, "cgroup" once one had (the kernel keeps counting: kernel-facts.md: limits) or on
   cgroup2. It runs before part 4 for that reason.
6. Writeback: a buffered dd (no O_DIRECT) in one cgroup beside a "database" committing 8 KiB with
   fsync in a loop in another: the first culprit of the database's io is the dd, its bytes are
   what it dirtied, the node's dirty page cache is in limits.io.writeback, and the summary says
   "dd (...) dirtied N, writeback of M waiting on the node" (on cgroup2 with the memory
   controller: "writeback of N dirtied by /batch")."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (CpuCappedCgroup, LimitedCgroup, ScratchCgroup, V1Group, check, check_kernel,  # noqa: E402
                    enable_controller, find_mount, run, snapshot_of, spawn, start_watching, stop_agent, validator,
                    wait_for, wait_lines, whole_disk)

PSIDIAG, WORKLOAD, SCHEMAS = sys.argv[1:4]
QUOTA_US, PERIOD_US = 50_000, 100_000


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def capped(mount, tmp, validate):
    with ScratchCgroup(mount, "ow-cap") as cg, CpuCappedCgroup(mount, cg, "ow-cap", QUOTA_US, PERIOD_US) as cap:
        agent, out, log = start_watching(PSIDIAG, tmp, cg, "cap", "cpu some 50ms 2s", top=3)
        for _ in range(2):
            spawn(cg, [WORKLOAD, "spin", "capped-spin"], None, cap.extra)
        try:
            lines = wait_lines(out, timeout=60)
        finally:
            stop_agent(agent)
        check(lines, f"no incident:\n{open(log).read()[-2000:]}")
        inc = lines[0]
        validate(inc)
        c = inc["limits"]["cpu"]
        dur_us = inc["sample"]["duration_ms"] * 1000
        check(c and c["quota_us"] == QUOTA_US and c["period_us"] == PERIOD_US and c["limited"],
              f"limits.cpu: {c}")
        check(c["verdict"] == "throttled" and c["throttled_us"] >= dur_us * 3 // 10 and c["nr_throttled"] >= 1,
              f"not throttled: {c}, sample {dur_us} us, stall {inc['sample']['stall_us']}")
        cul = inc["culprits"]
        check(cul["own_limit"] and cul["scope"] == "/" + cg.rel, f"culprits scope {cul['scope']} {cul['limit']}")
        print(f"capped: {c['verdict']}, throttled {c['throttled_us']} us of {dur_us} in "
              f"{c['nr_throttled']}/{c['nr_periods']} periods ({c['source']} {c['cgroup']})")


def contention(mount, validate):
    with ScratchCgroup(mount, "ow-free") as cg, ScratchCgroup(mount, "ow-hog") as hog:
        cg.spawn([WORKLOAD, "spin", "free-spin"])
        hog.spawn([WORKLOAD, "spin", "hog-spin", "4"])
        time.sleep(0.5)
        inc = snapshot_of(PSIDIAG, cg, "cpu")
        validate(inc)
        c = inc["limits"]["cpu"]
        check(c and c["verdict"] == "contention" and c["quota_us"] is None and not c["limited"], f"limits.cpu: {c}")
        check(inc["limits"]["memory"] is None and inc["limits"]["io"] is None, "other resources filled")
        print(f"uncapped: {c['verdict']} ({c['source']} {c['cgroup']})")


def memory(mount, validate):
    limit = 128 << 20
    with ScratchCgroup(mount, "ow-mem") as cg, LimitedCgroup(mount, cg, "ow-mem", limit) as lim:
        env = dict(os.environ, PSIDIAG_ALLOC_MS="5", PSIDIAG_ALLOC_MAX_MB="48")
        spawn(cg, [WORKLOAD, "alloc", "ow-grower"], env, lim.extra)
        time.sleep(0.5)
        inc = snapshot_of(PSIDIAG, cg, "memory", 500)
        validate(inc)
        m = inc["limits"]["memory"]
        check(m and m["max_bytes"] == limit and m["limited"] and m["current_bytes"] and m["current_bytes"] > 1 << 20,
              f"limits.memory ({lim.how}): {m}")
        print(f"memory ({lim.how}): max {m['max_bytes']}, current {m['current_bytes']}, events {m['events']}")


def io(mount, tmp, validate):
    dev, name = whole_disk(tmp)
    if not os.path.exists(f"/sys/dev/block/{dev}"):
        print(f"io: {tmp} is not on a block device ({dev}); io part not run")
        return
    data = [os.path.join(tmp, f"ow-io-{i}") for i in range(2)]
    with ScratchCgroup(mount, "ow-io") as cg:
        group = None
        try:
            writers = [["sh", "-c", f"while :; do dd if=/dev/zero of={d} bs=1M count=256 oflag=direct 2>/dev/null; done"]
                       for d in data]
            if enable_controller(mount, cg, "io"):
                write(os.path.join(cg.path, "io.max"), f"{dev} wbps={1 << 40}")
                for w in writers:
                    cg.spawn(w)
            else:
                v1 = find_mount("cgroup", "blkio")
                check(v1, "neither a cgroup2 io controller nor a cgroup-v1 blkio mount")
                group = V1Group(v1, "ow-io").__enter__()
                write(os.path.join(group.path, "blkio.throttle.write_bps_device"), f"{dev} {1 << 40}")
                for w in writers:
                    spawn(cg, w, None, [group.path])
            time.sleep(0.5)
            # Looks catch a thread in D by chance: a few samples of busy O_DIRECT writers, until one
            # has a named group with its stack (a thread running again when its stack is read has
            # none: seen once in a full run).
            for attempt in range(10):
                inc = snapshot_of(PSIDIAG, cg, "io")
                validate(inc)
                if any(g["wchan"] and g["stack"] for g in inc["blocked"] or []):
                    break
            o = inc["limits"]["io"]
            devs = {d["device"]: d for d in (o["devices"] if o else [])}
            check(name in devs and devs[name]["wbytes"] >= 1 << 20, f"limits.io: {o}")
            check(devs[name]["max"] and devs[name]["max"]["wbps"] == 1 << 40, f"the rule: {devs[name]}")
            nodes = {d["device"]: d for d in o["node_devices"] or []}
            check(o["devices_source"] == "cgroup" and name in nodes and nodes[name]["wbytes"] >= 1 << 20
                  and 0 < nodes[name]["util"] <= 1, f"devices_source {o['devices_source']}, node_devices {nodes}")
            b = inc["blocked"]
            # A thread seen in D may be running again when its wchan is read ("0": the group of
            # null wchan, which sorts first on a tie): a named group must be there.
            named = [g for g in (b or []) if g["wchan"]]
            check(named and named[0]["seen"] >= 1 and named[0]["threads"], f"blocked after {attempt + 1} samples: {b}")
            # The stack is of the first blocked thread that could be read, in its own group.
            check(inc["agent"]["stack_unavailable"] is None and any(g["stack"] for g in b),
                  f"root with CAP_SYS_ADMIN has no stack: {inc['agent']} {b}")
            stack = next(g["stack"] for g in b if g["stack"])
            print(f"io: {name} written {devs[name]['wbytes'] >> 20} MiB; {named[0]['threads_total']} threads in "
                  f"{named[0]['wchan']} (a stack: {stack[:3]})")
        finally:
            cg.kill_all()
            if group:
                group.__exit__(None, None, None)
            for d in data:
                if os.path.exists(d):
                    os.unlink(d)


def io_node(mount, tmp, validate):
    """The same writers without a throttle rule: cgroup-v1 blkio counts nothing then
    (kernel-facts.md: limits), and the node's /proc/diskstats names the disk, with how busy it was."""
    dev, name = whole_disk(tmp)
    if not os.path.exists(f"/sys/dev/block/{dev}"):
        print(f"io-node: {tmp} is not on a block device ({dev}); io-node part not run")
        return
    data = [os.path.join(tmp, f"ow-ion-{i}") for i in range(2)]
    with ScratchCgroup(mount, "ow-ion") as cg:
        try:
            for d in data:
                cg.spawn(["sh", "-c", f"while :; do dd if=/dev/zero of={d} bs=1M count=256 oflag=direct 2>/dev/null; "
                                      "done"])
            time.sleep(0.5)
            inc = snapshot_of(PSIDIAG, cg, "io")
            validate(inc)
            o = inc["limits"]["io"]
            # No blkio wait without a start (kernel-facts.md: blkio-unstarted): dd's new processes
            # read as having waited about the node's uptime in 1 s before it was taken out.
            with open("/proc/uptime") as f:
                uptime_us = float(f.read().split()[0]) * 1e6
            waits = [(p["comm"], p["delay_us"]["blkio"]) for p in inc["most_delayed"] if p["delay_us"]["blkio"]]
            check(all(w < max(uptime_us / 2, 60e6) for _, w in waits), f"a wait as long as the uptime: {waits}")
            nodes = {d["device"]: d for d in o["node_devices"] or []}
            check(name in nodes and nodes[name]["wbytes"] >= 1 << 20 and nodes[name]["wios"] > 0
                  and 0 < nodes[name]["util"] <= 1, f"node_devices: {o['node_devices']}")
            cgroup_io = any((d["wbytes"] or 0) > 0 for d in o["devices"])
            check(o["devices_source"] == ("cgroup" if cgroup_io else "node"), f"limits.io: {o}")
            if o["devices_source"] == "node" and inc["culprits"] and inc["culprits"]["dominant"]:
                check(f" on {name} (" in inc["summary"], f"the summary does not name {name}: {inc['summary']!r}")
            # Node-wide, io says which disks were busy too (no cgroup, no limit).
            p = subprocess.run([PSIDIAG, "snapshot", "--resource", "io", "--sample-ms", "1000"], capture_output=True,
                               text=True, timeout=60)
            check(p.returncode == 0, f"snapshot: {p.returncode} {p.stderr}")
            node = json.loads(p.stdout)
            validate(node)
            nio = node["limits"] and node["limits"]["io"]
            check(nio and nio["source"] == "none" and nio["devices_source"] == "node"
                  and name in {d["device"] for d in nio["node_devices"]}, f"node-wide limits: {node['limits']}")
            print(f"io-node: {o['source']} counted {'some' if cgroup_io else 'nothing'}; devices_source "
                  f"{o['devices_source']}: {name} wrote {nodes[name]['wbytes'] >> 20} MiB, "
                  f"{nodes[name]['util'] * 100:.0f}% busy; summary: {inc['summary']}")
        finally:
            cg.kill_all()
            for d in data:
                if os.path.exists(d):
                    os.unlink(d)


def state_of(pid):
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0]


def stuck(mount, validate):
    """A process stuck in D for the whole sample (a CLONE_VFORK parent, TASK_KILLABLE) has no delay
    at all: delay accounting adds a wait when it ends (kernel-facts.md: delayacct). Beside spinners
    that lead the ranking, the snapshot still names it in blocked, found by its state at the start,
    with how long it has been blocked (at least since the test saw it in D: kernel-facts.md:
    blocked-since); ranked by io, that wait not ended puts it first, and the summary says how long;
    a snapshot of it alone, with no wait ended, says so in the summary instead of "no process"."""
    probe = os.path.join(os.path.dirname(WORKLOAD), "probe-limits")
    with ScratchCgroup(mount, "ow-stuck") as cg:
        for _ in range(3):
            cg.spawn([WORKLOAD, "spin", "stuck-spin"])
        spawned = time.monotonic()
        holder = cg.spawn([probe, "hold-d", "60"])
        wait_for("the holder in D", lambda: state_of(holder.pid) == "D", 10)
        seen_d = time.monotonic()
        inc = snapshot_of(PSIDIAG, cg, "cpu")
        validate(inc)
        held = [(g["wchan"], t["pid"], t.get("blocked_ms")) for g in inc["blocked"] or [] for t in g["threads"]
                if t["pid"] == holder.pid]
        check(held and holder.pid not in [p["pid"] for p in inc["most_delayed"] if p["score_us"] > 0],
              f"the stuck holder {holder.pid} in blocked, not ranked: blocked {inc['blocked']}")
        # Blocked at least since the test saw it in D plus the 1 s sample (the last look is at its
        # end), at most since it was started.
        low = (time.monotonic() - seen_d - 2) * 1000
        check(held[0][2] is not None and low <= held[0][2] <= (time.monotonic() - spawned) * 1000 + 100,
              f"the holder's blocked_ms {held[0][2]}: not between {low:.0f} and its age; agent: {inc['agent']}")
        # Ranked by io, the wait that has not ended leads: no process waited as long for io.
        io = snapshot_of(PSIDIAG, cg, "io")
        validate(io)
        top = io["most_delayed"][0] if io["most_delayed"] else {}
        check(top.get("pid") == holder.pid and (top.get("blocked_now") or {}).get("ms", 0) >= held[0][2]
              and top["score_us"] >= top["blocked_now"]["ms"] * 1000,
              f"io: the holder not first by its wait: {[(p['pid'], p['score_us'], p.get('blocked_now')) for p in io['most_delayed']]}")
        check(io["summary"].startswith(f"probe-limits (/{cg.rel}) blocked for io") and " s so far in " in io["summary"],
              f"io summary: {io['summary']!r}")
        for p in cg.procs:
            if p.pid != holder.pid:
                p.kill()
                p.wait()
        alone = snapshot_of(PSIDIAG, cg, "cpu")
        validate(alone)
        check(f"blocked now: probe-limits (pid {holder.pid})" in alone["summary"], f"summary: {alone['summary']!r}")
        print(f"stuck: holder {holder.pid} blocked in {held[0][0]} for {held[0][2]} ms beside 3 spinners; by io: "
              f"{io['summary']}; alone: {alone['summary']}")


def stuck_late(mount, validate):
    """A process that goes into D after the sample's start, in a cgroup of more processes than the
    sample details (twice `top`), all of them leading it: the look at the middle of the sample
    reads the states again and looks at it, so `blocked` names it. The holder waits on a FIFO
    until the agent is in its window (its wchan is the event loop's epoll wait); the incident's
    states, read at the start, show no thread in D, else the holder was too early and the case
    runs again."""
    probe = os.path.join(os.path.dirname(WORKLOAD), "probe-limits")
    scratch = tempfile.mkdtemp(prefix="psidiag-it-late-")
    fifo = os.path.join(scratch, "go")
    os.mkfifo(fifo)
    try:
        with ScratchCgroup(mount, "ow-late") as cg:
            for _ in range(11):  # top 3: 6 candidates, spinners, each with a cpu wait
                cg.spawn([WORKLOAD, "spin", "late-spin"])
            for attempt in range(3):
                holder = cg.spawn(["sh", "-c", f'read x < "{fifo}"; exec "{probe}" hold-d 60'])
                wait_for("the holder waiting on its FIFO", lambda: state_of(holder.pid) == "S", 30)
                agent = subprocess.Popen([PSIDIAG, "snapshot", cg.rel, "--resource", "cpu", "--sample-ms", "6000",
                                          "--top", "3"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

                def in_window():
                    with open(f"/proc/{agent.pid}/wchan") as f:
                        return agent.poll() is None and "epoll" in f.read()
                wait_for("the agent in its window", in_window, 60)
                released = time.monotonic()
                with open(fifo, "w") as f:
                    f.write("go\n")
                wait_for("the holder in D", lambda: state_of(holder.pid) == "D", 10)
                in_d = time.monotonic() - released
                out, err = agent.communicate(timeout=120)
                check(agent.returncode == 0, f"snapshot: {err[-2000:]}")
                inc = json.loads(out)
                validate(inc)
                if inc["states"]["uninterruptible"] > 0 or in_d > 2.5:
                    print(f"stuck-late: attempt {attempt + 1}: the holder not between the start and the "
                          f"middle (states {inc['states']}, in D {in_d:.2f} s after the release); again")
                    holder.kill()
                    holder.wait()
                    continue
                held = [(g["wchan"], t.get("blocked_ms")) for g in inc["blocked"] or [] for t in g["threads"]
                        if t["pid"] == holder.pid]
                check(held and held[0][1] is not None and held[0][1] >= 2500,
                      f"the holder {holder.pid}, in D from {in_d:.2f} s into a 6 s sample, not in blocked with "
                      f"3 s or so: {inc['blocked']}; candidates {[p['pid'] for p in inc['most_delayed']]}")
                print(f"stuck-late: holder {holder.pid} in D {in_d:.2f} s after the release, beside 11 "
                      f"spinners: blocked in {held[0][0]} for {held[0][1]} ms")
                return
            check(False, "the holder went into D before the sample's start in 3 attempts")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def writeback(mount, validate):
    wdir = tempfile.mkdtemp(prefix="psidiag-it-wb-", dir="/var/tmp")  # a disk, not a tmpfs
    try:
        with ScratchCgroup(mount, "ow-wb-db") as db, ScratchCgroup(mount, "ow-wb-batch") as batch:
            db.spawn(["sh", "-c", f"while :; do dd if=/dev/zero of={wdir}/db bs=8k count=1 conv=fsync status=none; done"])
            dd = batch.spawn(["dd", "if=/dev/zero", f"of={wdir}/big", "bs=1M", "count=6000", "status=none"])

            def dirty():
                with open("/proc/meminfo") as f:
                    return sum(int(line.split()[1]) for line in f if line.startswith(("Dirty:", "Writeback:"))) * 1024
            wait_for("64 MiB of dirty page cache", lambda: dirty() >= 64 << 20, 60)
            inc = snapshot_of(PSIDIAG, db, "io", 2000)
            validate(inc)
            c = inc["culprits"]
            first = c["processes"][0] if c["processes"] else {}
            wb = inc["limits"]["io"]["writeback"]
            check(first.get("pid") == dd.pid and first["cgroup"] == "/" + batch.rel,
                  f"the first culprit is not the buffered dd {dd.pid}: "
                  f"{[(p['pid'], p['comm'], p['cgroup'], p['usage']) for p in c['processes']]}")
            check(wb and wb["dirty_bytes"] + wb["writeback_bytes"] >= 32 << 20, f"limits.io.writeback: {wb}")
            cg = next((g for g in c["cgroups"] if g["path"] == "/" + batch.rel), None)
            by_cgroup = cg and cg.get("dirty_bytes") is not None and cg["dirty_bytes"] * 2 >= (
                wb["dirty_bytes"] + wb["writeback_bytes"])
            want = ("writeback of " if by_cgroup else f"dd (/{batch.rel}, pid {dd.pid}) dirtied ")
            check(want in inc["summary"] and ("dirtied by /" + batch.rel if by_cgroup else "waiting on the node")
                  in inc["summary"], f"summary: {inc['summary']!r}")
            print(f"writeback: {inc['summary']}")
    finally:
        shutil.rmtree(wdir, ignore_errors=True)


def main():
    mount = check_kernel()
    validate = validator(SCHEMAS)
    tmp = tempfile.mkdtemp(prefix="psidiag-it-", dir="/var/tmp")
    try:
        parts = os.environ.get("PSIDIAG_PARTS", "cpu,contention,memory,stuck,stuck-late,io-node,io,writeback").split(",")
        if "cpu" in parts:
            capped(mount, tmp, validate)
        if "contention" in parts:
            contention(mount, validate)
        if "memory" in parts:
            memory(mount, validate)
        if "stuck" in parts:
            stuck(mount, validate)
        if "stuck-late" in parts:
            stuck_late(mount, validate)
        if "writeback" in parts:
            writeback(mount, validate)
        if "io-node" in parts:
            io_node(mount, tmp, validate)
        if "io" in parts:
            io(mount, tmp, validate)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


run(main)
