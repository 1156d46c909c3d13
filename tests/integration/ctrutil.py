# SPDX-License-Identifier: MIT
"""The real podman for integration tests: an image of busybox imported offline, the run options
that work on this host (crun, or runc on hybrid hosts), containers under a cgroup parent of the
test's own, and what podman's cgroupfs driver leaves in the v1 hierarchies."""

import os
import shutil
import subprocess

from common import skip

# crun refuses hybrid hosts ("cgroups in hybrid mode not supported"); runc runs there. The default
# RLIMIT_NOFILE and RLIMIT_NPROC podman asks for may be above our hard limits.
LIMITS = ["--ulimit", "nofile=1024:1024", "--ulimit", "nproc=4096:4096"]
RUN_OPTS = [LIMITS, ["--runtime", "runc", *LIMITS]]


def podman(*args, timeout=120):
    return subprocess.run(["podman", *args], capture_output=True, text=True, timeout=timeout)


def need_podman():
    """Skips without podman or /bin/busybox (what the image is made of)."""
    if not shutil.which("podman"):
        skip("podman is not installed (apt-get install podman)")
    if not os.path.exists("/bin/busybox"):
        skip("/bin/busybox is missing (apt-get install busybox-static): the test image is made of it")


def build_image(tmp, image):
    """A busybox rootfs as the image named image, offline."""
    root = os.path.join(tmp, "rootfs")
    os.makedirs(os.path.join(root, "bin"))
    shutil.copy("/bin/busybox", os.path.join(root, "bin", "busybox"))
    for applet in ("sh", "yes", "sleep", "true"):
        os.symlink("busybox", os.path.join(root, "bin", applet))
    tar = os.path.join(tmp, "rootfs.tar")
    subprocess.run(["tar", "-C", root, "-cf", tar, "."], check=True)
    p = podman("import", tar, image)
    if p.returncode != 0:
        skip(f"podman import failed: {p.stderr.strip()[-300:]}")


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
            for d, _, _ in sorted(os.walk(path), key=lambda w: -len(w[0])):
                try:
                    os.rmdir(d)
                except OSError:
                    pass
