#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The Debian package, built from this tree by scripts/package twice: at meson.build's version
(with the unit tests dh_auto_test runs) and a rebuild at that version +test1 (an upgrade). On the
host: lintian clean on both (no error, no warning, every override with its reason above it), the
package's version is meson.build's, the files, conffiles and the log directory's mode are there,
and no maintainer script starts, stops or enables anything with systemctl. In the systemd-nspawn
root of test_systemd.py (nspawn.py): `apt-get install ./psidiag_*.deb` (every Depends is in the
root already: nothing is downloaded), the unit enabled and running, `psidiag --version` equal to
`dpkg -s psidiag`, an incident from load on an edited config; the upgrade keeps the edited
conffile and restarts the agent on the new binary, which writes incidents again; `apt-get
remove` stops the agent cleanly and keeps config and incidents; `apt-get purge` removes them, and
no path of the package, none named psidiag and no file of its maintainer scripts is left.
Everything it makes (scratch directory, container, cgroups, overlay) is removed on the way out,
pass or fail.

argv: SOURCE_DIR WORKLOAD"""

import json
import os
import re
import shutil
import signal
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import Failed, check, run  # noqa: E402
from nspawn import Container, Overlay, check_host, ensure_root, sh, sweep_leftovers, wait_for  # noqa: E402

SOURCE = os.path.abspath(sys.argv[1])
WORKLOAD = os.path.abspath(sys.argv[2])
SUFFIX = "+test1"
LOAD_UNIT = "psidiag-test-load.service"
STAGE = "/opt/psidiag-test"
CONFIG = "/etc/psidiag/config.json"
OUTPUT = "/var/log/psidiag/incidents.ndjson"
# What the package installs (dpkg -L), the log directory with the unit's LogsDirectoryMode=.
FILES = ["/usr/sbin/psidiag", "/usr/share/man/man8/psidiag.8.gz", "/lib/systemd/system/psidiag.service",
         "/usr/lib/sysctl.d/50-psidiag.conf", CONFIG, "/etc/logrotate.d/psidiag",
         "/usr/share/psidiag/psidiag.rules.yml", "/usr/share/psidiag/oomd-prekill.conf",
         "/usr/share/psidiag/psidiag-prekill.tmpfiles", "/usr/share/doc/psidiag/copyright", "/var/log/psidiag"]
CONFFILES = {CONFIG, "/etc/logrotate.d/psidiag"}
# Where a path that appeared between before the install and after the purge may be: the package
# manager's own records and logs, the journal, and the test's staging directory.
BOOKKEEPING = re.compile(r"^(/var/lib/dpkg/|/var/lib/apt/|/var/cache/apt/|/var/cache/debconf/|/var/log/apt/"
                         r"|/var/log/dpkg\.log|/var/log/journal/|/var/cache/man/|/var/cache/ldconfig/"
                         r"|/etc/ld\.so\.cache|" + re.escape(STAGE) + r"(/|$))")


def log(msg):
    print(f"[{time.monotonic() - T0:6.1f}s] {msg}", flush=True)


def meson_version():
    p = sh(["meson", "introspect", "--projectinfo", os.path.join(SOURCE, "meson.build")])
    check(p.returncode == 0, f"meson introspect: {p.stderr}")
    return json.loads(p.stdout)["version"]


def build(out, *args):
    """scripts/package into out; returns the .deb's path."""
    p = sh([os.path.join(SOURCE, "scripts", "package"), "--out", out] + list(args), timeout=900)
    check(p.returncode == 0, f"scripts/package {' '.join(args)} exited {p.returncode}:\n{p.stderr[-5000:]}")
    deb = p.stdout.strip().splitlines()[-1]
    check(os.path.isfile(deb), f"scripts/package printed no .deb: {p.stdout}")
    return deb


def lint(changes):
    """lintian (Debian 12's) on the .changes: the .deb, its -dbgsym and the upload."""
    p = sh(["lintian", "--fail-on", "error,warning", changes], timeout=300)
    tags = [l for l in p.stdout.splitlines() if re.match(r"[EW]: ", l)]
    log(f"lintian {os.path.basename(changes)}: exit {p.returncode}, {len(tags)} errors and warnings")
    print(p.stdout)
    check(p.returncode == 0 and not tags, f"lintian: exit {p.returncode}:\n{p.stdout}\n{p.stderr[-2000:]}")


def check_overrides():
    """Each lintian override in debian/ has its reason in a comment right above it."""
    n = 0
    for name in os.listdir(os.path.join(SOURCE, "debian")):
        if not name.endswith("lintian-overrides"):
            continue
        prev = ""
        for line in open(os.path.join(SOURCE, "debian", name)):
            line = line.strip()
            if line and not line.startswith("#"):
                check(prev.startswith("#") and len(prev) > 10, f"debian/{name}: override without a reason: {line}")
                n += 1
            prev = line
    log(f"{n} lintian overrides, each with its reason")


def check_deb(deb, version):
    fields = sh(["dpkg-deb", "-f", deb, "Package", "Version"]).stdout
    check(fields.split() == ["Package:", "psidiag", "Version:", version], f"{deb}: {fields}")
    listing = sh(["dpkg-deb", "-c", deb]).stdout
    paths = {re.sub(r"^\./", "/", l.split()[-1]).rstrip("/"): l.split()[0] for l in listing.splitlines()}
    for f in FILES:
        check(f in paths, f"{deb} lacks {f}:\n{listing}")
    check(paths["/var/log/psidiag"] == "drwxr-x---", f"/var/log/psidiag is {paths['/var/log/psidiag']}, not 0750")
    control = tempfile.mkdtemp(prefix="psidiag-control-")
    try:
        check(sh(["dpkg-deb", "-e", deb, control]).returncode == 0, "dpkg-deb -e")
        conffiles = set(open(os.path.join(control, "conffiles")).read().split())
        check(conffiles == CONFFILES, f"conffiles: {conffiles}")
        scripts = [s for s in ("preinst", "postinst", "prerm", "postrm") if os.path.exists(os.path.join(control, s))]
        check({"postinst", "prerm", "postrm"} <= set(scripts), f"maintainer scripts: {scripts}")
        for s in scripts:
            text = open(os.path.join(control, s)).read()
            # debhelper's own postrm reloads systemd after the unit file is gone; units are
            # enabled, started and stopped through deb-systemd-helper and deb-systemd-invoke.
            calls = [l.strip() for l in text.splitlines() if re.search(r"\bsystemctl\b", l)
                     and not l.strip().startswith("#")]
            check(all(re.match(r"systemctl --system daemon-reload\b", c) for c in calls),
                  f"{s} calls systemctl: {calls}")
        postinst = open(os.path.join(control, "postinst")).read()
        check("deb-systemd-helper" in postinst and "deb-systemd-invoke" in postinst,
              "the postinst does not enable and start the unit through dh_installsystemd")
    finally:
        shutil.rmtree(control, ignore_errors=True)
    for s in ("postinst", "postrm"):
        text = open(os.path.join(SOURCE, "debian", f"psidiag.{s}")).read()
        check(not re.search(r"\bsystemctl\b", text), f"debian/psidiag.{s} calls systemctl")


def paths(c):
    """Every path on the container's root file system (not /proc, /sys, /dev, /run, /tmp)."""
    return set(c.ok(["find", "/", "-xdev"], timeout=120).splitlines())


def incidents(c):
    p = c.run(["cat", OUTPUT])
    return [json.loads(l) for l in p.stdout.splitlines() if l.strip()] if p.returncode == 0 else []


def load_incidents(c):
    return [i for i in incidents(c) if (i.get("trigger") or {}).get("cgroup") == f"/system.slice/{LOAD_UNIT}"]


def apt(c, *args):
    p = c.run(["sh", "-c", f"cd {STAGE} && DEBIAN_FRONTEND=noninteractive apt-get -y " + " ".join(args)], timeout=300)
    print(p.stdout[-3000:], p.stderr[-3000:])
    check(p.returncode == 0, f"apt-get {' '.join(args)} exited {p.returncode}:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    # (The root has no package lists: a Depends missing from it fails instead of downloading.)
    check(not re.search(r"^Get:\d+ \w+://", p.stdout, re.M), f"apt-get downloaded something:\n{p.stdout}")
    return p.stdout + p.stderr


def installed_version(c):
    status = c.ok(["dpkg-query", "-W", "-f", "${Status} ${Version}", "psidiag"]).split()
    check(status[:3] == ["install", "ok", "installed"], f"dpkg: psidiag is {status}")
    binary = c.ok(["/usr/sbin/psidiag", "--version"]).strip()
    check(binary == f"psidiag {status[3]}", f"`psidiag --version` says {binary!r}, dpkg says {status[3]}")
    return status[3]


def agent(c):
    """MainPID of the running unit, after checking the process runs the installed binary."""
    wait_for("psidiag.service active", lambda: c.run(["systemctl", "is-active", "psidiag.service"]).stdout.strip()
             == "active", 30)
    pid = int(c.ok(["systemctl", "show", "-P", "MainPID", "psidiag.service"]))
    check(pid > 0, "no MainPID")
    # (Until systemd's child has called exec, MainPID runs systemd.)
    exe = lambda: c.run(["readlink", f"/proc/{pid}/exe"]).stdout.strip()  # noqa: E731
    try:
        wait_for("the unit's MainPID to run /usr/sbin/psidiag", lambda: exe() == "/usr/sbin/psidiag", 10)
    except Failed as e:
        raise Failed(f"{e}: it runs {exe()!r}")
    return pid


def stops(c):
    """How many times the agent has stopped cleanly (its final totals in the journal)."""
    return len(re.findall(r"\d+ incidents? written", c.ok(["journalctl", "--no-pager", "-o", "cat", "-u",
                                                      "psidiag.service"])))


def test(c, debs, version):
    new_version = version + SUFFIX
    before = paths(c)
    check(not [p for p in before if "psidiag" in p and not p.startswith(STAGE)], "psidiag is in the root already")

    log(f"apt-get install ./{os.path.basename(debs[0])}")
    apt(c, "install", "./" + os.path.basename(debs[0]))
    check(installed_version(c) == version, f"installed {installed_version(c)}, meson.build says {version}")
    listed = set(c.ok(["dpkg", "-L", "psidiag"]).splitlines())
    for f in FILES:
        check(f in listed and c.run(["test", "-e", f]).returncode == 0, f"{f} not installed: {sorted(listed)}")
    check(c.ok(["systemctl", "is-enabled", "psidiag.service"]).strip() == "enabled", "the unit is not enabled")
    pid = agent(c)
    log(f"psidiag {version} installed, the unit enabled and running (pid {pid})")
    check(c.ok(["stat", "-c", "%a %U", "/var/log/psidiag"]).split() == ["750", "root"], "/var/log/psidiag mode")

    log(f"load in {LOAD_UNIT}, and the conffile edited to watch it")
    c.ok(["systemd-run", f"--unit={LOAD_UNIT}", "--collect", f"{STAGE}/psidiag-workload", "spin", "psidiag-spin", "6"])
    shipped = json.loads(c.ok(["cat", CONFIG]))
    edited = dict(shipped, cooldown_ms=1000,
                  watch=shipped["watch"] + [{"cgroup": f"system.slice/{LOAD_UNIT}", "triggers": ["cpu some 100ms 2s"]}])
    edited_text = json.dumps(edited, indent=2) + "\n"
    c.ok(["tee", CONFIG], input=edited_text)
    c.ok(["systemctl", "restart", "psidiag.service"])
    pid = agent(c)
    inc = wait_for("an incident of the load", lambda: load_incidents(c), 40)[0]
    top = inc["most_delayed"][0]
    log(f"incident {inc['id']}: {top['comm']} in unit {top['meta']['unit']}, cpu delay {top['delay_us']['cpu']} us")
    check(top["comm"] == "psidiag-spin" and top["meta"]["unit"] == LOAD_UNIT, f"incident: {json.dumps(top)[:1000]}")

    log(f"upgrade: apt-get install ./{os.path.basename(debs[1])}")
    stopped = stops(c)
    out = apt(c, "install", "./" + os.path.basename(debs[1]))
    check(re.search(rf"Unpacking psidiag \({re.escape(new_version)}\) over \({re.escape(version)}\)", out),
          "apt-get did not upgrade psidiag")
    check(installed_version(c) == new_version, "the upgrade's version")
    check(c.ok(["cat", CONFIG]) == edited_text, "the edited conffile did not survive the upgrade")
    left = c.ok(["ls", "-a", "/etc/psidiag"]).split()
    check(sorted(left) == [".", "..", "config.json"], f"/etc/psidiag after the upgrade: {left}")
    new_pid = agent(c)
    check(new_pid != pid, "the agent was not restarted after the upgrade")
    wait_for("the old agent's clean stop in the journal", lambda: stops(c) == stopped + 1, 10)
    n = len(load_incidents(c))
    wait_for("an incident from the upgraded agent", lambda: len(load_incidents(c)) > n, 40)
    log(f"upgraded to {new_version}: conffile kept, agent restarted (pid {pid} -> {new_pid}) and writing incidents")

    log("apt-get remove psidiag")
    c.ok(["systemctl", "stop", LOAD_UNIT])
    stopped = stops(c)
    apt(c, "remove", "psidiag")
    status = c.ok(["dpkg-query", "-W", "-f", "${Status}", "psidiag"]).strip()
    check(status == "deinstall ok config-files", f"after remove: {status}")
    check(c.run(["pgrep", "-x", "psidiag"]).returncode == 1, "a psidiag process is left after remove")
    journal = ["journalctl", "--no-pager", "-o", "short-monotonic", "-u", "psidiag.service"]
    try:
        wait_for("the agent's clean stop on remove", lambda: stops(c) == stopped + 1, 10)
    except Failed as e:
        raise Failed(f"{e}:\n{c.ok(journal)[-3000:]}")
    check(c.run(["test", "-e", "/usr/sbin/psidiag"]).returncode != 0, "the binary is left after remove")
    load = c.run(["systemctl", "show", "-P", "LoadState", "psidiag.service"]).stdout.strip()
    check(load == "not-found", f"the unit is still known to systemd after remove: {load}")
    check(c.ok(["cat", CONFIG]) == edited_text, "the config did not survive remove")
    check(load_incidents(c), "the incidents did not survive remove")
    log("removed: the agent stopped, config and incidents kept")

    log("apt-get purge psidiag")
    apt(c, "purge", "psidiag")
    p = c.run(["dpkg-query", "-W", "-f", "${Status}", "psidiag"])
    check(p.returncode != 0 or p.stdout.strip() in ("", "unknown ok not-installed"), f"after purge: {p.stdout}")
    after = paths(c)
    for f in listed:
        check(f not in after or f in before, f"{f}, of the package, is left after purge")
    named = sorted(p for p in after if "psidiag" in p and not p.startswith(STAGE))
    check(not named, f"left after purge: {named}")
    new = sorted(p for p in after - before if not BOOKKEEPING.match(p))
    check(not new, f"paths that appeared with the package and stayed after purge: {new}")
    where = sorted({m.group(0) for m in (BOOKKEEPING.match(p) for p in after - before)})
    log(f"purged: none of the {len(listed)} paths of the package, nothing named psidiag and nothing new outside "
        f"the package manager's records and logs is left ({len(after - before)} new paths, under {where})")


def main():
    check_host(("systemd-nspawn", "debootstrap", "nsenter", "dpkg-buildpackage", "dh", "lintian"),
               "scripts/test --systemd installs what the systemd suite needs")
    sweep_leftovers(log)
    version = meson_version()
    scratch = tempfile.mkdtemp(prefix="psidiag-package-test-")
    overlay = container = None
    try:
        log(f"scripts/package (meson.build says {version})")
        debs = [build(scratch)]
        log(f"scripts/package --version-suffix {SUFFIX} --no-check")
        debs.append(build(scratch, "--version-suffix", SUFFIX, "--no-check"))
        check([os.path.basename(d).split("_")[1] for d in debs] == [version, version + SUFFIX], f"built {debs}")
        check_overrides()
        for deb, v in zip(debs, (version, version + SUFFIX)):
            check_deb(deb, v)
            lint(re.sub(r"\.deb$", ".changes", deb))
        p = sh(["dpkg", "--compare-versions", version + SUFFIX, "gt", version])
        check(p.returncode == 0, f"{version + SUFFIX} is not higher than {version}")

        overlay = Overlay(ensure_root(log))
        overlay.mount()
        stage = os.path.join(overlay.merged, STAGE.lstrip("/"))
        os.makedirs(stage)
        os.chmod(stage, 0o755)
        for f in debs + [WORKLOAD]:
            shutil.copy(f, stage)
            os.chmod(os.path.join(stage, os.path.basename(f)), 0o755 if f == WORKLOAD else 0o644)
        log("booting the container")
        container = Container(overlay.merged)
        container.boot()
        container.find_leader()
        log(f"container PID 1 is {container.leader}: {container.wait_booted()}")
        test(container, debs, version)
    finally:
        if container:
            container.close()
            log("container stopped")
        if overlay:
            overlay.close()
        shutil.rmtree(scratch, ignore_errors=True)


def interrupted(signum, _frame):
    raise Failed(f"interrupted by signal {signum} (meson's timeout sends SIGTERM)")


T0 = time.monotonic()
for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    signal.signal(sig, interrupted)
run(main)
log("done")
