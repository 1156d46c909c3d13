# SPDX-License-Identifier: MIT
"""The cases of the VM (tests/vm/guest.py runs them like its own, on every guest) where a wait has
not ended when the agent looks: a disk that does not answer, a writeback storm under a throttled
volume, a memory cgroup whose tasks wait on a slow swap device. Delay accounting adds a wait to a
task's delays only when it ends (kernel-facts.md: delayacct), so in each the incident must name
the threads blocked now with how long they have been (kernel-facts.md: blocked-since), say what
they wait for (docs/on-what.md: what a wait is for), and never say "no process measured waiting"."""

import json
import os
import subprocess
import time

from common import ScratchCgroup, check, enable_controller, skip
from vmcommon import MOUNT, SCRATCH, agent_run, scratch_disk, sh, show, with_culprits, write

CASES = {}
DEADLINE_S = {"io-stuck": 200, "writeback": 180, "memory-swap": 300}


def case(fn):
    CASES[fn.__name__.replace("_", "-")] = fn
    return fn


def blocked_threads(inc, pid):
    """The threads of process pid that the incident lists blocked: (wchan, resource, blocked_ms, tid)."""
    return [(g["wchan"], g.get("resource"), t["blocked_ms"], t["tid"]) for g in inc.get("blocked") or []
            for t in g["threads"] if t["pid"] == pid]


def wait_of(inc, tid):
    """What the wait of thread tid is for, as the incident's blocked[] groups it ("io", "memory",
    None), and its wchan."""
    return next(((g.get("resource"), g["wchan"]) for g in inc.get("blocked") or []
                 for t in g["threads"] if t["tid"] == tid), (None, None))


def picked(validate, lines, pick):
    """The first incident pick(lines) holds, valid, with every incident's summary and blocked
    threads printed, and its own facts and whole text, so that the report shows what was seen."""
    for i in lines:
        print(f"  incident: {i['summary']}")
        print(f"    blocked: {[(g['wchan'], g.get('resource'), [(t['comm'], t['pid'], t['blocked_ms']) for t in g['threads']], g.get('stack')) for g in i['blocked'] or []]}")
    inc = pick(lines)[0]
    validate(inc)
    show(inc)
    print("INCIDENT: " + json.dumps(inc))
    return inc


def node_device(inc, name):
    """The node's device of that name in an io incident's limits (node_devices), or {}."""
    devs = ((inc.get("limits") or {}).get("io") or {}).get("node_devices") or []
    return next((d for d in devs if d["device"] == name), {})


def load_null_blk(completion_s):
    """null_blk's one disk, nullb0, completing each request completion_s after it came (a module
    of the stock kernel). Loaded in the background: the module reads the new disk's partition table
    at load, a few requests of completion_s each. Skips when the kernel has no null_blk."""
    args = ["modprobe", "null_blk", "nr_devices=1", "irqmode=2", f"completion_nsec={completion_s * 10**9}", "gb=1"]
    load = subprocess.Popen(args, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        out, _ = load.communicate(timeout=150)
    except subprocess.TimeoutExpired:
        load.kill()
        check(False, "modprobe null_blk took more than 150 s")
    if load.returncode != 0 and "not found" in out:
        skip(f"no null_blk: {out.strip()}")
    check(load.returncode == 0 and os.path.exists("/dev/nullb0"), f"modprobe null_blk: {load.returncode} {out}")
    write("/sys/block/nullb0/queue/iostats", "1")  # /proc/diskstats counts it (null_blk may not)
    return "nullb0"


NULLB_CONFIG = "/sys/kernel/config/nullb"
NULLB_ITEM = os.path.join(NULLB_CONFIG, "nullb0")


def wait_path(path, timeout):
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        check(time.monotonic() < deadline, f"{path} did not appear within {timeout} s")
        time.sleep(0.1)


def slow_null_blk(completion_s, prepare):
    """A memory-backed null_blk disk made through configfs, prepared while it answers at once and
    then made to answer each request completion_s after it came: prepare(name) runs on the fast
    disk, then the disk is powered off, given its completion time and powered on again, its data
    kept (kernel-facts.md: null-blk). Made slow at once, its partition scan and the probes of
    udev, mkswap and swapon, one request after another, took 123 to 129 s on every guest. Skips
    when the kernel has no null_blk."""
    p = sh(["modprobe", "null_blk", "nr_devices=0"], timeout=120)
    if p.returncode != 0 and "not found" in p.stdout + p.stderr:
        skip(f"no null_blk: {p.stderr.strip()}")
    check(p.returncode == 0, f"modprobe null_blk nr_devices=0: {p.returncode} {p.stderr}")
    if not os.path.isdir(NULLB_CONFIG) and not os.path.ismount("/sys/kernel/config"):
        sh(["mount", "-t", "configfs", "configfs", "/sys/kernel/config"])
    check(os.path.isdir(NULLB_CONFIG), f"no {NULLB_CONFIG} (configfs)")
    os.mkdir(NULLB_ITEM)
    for key, value in (("size", "1024"), ("memory_backed", "1"), ("irqmode", "0"), ("power", "1")):
        write(os.path.join(NULLB_ITEM, key), value)
    # The disk is named after the configfs item where the kernel does so, else after
    # its index: the item is called nullb0 for both, nr_devices=0 leaving index 0 free
    # (kernel-facts.md: null-blk).
    name = os.path.basename(NULLB_ITEM)
    if not os.path.exists(f"/sys/block/{name}"):
        name = "nullb" + open(os.path.join(NULLB_ITEM, "index")).read().strip()
    wait_path(f"/dev/{name}", 60)
    prepare(name)
    t = time.monotonic()
    for key, value in (("power", "0"), ("irqmode", "2"), ("completion_nsec", str(completion_s * 10**9)),
                       ("power", "1")):
        write(os.path.join(NULLB_ITEM, key), value)
    wait_path(f"/dev/{name}", 60)
    print(f"  {name} powered on again, answering in {completion_s} s, in {time.monotonic() - t:.1f} s")
    write(f"/sys/block/{name}/queue/iostats", "1")
    return name


def unload_null_blk():
    if os.path.isdir(NULLB_ITEM):
        try:
            write(os.path.join(NULLB_ITEM, "power"), "0")
        except OSError:
            pass
        os.rmdir(NULLB_ITEM)
    for _ in range(60):  # requests in flight end within their completion time
        if sh(["rmmod", "null_blk"]).returncode == 0:
            return
        time.sleep(1)


@case
def io_stuck(validate):
    """A disk that does not answer: null_blk (a module of the stock kernel) completing each request
    3 s after it came, and a dd writing to it with O_DIRECT in a cgroup of its own. A wait ends in
    no 1 s sample, so no delay is measured (kernel-facts.md: delayacct): the incident names the dd
    blocked and for how long (most_delayed[].blocked_now, blocked[].threads[].blocked_ms: since it
    last ran, kernel-facts.md: blocked-since), the device stuck (requests in flight, none
    completed), and never says "no process measured waiting"."""
    try:
        disk = load_null_blk(3)
        with ScratchCgroup(MOUNT, "stuck") as cg:
            check(enable_controller(MOUNT, cg, "io"), "no cgroup2 io controller")
            procs = []

            def stuck(lines):
                return [i for i in lines if node_device(i, disk).get("verdict") == "stuck"
                        and (i.get("most_delayed") or [{}])[0].get("blocked_now")]
            lines, _ = agent_run(cg, "io some 50ms 2s", stuck, cooldown_ms=0, start=lambda: procs.append(
                cg.spawn(["dd", "if=/dev/zero", f"of=/dev/{disk}", "bs=4k", "count=100000", "oflag=direct"])))
            inc = picked(validate, lines, stuck)
            top = inc["most_delayed"][0]
            ms = top["blocked_now"]["ms"]
            print(f"  blocked: {top['comm']} tid {top['blocked_now']['tid']} for {ms} ms; blocked {inc['blocked']}")
            check(top["pid"] == procs[0].pid and top["cgroup"] == "/" + cg.rel and 0 < ms <= 30000,
                  f"the stuck dd is not first with how long it is blocked: {top}")
            threads = [t for g in inc["blocked"] or [] for t in g["threads"] if t["pid"] == procs[0].pid]
            check(threads and threads[0]["blocked_ms"] is not None and inc["agent"]["blocked_since_unavailable"] is None,
                  f"blocked: {inc['blocked']}, agent {inc['agent']}")
            check(wait_of(inc, top["blocked_now"]["tid"])[0] == "io",
                  f"the dd's wait is not one for io: {blocked_threads(inc, procs[0].pid)}")
            s = inc["summary"]
            check("no process measured waiting" not in s and f" on {disk} (stuck: " in s and
                  (f"dd (/{cg.rel}) blocked for io" in s or "blocked now: dd" in s), f"summary: {s!r}")
    finally:
        unload_null_blk()


@case
def writeback(validate):
    """A throttled volume: the scratch disk held at 8 MiB/s of writes for a parent cgroup (io.max),
    under which a buffered dd (no O_DIRECT) in one child dirties pages that the flusher writes back
    in its name (cgroup writeback), beside a loop of 8 KiB fsync writes in another child, whose
    writes wait behind that writeback. The first culprit of the fsync loop's io is the dd, the
    node's dirty page cache is in limits.io.writeback, the dd's cgroup's own in
    culprits.cgroups[].dirty_bytes (cgroup2 memory.stat), and the summary says who dirtied it
    (kernel-facts.md: writeback). The fsync writer blocked when the agent looked is named with how
    long (most_delayed[].blocked_now, blocked[].threads[].blocked_ms) and a wait for io; when that
    wait is the stall (blocked the whole sample, longer than it waited), the summary leads with it
    ("dd (/db) blocked for io on vdb, 1.4 s so far in ..."). (Unthrottled, the scratch disk, the
    host's page cache, outruns the VM's cpus, and nothing waits.)"""
    big, small = os.path.join(SCRATCH, "wb-big.data"), os.path.join(SCRATCH, "wb-db.data")
    loop = f"while :; do dd if=/dev/zero of={small} bs=8k count=1 conv=fsync status=none; done"
    try:
        with ScratchCgroup(MOUNT, "wb") as vol:
            check(enable_controller(MOUNT, vol, "memory") and enable_controller(MOUNT, vol, "io"),
                  "no cgroup2 memory or io controller")
            write(os.path.join(vol.path, "cgroup.subtree_control"), "+io +memory")
            write(os.path.join(vol.path, "io.max"), f"{scratch_disk()} wbps={8 << 20}")
            try:
                writeback_checked(validate, vol, big, loop)
            finally:
                # The dd's pages already under writeback stay held at 8 MiB/s after it is killed,
                # and unlinking its file waits for them: lifted first, so that the teardown takes
                # a second, not the 27 s that 258 MiB in writeback took (trixie: 46.5 s a case).
                write(os.path.join(vol.path, "io.max"), f"{scratch_disk()} wbps=max")
    finally:
        t = time.monotonic()
        for f in (big, small):
            if os.path.exists(f):
                os.unlink(f)
        print(f"  the files removed in {time.monotonic() - t:.1f} s")


def writeback_checked(validate, vol, big, loop):
    """The writeback case's load and checks, in vol (throttled at 8 MiB/s)."""
    with ScratchCgroup(vol.path, "db") as db, ScratchCgroup(vol.path, "batch") as batch:
        db.rel, batch.rel = f"{vol.rel}/{db.rel}", f"{vol.rel}/{batch.rel}"
        procs = []

        def start():
            db.spawn(["sh", "-c", loop])
            procs.append(batch.spawn(["dd", "if=/dev/zero", f"of={big}", "bs=1M", "count=700",
                                      "status=none"]))

        def queued(i):
            wb = (i["limits"]["io"] or {}).get("writeback") or {}
            return wb.get("dirty_bytes", 0) + wb.get("writeback_bytes", 0)

        def fsync_blocked(i):
            return [m for m in i["most_delayed"] if m["cgroup"] == "/" + db.rel and m.get("blocked_now")]

        def named(lines):
            return [i for i in with_culprits(lines) if queued(i) >= 16 << 20 and fsync_blocked(i)]
        lines, _ = agent_run(db, "io some 50ms 2s", named, start=start, cooldown_ms=0)
        inc = picked(validate, lines, named)
        # The fsync writer waits in D behind the queue: its wait has not ended, so it is
        # named blocked with how long, and that wait is for io.
        writer = fsync_blocked(inc)[0]
        now = writer["blocked_now"]
        held = blocked_threads(inc, writer["pid"])
        print(f"  the fsync writer: {writer['comm']} pid {writer['pid']} blocked_now {now}, "
              f"delay {writer['delay_us']['blkio']} us; blocked {held}")
        check(writer["comm"] == "dd" and now["ms"] > 0 and held and all(h[2] is not None for h in held),
              f"the fsync writer is not named blocked with how long: {writer}, blocked {inc['blocked']}")
        check(wait_of(inc, now["tid"])[0] == "io", f"the fsync writer's wait is not one for io: {held}")
        s = inc["summary"]
        top = inc["most_delayed"][0]
        stuck = (top.get("blocked_now") or {}).get("ms", 0)
        if stuck >= inc["sample"]["duration_ms"] and stuck * 1000 > top["delay_us"]["blkio"]:
            check(s.startswith(f"{top['comm']} (/{top['cgroup'][1:]}) blocked for io on vdb, ")
                  and " so far in " in s, f"the summary does not lead with the wait not ended: {s!r}")
        check("no process measured waiting" not in s, f"summary: {s!r}")
        # No wait the kernel ended without a start (the time since boot, at least the
        # minute the guest has been up by now) is left in anyone's delay, with or without
        # maxima in the replies (kernel-facts.md: blkio-unstarted); real waits here last
        # seconds.
        long = [(m["comm"], m["pid"], m["delay_us"]["blkio"]) for m in inc["most_delayed"]
                if m["delay_us"]["blkio"] >= 30_000_000]
        check(not long, f"a blkio delay of the time since boot: {long}")
        # Its writeback is charged to its cgroup (cgroup writeback); the dd itself may have
        # dirtied nothing in the sample, held in balance_dirty_pages() all along.
        check(inc["culprits"]["cgroups"][0]["path"] == "/" + batch.rel,
              f"/{batch.rel} is not the first culprit cgroup: {inc['culprits']['cgroups']}")
        wb = inc["limits"]["io"]["writeback"]
        cg = next((g for g in inc["culprits"]["cgroups"] if g["path"] == "/" + batch.rel), {})
        print(f"  writeback {wb}, /{batch.rel} dirty_bytes {cg.get('dirty_bytes')}")
        check(cg.get("dirty_bytes") is not None,
              f"no dirty_bytes for /{batch.rel}: {inc['culprits']['cgroups']}")
        s = inc["summary"]
        check(s.endswith(f"dirtied by /{batch.rel}") or f"dirtied by /{batch.rel}: dd (pid {procs[0].pid})" in s
              or f"dd (/{batch.rel}, pid {procs[0].pid}) dirtied " in s, f"summary: {s!r}")



# A process that keeps touching every page of 96 MiB of anonymous memory, one byte a page, under
# the name given: over a memory.high of 32 MiB its pages go to swap and come back, for ever.
TOUCHER = """
import mmap, sys
open("/proc/self/comm", "w").write(sys.argv[1])
m = mmap.mmap(-1, 96 << 20)
while True:
    for i in range(0, 96 << 20, 4096):
        m[i] = (m[i] + 1) & 0xff
"""


@case
def memory_swap(validate):
    """A memory cgroup whose pages go to a swap device that answers each request 3 s after it came
    (null_blk, memory-backed, so that what is swapped out comes back): a process touching 96 MiB of
    shared anonymous memory over a memory.high of 32 MiB waits in D in its reclaim, whose swap
    writes queue behind the slow device (wbt_wait), in its sleeps over high and in its swap-ins,
    waits longer than the 1 s sample that are in no delay before they end (kernel-facts.md:
    delayacct). The incident names it in blocked[] for at least the sample's length, as a wait for
    memory (docs/on-what.md: what a wait is for, here from its PF_MEMALLOC flag or its stack although
    its wchan is io's), ranks it, calls none of its waits one for io, and never says "no process
    measured waiting"."""
    swapped = False
    try:
        t = time.monotonic()

        def mkswap(name):
            p = sh(["mkswap", f"/dev/{name}"], timeout=120)
            check(p.returncode == 0, f"mkswap: {p.stdout} {p.stderr}")
            sh(["udevadm", "settle", "--timeout=60"], timeout=90)
        disk = slow_null_blk(3, mkswap)
        p = sh(["swapon", f"/dev/{disk}"], timeout=120)
        check(p.returncode == 0, f"swapon: {p.stdout} {p.stderr}")
        print(f"  null_blk loaded and swapped on in {time.monotonic() - t:.1f} s")
        t = time.monotonic()
        swapped = True
        with ScratchCgroup(MOUNT, "swap") as cg:
            check(enable_controller(MOUNT, cg, "memory"), "no cgroup2 memory controller")
            write(os.path.join(cg.path, "memory.high"), str(32 << 20))
            procs = []

            def held(i):
                """The toucher's threads blocked for memory at least the sample's length."""
                return [t for g in i.get("blocked") or [] for t in g["threads"] if g.get("resource") == "memory"
                        and procs and t["pid"] == procs[0].pid and (t["blocked_ms"] or 0) >= i["sample"]["duration_ms"]]

            def stuck(lines):
                return [i for i in lines if held(i)]
            lines, _ = agent_run(cg, "memory some 50ms 2s", stuck, timeout=120, start=lambda: procs.append(
                cg.spawn(["python3", "-c", TOUCHER, "vm-toucher"])))
            print(f"  {len(lines)} incidents in {time.monotonic() - t:.1f} s")
            inc = picked(validate, lines, stuck)
            stat = open(os.path.join(cg.path, "memory.stat")).read()
            print("  memory.stat: " + " ".join(l for l in stat.splitlines() if l.split()[0] in ("anon", "swapcached", "pswpin", "pswpout", "workingset_refault_anon")))
            threads = blocked_threads(inc, procs[0].pid)
            top = next((m for m in inc["most_delayed"] if m["pid"] == procs[0].pid), {})
            print(f"  the toucher blocked: {threads}; most_delayed blocked_now {top.get('blocked_now')}")
            # Seen blocked the whole sample at one look: named, and ranked, by that wait or by its
            # delay once it ended; no wait of it is called one for io.
            check(top, f"the toucher is not among the most delayed: {inc['most_delayed']}")
            check(not [t for t in threads if t[1] == "io"], f"a wait of the toucher is called one for io: {threads}")
            check("no process measured waiting" not in inc["summary"], f"summary: {inc['summary']!r}")
    finally:
        t = time.monotonic()
        if swapped:
            sh(["swapoff", f"/dev/{disk}"], timeout=300)
        unload_null_blk()
        print(f"  swapped off and unloaded in {time.monotonic() - t:.1f} s")
