# SPDX-License-Identifier: MIT
"""A Debian root made by debootstrap from the host's own apt sources, cached outside the clone
(PSIDIAG_TEST_CACHE, /var/cache/psidiag-test) under a name derived from its recipe, so that a
change of recipe or package list builds a new root beside the old one; and a writable overlay of
it, so that the cache is never changed. Shared by the systemd-nspawn containers (nspawn.py:
test_systemd.py, test_package.py) and the QEMU VM (tests/vm/vm.py)."""

import fcntl
import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile

from common import check, skip

CACHE = os.environ.get("PSIDIAG_TEST_CACHE", "/var/cache/psidiag-test")


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


def ensure_root(kind, recipe, packages, log, timeout=1800):
    """The cached root of this kind, recipe and package list, built once with debootstrap (into a
    temporary directory renamed into place when complete, so a failed or concurrent build never
    leaves a half root). Returns its path."""
    codename = os_release("VERSION_CODENAME")
    if not codename:
        skip("no VERSION_CODENAME in /etc/os-release: cannot pick a suite to debootstrap")
    mirror = apt_mirror(codename)
    if not mirror:
        skip(f"no apt source for {codename} in /etc/apt/sources.list*: cannot debootstrap a root")
    arch = sh(["dpkg", "--print-architecture"]).stdout.strip()
    key = json.dumps([recipe, codename, mirror, arch, sorted(packages)]).encode()
    root = os.path.join(CACHE, f"{kind}-root-" + hashlib.sha256(key).hexdigest()[:16])
    os.makedirs(CACHE, exist_ok=True)
    with open(os.path.join(CACHE, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.isdir(root):
            log(f"cached root {root}")
            return root
        tmp = tempfile.mkdtemp(dir=CACHE, prefix=".building-")
        try:
            log(f"debootstrap {codename} from {mirror} into {tmp}")
            p = sh(["debootstrap", "--variant=minbase", "--include=" + ",".join(packages), codename, tmp, mirror],
                   timeout=timeout)
            check(p.returncode == 0, f"debootstrap failed ({p.returncode}):\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
            for deb in glob.glob(os.path.join(tmp, "var/cache/apt/archives/*.deb")):
                os.unlink(deb)
            os.rename(tmp, root)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    log(f"built root {root}")
    return root


class Overlay:
    """A writable overlay of a cached root (its upper and work directories in a scratch directory
    named psidiag-<what>-<pid>-* under /var/tmp), so the cache is never changed."""

    def __init__(self, lower, what):
        self.lower = lower
        self.dir = tempfile.mkdtemp(prefix=f"psidiag-{what}-{os.getpid()}-", dir="/var/tmp")
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


def sweep_overlays(what, alive, log):
    """Overlays and scratch directories an earlier run killed with SIGKILL (no finally) left."""
    for d in glob.glob(f"/var/tmp/psidiag-{what}-*-*"):
        pid = os.path.basename(d).split("-")[2]
        if pid.isdigit() and not alive(pid):
            log(f"removing {d}, left by an earlier run")
            if os.path.ismount(os.path.join(d, "root")):
                sh(["umount", "-l", os.path.join(d, "root")])
            shutil.rmtree(d, ignore_errors=True)


def install_build(build, root):
    """`meson install` of the build into root (DESTDIR), as a user installs it; returns the
    installed paths of the binary, unit, default config and logrotate snippet, inside root."""
    p = sh(["meson", "install", "-C", build, "--destdir", root, "--no-rebuild", "--quiet"], timeout=120)
    check(p.returncode == 0, f"meson install failed: {p.stderr}")
    installed = {}
    for dest in json.loads(sh(["meson", "introspect", build, "--installed"]).stdout).values():
        for k, pat in (("binary", r"/sbin/psidiag$"), ("unit", r"/psidiag\.service$"),
                       ("config", r"/psidiag/config\.json$"), ("logrotate", r"/logrotate\.d/psidiag$")):
            if re.search(pat, dest):
                installed[k] = dest
    check(len(installed) == 4, f"installed files not found: {installed}")
    return installed
