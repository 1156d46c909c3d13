#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""One case of the VM (tests/vm/guest.py), as its own meson test: prints what the guest reported
for it (written by vm-<guest>-boot, tests/vm/vm.py, which runs before every case) and passes, fails or
skips as it did there. A case the VM never reported fails.

argv: RESULTS_DIR CASE"""

import json
import os
import sys

results, case = sys.argv[1:3]
try:
    with open(os.path.join(results, f"{case}.json")) as f:
        r = json.load(f)
except FileNotFoundError:
    print(f"FAIL: no result for {case} in {results}: the guest's vm-<guest>-boot did not run, or not first")
    sys.exit(1)
print(r["log"].rstrip())
print(f"(in the VM: {r['result']} in {r['seconds']} s)")
if r["result"] == "skip":
    sys.exit(77)
sys.exit(0 if r["result"] == "pass" else 1)
