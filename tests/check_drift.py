#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The docs checks catch the drifts they were written for: each drift below, planted in a copy of
the tree, makes its check fail, and the copy without it passes. The drifts are those found between
the docs and the code at 0.7.0 (docs/HACKING.md: Documentation): the CI command without --vm, a
module of agent/ missing from HACKING.md's diagram, a hook HACKING.md describes that WatchHooks
lacks, docs/deploy.md counting 7 verdicts of 8, a verdict missing from docs/incident.md's path,
the synopsis in README.md without --enable-delayacct, the descriptors kept in reserve said without
the recordings', a config key's default or bounds in the man page other than keys.c's,
debian/changelog at another version than meson.build; and those found at 0.12: a
module of a folder missing from HACKING.md's row for it (or one named that is not there),
docs/testing.md or the README saying three VMs of five, a style test and libsqlite3-dev missing
from docs/testing.md; and those scripts/check-tests was written for: a module without its row in
HACKING.md's table of where each module is tested, and a row naming a test or a VM case that
does not exist; and a metric renamed in sinks/metrics.c's table (the one place a metric is
defined) without the docs, or missing from docs/deploy.md's table; and a function grown past 80
lines (scripts/check-sizes).

Usage: check_drift.py ROOT VERSION CONFIG_KEYS_TEST   (ROOT: the source tree; VERSION:
meson.build's project version; CONFIG_KEYS_TEST: the built test-config-keys, which reads the
tree named by PSIDIAG_SOURCE_ROOT). Prints one line per drift and FAIL, or OK."""

import os
import shutil
import subprocess
import sys
import tempfile

# (what, file, text there, text planted, check)
DRIFTS = [
    ("the CI command without --vm", "docs/HACKING.md",
     "--systemd --vm   # what CI runs", "--systemd   # what CI runs", "docs"),
    ("recording missing from the diagram of agent/", "docs/HACKING.md",
     "stall ─► recording ─► sample", "stall ─► sample", "docs"),
    ("a hook WatchHooks does not have", "docs/HACKING.md",
     "`added` (a\nwatch is armed; oomwatch),", "`added` (a\nwatch is armed; oomwatch), `rebound` (a reload kept it),",
     "docs"),
    ("a hook of WatchHooks not described", "docs/HACKING.md",
     "`wakeup`\n(every wakeup", "wakeups\n(every wakeup", "docs"),
    ("7 verdicts of 8", "docs/deploy.md", "`verdict` 8,", "`verdict` 7,", "docs"),
    ("a verdict missing from the path of one incident", "docs/incident.md",
     "`no_growth`, `below_threshold`, `reported`", "`no_growth`, `below_threshold`", "docs"),
    ("the agent's synopsis in README.md without --enable-delayacct", "README.md",
     "psidiag [--config FILE] [--output PATH] [--enable-delayacct] [--log-level LEVEL]",
     "psidiag [--config FILE] [--output PATH] [--log-level LEVEL]", "docs"),
    ("the man page's fd reserve without the recordings", "man/psidiag.8",
     "and 4 oom samples), plus 4 for each watch that may record at once",
     "and 4 oom samples), and nothing for the watches that record", "docs"),
    ("docs/incident.md's fd reserve with too few per recording", "docs/incident.md",
     "and 4 for each watch that may record", "and 2 for each watch that may record", "docs"),
    ("a default in the man page other than keys.c's", "man/psidiag.8",
     "of a sample, 0 to 60000 (default 1000).", "of a sample, 0 to 60000 (default 500).", "config-keys"),
    ("bounds in the man page other than keys.c's", "man/psidiag.8",
     "of a sample, 0 to 60000 (default 1000).", "of a sample, 0 to 6000 (default 1000).", "config-keys"),
    ("debian/changelog at another version", "debian/changelog", "psidiag ({version})", "psidiag ({version}.1)",
     "debian"),
    ("a module of probes/ missing from its row of HACKING.md's folders", "docs/HACKING.md",
     "how long a sleeping thread has slept (`schedclock.c`), ", "", "docs"),
    ("a row of HACKING.md's folders naming a module its folder lacks", "docs/HACKING.md",
     "wchan and kernel stacks (`wchan.c`)", "wchan and kernel stacks (`wchan.c`, `kstack.c`)", "docs"),
    ("docs/testing.md saying --vm boots three VMs", "docs/testing.md",
     "`--vm` also boots the four VM guests below", "`--vm` also boots the three VMs below", "docs"),
    ("README.md saying CI boots three VM guests", "README.md",
     "and four VM\nguests.", "and three VM\nguests.", "docs"),
    ("a style test missing from docs/testing.md", "docs/testing.md",
     "- `sizes`: no C file", "- no C file", "docs"),
    ("libsqlite3-dev missing from docs/testing.md's packages", "docs/testing.md",
     "| `libsqlite3-dev` |", "| libsqlite3 |", "docs"),
    ("a module's row gone from HACKING.md's table of where each module is tested", "docs/HACKING.md",
     "| `base/testhold.c` | `integration-killgaps` |", "| `base/testhold.c.gone` | `integration-killgaps` |", "tests"),
    ("a test of that table that does not exist", "docs/HACKING.md",
     "| `base/testhold.c` | `integration-killgaps` |", "| `base/testhold.c` | `integration-killgap` |", "tests"),
    ("a VM case of that table that does not exist", "docs/HACKING.md",
     "VM case `cpu-hotplug`", "VM case `cpu-hotplugs`", "tests"),
    ("a metric renamed in sinks/metrics.c's table, not in the docs", "sinks/metrics.c",
     '{{ "psidiag_episodes_total", "counter",', '{{ "psidiag_episodes_begun_total", "counter",', "docs"),
    ("a metric missing from docs/deploy.md's table", "docs/deploy.md",
     "| `psidiag_episodes_total` | counter |", "| episodes | counter |", "docs"),
    ("a function grown past 80 lines", "base/text.c",
     "                snprintf(buf, size, \"%lldus\", us);\n",
     "                snprintf(buf, size, \"%lldus\", us);\n" + "        ;\n" * 70, "sizes"),
]


def run(check, tree, version, config_keys):
    argv = {"docs": [sys.executable, os.path.join(tree, "scripts", "check-docs"), tree],
            "debian": [sys.executable, os.path.join(tree, "scripts", "check-debian"), tree, version],
            "tests": [sys.executable, os.path.join(tree, "scripts", "check-tests"), tree],
            "sizes": [sys.executable, os.path.join(tree, "scripts", "check-sizes"), tree],
            "config-keys": [config_keys]}[check]
    env = dict(os.environ, PSIDIAG_SOURCE_ROOT=tree)
    p = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
    return p.returncode, (p.stdout + p.stderr).strip()


def main():
    root, version, config_keys = sys.argv[1:4]
    problems = []
    with tempfile.TemporaryDirectory(prefix="psidiag-drift-") as tmp:
        tree = os.path.join(tmp, "src")
        shutil.copytree(root, tree, symlinks=True,
                        ignore=lambda d, names: [n for n in names if n in (".git", "__pycache__") or
                                                 (d == root and n.startswith("build"))])
        for check in ("docs", "debian", "config-keys", "tests", "sizes"):
            rc, out = run(check, tree, version, config_keys)
            if rc != 0:
                problems.append(f"{check}: fails on the tree as it is, so a drift proves nothing:\n{out}")
        for what, rel, there, planted, check in DRIFTS if not problems else []:
            there, planted = there.format(version=version), planted.format(version=version)
            path = os.path.join(tree, rel)
            with open(path, encoding="utf-8") as f:
                text = f.read()
            if there not in text:
                problems.append(f"{what}: {rel} no longer has {there!r}: update the drift")
                continue
            with open(path, "w", encoding="utf-8") as f:
                f.write(text.replace(there, planted, 1))
            rc, out = run(check, tree, version, config_keys)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            said = next((line.strip() for line in out.split("\n") if rel in line), "")
            print(f"{'caught' if rc != 0 else 'MISSED'} by {check}: {what}{' -- ' + said if said else ''}")
            if rc == 0:
                problems.append(f"{what}: planted in {rel}, {check} still passes")
    for p in problems:
        print(p)
    if problems:
        print(f"FAIL: {len(problems)} drifts not caught")
        return 1
    print(f"OK: each of {len(DRIFTS)} drifts fails its check")
    return 0


if __name__ == "__main__":
    sys.exit(main())
