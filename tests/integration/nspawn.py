# SPDX-License-Identifier: MIT
"""systemd booted by systemd-nspawn on a Debian root, for the tests of the installed unit
(test_systemd.py) and of the Debian package (test_package.py): the root (debootstrap from the
host's own apt sources, cached outside the clone and reused), a writable overlay of it, the
container and the sweep of what a killed run left behind."""

import fcntl
import glob
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time

from common import Failed, check, find_mount, rmdir_retry, skip

CACHE = os.environ.get("PSIDIAG_TEST_CACHE", "/var/cache/psidiag-test")
# The scripts that boot containers with this module: a leftover is swept only when the run that
# made it is gone.
USERS = (b"test_systemd.py", b"test_package.py")
# The root's recipe: change it (or the package list) and a new root is built beside the old one.
RECIPE = 1
# The installed binary's shared libraries (libsystemd0 for the journal output's dlopen), systemd
# to boot, procps for the unit's ExecReload=/bin/kill, logrotate to run the shipped snippet, man-db
# so that systemd-analyze verify finds the installed man page the unit's Documentation= names.
PACKAGES = ["systemd", "systemd-sysv", "dbus", "procps", "logrotate", "man-db",
            "libev4", "libnl-3-200", "libnl-genl-3-200", "libjansson4", "libsystemd0"]


def sh(argv, timeout=60, **kw):
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, **kw)


def apt_mirror(codename):
    """The first Debian archive in the host's apt sources that carries `codename` (one-line and
    deb822 formats)."""
    files = sorted(glob.glob("/etc/apt/sources.list") + glob.glob("/etc/apt/sources.list.d/*"))
    for path in files:
        try:
            text = open(path).read()
        except OSError:
            continue
        if path.endswith(".sources"):
            for stanza in re.split(r"\n\s*\n", text):
                fields = dict(re.findall(r"^(\w[\w-]*):\s*(.*)$", stanza, re.M))
                if "deb" in fields.get("Types", "").split() and codename in fields.get("Suites", "").split():
                    return fields["URIs"].split()[0]
        elif path.endswith(".list"):
            for line in text.splitlines():
                m = re.match(r"deb\s+(?:\[[^]]*\]\s+)?(\S+)\s+(\S+)", line.strip())
                if m and m.group(2) == codename:
                    return m.group(1)
    return None


def os_release(key):
    with open("/etc/os-release") as f:
        return dict(re.findall(r'^(\w+)="?([^"\n]*)"?$', f.read(), re.M)).get(key)


def ensure_root(log):
    """The cached Debian root, built once with debootstrap (into a temporary directory renamed
    into place when complete, so a failed or concurrent build never leaves a half root)."""
    codename = os_release("VERSION_CODENAME")
    if not codename:
        skip("no VERSION_CODENAME in /etc/os-release: cannot pick a suite to debootstrap")
    mirror = apt_mirror(codename)
    if not mirror:
        skip(f"no apt source for {codename} in /etc/apt/sources.list*: cannot debootstrap a root")
    arch = sh(["dpkg", "--print-architecture"]).stdout.strip()
    key = json.dumps([RECIPE, codename, mirror, arch, sorted(PACKAGES)]).encode()
    root = os.path.join(CACHE, "nspawn-root-" + hashlib.sha256(key).hexdigest()[:16])
    os.makedirs(CACHE, exist_ok=True)
    with open(os.path.join(CACHE, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.isdir(root):
            log(f"cached root {root}")
            return root
        tmp = tempfile.mkdtemp(dir=CACHE, prefix=".building-")
        try:
            log(f"debootstrap {codename} from {mirror} into {tmp}")
            p = sh(["debootstrap", "--variant=minbase", "--include=" + ",".join(PACKAGES), codename, tmp, mirror],
                   timeout=1800)
            check(p.returncode == 0, f"debootstrap failed ({p.returncode}):\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
            for deb in glob.glob(os.path.join(tmp, "var/cache/apt/archives/*.deb")):
                os.unlink(deb)
            os.rename(tmp, root)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    log(f"built root {root}")
    return root


class Overlay:
    """A writable overlay of the cached root, so the cache is never changed."""

    def __init__(self, lower):
        self.lower = lower
        self.dir = tempfile.mkdtemp(prefix=f"psidiag-nspawn-{os.getpid()}-", dir="/var/tmp")
        self.merged = os.path.join(self.dir, "root")
        for d in ("upper", "work", "root"):
            os.mkdir(os.path.join(self.dir, d))
        self.mounted = False

    def mount(self):
        p = sh(["mount", "-t", "overlay", "overlay", "-o",
                f"lowerdir={self.lower},upperdir={self.dir}/upper,workdir={self.dir}/work", self.merged])
        check(p.returncode == 0, f"overlay mount: {p.stderr}")
        self.mounted = True

    def close(self):
        if self.mounted:
            p = sh(["umount", self.merged])
            if p.returncode != 0:
                sh(["umount", "-l", self.merged])
        shutil.rmtree(self.dir, ignore_errors=True)


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
             f"--directory={self.root}", "--capability=CAP_NET_ADMIN,CAP_SYSLOG,CAP_IPC_LOCK", "--bind-ro=/dev/kmsg",
             "--console=passive"],
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
    for d in glob.glob("/var/tmp/psidiag-nspawn-*-*"):
        pid = os.path.basename(d).split("-")[2]
        if pid.isdigit() and not alive(pid):
            log(f"removing {d}, left by an earlier run")
            if os.path.ismount(os.path.join(d, "root")):
                sh(["umount", "-l", os.path.join(d, "root")])
            shutil.rmtree(d, ignore_errors=True)


def wait_for(what, fn, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = fn()
        if v:
            return v
        time.sleep(0.5)
    raise Failed(f"timed out after {timeout}s waiting for {what}")
