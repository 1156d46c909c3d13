#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Cgroups that come and go, on the real kernel:
- a glob watch (P/*) arms the match present at start and, within a second, one created later;
  incidents follow for it; removed, it is disarmed without an incident; created again, it is
  armed again;
- a concrete cgroup missing at start is warned about once and armed within a second of appearing;
- cooldown_ms holds under continuous pressure;
- SIGHUP with a config that adds a trigger arms it and keeps the others (same descriptors);
  SIGHUP with a broken config is refused and the running config keeps working."""

import json
import os
import re
import signal
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (ChildCgroup, ScratchCgroup, check, check_kernel, launch_agent, read_lines, run,  # noqa: E402
                    validator, wait_lines, wait_log)

PSIDIAG, WORKLOAD, SCHEMAS = sys.argv[1:4]


def trigger_fds(pid):
    """The agent's open pressure files: {fd number: target}."""
    out = {}
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.endswith(".pressure"):
            out[int(fd)] = target
    return out


def main():
    mount = check_kernel()
    validate = validator(SCHEMAS)
    tmp = tempfile.mkdtemp(prefix="psidiag-it-")
    with ScratchCgroup(mount, "disc") as top:
        first = ChildCgroup(top, "first").__enter__()
        kids = [first]
        out = os.path.join(tmp, "disc.ndjson")
        config = {"output": out, "sample_ms": 200, "cooldown_ms": 4000,
                  "watch": [{"cgroup": f"{top.rel}/*", "triggers": ["cpu some 50ms 2s"]},
                            {"cgroup": f"{top.rel}/later/inner", "triggers": ["cpu some 50ms 2s"]}]}
        a = launch_agent(PSIDIAG, tmp, "disc", config, ["--log-level", "info"])
        agent, err_path, cfg_path = a.proc, a.log, a.cfg
        try:
            wait_log(err_path, r"watching: 1 trigger armed on 1 watch", 10)
            log = open(err_path).read()
            check(log.count(f"cgroup {top.rel}/later/inner does not exist (yet)") == 1, f"missing cgroup:\n{log}")

            # A new match of the glob: armed within a second, and its incidents follow.
            mark = len(open(err_path).read())
            second = ChildCgroup(top, "second")
            t0 = time.time()
            second.__enter__()
            kids.append(second)
            wait_log(err_path, rf"armed 1 trigger on {re.escape(second.rel)}\n", 1.0, start=mark)
            armed_after = time.time() - t0
            for _ in range(4):
                second.spawn([WORKLOAD, "spin", "psidiag-spin"])
            # Continuous pressure until two incidents: cooldown_ms 4000 spaces them.
            def of_second(lines):
                return [i for i in lines if i["trigger"]["cgroup"] == "/" + second.rel]

            wait_lines(out, lambda lines: len(of_second(lines)) >= 2, timeout=60)
            second.kill_all()
            incs = of_second(read_lines(out))
            check(len(incs) >= 2, f"{len(incs)} incidents for the new cgroup:\n{open(err_path).read()[-2000:]}")
            for i in incs:
                validate(i)
            times = [time.mktime(time.strptime(i["time"][:19], "%Y-%m-%dT%H:%M:%S")) + float("0." + i["time"][20:26])
                     for i in incs]
            gaps = [b - a for a, b in zip(times, times[1:])]
            check(all(g >= 4.0 for g in gaps), f"cooldown not honoured: gaps {gaps}")

            # Removed: disarmed, no incident; created again: armed again.
            before = len(read_lines(out))
            mark = len(open(err_path).read())
            os.rmdir(second.path)
            kids.remove(second)
            wait_log(err_path, rf"cgroup {re.escape(second.rel)} was removed: its triggers are closed", 2, start=mark)
            mark = len(open(err_path).read())
            second.__enter__()
            kids.append(second)
            wait_log(err_path, rf"armed 1 trigger on {re.escape(second.rel)}\n", 1.0, start=mark)
            check(len(read_lines(out)) == before, "an incident was written for a removed cgroup")

            # The concrete path appears (parent first, then the cgroup itself).
            later = ChildCgroup(top, "later").__enter__()
            kids.append(later)  # matched by the glob too: armed as P/later
            inner = ChildCgroup(later, "inner")
            mark = len(open(err_path).read())
            t1 = time.time()
            inner.__enter__()
            kids.append(inner)
            wait_log(err_path, rf"armed 1 trigger on {re.escape(inner.rel)}\n", 1.0, start=mark)
            armed_later = time.time() - t1

            # SIGHUP adding a trigger: the existing ones keep their descriptors.
            fds_before = trigger_fds(agent.pid)
            config["watch"][0]["triggers"].append("memory some 100ms 2s")
            with open(cfg_path, "w") as f:
                json.dump(config, f)
            mark = len(open(err_path).read())
            agent.send_signal(signal.SIGHUP)
            m = wait_log(err_path, r"reloaded .*: (\d+) triggers armed on (\d+) watches \((\d+) kept, (\d+) closed, "
                                   r"(\d+) new\)", 5, start=mark)
            kept, closed, new = int(m.group(3)), int(m.group(4)), int(m.group(5))
            n_glob = len([k for k in kids if k.rel.count("/") == 1])
            check(kept == len(fds_before) and closed == 0 and new == n_glob, f"reload: {m.group(0)}, {n_glob} matches")
            fds_after = trigger_fds(agent.pid)
            check(all(fds_after.get(fd) == target for fd, target in fds_before.items()),
                  f"a kept trigger changed descriptors: {fds_before} -> {fds_after}")

            # A broken config is refused; the agent keeps running with what it had.
            with open(cfg_path, "w") as f:
                f.write('{"watch": [{"triggers": ["cpu some 5s 2s"]}]}')
            mark = len(open(err_path).read())
            agent.send_signal(signal.SIGHUP)
            wait_log(err_path, r"reload refused, the running config is kept: .*stall must not exceed", 5, start=mark)
            time.sleep(0.3)
            check(agent.poll() is None, "the agent died on a broken reload")
            check(trigger_fds(agent.pid) == fds_after, "a refused reload changed the armed triggers")
        finally:
            agent.send_signal(signal.SIGTERM)
            code = agent.wait(10)
            for k in reversed(kids):
                k.__exit__(None, None, None)
        check(code == 0, f"exit {code}")
        print(f"glob match armed {armed_after * 1000:.0f} ms after mkdir, missing path {armed_later * 1000:.0f} ms "
              f"after; {len(incs)} incidents {gaps} s apart with a 4 s cooldown; reload kept {kept}, added {new}")


run(main)
