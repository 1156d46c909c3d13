#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A user's cgroup that claims a real container's id is not named as it (containers/ctrverify.c), on
the real kernel with the real podman: a rootful container "web" (a spinner) under a cgroup parent
of the test's own; beside it, an unprivileged uid's spinner in cgroups that uid made itself (mkdir
as the user) with the container's id in their names: below
/user.slice/user-<uid>.slice/user@<uid>.service (made and chowned to the uid as systemd delegates
it), user.slice/user@0.service/libpod-<id>.scope, root's systemd instance nested in the user's
(which made psidiag read rootful podman's containers.json for it), and libpod-<id> in a cgroup of
the test's parent chowned to the uid (a delegated subtree outside user@). `psidiag snapshot` of
each: the container's processes named "web" (its init, from podman's pidfile, found in its
cgroup), the user's spinner named nothing, with the reason in
meta.container.unverified, and the summary and `psidiag check` never call it "web". Everything
made is removed even on failure; user.slice and user-<uid>.slice only if the test made them.
Skips when podman or /bin/busybox is missing, or podman cannot run a container here."""

import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ScratchCgroup, check, check_kernel, run, skip, snapshot, validator  # noqa: E402
from ctrutil import Cleanup, build_image, need_podman, podman, run_opts, start as ctr_start  # noqa: E402
from rootless import UserCgroups  # noqa: E402

PSIDIAG, WORKLOAD, SCHEMAS = sys.argv[1:4]
TAG = f"psidiag-it-ident-{os.getpid()}"
IMAGE = f"localhost/{TAG}:1"
WEB = f"web-{os.getpid()}"
# An unprivileged uid of the test's own (no account needed), unlikely to be another test's.
UID = 61000 + os.getpid() % 4000


def processes_in(inc):
    return inc["most_delayed"] + (inc.get("culprits") or {}).get("processes", [])


def main():
    mount = check_kernel()
    need_podman()
    if not shutil.which("setpriv"):
        skip("setpriv is missing (util-linux)")
    validate = validator(SCHEMAS)
    tmp = tempfile.mkdtemp(prefix="psidiag-it-ident-")
    try:
        with ScratchCgroup(mount, "ident") as parent, Cleanup() as done, UserCgroups(mount, UID) as user:
            done.podman_under(parent, IMAGE, WEB)
            build_image(tmp, IMAGE)
            opts = run_opts(parent.rel, IMAGE)
            p = ctr_start(WEB, parent.rel, IMAGE, "while :; do :; done", opts)
            check(p.returncode == 0, f"podman run {WEB}: {p.stderr}")
            cid = podman("inspect", "-f", "{{.Id}}", WEB).stdout.strip()
            check(len(cid) == 64, f"podman inspect: {cid!r}")

            # systemd's layout of a user's instance, delegated to the user
            base = user.service()
            user.mkdir(f"{base}/user.slice", user=True)
            user.mkdir(f"{base}/user.slice/user@0.service", user=True)
            nested = user.mkdir(f"{base}/user.slice/user@0.service/libpod-{cid}.scope", user=True)
            # a cgroup delegated to the user outside user@ (a service's User= with Delegate=yes)
            delegated = user.mkdir(f"{parent.rel}/delegated")
            os.chown(delegated, UID, UID)
            cgroupfs = user.mkdir(f"{parent.rel}/delegated/libpod-{cid}", user=True)
            check(os.stat(nested).st_uid == UID and os.stat(cgroupfs).st_uid == UID,
                  "the user's cgroups are not the user's")
            spoofs = {os.path.relpath(nested, mount): "nested in another systemd instance",
                      os.path.relpath(cgroupfs, mount): f"delegated is owned by uid {UID}, not root"}
            for rel in spoofs:
                user.spin(rel)

            real = snapshot(PSIDIAG, parent.rel, "--resource", "cpu", "--sample-ms", "500", "--top", "5")
            validate(real)
            own = f"/{parent.rel}/libpod-{cid}"
            named = [((x.get("meta") or {}).get("container") or {}) for x in processes_in(real)
                     if x.get("cgroup") == own or (x.get("cgroup") or "").startswith(own + "/")]
            check(named and all(c.get("name") == WEB and c.get("unverified") is None for c in named),
                  f"the real container's processes are not named {WEB}: {named}\n{real['summary']}")
            print(f"  real: {real['summary']}")
            for rel, why in spoofs.items():
                inc = snapshot(PSIDIAG, rel, "--resource", "cpu", "--sample-ms", "500", "--top", "3")
                validate(inc)
                mine = [x for x in processes_in(inc) if x.get("uid") == UID and x.get("cgroup") == "/" + rel]
                check(mine, f"{rel}: the user's spinner is not in the snapshot: {inc['summary']}")
                for x in mine:
                    c = (x.get("meta") or {}).get("container") or {}
                    check(c.get("name") is None and c.get("image") is None,
                          f"{rel}: the user's spinner is named as a container: {c}")
                    check(why in (c.get("unverified") or ""), f"{rel}: unverified {c.get('unverified')!r}, not {why!r}")
                # The real container may be named as the culprit of the spinner's wait (it spins
                # beside it); the stalled subject, before " waited ", must not be.
                subject = inc["summary"].split(" waited ", 1)[0]
                check(WEB not in subject, f"{rel}: the summary names the spinner {WEB}: {inc['summary']}")
                print(f"  spoof {rel.split('/', 3)[-1][:40]}...: {mine[0]['meta']['container']['unverified']}")
            p = subprocess.run([PSIDIAG, "check"], capture_output=True, text=True, timeout=120)
            line = next((l for l in p.stdout.splitlines() if l.split()[1:2] == ["container-names"]), "")
            print(f"  check: {line}")
            check("claiming a container's id not its runtime's, named nothing" in line,
                  f"psidiag check does not count the user's cgroups apart: {line!r}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    run(main)
