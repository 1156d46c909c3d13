#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The "journal" output on the real kernel, received on a journal socket of our own: a cpu hog in
a scratch cgroup makes the agent send an entry with a one-line MESSAGE, the pressure MESSAGE_ID,
PRIORITY 4 and the whole incident in PSIDIAG_INCIDENT (valid against the schema). This host runs
no journald; where one runs, the test skips rather than take over its socket."""

import array
import json
import os
import re
import signal
import socket
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ScratchCgroup, check, check_kernel, launch_agent, run, skip, validator  # noqa: E402

PSIDIAG, WORKLOAD, SCHEMAS = sys.argv[1:4]
SOCKET = "/run/systemd/journal/socket"
PRESSURE_ID = "4199463274cb4675aec11f7d33e6b6d9"


def parse_native(data):
    """journald's native protocol: KEY=VALUE\\n, or KEY\\n<le64 size><bytes>\\n for binary values."""
    fields, i = {}, 0
    while i < len(data):
        nl = data.index(b"\n", i)
        line = data[i:nl]
        if b"=" in line:
            k, v = line.split(b"=", 1)
            fields[k.decode()] = v
            i = nl + 1
        else:
            size = struct.unpack_from("<Q", data, nl + 1)[0]
            fields[line.decode()] = data[nl + 9:nl + 9 + size]
            i = nl + 9 + size + 1
    return fields


def receive(sock, timeout):
    sock.settimeout(timeout)
    data, anc, _, _ = sock.recvmsg(1 << 20, socket.CMSG_SPACE(4))
    for level, kind, payload in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fd = array.array("i", payload[:4])[0]  # large entries come in a sealed memfd
            with os.fdopen(fd, "rb") as f:
                data = f.read()
    return parse_native(data)


def main():
    mount = check_kernel()
    if os.path.exists(SOCKET):
        skip(f"{SOCKET} exists (a journald runs here); not taking over its socket")
    p = subprocess.run([PSIDIAG, "validate", "/dev/stdin"], input='{"output": "journal", "watch": '
                       '[{"triggers": ["cpu some 1s 2s"]}]}', capture_output=True, text=True)
    if p.returncode != 0 and "without journald support" in p.stderr:
        skip("this psidiag was built without libsystemd (-Djournal)")
    validate = validator(SCHEMAS)
    created = [d for d in ("/run/systemd", "/run/systemd/journal") if not os.path.isdir(d)]
    for d in created:
        os.mkdir(d, 0o755)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        sock.bind(SOCKET)
        tmp = tempfile.mkdtemp(prefix="psidiag-it-")
        with ScratchCgroup(mount, "journal") as cg:
            a = launch_agent(PSIDIAG, tmp, "journal", {
                "output": "journal", "sample_ms": 300, "cooldown_ms": 0,
                "watch": [{"cgroup": cg.rel, "triggers": ["cpu some 50ms 2s"]}]})
            agent, err_path = a.proc, a.log
            try:
                for _ in range(4):
                    cg.spawn([WORKLOAD, "spin", "psidiag-spin"])
                try:
                    entry = receive(sock, 20)
                except socket.timeout:
                    check(False, f"no journal entry within 20 s:\n{open(err_path).read()}")
            finally:
                agent.send_signal(signal.SIGTERM)
                code = agent.wait(10)
            check(code == 0, f"exit {code}")
        message = entry["MESSAGE"].decode()
        inc = json.loads(entry["PSIDIAG_INCIDENT"])
        check(message == inc["summary"] and message.startswith(f"psidiag-spin (/{cg.rel}) waited "),
              f"MESSAGE is not the incident's summary: {message!r}")
        check(entry["MESSAGE_ID"].decode() == PRESSURE_ID, f"MESSAGE_ID {entry['MESSAGE_ID']}")
        check(entry["PRIORITY"] == b"4" and entry["SYSLOG_IDENTIFIER"] == b"psidiag", f"{entry.keys()}")
        inc = json.loads(entry["PSIDIAG_INCIDENT"])
        validate(inc)
        check(entry["PSIDIAG_INCIDENT_ID"].decode() == inc["id"] and entry["PSIDIAG_TYPE"] == b"pressure", "ids")
        check(re.search(r"journal: [1-9]\d* incidents? written, 0 lost", open(err_path).read()),
              f"no totals for the journal output:\n{open(err_path).read()}")
        print(f"journal entry: {message}")
    finally:
        sock.close()
        if os.path.exists(SOCKET):
            os.unlink(SOCKET)
        for d in reversed(created):
            os.rmdir(d)


run(main)
