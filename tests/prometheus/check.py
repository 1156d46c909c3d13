#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""dist/prometheus/psidiag.rules.yml: `promtool check rules` (syntax, PromQL) and `promtool test
rules` on tests/prometheus/psidiag.rules.test.yml (each alert on input series, firing and not)."""

import os
import shutil
import subprocess
import sys

root = sys.argv[1]
promtool = shutil.which("promtool")
if not promtool:
    print("FAIL: promtool is missing (Debian's prometheus package; scripts/test installs it)")
    sys.exit(1)
rules = os.path.join(root, "dist", "prometheus", "psidiag.rules.yml")
for argv, cwd in (([promtool, "check", "rules", rules], root),
                  ([promtool, "test", "rules", "psidiag.rules.test.yml"], os.path.join(root, "tests", "prometheus"))):
    p = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=120)
    print(p.stdout + p.stderr)
    if p.returncode != 0:
        print(f"FAIL: {' '.join(argv[1:])} exited {p.returncode}")
        sys.exit(1)
print("PASS")
