# SPDX-License-Identifier: MIT
# Shared by scripts/run and scripts/test: the Debian 12 packages psidiag builds and tests with.

PSIDIAG_PACKAGES=(gcc meson ninja-build pkg-config libev-dev libnl-3-dev libnl-genl-3-dev
                  libjansson-dev libcmocka-dev libsystemd-dev libsqlite3-dev libdw-dev python3 python3-jsonschema python3-yaml
                  clang-format nodejs rsyslog
                  postgresql-15 stress-ng make fio prometheus prometheus-node-exporter earlyoom nohang
                  podman runc busybox-static chromium)
# postgresql-15 (with pgbench), stress-ng, make, gcc and fio: integration-realworld stages a database
# under its benchmark client beside real neighbours. Installing postgresql-15 makes Debian's own
# "main" cluster; the test never uses it (its server has a data directory and socket of its own).
# earlyoom and nohang: integration-kills runs them for real, each alone in a PID namespace with the
# test's grower (the packages' own services are not started on a host without systemd, and the
# test never uses them).
# podman, runc and busybox-static: integration-containers and integration-ctrwatch run real
# containers with podman (runc, since crun refuses hybrid hosts) from an image made offline of
# /bin/busybox; without them both tests would skip on a fresh machine.
# chromium: integration-stacks renders psidiag's flame graph (stacks --svg) in headless Chromium
# and reads back the frames it laid out.
# prometheus (promtool) and prometheus-node-exporter: the rules' unit tests and integration-fleet,
# which start their own instances on 127.0.0.1 ports and scratch directories, never the system's.
# npm (for tests/otlp) comes with Debian's package of that name or with another build of nodejs:
# tests/otlp/install adds it when the command is missing.
# scripts/test --systemd: boots systemd in systemd-nspawn on a root made by debootstrap; builds the
# Debian package (scripts/package: dpkg-dev, debhelper, build-essential; the rest of
# debian/control's Build-Depends is above) and lints it.
PSIDIAG_SYSTEMD_PACKAGES=(systemd-container debootstrap dpkg-dev debhelper build-essential lintian)
# scripts/test --vm: QEMU, and a root made by debootstrap put into an image by mkfs.ext4 -d.
PSIDIAG_VM_PACKAGES=(qemu-system-x86 debootstrap e2fsprogs)

# Installs whatever is missing (one apt-get update, only when something is).
ensure_packages() {
        local missing=() p
        for p in "${PSIDIAG_PACKAGES[@]}"; do
                dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
        done
        [ ${#missing[@]} -eq 0 ] && return 0
        if [ "$(id -u)" -ne 0 ]; then
                echo "psidiag: missing packages: ${missing[*]}; run as root or: apt-get install ${missing[*]}" >&2
                return 1
        fi
        echo "psidiag: installing ${missing[*]}" >&2
        DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
}

# setup_build DIR [meson args...]: configures DIR once, reconfigures if it exists.
setup_build() {
        local dir=$1
        shift
        if [ -f "$dir/build.ninja" ]; then
                meson setup --reconfigure "$dir" "$@" >/dev/null
        else
                meson setup "$dir" "$@" >/dev/null
        fi
        # Quiet when it builds; a failed build prints what ninja said (it says it on stdout).
        if ! ninja -C "$dir" >"$dir/ninja-output.txt" 2>&1; then
                cat "$dir/ninja-output.txt" >&2
                return 1
        fi
}
