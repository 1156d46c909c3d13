#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Every C source and header of the tree is as clang-format (the house style, .clang-format) would
write it. On a failure it names the files; `clang-format -i FILE` fixes them."""

import os
import subprocess
import sys

CLANG_FORMAT, ROOT = sys.argv[1:3]
SKIP_DIRS = {".git", "__pycache__"}


def sources():
    for top, dirs, files in os.walk(ROOT):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("build"))
        for f in sorted(files):
            if f.endswith((".c", ".h")):
                yield os.path.join(top, f)


def main():
    files = list(sources())
    if not files:
        print(f"FAIL: no sources under {ROOT}")
        return 1
    bad = []
    for path in files:
        p = subprocess.run([CLANG_FORMAT, "--dry-run", "--Werror", path], capture_output=True, text=True)
        if p.returncode != 0:
            bad.append((os.path.relpath(path, ROOT), p.stderr.count("error:")))
    if bad:
        for path, n in bad:
            print(f"{path}: {n} places differ from clang-format")
        print(f"FAIL: {len(bad)} of {len(files)} files are not formatted")
        return 1
    print(f"{len(files)} files formatted as .clang-format says")
    return 0


sys.exit(main())
