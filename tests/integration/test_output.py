#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Failing output on the real kernel, with incidents made by a real cpu hog:
- a full disk (a 64 KiB tmpfs filled up): lines are lost whole, counted, complained about at a
  bounded rate, and writing resumes with a message once there is room; the file holds only whole
  lines (a line the disk took part of was cut off again);
- the output file removed under the agent: recreated at the next incident, no SIGHUP needed;
- /dev/full as the output and a stdout pipe whose reader went away: the agent keeps running,
  counts, says so at most every 10 s, and exits 0 on SIGTERM with the totals."""

import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ScratchCgroup, check, check_kernel, launch_agent, run, stop_agent, validator, wait_for  # noqa: E402

PSIDIAG, WORKLOAD, SCHEMAS = sys.argv[1:4]


def whole_lines(path, validate):
    """Every byte of the file belongs to a whole, valid incident line."""
    with open(path, "rb") as f:
        data = f.read()
    check(not data or data.endswith(b"\n"), f"{path} ends in a partial line: {data[-80:]!r}")
    lines = [json.loads(l) for l in data.split(b"\n") if l]
    for inc in lines:
        validate(inc)
    return lines


def start(tmp, name, config, **kw):
    """The agent of config, its log in TMP/NAME.log."""
    return launch_agent(PSIDIAG, tmp, name, config, ["--log-level", "info"], **kw).proc


def full_disk(mount, tmp, cg, validate):
    disk = os.path.join(tmp, "disk")
    os.mkdir(disk)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k,mode=0755", "psidiag-test", disk], check=True)
    try:
        out = os.path.join(disk, "incidents.ndjson")
        err_path = os.path.join(tmp, "disk.log")
        prom = os.path.join(tmp, "psidiag.prom")
        agent = start(tmp, "disk",
                      {"output": out, "sample_ms": 100, "cooldown_ms": 0, "metrics_file": prom,
                       "watch": [{"cgroup": cg.rel, "triggers": ["cpu some 50ms 2s"]}]})
        try:
            wait_for("a first incident", lambda: os.path.exists(out) and os.path.getsize(out) > 0, 20, log=err_path)

            # The file removed under the agent: the next incident recreates it.
            os.unlink(out)
            wait_for("the removed output recreated", lambda: os.path.exists(out) and os.path.getsize(out) > 0, 20,
                     log=err_path)
            check("was removed or replaced; writing to a new file there" in open(err_path).read(),
                  "recreation not logged")
            first = whole_lines(out, validate)

            # Fill the disk; the file's last page may still take part of a line.
            filler = os.path.join(disk, "filler")
            fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
            try:
                while True:
                    os.write(fd, b"\0" * 512)
            except OSError:
                pass
            finally:
                os.close(fd)
            size_full = os.path.getsize(out)
            wait_for("a complaint about the full disk",
                     lambda: open(err_path).read().count("cannot write incident to") >= 1, 20, log=err_path)
            time.sleep(5)  # more lost incidents, inside the 10 s complaint interval
            log = open(err_path).read()
            check(log.count("cannot write incident to") == 1, f"complaints not rate-limited:\n{log}")
            check("No space left on device" in log, f"the error is not ENOSPC:\n{log}")
            check(os.path.getsize(out) == size_full or os.path.getsize(out) < size_full + 4096,
                  "the file grew on a full disk")
            whole_lines(out, validate)

            # Room again: the next incident is written and the recovery is logged with the count.
            os.unlink(filler)
            wait_for("the recovery after freeing the disk",
                     lambda: "writing incidents to " + out + " again" in open(err_path).read(), 20, log=err_path)
            lines = whole_lines(out, validate)
            check(len(lines) > len(first), "no incident after the disk had room again")
            log = open(err_path).read()
            lost = int(log.split("again (")[1].split(" lost")[0])
            check(lost >= 2, f"only {lost} lost incidents counted over 5 s of full disk")
        finally:
            code = stop_agent(agent)
        check(code == 0, f"exit {code} on SIGTERM")
        log = open(err_path).read()
        totals = [l for l in log.splitlines() if f"{out}: " in l and " written, " in l]
        check(totals, f"no totals at exit:\n{log}")
        written = int(totals[0].split(f"{out}: ")[1].split(" incident")[0])
        lost_total = int(totals[0].split("written, ")[1].split(" lost")[0])
        lines = whole_lines(out, validate)
        # The first file (removed) held lines too, so written counts at least what is left.
        check(written >= len(lines) and lost_total >= lost, f"totals {totals[0]!r}: {len(lines)} lines, {lost} lost")
        # The metrics file agrees with the log's totals (it is rewritten at exit too).
        metrics = dict(l.rsplit(" ", 1) for l in open(prom).read().splitlines() if not l.startswith("#"))
        check(int(metrics[f'psidiag_incidents_written_total{{output="{out}"}}']) == written, f"metrics {metrics}")
        check(int(metrics[f'psidiag_incidents_lost_total{{output="{out}"}}']) == lost_total, f"metrics {metrics}")
        check(int(metrics["psidiag_triggers_armed"]) == 1 and int(metrics["psidiag_samples_total"]) == written + lost_total,
              f"metrics {metrics}")
        check(int(metrics['psidiag_wakeups_total{verdict="sample"}']) == written + lost_total, f"metrics {metrics}")
        print(f"full disk: {len(lines)} lines written whole, {lost} lost and counted")
    finally:
        subprocess.run(["umount", "-l", disk], check=False)
        os.rmdir(disk)


def dev_full_and_closed_pipe(tmp, cg):
    err_full = os.path.join(tmp, "devfull.log")
    err_pipe = os.path.join(tmp, "pipe.log")
    cfg = {"sample_ms": 100, "cooldown_ms": 0, "watch": [{"cgroup": cg.rel, "triggers": ["cpu some 50ms 2s"]}]}
    a1 = start(tmp, "devfull", dict(cfg, output="/dev/full"))
    a2 = start(tmp, "pipe", dict(cfg, output="-"), stdout=subprocess.PIPE)
    a2.stdout.close()  # the reader goes away before anything is written
    try:
        wait_for("a complaint about /dev/full", lambda: "cannot write incident to /dev/full" in open(err_full).read(),
                 20, log=err_full)
        wait_for("a complaint about the closed pipe",
                 lambda: "cannot write incident to stdout" in open(err_pipe).read(), 20, log=err_pipe)
        time.sleep(6)
        check(a1.poll() is None, f"the agent died writing to /dev/full:\n{open(err_full).read()}")
        check(a2.poll() is None, f"the agent died on a closed pipe:\n{open(err_pipe).read()}")
    finally:
        c1, c2 = stop_agent(a1), stop_agent(a2)
    for code, log, what in ((c1, open(err_full).read(), "/dev/full"), (c2, open(err_pipe).read(), "stdout")):
        check(code == 0, f"{what}: exit {code}")
        check(log.count("cannot write incident to") == 1, f"{what}: complaints not rate-limited:\n{log}")
        totals = [l for l in log.splitlines() if f"{what}: 0 incidents written" in l]
        check(totals, f"{what}: no totals at exit:\n{log}")
        lost = int(totals[0].split("written, ")[1].split(" lost")[0])
        check(lost >= 2, f"{what}: {lost} lost")
        print(f"{what}: {lost} incidents lost and counted, one complaint, exit 0")
    check("Broken pipe" in open(err_pipe).read(), "the pipe error is not EPIPE")


def main():
    mount = check_kernel()
    validate = validator(SCHEMAS)
    tmp = tempfile.mkdtemp(prefix="psidiag-it-")
    with ScratchCgroup(mount, "output") as cg:
        for _ in range(4):
            cg.spawn([WORKLOAD, "spin", "psidiag-spin"])
        full_disk(mount, tmp, cg, validate)
        dev_full_and_closed_pipe(tmp, cg)


run(main)
