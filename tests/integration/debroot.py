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
import tempfile

from common import check, sh, skip

CACHE = os.environ.get("PSIDIAG_TEST_CACHE", "/var/cache/psidiag-test")


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


def ensure_root(kind, recipe, packages, log, timeout=1800, suite=None, steps=()):
    """The cached root of this kind, recipe, suite (the host's own release when None) and package
    list, built once with debootstrap from the mirror the host's apt sources name for the host's
    release (Debian's mirror serves the other suites too; they are never added to the host's
    sources), then finished by steps (see run_steps()). Built into a temporary directory renamed
    into place when complete, so a failed or concurrent build never leaves a half root. Returns its
    path."""
    host = os_release("VERSION_CODENAME")
    if not host:
        skip("no VERSION_CODENAME in /etc/os-release: cannot pick a suite to debootstrap")
    codename = suite or host
    mirror = apt_mirror(host)
    if not mirror:
        skip(f"no apt source for {host} in /etc/apt/sources.list*: cannot debootstrap a root")
    arch = sh(["dpkg", "--print-architecture"]).stdout.strip()
    # The host's own release with no steps keeps the key that roots were cached under before.
    key = json.dumps([recipe, codename, mirror, arch, sorted(packages)] + ([steps] if steps else [])).encode()
    name = f"{kind}-root-" + hashlib.sha256(key).hexdigest()[:16]
    root = os.path.join(CACHE, name)
    os.makedirs(CACHE, exist_ok=True)
    # One lock per root: a root being built holds back only those who want that root.
    with open(os.path.join(CACHE, f".{name}.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.isdir(root):
            log(f"cached root {root}")
            return root
        tmp = tempfile.mkdtemp(dir=CACHE, prefix=".building-")
        try:
            log(f"debootstrap {codename} from {mirror} into {tmp}")
            # debootstrap checks the Release file's signature with gpgv, which ignores Valid-Until:
            # a suite whose Release is past it (sid's, when the clock runs ahead of the mirror)
            # still installs; only apt inside the root would refuse it.
            p = sh(["debootstrap", "--variant=minbase", "--include=" + ",".join(packages), codename, tmp, mirror],
                   timeout=timeout)
            check(p.returncode == 0, f"debootstrap failed ({p.returncode}):\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
            run_steps(tmp, steps, log)
            for deb in glob.glob(os.path.join(tmp, "var/cache/apt/archives/*.deb")):
                os.unlink(deb)
            os.rename(tmp, root)
        finally:
            unmount_below(tmp)
            shutil.rmtree(tmp, ignore_errors=True)
    log(f"built root {root}")
    return root


def run_steps(root, steps, log):
    """A recipe's steps after debootstrap, in order: ["write", PATH, TEXT] writes a file of the
    root; ["chroot", ARGV...] runs a command in it with /proc, /sys and /dev mounted (unmounted
    after, even when it fails)."""
    for step in steps:
        if step[0] == "write":
            path = os.path.join(root, step[1].lstrip("/"))
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(step[2])
            continue
        check(step[0] == "chroot", f"unknown recipe step {step}")
        log(f"in the root: {' '.join(step[1:])}")
        try:
            for opts, what, dest in ((["-t", "proc"], "proc", "proc"), (["-t", "sysfs"], "sysfs", "sys"),
                                     (["--bind"], "/dev", "dev")):
                p = sh(["mount"] + opts + [what, os.path.join(root, dest)])
                check(p.returncode == 0, f"mount {dest} in the root: {p.stderr}")
            p = sh(["chroot", root] + list(step[1:]), timeout=900,
                   env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"})
            check(p.returncode == 0, f"{' '.join(step[1:])} in the root failed ({p.returncode}):\n"
                  f"{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
        finally:
            unmount_below(root)


def unmount_below(root):
    """Unmounts whatever is mounted under root, deepest first (debootstrap's own /proc and /sys
    when it was killed, a step's)."""
    real = os.path.realpath(root)
    with open("/proc/self/mountinfo") as f:
        points = [l.split()[4] for l in f]
    for m in sorted((m for m in points if m.startswith(real + "/")), key=len, reverse=True):
        if sh(["umount", m]).returncode != 0:
            sh(["umount", "-l", m])


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
    installed paths of the binary, unit, default config, logrotate snippet and the prekill hook's
    two examples (an oomd.conf.d drop-in and a tmpfiles line), inside root."""
    p = sh(["meson", "install", "-C", build, "--destdir", root, "--no-rebuild", "--quiet"], timeout=120)
    check(p.returncode == 0, f"meson install failed: {p.stderr}")
    installed = {}
    for dest in json.loads(sh(["meson", "introspect", build, "--installed"]).stdout).values():
        for k, pat in (("binary", r"/sbin/psidiag$"), ("unit", r"/psidiag\.service$"),
                       ("config", r"/psidiag/config\.json$"), ("logrotate", r"/logrotate\.d/psidiag$"),
                       ("oomd_prekill", r"/psidiag/oomd-prekill\.conf$"),
                       ("prekill_tmpfiles", r"/psidiag/psidiag-prekill\.tmpfiles$")):
            if re.search(pat, dest):
                installed[k] = dest
    check(len(installed) == 6, f"installed files not found: {installed}")
    return installed
