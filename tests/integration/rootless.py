# SPDX-License-Identifier: MIT
"""A rootless podman user, as the tests stage one: the cgroups systemd delegates to a user
(UserCgroups), the podman fixture's containers.json (container "batch"), and the user's own
podman 5 state db.sql as podman writes it and in the hostile states the user can leave it in
(docs/security.md). Shared by test_systemd.py (in the nspawn root and the VM, beside it there),
test_ctrverify.py and test_prekilldb.py."""

import base64
import os
import subprocess
import sys

from common import check, rmdir_retry

HERE = os.path.dirname(os.path.abspath(__file__))
# In a VM guest the fixture sits beside this file (tests/vm/vm.py copies it there).
FIXTURES = next(d for d in (os.path.join(HERE, "fixtures"), os.path.join(HERE, "..", "fixtures")) if os.path.isdir(d))
LISTING = "containers/podman/home/alice/.local/share/containers/storage/overlay-containers/containers.json"
ROOTLESS_ID = "7007ee01a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d"
ROOTLESS_POD_ID = "b0d5" + "0" * 60
# How the user leaves db.sql, and the pod a lookup must name then (None: unsaid, the container
# still named). As podman writes it, and in WAL mode as a writer holding it open leaves it (the
# commit in db.sql-wal alone): named. A view that never ends in place of podman's table, a FIFO for
# its journal, a symlink for it: each hung the agent's one loop before 0.12 (SQLite opened the
# user's path, ran the view, opened the FIFO).
HOSTILE_STATES = (("podman", "pod-podman"), ("wal", "pod-wal"), ("endless-view", None), ("fifo-journal", None),
                  ("symlink", None))


def listing():
    """The fixture's containers.json: container "batch", id ROOTLESS_ID."""
    with open(os.path.join(FIXTURES, LISTING)) as f:
        return f.read()


def user_db(how):
    """The user's own podman 5 state (db.sql), made here with python3's sqlite3: the tables podman
    makes, container batch in pod ROOTLESS_POD_ID named pod-<how>; for "wal" in WAL mode as a
    writer that keeps it open leaves it (the rows in db.sql-wal alone), for "endless-view" with a
    view that never ends where podman's table is: it never yields a row, so a query of it that is
    not stopped runs for ever (one that yielded the id's row would answer at its first). Returns
    {suffix: bytes} of the files."""
    import sqlite3
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "db.sql")
        d = sqlite3.connect(path, isolation_level=None)
        d.execute("CREATE TABLE PodConfig(ID TEXT PRIMARY KEY NOT NULL, Name TEXT UNIQUE NOT NULL, JSON TEXT NOT NULL)")
        if how == "endless-view":
            d.execute(f"CREATE VIEW ContainerConfig(ID, Name, PodID, JSON) AS WITH RECURSIVE r(n) AS (SELECT 1 UNION "
                      f"ALL SELECT n + 1 FROM r) SELECT '{ROOTLESS_ID}', 'batch', '{ROOTLESS_POD_ID}', '{{}}' FROM r "
                      "WHERE n < 0")
        else:
            d.execute("CREATE TABLE ContainerConfig(ID TEXT PRIMARY KEY NOT NULL, Name TEXT UNIQUE NOT NULL, "
                      "PodID TEXT, JSON TEXT NOT NULL)")
            if how == "wal":
                d.execute("PRAGMA journal_mode = WAL")
                d.execute("PRAGMA wal_autocheckpoint = 0")
            d.execute("INSERT INTO ContainerConfig VALUES (?, 'batch', ?, '{}')", (ROOTLESS_ID, ROOTLESS_POD_ID))
            d.execute("INSERT INTO PodConfig VALUES (?, ?, '{}')", (ROOTLESS_POD_ID, "pod-" + how))
        # read while the writer still has it open: its WAL not checkpointed
        files = {suffix: open(path + suffix, "rb").read() for suffix in ("", "-wal") if os.path.exists(path + suffix)}
        d.close()
    return files


def db_files(db):
    """Every file place_db() may leave for the database at db."""
    return [db, db + "-journal", db + "-wal", db + ".other"]


def place_db(how, db, as_user):
    """The state how of HOSTILE_STATES at db (none of db_files(db) there before), written by the
    user: as_user(argv, input) runs argv as them (input: its stdin, text) and fails the test if it
    fails."""
    files = user_db("podman" if how in ("fifo-journal", "symlink") else how)
    for suffix, data in files.items():
        target = db + (".other" if how == "symlink" else suffix)
        as_user(["sh", "-c", 'base64 -d > "$0"', target], base64.b64encode(data).decode())
    if how == "fifo-journal":  # where a commit's journal would be: a reader that opens it blocks
        as_user(["mkfifo", db + "-journal"], None)
    if how == "symlink":
        as_user(["ln", "-s", db + ".other", db], None)


def setpriv(uid, gid=None):
    """The argv prefix that runs a command as uid (and gid, by default uid), with no groups."""
    return ["setpriv", f"--reuid={uid}", f"--regid={uid if gid is None else gid}", "--clear-groups"]


class UserCgroups:
    """/user.slice/user-UID.slice/user@UID.service as systemd makes it (the slices root's, the
    service the user's: service()), and the cgroups the user makes below it and in a delegated one;
    every process put in them killed and every directory made removed on exit, deepest first (the
    slices only if made here)."""

    def __init__(self, mount, uid):
        self.mount, self.uid = mount, uid
        self.made = []  # directories this test made, in the order made
        self.procs = []

    def mkdir(self, rel, user=False):
        path = os.path.join(self.mount, rel)
        if os.path.isdir(path):
            return path
        if user:
            p = subprocess.run(setpriv(self.uid) + ["mkdir", path], capture_output=True, text=True)
            check(p.returncode == 0, f"uid {self.uid} could not mkdir {rel}: {p.stderr}")
        else:
            os.mkdir(path)
        self.made.append(path)
        return path

    def service(self):
        """user@UID.service delegated to the user as systemd does it (Delegate=yes: the directory and
        the files that move processes and enable controllers chowned to them); its path relative to
        the mount."""
        self.mkdir("user.slice")
        self.mkdir(f"user.slice/user-{self.uid}.slice")
        rel = f"user.slice/user-{self.uid}.slice/user@{self.uid}.service"
        path = self.mkdir(rel)
        for p in (path, *(os.path.join(path, f) for f in ("cgroup.procs", "cgroup.subtree_control",
                                                           "cgroup.threads"))):
            os.chown(p, self.uid, self.uid)
        return rel

    def spin(self, rel, argv=("/bin/sh", "-c", "while :; do :; done"), gid=None):
        """argv (a spinner) as the user in the cgroup rel (put there by root: the user could only move
        its own processes between its own cgroups)."""
        procs = os.path.join(self.mount, rel, "cgroup.procs")
        uid, gid = self.uid, self.uid if gid is None else gid

        def enter():
            with open(procs, "w") as f:
                f.write(str(os.getpid()))
            os.setgroups([])
            os.setgid(gid)
            os.setuid(uid)

        p = subprocess.Popen(list(argv), preexec_fn=enter, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        self.procs.append(p)
        return p

    def stop(self, p):
        """One of the processes spin() started, killed and reaped."""
        if p.poll() is None:
            p.kill()
        p.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for p in self.procs:
            self.stop(p)
        for path in reversed(self.made):
            try:
                rmdir_retry(path)
            except OSError as e:
                print(f"warning: could not remove {path}: {e}", file=sys.stderr)
        return False
