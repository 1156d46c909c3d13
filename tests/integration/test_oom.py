#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A real OOM kill becomes an oom incident that names the victim and links the pressure before it.

A page-cache thrasher in a cgroup limited to 48 MiB (memory.max where cgroup2 has the memory
controller; on hybrid hosts a cgroup-v1 memcg holding the same tasks) makes memory pressure, and a
"memory some" trigger writes pressure incidents. Then a hog with a hostile name allocates
anonymous memory until the kernel's OOM killer ends it. The agent reads the kill from /dev/kmsg
and writes an incident of type oom: the victim's pid, comm, uid, cgroup and resident set, the
constraint and memcg, the cgroup measured after the kill (the thrasher still in it), and in
`related` the pressure incidents written before the kill, newest first.

A second run takes CAP_SYSLOG away from the agent with kernel.dmesg_restrict=1, so /dev/kmsg is
closed to it: the kill is then counted from the memcg's oom_kill counter (memory.events, or
memory.oom_control on cgroup v1) and still written, with the victim unknown."""

import datetime
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (Failed, ScratchCgroup, V1Group, check, check_kernel, enable_controller, find_mount,  # noqa: E402
                    make_file, read_lines, run, spawn, stop_agent, validator)

PSIDIAG, WORKLOAD, SCHEMAS = sys.argv[1:4]
LIMIT = 48 << 20
# What the parser must see through: a "field" and parentheses inside the name (15 bytes at most).
COMM = "h,pid=1) (x"
CAP_SYSLOG = 34


def parse_time(s):
    return datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc).timestamp()


class LimitedCgroup:
    """The scratch cgroup with a 48 MiB memory limit and no swap: cgroup2 memory.max, or a v1 memcg
    that the workloads join too. extra: the v1 cgroup.procs directories to put tasks in."""

    def __init__(self, mount, cg, name):
        self.mount, self.cg, self.name, self.memcg, self.extra = mount, cg, name, None, []

    def __enter__(self):
        if enable_controller(self.mount, self.cg, "memory"):
            with open(os.path.join(self.cg.path, "memory.max"), "w") as f:
                f.write(str(LIMIT))
            swap = os.path.join(self.cg.path, "memory.swap.max")
            if os.path.exists(swap):
                with open(swap, "w") as f:
                    f.write("0")
            self.how = "cgroup2 memory.max"
            return self
        v1 = find_mount("cgroup", "memory")
        check(v1, "neither a cgroup2 memory controller nor a cgroup-v1 memcg")
        self.memcg = V1Group(v1, self.name).__enter__()
        with open(os.path.join(self.memcg.path, "memory.limit_in_bytes"), "w") as f:
            f.write(str(LIMIT))
        with open(os.path.join(self.memcg.path, "memory.swappiness"), "w") as f:
            f.write("0")
        self.extra = [self.memcg.path]
        self.how = f"cgroup-v1 memcg {self.memcg.path}"
        return self

    def __exit__(self, *exc):
        self.cg.kill_all()
        if self.memcg:
            self.memcg.__exit__(None, None, None)
        return False


def start_agent(tmp, cg, name, drop_syslog=False):
    out = os.path.join(tmp, f"{name}.ndjson")
    cfg = os.path.join(tmp, f"{name}.json")
    with open(cfg, "w") as f:
        json.dump({"output": out, "sample_ms": 500, "cooldown_ms": 0, "top": 5, "oom_lookback_s": 300,
                   "watch": [{"cgroup": cg.rel, "triggers": ["memory some 50ms 2s"]}]}, f)
    log = open(os.path.join(tmp, f"{name}.log"), "w")
    argv = [PSIDIAG, "--config", cfg, "--enable-delayacct", "--log-level", "debug"]
    if drop_syslog:
        setpriv = shutil.which("setpriv")
        check(setpriv, "setpriv (util-linux) is missing")
        argv = [setpriv, "--inh-caps=-syslog", "--bounding-set=-syslog", "--"] + argv
    agent = subprocess.Popen(argv, stderr=log)
    return agent, out, log.name


def wait_for(pred, out, timeout, what, log):
    deadline = time.time() + timeout
    while time.time() < deadline:
        lines = read_lines(out)
        if pred(lines):
            return lines
        time.sleep(0.25)
    raise Failed(f"{what} within {timeout} s; incidents {[i['type'] for i in read_lines(out)]}\n"
                         f"{open(log).read()[-3000:]}")


def oom_hog(cg, env, extra):
    hog = spawn(cg, [WORKLOAD, "alloc", COMM], env, extra)
    try:
        hog.wait(60)
    except subprocess.TimeoutExpired:
        raise Failed("the hog was not OOM-killed within 60 s")
    check(hog.returncode == -signal.SIGKILL, f"the hog ended with {hog.returncode}, not SIGKILL")
    return hog


def kmsg_part(mount, tmp, data, validate):
    with ScratchCgroup(mount, "oom") as cg, LimitedCgroup(mount, cg, "oom") as lim:
        env = dict(os.environ, PSIDIAG_FILE=data)
        agent, out, log = start_agent(tmp, cg, "kmsg")
        try:
            time.sleep(0.5)
            thrasher = spawn(cg, [WORKLOAD, "thrash", "psidiag-thrash", "2"], env, lim.extra)
            wait_for(lambda ls: sum(i["type"] == "pressure" for i in ls) >= 2, out, 40,
                     "no two pressure incidents", log)
            hog = oom_hog(cg, env, lim.extra)
            lines = wait_for(lambda ls: any(i["type"] == "oom" for i in ls), out, 20, "no oom incident", log)
        finally:
            code = stop_agent(agent)
        check(code == 0, f"the agent exited with {code}")
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

        # related: every pressure incident finished before the kill, newest first; none after it.
        kill_t = parse_time(inc["time"])
        pressures = [i for i in lines if i["type"] == "pressure"]
        ended = {i["id"]: parse_time(i["time"]) + i["sample"]["duration_ms"] / 1000 for i in pressures}
        related = inc["related"]
        check(len(related) >= 2, f"related {related}")
        check(all(r in ended and ended[r] <= kill_t for r in related), f"related {related} vs {ended}, kill {kill_t}")
        check(related == sorted(related, key=lambda r: ended[r], reverse=True), f"related not newest first: {related}")
        missing = [i for i, t in ended.items() if t < kill_t - 0.2 and i not in related]
        check(not missing, f"pressure incidents before the kill not related: {missing}")
        d = victim["delay_us"]
        print(f"kmsg ({lim.how}): victim {victim['pid']} {victim['comm']!r} anon {victim['rss_kib']['anon']} KiB, "
              f"{len(related)} related, victim delays from {victim['delay_source']}: "
              f"{'none' if d is None else {k: v for k, v in d.items() if v}}")


def counter_part(mount, tmp, validate):
    """kmsg closed: the kill is counted from the memcg's counter."""
    with open("/proc/sys/kernel/dmesg_restrict") as f:
        restrict = f.read().strip()
    with ScratchCgroup(mount, "oomc") as cg, LimitedCgroup(mount, cg, "oomc") as lim:
        try:
            with open("/proc/sys/kernel/dmesg_restrict", "w") as f:
                f.write("1")
            agent, out, log = start_agent(tmp, cg, "counter", drop_syslog=True)
            time.sleep(1)
            hog = oom_hog(cg, dict(os.environ), lim.extra)
            lines = wait_for(lambda ls: any(i["type"] == "oom" for i in ls), out, 20, "no counted oom incident", log)
        finally:
            with open("/proc/sys/kernel/dmesg_restrict", "w") as f:
                f.write(restrict)
            code = stop_agent(agent)
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
        print(f"counter ({lim.how}): {oom['kills']} kill counted from {oom['source']} after the hog {hog.pid} died")


def main():
    mount = check_kernel()
    validate = validator(SCHEMAS)
    if not os.path.exists("/dev/kmsg"):
        raise Failed("/dev/kmsg is missing")
    tmp = tempfile.mkdtemp(prefix="psidiag-it-")
    data = make_file("/var/tmp")
    try:
        kmsg_part(mount, tmp, data, validate)
    finally:
        os.unlink(data)
    counter_part(mount, tmp, validate)


run(main)
