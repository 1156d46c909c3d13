# SPDX-License-Identifier: MIT
"""What the cases of the VM (tests/vm/guest.py and its case modules, waits.py) share: the
installed agent's paths from cases.json, the guest's mounts, and the helpers that start the agent
on a scratch cgroup and print what a case checks."""

import json
import os
import re
import tempfile

from common import check, sh, start_watching, stop_agent, wait_lines  # noqa: F401 (sh: for the cases)

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "cases.json")) as _f:
    CONFIG = json.load(_f)
PSIDIAG = CONFIG["installed"]["binary"]
WORKLOAD = os.path.join(HERE, "psidiag-workload")
MOUNT = "/sys/fs/cgroup"
SCRATCH = "/mnt/scratch"


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def show(inc):
    """The facts a case checks, printed so that the report shows them."""
    top = (inc.get("most_delayed") or [{}])[0]
    print(f"  summary: {inc.get('summary')}")
    print(f"  victim: {top.get('comm')} ({top.get('cgroup')}) delay_us {top.get('delay_us')}")
    c = inc.get("culprits") or {}
    print(f"  culprits: scope {c.get('scope')} dominant {c.get('dominant')} "
          f"{[(x.get('comm'), x.get('cgroup')) for x in (c.get('processes') or [])[:3]]}")
    print(f"  limits: {json.dumps(inc.get('limits'))[:800]}")


def agent_run(cg, trigger, pred, start=None, timeout=90, **config):
    """The agent watching cg with trigger (start() called once it watches, so that the load's
    tasks begin with delay accounting on) until pred(incidents) holds; returns them and its log."""
    tmp = tempfile.mkdtemp(prefix="psidiag-vm-")
    name = re.sub(r"\W", "", cg.rel)[-20:]
    agent, out, log = start_watching(PSIDIAG, tmp, cg, name, trigger, top=5, **config)
    try:
        if start:
            start()
        lines = wait_lines(out, pred, timeout=timeout)
    finally:
        stop_agent(agent)
    text = open(log).read()
    if not pred(lines):
        # What the kernel saw of the cgroup, to tell a load too light for the trigger from an
        # agent that missed a wakeup.
        seen = []
        for f in ("cpu.pressure", "memory.pressure", "io.pressure", "memory.events", "memory.stat"):
            try:
                text_f = open(os.path.join(cg.path, f)).read()
                if f == "memory.stat":
                    text_f = "".join(l + "\n" for l in text_f.splitlines()
                                     if re.match(r"(anon|file|workingset_refault|pgscan|pgsteal|pgmajfault) ", l))
                seen.append(f"{f}:\n" + text_f[:1500])
            except OSError as e:
                seen.append(f"{f}: {e.strerror}")
        check(False, f"no matching incident within {timeout} s: {len(lines)} incidents\n"
              f"{json.dumps(lines)[-3000:]}\nagent log:\n{text[-3000:]}\nthe cgroup now:\n" + "\n".join(seen))
    return lines, text


def with_culprits(lines):
    return [i for i in lines if (i.get("culprits") or {}).get("processes")]


def scratch_disk():
    """MAJ:MIN of the virtio scratch disk."""
    return open("/sys/block/vdb/dev").read().strip()
