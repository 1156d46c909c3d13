#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Least privilege on the real kernel:
- `psidiag check` reports this host one line each and exits 0 exactly when no line fails;
- without CAP_NET_ADMIN it fails the taskstats line and exits 1;
- the agent does its job as an unprivileged user (nobody) holding only CAP_NET_ADMIN, on a cgroup
  delegated to that user: the trigger arms, fires under a cpu hog, and the incident names the
  spinner with its cpu delay."""

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ScratchCgroup, check, check_kernel, launch_agent, read_lines, run, validator  # noqa: E402

PSIDIAG, WORKLOAD, SCHEMAS = sys.argv[1:4]
NOBODY = 65534
LINE = re.compile(r"^(ok|warn|fail) +(\S+) +(.+)$")
ONLY_NET_ADMIN = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
                  "--inh-caps=-all,+net_admin", "--ambient-caps=-all,+net_admin", "--bounding-set=-all,+net_admin"]


def check_lines(argv):
    p = subprocess.run(argv + [PSIDIAG, "check"], capture_output=True, text=True, timeout=30)
    lines = {}
    for l in p.stdout.splitlines():
        m = LINE.match(l)
        check(m, f"check printed a line that is not 'STATUS WHAT TEXT': {l!r}")
        lines[m.group(2)] = (m.group(1), m.group(3))
    return p.returncode, lines, p.stdout


def main():
    mount = check_kernel()
    if not shutil.which("setpriv"):
        print("SKIP: setpriv (util-linux) is missing")
        sys.exit(77)
    validate = validator(SCHEMAS)

    code, lines, out = check_lines([])
    for what in ("psi", "psi-trigger", "cgroup2", "cgroup-v1", "taskstats", "delayacct", "cap-net-admin",
                 "cap-sys-resource", "procfs", "kmsg"):
        check(what in lines, f"check has no {what} line:\n{out}")
    failed = [w for w, (s, _) in lines.items() if s == "fail"]
    check(code == (1 if failed else 0), f"exit {code} with failing lines {failed}:\n{out}")
    check(lines["taskstats"][0] == "ok" and "struct version" in lines["taskstats"][1], out)
    check(lines["cgroup2"][0] == "ok" and mount in lines["cgroup2"][1], out)
    print(out, end="")

    code, lines, out = check_lines(["setpriv", "--inh-caps=-net_admin", "--bounding-set=-net_admin"])
    check(code == 1, f"check without CAP_NET_ADMIN exited {code}:\n{out}")
    check(lines["taskstats"][0] == "fail" and "CAP_NET_ADMIN" in lines["taskstats"][1], out)
    check(lines["cap-net-admin"][0] == "fail", out)

    # The agent as nobody with only CAP_NET_ADMIN, on a cgroup delegated to nobody.
    tmp = tempfile.mkdtemp(prefix="psidiag-it-")
    os.chown(tmp, NOBODY, NOBODY)
    out_path = os.path.join(tmp, "incidents.ndjson")
    err_path = os.path.join(tmp, "agent.log")
    with ScratchCgroup(mount, "priv") as cg:
        os.chown(cg.path, NOBODY, NOBODY)
        for name in os.listdir(cg.path):
            os.chown(os.path.join(cg.path, name), NOBODY, NOBODY)
        agent = launch_agent(PSIDIAG, tmp, "agent", {"output": out_path, "sample_ms": 500, "cooldown_ms": 0,
                                                     "watch": [{"cgroup": cg.rel, "triggers": ["cpu some 50ms 2s"]}]},
                             ["--log-level", "debug"], ONLY_NET_ADMIN).proc
        try:
            time.sleep(0.5)
            check(agent.poll() is None, f"the unprivileged agent exited at start:\n{open(err_path).read()}")
            with open(f"/proc/{agent.pid}/status") as f:
                status = f.read()
            cap = int(re.search(r"CapEff:\s+(\w+)", status).group(1), 16)
            uid = int(re.search(r"Uid:\s+(\d+)", status).group(1))
            check(cap == 1 << 12 and uid == NOBODY, f"the agent runs with uid {uid}, CapEff {cap:#x}")
            spinners = {cg.spawn([WORKLOAD, "spin", "psidiag-spin"]).pid for _ in range(4)}
            deadline = time.time() + 20
            while time.time() < deadline and not read_lines(out_path):
                time.sleep(0.5)
            incidents = read_lines(out_path)
            check(incidents, f"no incident from the unprivileged agent:\n{open(err_path).read()}")
        finally:
            agent.send_signal(signal.SIGTERM)
            code = agent.wait(10)
        check(code == 0, f"exit {code}")
        inc = incidents[0]
        validate(inc)
        top = inc["most_delayed"]
        check(top and top[0]["pid"] in spinners and top[0]["delay_us"]["cpu"] > 0,
              f"the unprivileged agent did not name a spinner: {top}")
        check(top[0]["cmdline"].startswith(WORKLOAD), f"cmdline {top[0]['cmdline']!r}")
        st = os.stat(out_path)
        check(st.st_uid == NOBODY and st.st_mode & 0o777 == 0o640, f"output owner {st.st_uid} mode {oct(st.st_mode)}")
        print(f"as uid {NOBODY} with CapEff {cap:#x}: {len(incidents)} incidents, first names "
              f"{top[0]['comm']} ({top[0]['delay_us']['cpu']} us cpu delay)")
    shutil.rmtree(tmp, ignore_errors=True)


run(main)
