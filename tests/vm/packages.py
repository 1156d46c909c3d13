# SPDX-License-Identifier: MIT
"""The VM root's recipe: change RECIPE or PACKAGES and a new root is built beside the old one."""

RECIPE = 1
# The nspawn root's packages (the agent's libraries, systemd, procps, logrotate, man-db), plus
# Debian 12's stock kernel with its initramfs (virtio_blk is a module), udev (device units and
# /dev/virtio-ports names), the killers the cases run for real (systemd-oomd, Meta's oomd),
# stress-ng for load, python3 and python3-jsonschema for the case runner, and e2fsprogs for the
# scratch disk.
PACKAGES = ["systemd", "systemd-sysv", "dbus", "procps", "logrotate", "man-db",
            "libev4", "libnl-3-200", "libnl-genl-3-200", "libjansson4", "libsystemd0",
            "linux-image-amd64", "initramfs-tools", "udev", "systemd-oomd", "oomd", "stress-ng",
            "python3", "python3-jsonschema", "e2fsprogs", "util-linux"]
