#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A user's `systemd-run --user --scope --unit=docker-<id>` under a real systemd is not named as
root's container of that id (containers/ctrverify.c). The Debian root of test_systemd.py booted with
systemd-nspawn (a pure cgroup2 system inside, systemd 252 on Debian 12), `meson install` put into
an overlay of it; inside, root's scope docker-<id>.scope in system.slice (made by systemd, as
docker's systemd cgroup driver has it made) with a spinner, and root's
/var/lib/docker/containers/<id>/config.v2.json naming it "web" (State.Pid that spinner); an
unprivileged user (linger on: their user@1000.service delegated by systemd) runs
`systemd-run --user --scope --unit=docker-<id>` with a spinner of their own. `psidiag snapshot` of
each scope: root's named "web", the user's named nothing, meta.container.unverified saying why,
its summary not calling it "web". Everything (the container, its cgroups, the overlay) is removed on the
way out, pass or fail.

argv: BUILD_DIR WORKLOAD"""

import json
import os
import secrets
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import Failed, check, run  # noqa: E402
import debroot  # noqa: E402
from nspawn import Container, Overlay, check_host, ensure_root, sweep_leftovers, wait_for  # noqa: E402

BUILD = os.path.abspath(sys.argv[1]) if __name__ == "__main__" else None
ID = secrets.token_hex(32)
USER, UID = "mallory", 1000
SPIN = "exec /bin/sh -c 'while :; do :; done' </dev/null >/dev/null 2>&1"


def log(msg):
    print(f"[{time.monotonic() - T0:6.1f}s] {msg}", flush=True)


def spinner_in(c, unit, under):
    """The pid (in the container) of the one process of unit, once it runs below the cgroup under;
    the unit's cgroup."""

    def found():
        cg = c.run(["find", f"/sys/fs/cgroup{under}", "-type", "d", "-name", unit], timeout=10).stdout.strip()
        if not cg:
            return None
        cg = cg.splitlines()[0][len("/sys/fs/cgroup"):]
        procs = c.run(["cat", f"/sys/fs/cgroup{cg}/cgroup.procs"], timeout=10).stdout.split()
        return (int(procs[0]), cg) if procs else None

    return wait_for(f"{unit}'s process", found, timeout=30)


def snapshot(c, binary, cg):
    p = c.run([binary, "snapshot", cg, "--resource", "cpu", "--sample-ms", "500", "--top", "3"], timeout=60)
    check(p.returncode == 0, f"snapshot {cg}: {p.returncode}\n{p.stderr[-2000:]}")
    return json.loads(p.stdout)


def container_of(inc, cg):
    procs = [x for x in inc["most_delayed"] if x.get("cgroup") == cg]
    check(procs, f"no process of {cg} in the snapshot: {inc['summary']}")
    return (procs[0].get("meta") or {}).get("container") or {}


def test(c, binary):
    c.ok(["useradd", "--create-home", "--uid", str(UID), "--shell", "/bin/sh", USER])
    # linger: logind starts the user's systemd (user@UID.service, delegated to them) at boot; now
    p = c.run(["loginctl", "enable-linger", USER])
    log(f"loginctl enable-linger: {p.returncode} {p.stderr.strip()[-200:]}")
    p = c.run(["systemctl", "start", f"user@{UID}.service"], timeout=60)
    if p.returncode != 0:
        status = c.run(["systemctl", "status", "--no-pager", f"user@{UID}.service"]).stdout
        journal = c.run(["journalctl", "--no-pager", "-n", "40"]).stdout
        raise Failed(f"user@{UID}.service did not start: {p.stderr}\n{status[-2000:]}\n{journal[-3000:]}")

    # root's scope, as docker's systemd cgroup driver has systemd make it, and docker's file of it
    c.ok(["sh", "-c", f"systemd-run --quiet --scope --unit=docker-{ID} -- /bin/sh -c \"{SPIN}\" "
                      "</dev/null >/dev/null 2>&1 &"])
    pid, root_cg = spinner_in(c, f"docker-{ID}.scope", "/system.slice")
    log(f"root's docker-{ID[:12]}.scope: {root_cg}, pid {pid}")
    config = {"State": {"Running": True, "Pid": pid}, "ID": ID, "Name": "/web",
              "Config": {"Image": "shop/web:3", "Labels": {}}}
    c.ok(["mkdir", "-p", f"/var/lib/docker/containers/{ID}"])
    c.ok(["sh", "-c", f"cat > /var/lib/docker/containers/{ID}/config.v2.json"], input=json.dumps(config))

    # the user's spoof of it, in their own systemd instance
    user_env = f"XDG_RUNTIME_DIR=/run/user/{UID} DBUS_SESSION_BUS_ADDRESS=unix:path=/run/user/{UID}/bus"
    c.ok(["runuser", "-u", USER, "--", "sh", "-c", f"{user_env} systemd-run --user --quiet --scope -- /bin/true"])
    c.ok(["runuser", "-u", USER, "--", "sh", "-c",
          f"{user_env} systemd-run --user --quiet --scope --unit=docker-{ID} -- "
          f"/bin/sh -c \"{SPIN}\" </dev/null >/dev/null 2>&1 &"])
    _, user_cg = spinner_in(c, f"docker-{ID}.scope", f"/user.slice/user-{UID}.slice")
    log(f"the user's docker-{ID[:12]}.scope: {user_cg}")
    check(user_cg.startswith(f"/user.slice/user-{UID}.slice/user@{UID}.service/"), f"not the user's: {user_cg}")
    owner = c.ok(["stat", "-c", "%u", f"/sys/fs/cgroup{user_cg}"]).strip()
    check(owner == str(UID), f"the user's scope is owned by {owner}")

    real = snapshot(c, binary, root_cg)
    named = container_of(real, root_cg)
    log(f"root's: {real['summary']}")
    check(named.get("name") == "web" and named.get("image") == "shop/web:3" and named.get("unverified") is None,
          f"root's scope is not named web: {named}")
    spoof = snapshot(c, binary, user_cg)
    ctr = container_of(spoof, user_cg)
    log(f"the user's: {spoof['summary']}; unverified: {ctr.get('unverified')}")
    check(ctr.get("name") is None and ctr.get("image") is None, f"the user's scope is named: {ctr}")
    check(f"docker's cgroup below user@{UID}.service" in (ctr.get("unverified") or ""),
          f"unverified: {ctr.get('unverified')!r}")
    # (root's real container may be named in it: the culprit next door)
    check("container web" not in spoof["summary"].split(" waited ")[0],
          f"the summary calls the user's process web's: {spoof['summary']}")


def main():
    check_host(("systemd-nspawn", "debootstrap", "nsenter"),
               "scripts/test --systemd installs systemd-container and debootstrap")
    sweep_leftovers(log)
    lower = ensure_root(log)
    overlay = container = None
    try:
        overlay = Overlay(lower)
        overlay.mount()
        installed = debroot.install_build(BUILD, overlay.merged)
        # The root has no libpam-systemd, whose pam_systemd sets XDG_RUNTIME_DIR, without which the
        # user's systemd does not start: set it as pam_systemd would.
        dropin = os.path.join(overlay.merged, "etc/systemd/system/user@.service.d")
        os.makedirs(dropin, exist_ok=True)
        with open(os.path.join(dropin, "psidiag-test.conf"), "w") as f:
            f.write("[Service]\nEnvironment=XDG_RUNTIME_DIR=/run/user/%i\n")
        log("booting the container")
        container = Container(overlay.merged)
        container.boot()
        container.find_leader()
        log(f"container PID 1 is {container.leader}: {container.wait_booted()}")
        test(container, installed["binary"])
    finally:
        if container:
            container.close()
            log("container stopped")
        if overlay:
            overlay.close()


def interrupted(signum, _frame):
    raise Failed(f"interrupted by signal {signum} (meson's timeout sends SIGTERM)")


T0 = time.monotonic()
if __name__ == "__main__":
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, interrupted)
    run(main)
    log("done")
