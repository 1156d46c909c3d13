#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""`meson install` into a scratch DESTDIR: the binary, the man page, the hardened unit (its
ExecStart pointing at the installed binary and config), the sysctl that switches on delay
accounting, the default config (which validates), the logrotate snippet and the Prometheus rules. The unit is judged
by systemd-analyze security (offline, at most 2.9: 2.5 before psidiag 0.9 allowed
sched_setaffinity(), which the offline rating counts as all of @resources, and 2.7 before 0.12 read
rootless podman's storage in users' homes, ProtectHome=read-only and CAP_DAC_READ_SEARCH) when
systemd-analyze is there; test_systemd.py runs it under systemd (at most 2.7)."""

import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import check, run  # noqa: E402

BUILD = sys.argv[1]
SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def main():
    dest = tempfile.mkdtemp(prefix="psidiag-install-")
    try:
        p = subprocess.run(["meson", "install", "-C", BUILD, "--destdir", dest, "--no-rebuild", "--quiet"],
                           capture_output=True, text=True, timeout=120)
        check(p.returncode == 0, f"meson install failed: {p.stderr}")
        files = {os.path.relpath(os.path.join(d, f), dest) for d, _, fs in os.walk(dest) for f in fs}
        print("\n".join(sorted(files)))

        def one(pattern):
            hits = [f for f in files if re.search(pattern, f)]
            check(len(hits) == 1, f"expected one file matching {pattern}, got {hits}")
            return os.path.join(dest, hits[0]), "/" + hits[0]

        binary, binary_path = one(r"sbin/psidiag$")
        one(r"man8/psidiag\.8$")
        unit, _ = one(r"system/psidiag\.service$")
        sysctl, sysctl_path = one(r"sysctl\.d/50-psidiag\.conf$")
        config, config_path = one(r"psidiag/config\.json$")
        logrotate, _ = one(r"logrotate\.d/psidiag$")
        rules, _ = one(r"share/psidiag/psidiag\.rules\.yml$")
        dropin, _ = one(r"share/psidiag/oomd-prekill\.conf$")
        tmpfiles, _ = one(r"share/psidiag/psidiag-prekill\.tmpfiles$")
        check("[OOM]\nPrekillHookTimeoutSec=" in open(dropin).read(), "the oomd.conf drop-in")
        check("d /run/systemd/oomd.prekill.hook " in open(tmpfiles).read(), "the tmpfiles example")

        text = open(unit).read()
        check(f"ExecStart={binary_path} --config {config_path}\n" in text, f"ExecStart does not match:\n{text}")
        check(sysctl_path in text, "the unit does not name the installed sysctl file")
        for line in ("CapabilityBoundingSet=CAP_DAC_READ_SEARCH CAP_NET_ADMIN", "ProtectHome=read-only", "NoNewPrivileges=yes", "ProtectSystem=strict",
                     "ReadWritePaths=/sys/fs/cgroup", "ReadWritePaths=-/run/systemd/oomd.prekill.hook", "LogsDirectory=psidiag", "OOMScoreAdjust=-900", "MemoryMin=",
                     "SystemCallFilter=@system-service", "SystemCallErrorNumber=EPERM", "ProtectKernelTunables=yes",
                     "IPAddressDeny=any"):
            check(line in text, f"the unit lacks {line}")
        check(not re.search(r"@[A-Z_]+@", re.sub(r"#.*", "", text)), "an unsubstituted @VAR@ is left in the unit")
        check("kernel.task_delayacct = 1" in open(sysctl).read(), "sysctl file")
        check("create 0640" in open(logrotate).read() and "/var/log/psidiag/incidents.ndjson" in open(logrotate).read(),
              "logrotate snippet")

        check(open(rules).read() == open(os.path.join(SOURCE, "dist/prometheus/psidiag.rules.yml")).read(),
              "the installed Prometheus rules differ from dist/prometheus/psidiag.rules.yml")

        p = subprocess.run([binary, "validate", config], capture_output=True, text=True, timeout=30)
        check(p.returncode == 0, f"the installed config does not validate: {p.stderr}")
        check("/var/log/psidiag/incidents.ndjson" in p.stdout, f"default output: {p.stdout}")

        if shutil.which("systemd-analyze"):
            p = subprocess.run(["systemd-analyze", "security", "--offline=true", f"--root={dest}", "--threshold=29",
                                unit], capture_output=True, text=True, timeout=60)
            score = re.search(r"Overall exposure level for psidiag.service: ([\d.]+)", p.stdout)
            check(p.returncode == 0 and score, f"systemd-analyze security: {p.returncode}\n{p.stdout[-2000:]}")
            print(f"systemd-analyze security: exposure {score.group(1)} (threshold 2.9)")
        else:
            print("systemd-analyze is not installed: the unit's exposure was not judged")
    finally:
        shutil.rmtree(dest, ignore_errors=True)


run(main)
