#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Attribution on the real kernel: a node-wide cpu trigger fires while one deep leaf cgroup
(P/busy/inner/leaf) spins among quiet siblings (P/quiet-a, P/quiet-b with sleepers). The incident
names that leaf as the hottest cgroup (not its parents, which contain it, nor the quiet ones),
and names a spinner first in most_delayed with the leaf as its cgroup. `snapshot P --resource cpu`
says the same for a cgroup watch."""

import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ChildCgroup, ScratchCgroup, check, check_kernel, launch_agent, run, validator, wait_incident  # noqa: E402

PSIDIAG, WORKLOAD, SCHEMAS = sys.argv[1:4]


def main():
    mount = check_kernel()
    validate = validator(SCHEMAS)
    tmp = tempfile.mkdtemp(prefix="psidiag-it-")
    with ScratchCgroup(mount, "attr") as top:
        busy = ChildCgroup(top, "busy")
        inner = ChildCgroup(busy, "inner")
        leaf = ChildCgroup(inner, "leaf")
        quiet = [ChildCgroup(top, "quiet-a"), ChildCgroup(top, "quiet-b")]
        kids = [busy, inner, leaf] + quiet
        try:
            for c in kids:
                c.__enter__()
            for q in quiet:
                q.spawn([WORKLOAD, "sleep", "psidiag-nap"])
            spinners = {leaf.spawn([WORKLOAD, "spin", "psidiag-spin"]).pid for _ in range(4)}

            a = launch_agent(PSIDIAG, tmp, "node", {"sample_ms": 500, "cooldown_ms": 0, "top": 5,
                                                    "watch": [{"triggers": ["cpu some 50ms 2s"]}]})
            inc = wait_incident(a.proc, a.out, a.log, 20)[0]
            validate(inc)
            check(inc["trigger"]["cgroup"] is None, "not a node-wide trigger")
            # The agent listened for exit records during its sample (none of ours exited).
            check(inc["sample"]["exit_records"] is not None and inc["sample"]["lost_exit_records"] == 0,
                  f"no exit listener in the agent's sample: {inc['sample']}")
            hot = inc["cgroups"]
            names = [c["path"] for c in hot]
            check(hot and names[0] == "/" + leaf.rel, f"hottest cgroups: {[(c['path'], c['stall_us']) for c in hot]}")
            for parent in (top, busy, inner):
                check("/" + parent.rel not in names, f"{parent.rel} listed though its leaf explains it: {names}")
            for q in quiet:
                check("/" + q.rel not in names[:1], f"a quiet cgroup ranks first: {names}")
            check(hot[0]["stall_us"] > 0 and hot[0]["some_us"] >= hot[0]["stall_us"], f"{hot[0]}")
            # Node-wide, other processes of the host may rank too (a busy machine delays them):
            # among ours, a spinner of the leaf comes first.
            ours = [p for p in inc["most_delayed"] if (p["cgroup"] or "").startswith("/" + top.rel)]
            check(ours and ours[0]["pid"] in spinners and ours[0]["cgroup"] == "/" + leaf.rel,
                  f"most delayed: {[(p['comm'], p['cgroup']) for p in inc['most_delayed']]}")
            first = ours[0]
            check(first["meta"] is not None, "no meta")
            print(f"node-wide: hottest {names[0]} (+{hot[0]['stall_us']} us), then {names[1:4]}; "
                  f"first process {first['comm']} in {first['cgroup']}")

            # The same answer from a snapshot of the parent cgroup, ranked by cpu.
            p = subprocess.run([PSIDIAG, "snapshot", top.rel, "--resource", "cpu", "--sample-ms", "500"],
                               capture_output=True, timeout=60)
            check(p.returncode == 0, f"snapshot: {p.stderr!r}")
            snap = json.loads(p.stdout)
            validate(snap)
            check(snap["cgroups"] and snap["cgroups"][0]["path"] == "/" + leaf.rel, f"snapshot cgroups {snap['cgroups']}")
        finally:
            for c in reversed(kids):
                c.__exit__(None, None, None)


run(main)
