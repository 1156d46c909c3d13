# SPDX-License-Identifier: MIT
"""The guests of the VM suite and their roots' recipes: change a guest's recipe, packages or steps
and a new root is built beside the old one (tests/integration/debroot.py). Each root is
debootstrapped from Debian's mirror, the one the host's apt sources name for Debian 12, which
also serves trixie and sid; neither is ever added to the host's own sources.

The packages are the nspawn root's (the agent's libraries, systemd, procps for sysctl, logrotate,
man-db), plus the release's stock kernel with its initramfs (virtio_blk is a module), udev (device
units and /dev/virtio-ports names), kmod, the killers the cases run for real (systemd-oomd, Meta's
oomd), stress-ng for load, python3 and python3-jsonschema for the case runner, and e2fsprogs for
the scratch disk. Names that differ by release: libev4 is libev4t64 from trixie on (the 64-bit
time_t transition). On sid the kernel depends on `dracut | initramfs-tools`, and debootstrap
takes the first alternative, so its initramfs is dracut's; dracut in a chroot makes a host-only
image for the host's devices, without ext4, unless it sees /dev unmounted (in debootstrap's run it
did, and turned host-only off itself), so a step turns host-only off and makes the image again,
whatever the chroot had mounted. systemd 262 dlopen()s what 252 linked (libseccomp, libacl, libpam,
libkmod...) and only recommends them, which debootstrap does not install: they are listed, so
that the unit's sandbox is what an installed node has. Debian 12's root has libdw (stacks
unwound); trixie's and sid's have none, so that guests take stacks without it (their user part
the sampled pc alone) and `check` says so."""

COMMON = ["systemd", "systemd-sysv", "dbus", "procps", "logrotate", "man-db",
          "libnl-3-200", "libnl-genl-3-200", "libjansson4", "libsystemd0",
          "linux-image-amd64", "udev", "systemd-oomd", "oomd", "stress-ng",
          "python3", "python3-jsonschema", "e2fsprogs", "util-linux"]

# name: its title, suite, the release's versions as the guest must report them (the runner's first
# line: kernel, systemd, the taskstats struct version `psidiag check` reads; "moves": only printed),
# the recipe, the cache's kind (the root's name), the packages and the steps after debootstrap
# (debroot.run_steps()). Every guest runs every case (tests/meson.build).
GUESTS = {
    "bookworm": {
        "title": "Debian 12", "suite": "bookworm", "kernel": "6.1", "systemd": 252, "taskstats": 13,
        "recipe": 1, "kind": "vm",
        # The list as it was before the other guests (kept so the cached root kept its name), and
        # since psidiag 0.13 what the stacks case needs.
        "packages": ["systemd", "systemd-sysv", "dbus", "procps", "logrotate", "man-db",
                     "libev4", "libnl-3-200", "libnl-genl-3-200", "libjansson4", "libsystemd0",
                     "linux-image-amd64", "initramfs-tools", "udev", "systemd-oomd", "oomd", "stress-ng",
                     "python3", "python3-jsonschema", "e2fsprogs", "util-linux",
                     # the stacks case: user stacks unwound (libdw1, which the package suggests), xz's
                     "libdw1", "xz-utils"],
        "steps": [],
    },
    # Debian 12 with the container runtimes Debian ships (tests/vm/containers.py): docker.io
    # 20.10, podman 4.3, containerd 1.6 with runc, and busybox-static, whose one binary is the
    # rootfs their images are made of offline (`docker import`, `podman import`, then `podman
    # save` and `ctr images import` for containerd). iptables for dockerd's bridge; uidmap,
    # slirp4netns, fuse-overlayfs, catatonit and tini, podman's and docker's recommends on a node;
    # dbus-user-session, the bus of a user's systemd instance, which rootless podman's systemd
    # driver asks for its scopes; apparmor, so that the runtimes load their default profiles as on
    # a node (agent-in-container runs `check` under docker-default); python3-yaml reads the
    # shipped manifest; python3-grpcio is the CRI client's gRPC (tests/vm/cri.py); netavark, for
    # containers-common depends on the virtual container-network-stack, which debootstrap does not
    # resolve. Only its own cases run here (tests/meson.build).
    "bookworm-ctr": {
        "title": "Debian 12, containers", "suite": "bookworm", "kernel": "6.1", "systemd": 252, "taskstats": 13,
        "recipe": 1, "kind": "vm-ctr", "total_s": 1800,
        "packages": COMMON + ["libev4", "initramfs-tools", "docker.io", "podman", "containerd", "runc",
                              "busybox-static", "iptables", "uidmap", "slirp4netns", "fuse-overlayfs",
                              "catatonit", "tini", "apparmor", "python3-yaml", "netavark", "dbus-user-session",
                              "python3-grpcio"],
        "steps": [],
    },
    # Debian 13, with podman 5.4 alone of the container runtimes (no docker, no containerd): podman
    # 5 keeps its state in SQLite (<storage>/db.sql), not bbolt, on a fresh install, so that this
    # guest's podman-names names a container's pod from db.sql (containers/libpod.c), beside every
    # other case. busybox-static is the image's rootfs, catatonit the pods' infra, uidmap,
    # fuse-overlayfs, passt (podman 5's rootless network) and dbus-user-session rootless podman's;
    # netavark as in bookworm-ctr. Installed, podman runs nothing until asked (its socket unit
    # listens, no service runs), so the other cases see the node they saw without it; it had a
    # guest of its own (trixie-ctr) until a guest's root, boot and probe were found to cost 2 of
    # a fresh run's minutes.
    "trixie": {
        "title": "Debian 13", "suite": "trixie", "kernel": "6.12", "systemd": 257, "taskstats": 14,
        "recipe": 1, "kind": "vm-trixie",
        "packages": COMMON + ["libev4t64", "initramfs-tools", "kmod", "podman", "catatonit",
                              "busybox-static", "uidmap", "fuse-overlayfs", "dbus-user-session",
                              "netavark", "passt"],
        "steps": [],
    },
    "sid": {
        "title": "Debian sid", "suite": "sid", "kernel": "7.2", "systemd": 262, "taskstats": 17,
        # sid moves: a root built on another day may have other versions; they are printed, not
        # checked (tests/vm/vm.py: check_versions()).
        "recipe": 1, "kind": "vm-sid", "moves": True,
        "packages": COMMON + ["libev4t64", "dracut", "zstd", "kmod", "libkmod2", "libseccomp2", "libacl1",
                              "libpam0g", "libcrypt1", "libcap2", "libaudit1", "libzstd1"],
        "steps": [["write", "/etc/dracut.conf.d/90-psidiag-vm.conf", 'hostonly="no"\n'],
                  ["chroot", "sh", "-c", "for k in /lib/modules/*; do dracut --force --kver ${k##*/}; done"]],
    },
}
