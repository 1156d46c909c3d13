# SPDX-License-Identifier: MIT
"""On-cpu stacks (docs/stacks.md) on each guest's stock kernel, run by guest.py's runner like its
own cases: `psidiag snapshot --stacks-hz` of a scratch cgroup where the suite's workload spins, xz
compresses (where the guest has it) and dd writes a file on the scratch disk's ext4 (a module in
Debian's kernels). The incident matches the schema; its kernel frames are named from this
kernel's /proc/kallsyms, modules included (dd's write path through ext4_*), and no kernel address
is written; where the guest has libdw (Debian 12's root installs libdw1), the workload's stacks
are unwound through its spin() and xz's through liblzma's lzma_code; where it has none, each
stack's user part is its sampled pc alone, said as not_unwound, never guessed."""

import json
import os
import re
import shutil

from common import ScratchCgroup, check, spawn
from vmcommon import MOUNT, PSIDIAG, SCRATCH, WORKLOAD, sh

CASES = {}
DEADLINE_S = {"stacks": 180}


def case(fn):
    CASES[fn.__name__.replace("_", "-")] = fn
    return fn


def user_names(stack):
    return [f["function"] for f in stack["frames"] if not f["kernel"]]


@case
def stacks(validate):
    target = os.path.join(SCRATCH, "psidiag-stacks-dd")
    with ScratchCgroup(MOUNT, "stacks") as cg:
        env = dict(os.environ)
        spin = spawn(cg, [WORKLOAD, "spin", "vm-spin", "1"], env)
        xz = shutil.which("xz")
        if xz:
            spawn(cg, ["sh", "-c", f"exec {xz} -6 -T1 -c < /dev/urandom > /dev/null"], env)
        spawn(cg, ["sh", "-c", f"while :; do dd if=/dev/zero of={target} bs=1M count=64 2>/dev/null; done"], env)
        p = sh([PSIDIAG, "snapshot", "/" + cg.rel, "--sample-ms", "3000", "--top", "5", "--stacks-hz", "99"],
               timeout=120)
    if os.path.exists(target):
        os.unlink(target)
    check(p.returncode == 0, f"snapshot: {p.returncode} {p.stderr[-2000:]}")
    inc = json.loads(p.stdout)
    validate(inc)
    st = inc["stacks"]
    check(st["error"] is None, f"no stacks: {st['error']}")
    print(f"  {st['samples']} samples at {st['hz']} Hz in {st['duration_ms']} ms, {st['unwind_ms']} ms unwinding, "
          f"unwinder {st['unwinder']}, kernel names {st['kernel_names'] or 'yes'}; "
          f"processes {[(q['comm'], q['samples']) for q in st['processes']]}")
    check(not re.search(r'"0xffff[0-9a-f]{12}"', p.stdout), "a kernel address in the incident")
    mods = st["modules"]
    kernel = [(f["function"], mods[f["module"]]["path"]) for q in st["processes"] for s in q["stacks"]
              for f in s["frames"] if f["kernel"] and f["function"]]
    ext4 = sorted({m for fn, m in kernel if fn.startswith("ext4_")})
    print(f"  {len(kernel)} named kernel frames; ext4's in {ext4}; e.g. {sorted({fn for fn, _ in kernel})[:10]}")
    check(st["kernel_callchains"] and st["kernel_names"] is None and kernel, "no named kernel frames")
    check(ext4, f"no ext4_* frame in dd's write path: {sorted({fn for fn, _ in kernel})[:40]}")
    mine = [q for q in st["processes"] if q["pid"] == spin.pid]
    check(mine and mine[0]["samples"] >= 20, f"the workload's stacks: {json.dumps(mine)[:2000]}")
    if st["unwinder"]:
        # Past the capture's unwinding budget (STACKS_UNWIND_BUDGET_US: 352 ms were spent on sid
        # under TCG), samples keep their pc, not unwound, and are counted: judged are the others.
        unwound = [s for s in mine[0]["stacks"] if s["end"] != "not_unwound"]
        n = sum(s["count"] for s in unwound)
        through = sum(s["count"] for s in unwound if "spin" in user_names(s))
        print(f"  the workload: {through} of its {n} unwound samples through spin() ({mine[0]['samples']} in all, "
              f"{st['over_budget_samples']} of the capture's over budget); "
              f"the top {user_names(unwound[0]) if unwound else None}")
        check(n >= 10 and n + st["over_budget_samples"] + mine[0]["other_samples"] >= mine[0]["samples"],
              f"the workload's unwound stacks: {n}, over budget {st['over_budget_samples']}: "
              f"{json.dumps(mine[0])[:3000]}")
        check(through >= 0.8 * n, f"the workload's stacks: {json.dumps(mine[0])[:3000]}")
        xzs = [q for q in st["processes"] if q["comm"] == "xz"]
        if xz:
            lz = sum(s["count"] for q in xzs for s in q["stacks"] if "lzma_code" in user_names(s))
            print(f"  xz: {lz} of its shown samples through lzma_code")
            check(xzs and lz > 0, f"xz's stacks: {json.dumps(xzs)[:3000]}")
    else:
        ends = {s["end"] for s in mine[0]["stacks"]}
        print(f"  no libdw here: the workload's stacks end {ends}")
        check(ends == {"not_unwound"} and all(len(user_names(s)) <= 1 for s in mine[0]["stacks"]),
              f"stacks without an unwinder: {json.dumps(mine[0])[:2000]}")
