# SPDX-License-Identifier: MIT
"""What the VM's killer cases share (guest.py's systemd-oomd and oomd, prekill.py's): a real kill
of a thrashing unit under a slice, with the agent watching it (killer_case()), the journal's
entries in order (journal()) and the guest's systemd version."""

import json
import os
import re
import subprocess
import tempfile
import time

from common import check, make_file, stop_agent, wait_lines
from vmcommon import MOUNT, PSIDIAG, SCRATCH, WORKLOAD, sh, write


def killer_case(validate, slice_name, unit, start_killer, expect, basis, **config):
    """A unit under slice_name (MemoryHigh=32M, no swap) of two processes: an anonymous grower (up
    to 256 MiB), which the kernel cannot reclaim, so the cgroup stays over high and every charge
    sleeps there (mem_cgroup_handle_over_high(), memory stall on every kernel); and a page-cache
    thrasher of a 128 MiB file, whose pages reclaim does scan (memory.stat pgscan: systemd-oomd
    kills only "with reclaim activity"). The agent watches the slice for memory pressure; the
    killer is started by start_killer() once the agent says its kill window is open; the case
    waits for the kill incident and checks that it names expect, the victims and the pressure
    incident before it. Neither load alone is enough on every
    guest: a thrasher under MemoryMax=48M stalled 11% on 6.1 and 6.12 but under 5% on 7.2 (below
    the killers' 10%), and a grower alone stalls 100% with no pgscan, which systemd-oomd 262 did
    not kill in 150 s. config goes into the agent's config (its metrics_file, when given, is where
    the agent's metrics are read). A kill incident without the victims prints the agent's whole
    debug log: the facts of a kill the agent missed."""
    data = make_file(SCRATCH, 128 << 20)
    tmp = tempfile.mkdtemp(prefix="psidiag-vm-")
    out, cfg, log, prom = (os.path.join(tmp, f) for f in ("out.ndjson", "cfg.json", "agent.log", "metrics.prom"))
    prom = config.pop("metrics_file", prom)
    try:
        write(cfg, json.dumps({"output": out, "sample_ms": 1000, "cooldown_ms": 0, "top": 5, "metrics_file": prom,
                               "watch": [{"cgroup": slice_name, "triggers": ["memory some 100ms 2s"]}], **config}))
        agent = subprocess.Popen([PSIDIAG, "--config", cfg, "--enable-delayacct", "--log-level", "debug"],
                                 stderr=open(log, "w"))
        try:
            deadline = time.time() + 60
            while "watching:" not in open(log).read():
                check(agent.poll() is None and time.time() < deadline, f"the agent did not start:\n{open(log).read()}")
                time.sleep(0.1)
            p = sh(["systemd-run", f"--unit={unit}", f"--slice={slice_name}", "--collect",
                    f"--setenv=PSIDIAG_FILE={data}", "--setenv=PSIDIAG_ALLOC_MS=2", "--setenv=PSIDIAG_ALLOC_MAX_MB=256",
                    "/bin/sh", "-c", f"{WORKLOAD} thrash vm-thrasher & exec {WORKLOAD} alloc vm-grower"])
            check(p.returncode == 0, f"systemd-run: {p.stderr}")
            # The slice's limit is what stalls the grower: without it nothing stalls.
            limit = os.path.join(MOUNT, slice_name, "memory.high")
            have = open(limit).read().strip() if os.path.exists(limit) else None
            check(have == str(32 << 20), f"{limit}: {have}, not MemoryHigh=32M:\n" + sh(
                ["systemctl", "show", slice_name, "-p", "LoadState,FragmentPath,MemoryHigh,ActiveState"]).stdout)
            # The killer starts once the agent says its kill window is open (at the slice's first
            # memory wakeup, its members listed): a kill before that would be a race the agent
            # cannot win, not what this case is about (integration-killgaps holds the agent in
            # those gaps on purpose).
            deadline = time.time() + 90
            while not re.search(r"kill window of \S+ open for \d+ s: \d+ processes listed", open(log).read()):
                check(agent.poll() is None and time.time() < deadline,
                      f"no kill window open in 90 s of the load:\n{open(log).read()[-3000:]}")
                time.sleep(0.1)
            t0 = time.time()
            start_killer()
            lines = wait_lines(out, lambda ls: [i for i in ls if i["type"] == "kill"], timeout=150)
        finally:
            stop_agent(agent)
        print(f"  kill after {time.time() - t0:.1f} s")
        print("  the agent's lines about kills:\n" + "\n".join(
            "    " + l for l in open(log).read().splitlines() if re.search(r"kill|prekill|exit record", l)))
        # Every kill incident, the ones written at the agent's stop too (a victim whose exit came
        # after the first group was written makes one of its own).
        for i in (json.loads(l) for l in open(out) if l.strip()):
            if i["type"] == "kill":
                print(f"  kill incident {i['id']}: victims_total {i['kill']['victims_total']}, "
                      f"{[(v['comm'], v['pid']) for v in i['kill']['victims']]}")
        gone = not os.path.exists(os.path.join(MOUNT, slice_name, unit))
        print(f"  the killed unit's cgroup {'is gone' if gone else 'is still there'} when the incident is read")
        # What tells a kill unseen from one unreported: exit records the kernel dropped, incidents by type.
        counts = [l for l in (open(prom).read().splitlines() if os.path.exists(prom) else [])
                  if re.match(r"psidiag_(exit_records_lost|kills|prekill_calls|incidents)_total", l)]
        print("  the agent's metrics: " + "; ".join(counts))
        kills = [i for i in lines if i["type"] == "kill"]
        check(kills, f"no kill incident in 150 s: {[i['type'] for i in lines]}\n"
              f"{sh(['systemctl', 'status', '--no-pager', unit]).stdout[-1500:]}\nagent:\n"
              f"{open(log).read()[-6000:]}")
        inc = kills[0]
        validate(inc)
        k = inc["kill"]
        if not k["victims"]:
            print("  a kill incident of no victim first: the agent's whole log (the exits it heard of)")
            print("\n".join("    " + l for l in open(log).read().splitlines()[-60:]))
        print(f"  summary: {inc['summary']}")
        print(f"  killer: {k['killer']}")
        for v in k["victims"]:
            print(f"  victim: {v['comm']} pid {v['pid']} {v['cgroup']} {v['signal']}")
        check(k["victims"] and all(v["comm"] in ("vm-grower", "vm-thrasher") and v["cgroup"] == f"/{slice_name}/{unit}"
                                   and v["signal"] == "SIGKILL" for v in k["victims"]), f"victims: {k['victims']}")
        pressure = [i for i in lines if i["type"] == "pressure"]
        check(pressure and k["pressure"]["incident"] in [i["id"] for i in pressure],
              f"the kill's pressure incident {k['pressure']} is not one written: {[i['id'] for i in pressure]}")
        check(k["killer"] and k["killer"]["name"] == expect and k["killer"]["basis"] == basis,
              f"killer: {k['killer']}, expected {expect} by its {basis}")
        check(inc["summary"].startswith(f"killed by {expect}"), f"summary: {inc['summary']!r}")
        return inc
    finally:
        sh(["systemctl", "stop", unit])
        os.unlink(data)


def systemd_version():
    return int(re.match(r"systemd (\d+)", sh(["systemctl", "--version"]).stdout).group(1))


def journal(since, *matches):
    """The journal's entries since `since` matching any of matches (FIELD=value), in order, as
    (monotonic seconds, identifier, pid, message)."""
    argv = ["journalctl", "--no-pager", "-o", "json", "--since", since]
    for i, m in enumerate(matches):
        argv += (["+"] if i else []) + [m]
    out = []
    for line in sh(argv).stdout.splitlines():
        e = json.loads(line)
        msg = e.get("MESSAGE")
        if isinstance(msg, list):  # not UTF-8: journalctl gives the bytes
            msg = bytes(msg).decode(errors="replace")
        out.append((int(e["__MONOTONIC_TIMESTAMP"]) / 1e6, e.get("SYSLOG_IDENTIFIER"), e.get("_PID"), msg))
    return out
