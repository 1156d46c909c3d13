# SPDX-License-Identifier: MIT
"""A rootless container user's hostile podman 5 state does not hang the running agent
(docs/security.md: podman 5's SQLite db.sql): its incidents and systemd-oomd's prekill answers keep
coming within their bounds while it looks the user's db.sql up. A real unprivileged user (useradd,
home under /home) with podman's storage in it (the podman fixture's containers.json: container
"batch") and a cgroup where rootless podman has one made, libpod-<id>.scope below their
user@UID.service (made and chowned to them as systemd delegates it; the scope made by the user),
with a cpu spinner of theirs in it. For each state of rootless.py's HOSTILE_STATES (db.sql as
podman writes it, in WAL mode held open, an endless recursive-CTE view in place of its
ContainerConfig table, a FIFO as its -journal, a symlink to another file), an agent of its own
(as test_prekill.py starts one: its scratch prekill_socket, its metrics file) watches the user's
service for cpu pressure, so each sample looks the container up, while the test calls
io.systemd.oom.Prekill.Notify for the container's scope over and over: every reply within
test_prekill.py's deadline, pressure incidents still written, the container named "batch" in them
with the pod named as podman wrote it, unsaid for the hostile states (the agent's debug log says
why; the latencies and each lookup's time are printed). The user, their home, the cgroups and the
processes are removed on the way out, pass or fail.

argv: PSIDIAG WORKLOAD SCHEMAS"""

import ctypes
import os
import pwd
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import Failed, check, check_kernel, read_lines, run, skip, stop_agent, validator, wait_for  # noqa: E402
from rootless import HOSTILE_STATES, ROOTLESS_ID, UserCgroups, db_files, listing, place_db, setpriv  # noqa: E402
from test_prekill import DEADLINE_S, REPLY_MS, notify, start_agent  # noqa: E402

PSIDIAG, WORKLOAD, SCHEMAS = sys.argv[1:4]
USER = f"psidiag-it-{os.getpid()}"
# Per state: enough of both to span the agent's lookups (the first sample's, its retry a second
# later) several times over; generous deadlines for a slow, busy 2-cpu machine.
INCIDENTS, CALLS, WAIT_S = 3, 30, 50


class Watched:
    """What start_agent() takes for a cgroup: its path relative to the cgroup2 mount."""

    def __init__(self, rel):
        self.rel = rel


class User:
    """A real unprivileged user (useradd --create-home), removed with their home on exit."""

    def __enter__(self):
        p = subprocess.run(["useradd", "--create-home", "--user-group", "--shell", "/usr/sbin/nologin", "--comment",
                            "psidiag integration test", USER], capture_output=True, text=True, timeout=60)
        check(p.returncode == 0, f"useradd {USER}: {p.stderr}")
        pw = pwd.getpwnam(USER)
        self.uid, self.gid, self.home = pw.pw_uid, pw.pw_gid, pw.pw_dir
        return self

    def run(self, argv, stdin=None):
        """argv as the user (stdin: its input, text); fails the test if it fails."""
        p = subprocess.run(setpriv(self.uid, self.gid) + argv, input=stdin, capture_output=True, text=True,
                           timeout=60, cwd="/")
        check(p.returncode == 0, f"{argv} as {USER}: {p.returncode} {p.stderr}")
        return p.stdout

    def __exit__(self, *exc):
        p = subprocess.run(["userdel", "--remove", USER], capture_output=True, text=True, timeout=60)
        if p.returncode != 0:
            print(f"warning: userdel {USER}: {p.stderr.strip()}", file=sys.stderr)
        if os.path.isdir(self.home):
            shutil.rmtree(self.home, ignore_errors=True)
        return False


class Notifier(threading.Thread):
    """systemd-oomd's Notify for cgroup, again and again until stopped: the latencies of the replies;
    failed says why it stopped early (no reply within DEADLINE_S, or not the empty one)."""

    def __init__(self, sock, cgroup):
        super().__init__(daemon=True)
        self.sock, self.cgroup = sock, cgroup
        self.latencies, self.failed = [], None
        self.done = threading.Event()

    def run(self):
        while not self.done.is_set():
            t0 = time.monotonic()
            try:
                r, t = notify(self.sock, self.cgroup)
            except OSError as e:
                self.failed = f"no reply within {DEADLINE_S} s ({time.monotonic() - t0:.1f} s): {e!r}"
                return
            if r != {"parameters": {}}:
                self.failed = f"Notify answered {r}"
                return
            self.latencies.append(t)
            self.done.wait(0.05)  # pacing between calls, as a busy systemd-oomd might

    def stop(self):
        self.done.set()
        self.join(DEADLINE_S * 3)


def pressure(out):
    return [i for i in read_lines(out) if i["type"] == "pressure"]


def one_state(tmp, user, cgs, service, scope, db, how, want, validate):
    """One state of the user's db.sql, with an agent of its own: returns a line of what it measured."""
    for f in db_files(db):
        if os.path.lexists(f):
            os.unlink(f)
    place_db(how, db, user.run)
    agent, sock, out, prom, log = start_agent(tmp, how, Watched(service), "cpu some 50ms 2s")
    spinner = notifier = None
    try:
        spinner = cgs.spin(scope, [os.path.join(tmp, "psidiag-workload"), "spin", "psidiag-batch", "4"], gid=user.gid)
        notifier = Notifier(sock, "/" + scope)
        notifier.start()

        def enough():
            if notifier.failed:
                raise Failed(f"{how}: a Notify failed: {notifier.failed}:\n{open(log).read()[-3000:]}")
            return len(pressure(out)) >= INCIDENTS and len(notifier.latencies) >= CALLS

        wait_for(f"{INCIDENTS} pressure incidents and {CALLS} Notify replies with the user's {how} db.sql", enough,
                 WAIT_S, interval=0.2, alive=(("the agent", agent, log),), log=log)
    finally:
        if notifier:
            notifier.stop()
        code = stop_agent(agent)
        if spinner:
            cgs.stop(spinner)
    text = open(log).read()
    check(code == 0, f"{how}: agent exit {code}:\n{text[-3000:]}")
    check(not notifier.failed, f"{how}: a Notify failed: {notifier.failed}:\n{text[-3000:]}")
    lat = sorted(notifier.latencies)
    check(lat and lat[-1] < DEADLINE_S, f"{how}: the slowest Notify replies took {lat[-3:]} s")
    incidents = read_lines(out)
    for i in incidents:
        validate(i)
    incs = [i for i in incidents if i["type"] == "pressure"]
    check(len(incs) >= INCIDENTS, f"{how}: {len(incs)} pressure incidents:\n{text[-3000:]}")
    for inc in incs:
        metas = [((x.get("meta") or {}).get("container") or {}) for x in inc["most_delayed"]
                 if x.get("cgroup") == "/" + scope]
        check(metas, f"{how}: no process of the container's scope in an incident: {inc['summary']}")
        named = {(m.get("name"), m.get("runtime_pod")) for m in metas}
        check(named == {("batch", want)}, f"{how}: the container's processes are named {named}, not "
              f"{{('batch', {want!r})}}: {inc['summary']}\n{text[-3000:]}")
    # The agent's debug log: each lookup of the pod, how long it took, and why it left it unsaid.
    said = re.findall(rf"^psidiag: debug: podman container {ROOTLESS_ID}: (?:no pod|pod (\S+)) from .*? \((\d+) us\)"
                      r"(?:: (.*))?$", text, re.M)
    check(said, f"{how}: the agent's log says nothing of the pod:\n{text[-3000:]}")
    took = [int(us) for _, us, _ in said]
    for pod, us, why in said:
        print(f"  {how}: lookup {int(us) / 1000:.2f} ms: " + (f"pod {pod}" if pod else f"no pod: {why}"))
    check(max(took) < DEADLINE_S * 1e6, f"{how}: a lookup took {max(took)} us")
    if want:
        check(all(pod == want for pod, _, _ in said), f"{how}: the log names not pod {want}: {said}")
    else:
        check(all(not pod and why for pod, _, why in said),
              f"{how}: the log does not say why the pod is unsaid: {said}")
    return (f"{how}: {len(incs)} pressure incidents, {len(lat)} Notify replies, median "
            f"{lat[len(lat) // 2] * 1000:.2f} ms, max {lat[-1] * 1000:.2f} ms (bound {REPLY_MS} ms, deadline "
            f"{DEADLINE_S * 1000:.0f} ms); {len(took)} lookups, the longest {max(took) / 1000:.2f} ms")


def main():
    mount = check_kernel()
    for tool in ("useradd", "userdel", "setpriv"):
        if not shutil.which(tool):
            skip(f"{tool} is missing")
    try:
        ctypes.CDLL("libsqlite3.so.0")
    except OSError:
        skip("libsqlite3.so.0 is missing: the agent reads no db.sql without it")
    validate = validator(SCHEMAS)
    tmp = tempfile.mkdtemp(prefix="psidiag-it-")
    os.chmod(tmp, 0o755)  # the user runs the workload from here
    shutil.copy(WORKLOAD, os.path.join(tmp, "psidiag-workload"))
    os.chmod(os.path.join(tmp, "psidiag-workload"), 0o755)
    results = []
    try:
        with User() as user, UserCgroups(mount, user.uid) as cgs:
            storage = f"{user.home}/.local/share/containers/storage"
            user.run(["mkdir", "-p", f"{storage}/overlay-containers"])
            user.run(["sh", "-c", 'cat > "$0"', f"{storage}/overlay-containers/containers.json"], listing())
            user.run(["chmod", "0700", user.home, f"{user.home}/.local/share/containers"])
            # rootless podman's scope, where the user's systemd has it made: made by the user
            service = cgs.service()
            cgs.mkdir(f"{service}/user.slice", user=True)
            scope = os.path.relpath(cgs.mkdir(f"{service}/user.slice/libpod-{ROOTLESS_ID}.scope", user=True), mount)
            check(os.stat(os.path.join(mount, scope)).st_uid == user.uid, "the scope is not the user's")
            for how, want in HOSTILE_STATES:
                results.append(one_state(tmp, user, cgs, service, scope, f"{storage}/db.sql", how, want, validate))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for line in results:
        print(line)


def interrupted(signum, _frame):
    raise Failed(f"interrupted by signal {signum} (meson's timeout sends SIGTERM)")


if __name__ == "__main__":
    # The user, their cgroups and processes are removed in main's finally, also on these signals.
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, interrupted)
    run(main)
