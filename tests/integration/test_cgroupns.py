#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""psidiag in a cgroup namespace of its own (unshare --cgroup from a scratch cgroup, as in a
container without hostCgroupns) that still sees the host's cgroup2 mount (the DaemonSet's hostPath
/sys/fs/cgroup): it finds its namespace's root there by its own pid (kernel-facts.md:
cgroupns-paths), `check` says so, and a node-wide snapshot names the cpu hogs of another scratch
cgroup (outside the namespace) by their host path, never "outside the agent's cgroup namespace"
nor a "/.." path that exists nowhere. With the namespace's own cgroup2 mount (unshare --mount and
a fresh mount over the host's), `check` warns that processes outside can only be said to be so."""

import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ScratchCgroup, check, check_kernel, run, skip, validator  # noqa: E402

PSIDIAG, WORKLOAD, SCHEMAS = sys.argv[1:4]


def in_namespace(cg, argv, timeout=120):
    """Runs argv in a new cgroup namespace whose root is cg (the process enters cg first)."""

    def enter():
        with open(os.path.join(cg.path, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))

    return subprocess.run(["unshare", "--cgroup", "--"] + argv, preexec_fn=enter, capture_output=True, text=True,
                          timeout=timeout)


def main():
    mount = check_kernel()
    validate = validator(SCHEMAS)
    check(shutil.which("unshare"), "unshare (util-linux) is missing")
    if not os.path.exists("/proc/self/ns/cgroup"):
        skip("this kernel has no cgroup namespaces (CONFIG_CGROUPS namespaces)")

    with ScratchCgroup(mount, "ns") as ns, ScratchCgroup(mount, "ns-hog") as hog:
        p = in_namespace(ns, ["cat", "/proc/self/cgroup", "/proc/1/cgroup"])
        check(p.returncode == 0, f"unshare --cgroup failed: {p.stderr}")
        check("0::/\n" in p.stdout and "0::/.." in p.stdout,
              f"unshare --cgroup did not root a namespace at the scratch cgroup:\n{p.stdout}")

        spin_pids = {hog.spawn([WORKLOAD, "spin", "psidiag-spin"]).pid for _ in range(4)}

        p = in_namespace(ns, [PSIDIAG, "check"])
        lines = [line for line in p.stdout.splitlines() if " cgroupns " in line]
        check(len(lines) == 1, f"no cgroupns line in psidiag check:\n{p.stdout}{p.stderr}")
        check(lines[0].startswith("ok") and f"rooted at /{ns.rel} of the host's cgroup2 mount" in lines[0],
              f"check inside a cgroup namespace: {lines[0]}")

        # The same check from the host's namespace says ok.
        p = subprocess.run([PSIDIAG, "check"], capture_output=True, text=True, timeout=120)
        host = [line for line in p.stdout.splitlines() if " cgroupns " in line]
        check(host and host[0].startswith("ok") and "the host's cgroup namespace" in host[0],
              f"check in the host's namespace: {host}")

        # The namespace's own cgroup2 mount: the tree outside it cannot be seen, check warns.
        mnt = subprocess.run(["findmnt", "-n", "-o", "TARGET", "-t", "cgroup2"], capture_output=True, text=True)
        target = mnt.stdout.split()[0] if mnt.stdout.split() else mount
        p = in_namespace(ns, ["unshare", "--mount", "--", "sh", "-c",
                              f"umount -l {target} && mount -t cgroup2 none {target} && exec {PSIDIAG} check"])
        own = [line for line in p.stdout.splitlines() if " cgroupns " in line]
        check(own and own[0].startswith("warn") and "mount the host's /sys/fs/cgroup" in own[0],
              f"check with the namespace's own mount: {own}\n{p.stderr}")

        p = in_namespace(ns, [PSIDIAG, "snapshot", "--enable-delayacct", "--resource", "cpu", "--sample-ms", "500",
                              "--top", "40"])
        check(p.returncode == 0, f"snapshot in a cgroup namespace failed ({p.returncode}):\n{p.stderr}")
        inc = json.loads(p.stdout)
        validate(inc)
        top = inc["most_delayed"]
        ours = [x for x in top if x["pid"] in spin_pids]
        check(ours, f"no spinner among the {len(top)} most delayed: {[(x['comm'], x['score_us']) for x in top]}")
        for x in ours:
            check(x["cgroup"] == "/" + hog.rel, f"spinner {x['pid']} has cgroup {x['cgroup']!r}, not /{hog.rel}")
        for x in top:
            c = x["cgroup"]
            check(c is None or (c.startswith("/") and not c.startswith("/..")),
                  f"process {x['pid']} ({x['comm']}) has cgroup {c!r}")
        for c in inc["cgroups"]:
            check(not c["path"].startswith("/.."), f"a hot cgroup named {c['path']!r}")
        print(f"check: {lines[0]}\nown mount: {own[0]}\nsnapshot: {len(ours)} spinners of {len(top)} "
              f"processes named /{hog.rel}")

run(main)
