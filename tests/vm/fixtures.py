#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Writes the kernel files a guest's `fixtures` case printed (tests/vm/guest.py: FIXTURE_FILES)
under tests/fixtures/guests/<guest>/, with its kernel in `kernel`: the fixtures of
tests/unit/test-guest-files.c. Reproducible: boot the guest with that case alone, then run this,

    sudo python3 tests/vm/vm.py build build/tests/psidiag-workload build/tests/vm/sid sid fixtures
    python3 tests/vm/fixtures.py build/tests/vm/sid sid

(or after `meson test -C build --suite vm-<guest>`, whose results hold the case too).

argv: RESULTS_DIR GUEST"""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def main(results, guest):
    with open(os.path.join(results, "fixtures.json")) as f:
        log = json.load(f)["log"]
    line = next((l for l in log.splitlines() if l.startswith("FIXTURES ")), None)
    if not line:
        sys.exit(f"{results}/fixtures.json has no FIXTURES line: the case did not pass")
    data = json.loads(line[len("FIXTURES "):])
    dest = os.path.join(HERE, "..", "fixtures", "guests", guest)
    os.makedirs(dest, exist_ok=True)
    for name, text in data["files"].items():
        with open(os.path.join(dest, name), "w") as f:
            f.write(text)
    with open(os.path.join(dest, "kernel"), "w") as f:
        f.write(data["kernel"] + "\n")
    print(f"{len(data['files'])} files of {guest} ({data['kernel']}) in {os.path.normpath(dest)}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(*sys.argv[1:])
