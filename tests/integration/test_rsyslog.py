#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A real log shipper reads the agent's incidents: Debian's rsyslogd, run by this test in the
foreground with a config of its own (its own pid file and work directory; nothing of a system
rsyslog is touched), loads the shipped dist/logging/rsyslog-psidiag.conf with its paths moved into
a scratch directory. imfile tails the incident file and mmjsonparse parses each line; the parsed
trees rsyslog writes back must equal the incidents, every one of them, including a node-wide one
longer than rsyslog's default 8 KiB message limit."""

import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ScratchCgroup, check, check_kernel, launch_agent, read_lines, run, stop_agent  # noqa: E402

PSIDIAG, WORKLOAD, SCHEMAS = sys.argv[1:4]
SNIPPET = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "dist", "logging",
                       "rsyslog-psidiag.conf")
RSYSLOGD = "/usr/sbin/rsyslogd"
DEFAULT_LIMIT = 8192  # rsyslog's maxMessageSize when nothing sets it


def same(a, b, where="incident"):
    """JSON equality; reals may come back from json-c with other digits."""
    if isinstance(a, float) or isinstance(b, float):
        check(isinstance(a, (int, float)) and isinstance(b, (int, float)) and math.isclose(a, b, rel_tol=1e-9),
              f"{where}: {a!r} became {b!r}")
    elif isinstance(a, dict):
        check(isinstance(b, dict) and set(a) == set(b), f"{where}: keys {sorted(a)} became {sorted(b or {})}")
        for k in a:
            same(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, list):
        check(isinstance(b, list) and len(a) == len(b), f"{where}: {len(a)} items became {b!r:.200}")
        for i, (x, y) in enumerate(zip(a, b)):
            same(x, y, f"{where}[{i}]")
    else:
        check(a == b and type(a) is type(b), f"{where}: {a!r} became {b!r}")


def snippet_for(tmp):
    """The shipped snippet with its /var/log/psidiag paths moved into tmp."""
    text = open(SNIPPET).read()
    check(text.count("/var/log/psidiag/") == 3, "the snippet's paths changed; update this test")
    return text.replace("/var/log/psidiag/", tmp + "/")


def main():
    mount = check_kernel()
    check(os.access(RSYSLOGD, os.X_OK), f"{RSYSLOGD} is missing (scripts/test installs rsyslog)")
    tmp = tempfile.mkdtemp(prefix="psidiag-it-rsyslog-")
    os.mkdir(os.path.join(tmp, "work"))
    with open(os.path.join(tmp, "30-psidiag.conf"), "w") as f:
        f.write(snippet_for(tmp))
    conf = os.path.join(tmp, "rsyslog.conf")
    with open(conf, "w") as f:
        f.write(f'global(workDirectory="{tmp}/work")\n'
                f'include(file="{tmp}/30-psidiag.conf")\n')
    out = os.path.join(tmp, "incidents.ndjson")
    parsed = os.path.join(tmp, "incidents.parsed.ndjson")
    unparsed = os.path.join(tmp, "incidents.unparsed.log")
    rsyslog_log = os.path.join(tmp, "rsyslogd.log")
    agent_log = os.path.join(tmp, "agent.log")
    rsyslog = agent = None

    try:
        p = subprocess.run([RSYSLOGD, "-N1", "-f", conf], capture_output=True, text=True, timeout=60)
        check(p.returncode == 0, f"rsyslogd refuses the config:\n{p.stdout}{p.stderr}")
        with open(rsyslog_log, "w") as err:
            rsyslog = subprocess.Popen([RSYSLOGD, "-n", "-f", conf, "-i", os.path.join(tmp, "rsyslogd.pid")],
                                       stdout=err, stderr=subprocess.STDOUT)

        with ScratchCgroup(mount, "rsyslog") as cg:
            # A node-wide watch with a large top (a long line) and a cgroup watch (a short one).
            agent = launch_agent(PSIDIAG, tmp, "agent", {
                "output": out, "top": 300, "sample_ms": 600, "cooldown_ms": 1000,
                "watch": [{"triggers": ["cpu some 50ms 2s"]},
                          {"cgroup": cg.rel, "triggers": ["cpu some 50ms 2s"], "top": 3}]},
                ["--enable-delayacct"]).proc
            for _ in range(4):
                cg.spawn([WORKLOAD, "spin", "psidiag-spin"])
            # Many small sleepers that wait for cpu behind the spinners: each is one more entry in
            # the node-wide incident, which so grows well past 8 KiB.
            for _ in range(40):
                cg.spawn([WORKLOAD, "sleep", "psidiag-nap"])

            def enough():
                try:
                    lines = open(out, "rb").read().split(b"\n")
                except FileNotFoundError:
                    return False
                big = [x for x in lines if len(x) > DEFAULT_LIMIT and b'"trigger":{"cgroup":null' in x]
                small = [x for x in lines if b'"trigger":{"cgroup":"/' + cg.rel.encode() in x]
                return big and small

            deadline = time.time() + 90
            while time.time() < deadline and not enough():
                check(agent.poll() is None, f"the agent exited:\n{open(agent_log).read()[-3000:]}")
                check(rsyslog.poll() is None, f"rsyslogd exited:\n{open(rsyslog_log).read()[-3000:]}")
                time.sleep(0.5)
            check(enough(), f"no node-wide incident over {DEFAULT_LIMIT} bytes and cgroup incident within 90 s:\n"
                            f"{open(agent_log).read()[-3000:]}")
        code = stop_agent(agent)
        check(code == 0, f"the agent exited with {code}")

        raw = [x for x in open(out, "rb").read().split(b"\n") if x]
        incidents = read_lines(out)
        deadline = time.time() + 60
        while time.time() < deadline and len(read_lines(parsed)) < len(incidents):
            check(rsyslog.poll() is None, f"rsyslogd exited:\n{open(rsyslog_log).read()[-3000:]}")
            time.sleep(0.25)
        shipped = read_lines(parsed)
        if os.path.exists(unparsed):
            check(False, f"rsyslog could not parse lines:\n{open(unparsed).read()[:2000]}")
        check(len(shipped) == len(incidents),
              f"{len(incidents)} incidents written, {len(shipped)} parsed by rsyslog within 60 s:\n"
              f"{open(rsyslog_log).read()[-2000:]}")
        for i, (inc, got) in enumerate(zip(incidents, shipped)):
            same(inc, got, f"incident {i}")
        longest = max(len(x) for x in raw)
        print(f"{len(incidents)} incidents parsed by rsyslog {RSYSLOGD} whole; the longest "
              f"{longest} bytes (default limit {DEFAULT_LIMIT})")
    finally:
        if agent:
            stop_agent(agent)
        if rsyslog and rsyslog.poll() is None:
            rsyslog.send_signal(signal.SIGTERM)
            try:
                rsyslog.wait(15)
            except subprocess.TimeoutExpired:
                rsyslog.kill()
                rsyslog.wait()
        shutil.rmtree(tmp, ignore_errors=True)


run(main)
