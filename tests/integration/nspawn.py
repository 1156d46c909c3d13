# SPDX-License-Identifier: MIT
"""systemd booted by systemd-nspawn on a Debian root, for the tests of the installed unit
(test_systemd.py) and of the Debian package (test_package.py): the root (debootstrap from the
host's own apt sources, cached outside the clone and reused), a writable overlay of it, the
container and the sweep of what a killed run left behind. The root and its overlay are
debroot.py's, which the VM (tests/vm) shares."""

import glob
import os
import shutil
import signal
import subprocess
import time

from common import Failed, check, find_mount, rmdir_retry, skip, wait_for  # noqa: F401 (wait_for: for its tests)
import debroot
from common import sh  # noqa: F401 (the tests that use this module run commands with it)

# The scripts that boot containers with this module: a leftover is swept only when the run that
# made it is gone.
USERS = (b"test_systemd.py", b"test_package.py", b"test_ctrspoof.py")
# The root's recipe: change it (or the package list) and a new root is built beside the old one.
RECIPE = 1
# The installed binary's shared libraries (libsystemd0 for the journal output's dlopen), systemd
# to boot, procps for the unit's ExecReload=/bin/kill, logrotate to run the shipped snippet, man-db
# so that systemd-analyze verify finds the installed man page the unit's Documentation= names;
# libsqlite3-0, which the package suggests and a node with podman 5 has (podman depends on it), so
# that the rootless user's db.sql is read in the unit's sandbox.
PACKAGES = ["systemd", "systemd-sysv", "dbus", "procps", "logrotate", "man-db",
            "libev4", "libnl-3-200", "libnl-genl-3-200", "libjansson4", "libsystemd0", "libsqlite3-0"]


def check_host(tools, install_hint):
    """Exits 77 (skip) with the reason unless this host can boot the root: root, PSI, cgroup2 and
    every one of tools on PATH (install_hint says how to get them)."""
    if os.geteuid() != 0:
        skip("needs root (debootstrap, overlay mounts, systemd-nspawn)")
    if not os.path.exists("/proc/pressure/cpu"):
        skip("the kernel has no PSI")
    if not find_mount("cgroup2"):
        skip("no cgroup2 mount")
    for tool in tools:
        if not shutil.which(tool):
            skip(f"{tool} is not installed ({install_hint})")


def ensure_root(log):
    """The cached Debian root of the containers (debroot.py builds it once)."""
    return debroot.ensure_root("nspawn", RECIPE, PACKAGES, log)


class Overlay(debroot.Overlay):
    """A writable overlay of the cached root, so the cache is never changed."""

    def __init__(self, lower):
        super().__init__(lower, "nspawn")


class Container:
    """systemd booted by systemd-nspawn in cgroups of its own; commands run in its namespaces
    through nsenter (with --register=no there is no machined to reach it through)."""

    def __init__(self, root):
        self.root = root
        self.name = f"psidiag-test-{os.getpid()}"
        self.cgroups = []
        self.proc = None
        self.leader = None
        self.log = open(os.path.join(os.path.dirname(root), "nspawn.log"), "w+")

    def boot(self):
        for mount in (find_mount("cgroup2"), find_mount("cgroup", "name=systemd")):
            if mount:
                path = os.path.join(mount, self.name)
                os.mkdir(path)
                self.cgroups.append(path)
        cgroups = self.cgroups

        def enter():
            for cg in cgroups:
                with open(os.path.join(cg, "cgroup.procs"), "w") as f:
                    f.write("0")

        self.proc = subprocess.Popen(
            ["systemd-nspawn", "--quiet", "--boot", "--register=no", "--keep-unit", f"--machine={self.name}",
             f"--directory={self.root}", "--capability=CAP_NET_ADMIN,CAP_SYSLOG,CAP_IPC_LOCK,CAP_PERFMON",
             # perf sampling (stacks): nspawn's own filter refuses perf_event_open otherwise.
             "--system-call-filter=perf_event_open", "--bind-ro=/dev/kmsg", "--console=passive"],
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT, preexec_fn=enter,
            # A pure cgroup2 system inside, as Debian 12 boots by default, also on a hybrid host.
            # (/proc/sys stays read-only in it and systemd-sysctl does not run: no host sysctl moves.)
            env=dict(os.environ, SYSTEMD_NSPAWN_UNIFIED_HIERARCHY="1"))

    def find_leader(self, timeout=30):
        deadline = time.time() + timeout
        while time.time() < deadline:
            check(self.proc.poll() is None, f"systemd-nspawn exited {self.proc.returncode}:\n{self.output()}")
            for status in glob.glob("/proc/[0-9]*/status"):
                try:
                    fields = dict(l.split(":", 1) for l in open(status) if ":" in l)
                except OSError:
                    continue
                nspid = fields.get("NSpid", "").split()
                if int(fields.get("PPid", 0)) == self.proc.pid and len(nspid) == 2 and nspid[1] == "1":
                    self.leader = int(nspid[0])
                    return
            time.sleep(0.1)
        raise Failed("no container PID 1 appeared")

    def output(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read()[-4000:]

    def run(self, argv, timeout=60, input=None):
        env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8", "SYSTEMD_PAGER": "", "TERM": "dumb"}
        return subprocess.run(["nsenter", f"--target={self.leader}", "--mount", "--uts", "--ipc", "--net", "--pid",
                               "--cgroup", "--root", "--wd", "--", "env", "-i"] + [f"{k}={v}" for k, v in env.items()]
                              + argv, capture_output=True, text=True, timeout=timeout, input=input)

    def ok(self, argv, timeout=60, input=None):
        p = self.run(argv, timeout=timeout, input=input)
        check(p.returncode == 0, f"{' '.join(argv)} exited {p.returncode}:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
        return p.stdout

    def wait_booted(self, timeout=60):
        deadline = time.time() + timeout
        state = ""
        while time.time() < deadline:
            check(self.proc.poll() is None, f"systemd-nspawn exited {self.proc.returncode}:\n{self.output()}")
            state = self.run(["systemctl", "is-system-running"], timeout=10).stdout.strip()
            if state in ("running", "degraded"):
                return state
            time.sleep(0.2)
        raise Failed(f"the container did not finish booting (state {state!r}):\n{self.output()}")

    def close(self):
        if self.proc and self.proc.poll() is None:
            # systemd-nspawn turns SIGTERM into the container's clean shutdown.
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=30)
        for cg in self.cgroups:
            remove_cgroup_tree(cg)
        self.log.close()


def remove_cgroup_tree(path):
    """Kills whatever is left in the cgroup subtree and removes it, deepest first."""
    if not os.path.isdir(path):
        return
    for d, _, _ in sorted(os.walk(path), key=lambda w: -w[0].count("/")):
        try:
            for pid in open(os.path.join(d, "cgroup.procs")).read().split():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except ProcessLookupError:
                    pass
        except OSError:
            pass
    for d, _, _ in sorted(os.walk(path), key=lambda w: -w[0].count("/")):
        rmdir_retry(d, timeout=10)


def alive(pid):
    """Whether pid is a run of a test that uses this module still going."""
    try:
        cmdline = open(f"/proc/{pid}/cmdline", "rb").read()
        return any(name in cmdline for name in USERS)
    except OSError:
        return False


def sweep_leftovers(log):
    """What an earlier run killed with SIGKILL (no finally) left behind: its container's cgroups
    (and whatever still runs in them), its overlay mount and scratch directory."""
    for mount in (find_mount("cgroup2"), find_mount("cgroup", "name=systemd")):
        for cg in glob.glob(os.path.join(mount or "/nonexistent", "psidiag-test-*")):
            pid = cg.rsplit("-", 1)[1]
            if pid.isdigit() and not alive(pid):
                log(f"removing {cg}, left by an earlier run")
                remove_cgroup_tree(cg)
    debroot.sweep_overlays("nspawn", alive, log)

