# SPDX-License-Identifier: MIT
"""The real container runtimes for the integration tests and the VM's (tests/vm/containers.py): a
busybox rootfs and images made of it offline, the podman run options that work on this host (crun,
or runc on hybrid hosts), containers under a cgroup parent of the test's own, what podman's
cgroupfs driver leaves in the v1 hierarchies, and the one teardown of all they started (Cleanup)."""

import os
import shutil
import subprocess
import sys
import time

from common import rmdir_retry, sh, skip

# crun refuses hybrid hosts ("cgroups in hybrid mode not supported"); runc runs there. The default
# RLIMIT_NOFILE and RLIMIT_NPROC podman asks for may be above our hard limits.
LIMITS = ["--ulimit", "nofile=1024:1024", "--ulimit", "nproc=4096:4096"]
RUN_OPTS = [LIMITS, ["--runtime", "runc", *LIMITS]]


def podman(*args, timeout=120):
    return sh(["podman", *args], timeout)


def need_podman():
    """Skips without podman or /bin/busybox (what the image is made of)."""
    if not shutil.which("podman"):
        skip("podman is not installed (apt-get install podman)")
    if not os.path.exists("/bin/busybox"):
        skip("/bin/busybox is missing (apt-get install busybox-static): the test image is made of it")


def rootfs(tmp, extra=()):
    """A busybox rootfs in tmp (with extra files: (host path, path in the rootfs)); its path."""
    root = os.path.join(tmp, "rootfs")
    os.makedirs(os.path.join(root, "bin"), exist_ok=True)
    shutil.copy("/bin/busybox", os.path.join(root, "bin", "busybox"))
    for applet in ("sh", "yes", "sleep", "true", "cat", "ls"):
        os.symlink("busybox", os.path.join(root, "bin", applet))
    for d in ("proc", "sys", "dev", "etc", "tmp", "run", "var/log"):
        os.makedirs(os.path.join(root, d), exist_ok=True)
    for src, dst in extra:
        path = os.path.join(root, dst.lstrip("/"))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        shutil.copy(src, path)
    return root


def tarball(root):
    """root as a tar file beside it (what `docker import`, `podman import` take); its path."""
    tar = root + ".tar"
    subprocess.run(["tar", "-C", root, "-cf", tar, "."], check=True)
    return tar


def build_image(tmp, image):
    """A busybox rootfs as the image named image, offline."""
    p = podman("import", tarball(rootfs(tmp)), image)
    if p.returncode != 0:
        skip(f"podman import failed: {p.stderr.strip()[-300:]}")


class Cleanup:
    """What a test started with the runtimes, undone at its end, last first, even when the test
    failed: each step runs whatever the others did, and a step that fails is printed, never raised
    (it would hide the test's own failure). Use as a context manager, or call run()."""

    def __init__(self):
        self.steps = []

    def add(self, what, fn, *args, **kw):
        self.steps.append((what, lambda: fn(*args, **kw)))

    def run(self):
        while self.steps:
            what, fn = self.steps.pop()
            try:
                fn()
            except Exception as e:  # noqa: BLE001: a teardown step's failure is printed, the rest runs
                print(f"  teardown: {what}: {e!r}")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.run()
        return False

    def docker(self, *names):
        self.add(f"docker rm {' '.join(names)}", sh, ["docker", "rm", "-f", *names], 120)

    def podman(self, *names, opts=(), user=None):
        """Containers of podman (opts: its global options, --cgroup-manager; user: a rootless one's
        argv prefix, runuser ...)."""
        self.add(f"podman rm {' '.join(names)}", sh, [*(user or []), "podman", *opts, "rm", "-f", "-t", "0", *names], 120)

    def podman_under(self, parent, image, *names):
        """What a test's podman containers under its scratch cgroup parent leave: the containers
        names, then the image, then the tasks left in parent, then the parents podman's cgroupfs
        driver made in the v1 hierarchies (v1_cleanup), undone in that order."""
        self.add("the v1 hierarchies' parents", v1_cleanup, parent.rel)
        self.add("the scratch cgroup's tasks", parent.kill_all)
        self.image("podman", image)
        self.podman(*names)

    def image(self, tool, image, user=None):
        self.add(f"{tool} rmi {image}", sh, [*(user or []), tool, "rmi", "-f", image], 120)

    def ctr(self, namespace, *ids):
        """containerd containers made with ctr: their tasks killed, then removed (a task is deleted
        only once its shim saw it exit: retried a while)."""
        self.add(f"ctr -n {namespace} rm {' '.join(ids)}", ctr_remove, namespace, ids)

    def cri_pod(self, pod):
        """A pod made through the CRI (tests/vm/cri.py): stopped, then removed."""
        self.add(f"pod {pod.namespace}/{pod.name}", pod.remove)


def ctr_remove(namespace, ids, timeout=20):
    for cid in ids:
        sh(["ctr", "-n", namespace, "tasks", "kill", "-s", "SIGKILL", cid], 120)
    for cid in ids:
        deadline = time.time() + timeout
        while time.time() < deadline:
            sh(["ctr", "-n", namespace, "tasks", "rm", "-f", cid], 120)
            p = sh(["ctr", "-n", namespace, "containers", "rm", cid], 120)
            if p.returncode == 0 or "not found" in p.stderr:
                break
            time.sleep(0.5)


def start(name, parent, image, script, opts):
    return podman("run", "-d", *opts, "--name", name, "--cgroup-parent", "/" + parent, "--network", "none", image,
                  "/bin/sh", "-c", script)


def run_opts(parent, image):
    """The options of RUN_OPTS with which a container runs here (one that exits at once is run to
    find out); skips, with podman's reason, when none does."""
    why = ""
    for o in RUN_OPTS:
        p = podman("run", "--rm", *o, "--cgroup-parent", "/" + parent, "--network", "none", image, "/bin/true")
        if p.returncode == 0:
            return o
        why = p.stderr.strip()[-300:]
    skip(f"podman cannot run a container here: {why}")


def v1_cleanup(rel):
    """podman's cgroupfs driver makes the parent in every v1 hierarchy too."""
    for top in os.listdir("/sys/fs/cgroup"):
        path = os.path.join("/sys/fs/cgroup", top, rel)
        if top != "unified" and os.path.isdir(path):
            # deepest first; conmon's may still be exiting after `podman rm`
            for d, _, _ in sorted(os.walk(path), key=lambda w: -len(w[0])):
                try:
                    rmdir_retry(d)
                except OSError as e:
                    print(f"warning: could not remove {d}: {e}", file=sys.stderr)
