#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A real OOM kill becomes an oom incident that names the victim and links the pressure before it.

A page-cache thrasher in a cgroup limited to 48 MiB (memory.max where cgroup2 has the memory
controller; on hybrid hosts a cgroup-v1 memcg holding the same tasks) makes memory pressure, and a
"memory some" trigger writes pressure incidents. Then a hog with a hostile name allocates
anonymous memory until the kernel's OOM killer ends it. The agent reads the kill from /dev/kmsg
and writes an incident of type oom: the victim's pid, comm, uid, cgroup and resident set, the
constraint and memcg, the cgroup measured after the kill (the thrasher still in it), and in
`related` the pressure incidents that woke before the kill, newest first. Another run kills while a
pressure incident's sample still runs: that incident, written after the oom one, is related too.

Before the kill the agent is stopped while more than the kernel's log ring holds is written to
/dev/kmsg: when it runs again its reads fail with EPIPE, which it must count and survive.

A second run takes CAP_SYSLOG away from the agent with kernel.dmesg_restrict=1, so /dev/kmsg is
closed to it: the kill is then counted from the memcg's oom_kill counter (memory.events, or
memory.oom_control on cgroup v1) and still written, with the victim unknown. That agent is stopped
in the middle of its minute-long sample of the cgroup, and must write the kill as it exits. A third,
where cgroup2 has the memory controller, watches more cgroups than the inotify limit allows: the
memory.events files followed stay within it."""

import datetime
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (ChildCgroup, Failed, LimitedCgroup, ScratchCgroup, check, check_kernel,  # noqa: E402
                    enable_controller, launch_agent, lines_where, make_file, metric, read_lines, run, spawn,
                    stop_agent, validator, wait_for)

PSIDIAG, WORKLOAD, SCHEMAS = sys.argv[1:4]
LIMIT = 48 << 20
# What the parser must see through: a "field" and parentheses inside the name (15 bytes at most).
COMM = "h,pid=1) (x"
CAP_SYSLOG = 34
# The capabilities that open /dev/kmsg under kernel.dmesg_restrict=1: CAP_SYSLOG, and on 6.1 (Debian
# 12's guest) CAP_SYS_ADMIN too (check_syslog_permissions(): "for historical reasons", with a
# warning); 6.18 and 7.2 refused the agent without CAP_SYSLOG alone. Both dropped.
NO_KMSG = "-syslog,-sys_admin"


def parse_time(s):
    return datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc).timestamp()


def without_kmsg():
    """What the agent runs under to be refused /dev/kmsg (with kernel.dmesg_restrict=1)."""
    setpriv = shutil.which("setpriv")
    check(setpriv, "setpriv (util-linux) is missing")
    return [setpriv, f"--inh-caps={NO_KMSG}", f"--bounding-set={NO_KMSG}", "--"]


def start_agent(tmp, cg, name, drop_syslog=False, sample_ms=500):
    a = launch_agent(PSIDIAG, tmp, name, {"sample_ms": sample_ms, "cooldown_ms": 0, "top": 5, "oom_lookback_s": 300,
                                          "metrics_file": os.path.join(tmp, f"{name}.prom"),
                                          "watch": [{"cgroup": cg.rel, "triggers": ["memory some 50ms 2s"]}]},
                     ["--enable-delayacct", "--log-level", "debug"], without_kmsg() if drop_syslog else ())
    return a.proc, a.out, a.log


def flood_kmsg(total=3 * 131072):
    """Writes more than the kernel's log ring holds (128 KiB here; more is written if it is bigger),
    so records a stopped reader had not read are overwritten. kernel.printk_devkmsg is set to on
    for it (its default, ratelimit, allows 10 writes per 5 s) and put back."""
    import ctypes
    size = max(ctypes.CDLL(None).klogctl(10, None, 0), 131072)  # SYSLOG_ACTION_SIZE_BUFFER
    sysctl = "/proc/sys/kernel/printk_devkmsg"
    with open(sysctl) as f:
        saved = f.read().strip()
    try:
        with open(sysctl, "w") as f:
            f.write("on\n")
        fd = os.open("/dev/kmsg", os.O_WRONLY)
        try:
            for i in range(max(total, 3 * size) // 800):
                os.write(fd, f"<7>psidiag-it: overwriting the ring {i} {'.' * 760}\n".encode())
        finally:
            os.close(fd)
    finally:
        with open(sysctl, "w") as f:
            f.write(saved + "\n")


def oom_hog(cg, env, extra):
    hog = spawn(cg, [WORKLOAD, "alloc", COMM], env, extra)
    try:
        hog.wait(60)
    except subprocess.TimeoutExpired:
        raise Failed("the hog was not OOM-killed within 60 s")
    check(hog.returncode == -signal.SIGKILL, f"the hog ended with {hog.returncode}, not SIGKILL")
    return hog


def kmsg_part(mount, tmp, data, validate):
    with ScratchCgroup(mount, "oom") as cg, LimitedCgroup(mount, cg, "oom", LIMIT) as lim:
        env = dict(os.environ, PSIDIAG_FILE=data)
        agent, out, log = start_agent(tmp, cg, "kmsg")
        try:
            time.sleep(0.5)
            thrasher = spawn(cg, [WORKLOAD, "thrash", "psidiag-thrash", "2"], env, lim.extra)
            wait_for("two pressure incidents",
                     lambda: lines_where(out, lambda ls: sum(i["type"] == "pressure" for i in ls) >= 2), 40, log=log)
            # The ring overwrites what the stopped agent had not read: it must go on (EPIPE).
            agent.send_signal(signal.SIGSTOP)
            try:
                flood_kmsg()
            finally:
                agent.send_signal(signal.SIGCONT)
            hog = oom_hog(cg, env, lim.extra)
            lines = wait_for("an oom incident", lambda: lines_where(out, lambda ls: any(i["type"] == "oom" for i in ls)), 20,
                             log=log)
        finally:
            code = stop_agent(agent)
        check(code == 0, f"the agent exited with {code}")
        lost = metric(out.replace(".ndjson", ".prom"), "psidiag_kmsg_lost_total")
        check(lost and lost >= 1, f"psidiag_kmsg_lost_total {lost} after the ring was overwritten")
        check("kernel messages were overwritten" in open(log).read(), "no warning about overwritten kernel messages")
        check(metric(out.replace(".ndjson", ".prom"), "psidiag_oom_kills_total") == 1, "psidiag_oom_kills_total")
        for inc in lines:
            validate(inc)
        ooms = [i for i in lines if i["type"] == "oom"]
        check(len(ooms) == 1, f"{len(ooms)} oom incidents for one kill")
        inc = ooms[0]
        oom, victim = inc["oom"], inc["oom"]["victim"]
        check(oom["source"] == "kmsg" and oom["kills"] == 1, f"oom: {oom}")
        check(victim["pid"] == hog.pid, f"victim pid {victim['pid']}, the hog was {hog.pid}")
        check(victim["comm"] == COMM, f"victim comm {victim['comm']!r}, want {COMM!r}")
        check(victim["uid"] == os.getuid(), f"victim uid {victim['uid']}")
        check(victim["cgroup"] == "/" + cg.rel, f"victim cgroup {victim['cgroup']}")
        check(oom["constraint"] == "CONSTRAINT_MEMCG" and oom["global"] is False, f"oom: {oom}")
        want_memcg = "/" + (cg.rel if not lim.memcg else os.path.basename(lim.memcg.path))
        check(oom["oom_memcg"] == want_memcg and victim["memcg"] == want_memcg,
              f"oom_memcg {oom['oom_memcg']}, victim memcg {victim['memcg']}, want {want_memcg}")
        check(victim["rss_kib"]["anon"] > 16 << 10, f"victim rss {victim['rss_kib']}")
        check(oom["cgroup"] == "/" + cg.rel, f"measured {oom['cgroup']}")
        # The cgroup after the kill: the thrasher is still there and is measured.
        check(any(p["pid"] == thrasher.pid for p in inc["most_delayed"]),
              f"the thrasher is not among {[(p['pid'], p['comm']) for p in inc['most_delayed']]}")
        check(inc["sample"]["basis"] == "delta" and inc["pressure"]["memory"]["some"]["total_us"] > 0,
              f"sample {inc['sample']}")

        # related: every pressure incident that woke before the kill (one still sampling at it
        # included), newest first; none that woke after it.
        kill_t = parse_time(inc["time"])
        woke = {i["id"]: parse_time(i["time"]) for i in lines if i["type"] == "pressure"}
        related = inc["related"]
        check(len(related) >= 2, f"related {related}")
        check(all(r in woke and woke[r] <= kill_t for r in related), f"related {related} vs {woke}, kill {kill_t}")
        check(related == sorted(related, key=lambda r: woke[r], reverse=True), f"related not newest first: {related}")
        missing = [i for i, t in woke.items() if t < kill_t - 0.2 and i not in related]
        check(not missing, f"pressure incidents before the kill not related: {missing}")
        d = victim["delay_us"]
        # taskstats answers here, so the victim's delays come from its exit record or from taskstats
        # right after the kill; cpu delay is in every struct version, so it is never null.
        check(victim["delay_source"] in ("exit_record", "taskstats") and d["cpu"] is not None,
              f"victim delays {victim['delay_source']}: {d}")
        print(f"kmsg ({lim.how}): ring overwritten {lost} time(s) and survived; victim {victim['pid']} {victim['comm']!r} anon {victim['rss_kib']['anon']} KiB, "
              f"{len(related)} related, victim delays from {victim['delay_source']}: "
              f"{'none' if d is None else {k: v for k, v in d.items() if v}}")


def in_flight_part(mount, tmp, data, validate):
    """A kill while a pressure incident of the cgroup still samples: the oom incident names it in
    related, though the kill came before that incident was written."""
    with ScratchCgroup(mount, "oomf") as cg, LimitedCgroup(mount, cg, "oomf", LIMIT) as lim:
        env = dict(os.environ, PSIDIAG_FILE=data)
        agent, out, log = start_agent(tmp, cg, "inflight", sample_ms=8000)
        try:
            time.sleep(0.5)
            thrasher = spawn(cg, [WORKLOAD, "thrash", "psidiag-thrash", "2"], env, lim.extra)
            deadline = time.time() + 40
            while "fired: sampling" not in open(log).read():
                check(time.time() < deadline, f"no pressure sample within 40 s:\n{open(log).read()[-2000:]}")
                time.sleep(0.05)
            oom_hog(cg, env, lim.extra)
            lines = wait_for("an oom incident and a pressure incident",
                             lambda: lines_where(out, lambda ls: any(i["type"] == "oom" for i in ls) and
                                                 any(i["type"] == "pressure" for i in ls)), 40, log=log)
        finally:
            code = stop_agent(agent)
            thrasher.kill()
        check(code == 0, f"the agent exited with {code}")
        for inc in lines:
            validate(inc)
        oom = [i for i in lines if i["type"] == "oom"][0]
        kill_t = parse_time(oom["time"])
        first = [i for i in lines if i["type"] == "pressure"][0]
        woke = parse_time(first["time"])
        check(woke < kill_t, f"the first pressure incident woke at {first['time']}, after the kill at {oom['time']}")
        ended = parse_time(first["window"]["end"])
        check(ended > kill_t, f"the pressure incident's sample ended at {first['window']['end']}, before the kill at "
              f"{oom['time']}: it was not in flight")
        check(first["id"] in oom["related"], f"the pressure incident in flight {first['id']} is not in related "
              f"{oom['related']}")
        print(f"in flight ({lim.how}): a pressure incident woken {kill_t - woke:.2f} s before the kill, its sample "
              f"ending {ended - kill_t:.2f} s after it, is related[{oom['related'].index(first['id'])}]")


def lifetime_part(mount, tmp, validate):
    """sample_ms 0: the incident is written as the kill is read, from one snapshot."""
    with ScratchCgroup(mount, "ooml") as cg, LimitedCgroup(mount, cg, "ooml", LIMIT) as lim:
        agent, out, log = start_agent(tmp, cg, "lifetime", sample_ms=0)
        try:
            time.sleep(1)
            hog = oom_hog(cg, dict(os.environ), lim.extra)
            lines = wait_for("an oom incident", lambda: lines_where(out, lambda ls: any(i["type"] == "oom" for i in ls)), 20,
                             log=log)
        finally:
            code = stop_agent(agent)
        check(code == 0, f"the agent exited with {code}")
        inc = [i for i in lines if i["type"] == "oom"][0]
        validate(inc)
        check(inc["oom"]["victim"]["pid"] == hog.pid, f"victim {inc['oom']['victim']}")
        check(inc["sample"]["basis"] == "lifetime" and inc["sample"]["duration_ms"] == 0, f"sample {inc['sample']}")
        print(f"lifetime ({lim.how}): victim {hog.pid} written at once, delays from "
              f"{inc['oom']['victim']['delay_source']}")


def counter_part(mount, tmp, validate):
    """kmsg closed: the kill is counted from the memcg's counter."""
    with open("/proc/sys/kernel/dmesg_restrict") as f:
        restrict = f.read().strip()
    with ScratchCgroup(mount, "oomc") as cg, LimitedCgroup(mount, cg, "oomc", LIMIT) as lim:
        try:
            with open("/proc/sys/kernel/dmesg_restrict", "w") as f:
                f.write("1")
            # A long sample: the agent is stopped in the middle of it, and must still write the kill.
            agent, out, log = start_agent(tmp, cg, "counter", drop_syslog=True, sample_ms=60000)
            time.sleep(1)
            hog = oom_hog(cg, dict(os.environ), lim.extra)
            deadline = time.time() + 20
            while "after an oom kill" not in open(log).read():
                check(time.time() < deadline, f"no sample after the counted kill:\n{open(log).read()[-2000:]}")
                time.sleep(0.1)
        finally:
            with open("/proc/sys/kernel/dmesg_restrict", "w") as f:
                f.write(restrict)
            code = stop_agent(agent)
        lines = read_lines(out)
        check(code == 0, f"the agent exited with {code}")
        text = open(log).read()
        check("cannot read /dev/kmsg" in text, f"the agent read /dev/kmsg without CAP_SYSLOG:\n{text[-2000:]}")
        for inc in lines:
            validate(inc)
        inc = [i for i in lines if i["type"] == "oom"][0]
        oom = inc["oom"]
        want = "memory.events" if not lim.memcg else "memory.oom_control"
        check(oom["source"] == want and oom["kills"] >= 1 and oom["victim"] is None, f"oom {oom}")
        check(oom["cgroup"] == "/" + cg.rel, f"measured {oom['cgroup']}")
        # Stopped mid-sample: written at exit from the first snapshot, labelled as lifetime totals.
        check(inc["sample"]["basis"] == "lifetime", f"sample at exit: {inc['sample']}")
        print(f"counter ({lim.how}): {oom['kills']} kill counted from {oom['source']} after the hog {hog.pid} died, "
              f"written at exit mid-sample")


def counter_limit_part(mount, tmp, validate):
    """kmsg closed and 20 watched cgroups, max_dir_watches at its least (16): the memory.events
    files followed for their kill counters stay within the agent's inotify limit with discovery's
    directories (psidiag_dir_watches never above psidiag_dir_watch_limit), the rest refused,
    counted and said. Needs cgroup2's memory controller (pure cgroup2: the VM guests); a hybrid
    host's memcgs are v1, their counters eventfds, no inotify: not run there, saying so."""
    n = 20
    with ScratchCgroup(mount, "oomcap") as parent:
        probe = os.path.join(parent.path, "memory.events")
        if not os.path.exists(probe) and not enable_controller(mount, parent, "memory"):
            print("counter-limit: no memory controller on cgroup2 here (hybrid: v1 memcgs); not run")
            return
        with open(os.path.join(parent.path, "cgroup.subtree_control"), "w") as f:
            f.write("+memory")
        kids = [ChildCgroup(parent, f"c{i}").__enter__() for i in range(n)]
        restrict = open("/proc/sys/kernel/dmesg_restrict").read().strip()
        agent = None
        try:
            with open("/proc/sys/kernel/dmesg_restrict", "w") as f:
                f.write("1")
            prom = os.path.join(tmp, "cap.prom")
            a = launch_agent(PSIDIAG, tmp, "cap", {
                "metrics_file": prom, "max_dir_watches": 16,
                "watch": [{"cgroup": k.rel, "triggers": ["memory some 50ms 2s"]} for k in kids]},
                ["--log-level", "debug"], without_kmsg())
            agent, log = a.proc, a.log
            wait_for("the counters opened", lambda: "counting oom kills from the memory cgroups of" in open(log).read(),
                     60, 0.1, alive=[("the agent", agent, log)])
            held = wait_for("the metrics written", lambda: metric(prom, "psidiag_dir_watch_limit") and (
                metric(prom, "psidiag_dir_watches"), metric(prom, "psidiag_dir_watch_limit"),
                metric(prom, "psidiag_dir_watches_refused_total")), 30, 0.2, alive=[("the agent", agent, log)])
        finally:
            with open("/proc/sys/kernel/dmesg_restrict", "w") as f:
                f.write(restrict)
            code = stop_agent(agent) if agent else None
            for k in kids:
                k.__exit__(None, None, None)
    text = open(log).read()
    check(code == 0, f"the agent exited with {code}:\n{text[-2000:]}")
    watches, limit, refused = held
    said = [l for l in text.splitlines() if "are not counted: its memory.events is not watched" in l]
    counted = re.search(r"counting oom kills from the memory cgroups of (\d+) watch", text)
    check(limit == 16 and watches <= limit, f"psidiag_dir_watches {watches} above the limit {limit}")
    check(counted and int(counted.group(1)) <= limit and refused >= n - int(counted.group(1)) >= 1 and said,
          f"{counted and counted.group(0)}; refused {refused}; said {said}")
    print(f"counter-limit: {n} watches, limit {limit}: {counted.group(1)} counted, {watches} inotify watches, "
          f"{refused} refused: {said[0]}")


def main():
    mount = check_kernel()
    validate = validator(SCHEMAS)
    if not os.path.exists("/dev/kmsg"):
        raise Failed("/dev/kmsg is missing")
    tmp = tempfile.mkdtemp(prefix="psidiag-it-")
    # PSIDIAG_OOM=part,part runs only those (the VM guests run counter and counter-limit).
    only = set(filter(None, os.environ.get("PSIDIAG_OOM", "").split(",")))
    if not only or only & {"kmsg", "in-flight"}:
        data = make_file("/var/tmp")
        try:
            if not only or "kmsg" in only:
                kmsg_part(mount, tmp, data, validate)
            if not only or "in-flight" in only:
                in_flight_part(mount, tmp, data, validate)
        finally:
            os.unlink(data)
    for name, part in (("lifetime", lifetime_part), ("counter", counter_part), ("counter-limit", counter_limit_part)):
        if not only or name in only:
            part(mount, tmp, validate)


run(main)
