#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Boots one guest of tests/vm/packages.py (Debian 12, 13 or sid: the release's stock kernel,
linux-image-amd64) under QEMU on a root of that release made by debootstrap from the mirror of the
host's apt sources (cached, tests/integration/debroot.py), with systemd as PID 1 and pure cgroup2
(Debian's default), 2 vCPUs, 3 GiB and a virtio scratch disk. The build is
put into the image with `meson install` (DESTDIR), as a user installs it, with the guest's case
runner (guest.py) and a oneshot unit that runs it and powers off. The root image is a raw ext4
made with `mkfs.ext4 -d` from an overlay of the cached root.

QEMU runs under KVM when a boot there prints the kernel's banner within KVM_PROBE_S, else under
TCG (-accel tcg,thread=multi -cpu max). The guest writes one JSON line per case to a virtio serial
port (a file here), the first naming its kernel, systemd and taskstats struct version; this test
writes results/<case>.json for the meson test of each case (tests/vm/case.py) and results/vm.json
with the guest's versions and the timings. It fails, with the console's last lines, when the VM
does not boot or does not finish within its deadlines, or a release that does not move reports
other versions than packages.py says; it never waits longer.

argv: BUILD_DIR WORKLOAD RESULTS_DIR GUEST CASE..."""

import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
sys.path.insert(0, HERE)
from common import Failed, check, run, skip  # noqa: E402
import debroot  # noqa: E402
from debroot import sh  # noqa: E402
from packages import GUESTS  # noqa: E402

BUILD, WORKLOAD, RESULTS = (os.path.abspath(a) for a in sys.argv[1:4])
NAME = sys.argv[4]
GUEST = GUESTS[NAME]
CASES = sys.argv[5:]
KVM_PROBE_S = 20
KVM_PROBE_CACHE = os.path.join(os.path.dirname(RESULTS), "kvm-probe.json")
# From QEMU's start to the guest runner's first line (TCG boots in about a minute here).
BOOT_S = int(os.environ.get("PSIDIAG_VM_BOOT_S", "300"))
# Every case has its own deadline in the guest (guest.py); this bounds them all and the shutdown
# (a guest with more to do says its own, packages.py's total_s).
TOTAL_S = int(os.environ.get("PSIDIAG_VM_TOTAL_S", GUEST.get("total_s", 1500)))
MEM_MIB = 3072
ROOT_IMAGE_MIB = 3072
SCRATCH_MIB = 1024
GUEST_DIR = "opt/psidiag-test"
UNIT = "psidiag-vm-cases.service"
T0 = time.monotonic()
TIMES = {}


def log(msg):
    print(f"[{NAME} {time.monotonic() - T0:6.1f}s] {msg}", flush=True)


def alive(pid):
    try:
        return b"vm.py" in open(f"/proc/{pid}/cmdline", "rb").read()
    except OSError:
        return False


def stage(root, installed):
    """What the guest needs beside the installed agent: the case runner and its unit, the
    workload, an fstab, and the list of cases with the installed paths."""
    dest = os.path.join(root, GUEST_DIR)
    os.makedirs(dest, exist_ok=True)
    shutil.copy(WORKLOAD, os.path.join(dest, "psidiag-workload"))
    shutil.copy(os.path.join(HERE, "guest.py"), dest)
    # Its helpers, and its cases of waits not ended.
    for f in ("vmcommon.py", "waits.py"):
        shutil.copy(os.path.join(HERE, f), dest)
    # The container cases (guest bookworm-ctr; trixie's podman-names) and the manifest one of them runs the agent as.
    shutil.copy(os.path.join(HERE, "containers.py"), dest)
    # The prekill hook's cases (systemd 260 and later), what the killer cases share, the CRI
    # client of the pods' case, and the stacks case.
    for f in ("prekill.py", "killcase.py", "cri.py", "stacks.py"):
        shutil.copy(os.path.join(HERE, f), dest)
    shutil.copy(os.path.join(HERE, "..", "..", "dist", "kubernetes", "psidiag.yaml"), dest)
    # What the cases share with the host's tests, run there as they are.
    for f in ("common.py", "ctrutil.py", "debroot.py", "nspawn.py", "rootless.py", "test_systemd.py",
              "test_taskstats.py", "test_killgaps.py", "test_oom.py"):
        shutil.copy(os.path.join(HERE, "..", "integration", f), dest)
    # The rootless podman user's listing test_systemd.py stages in the unit case (rootless.py).
    listing = "containers/podman/home/alice/.local/share/containers/storage/overlay-containers/containers.json"
    os.makedirs(os.path.dirname(os.path.join(dest, "fixtures", listing)), exist_ok=True)
    shutil.copy(os.path.join(HERE, "..", "fixtures", listing), os.path.join(dest, "fixtures", listing))
    shutil.copy(os.path.join(BUILD, "tests", "probe-taskstats"), dest)
    shutil.copytree(os.path.join(HERE, "..", "..", "schemas"), os.path.join(dest, "schemas"), dirs_exist_ok=True)
    with open(os.path.join(dest, "cases.json"), "w") as f:
        json.dump({"cases": CASES, "installed": {k: "/" + os.path.relpath(v, "/") for k, v in installed.items()},
                   "guest": dict(GUEST, name=NAME)}, f)
    with open(os.path.join(root, "etc/fstab"), "w") as f:
        f.write("/dev/vda / ext4 rw,errors=remount-ro 0 1\n")
    with open(os.path.join(root, "etc/hostname"), "w") as f:
        f.write("psidiag-vm\n")
    with open(os.path.join(root, "etc/systemd/system", UNIT), "w") as f:
        f.write(f"""[Unit]
Description=psidiag's VM cases
After=multi-user.target
[Service]
Type=oneshot
ExecStart=/usr/bin/python3 /{GUEST_DIR}/guest.py
ExecStopPost=/bin/systemctl --no-block poweroff
StandardOutput=journal+console
StandardError=journal+console
[Install]
WantedBy=multi-user.target
""")
    wants = os.path.join(root, "etc/systemd/system/multi-user.target.wants")
    os.makedirs(wants, exist_ok=True)
    link = os.path.join(wants, UNIT)
    if not os.path.lexists(link):
        os.symlink(f"/etc/systemd/system/{UNIT}", link)


def boot_files(root):
    kernels = sorted(glob.glob(os.path.join(root, "boot/vmlinuz-*")))
    check(kernels, "no kernel in the root's /boot (linux-image-amd64)")
    kernel = kernels[-1]
    initrd = kernel.replace("vmlinuz-", "initrd.img-")
    check(os.path.exists(initrd), f"no {initrd}: initramfs-tools did not make one")
    return kernel, initrd


class Qemu:
    def __init__(self, work, kernel, initrd, root_image, scratch, accel, probe=False):
        self.console = os.path.join(work, f"console-{accel}.log")
        self.results = os.path.join(work, f"results-{accel}.ndjson")
        for p in (self.console, self.results):
            open(p, "w").close()
        cpu = ["-accel", "kvm", "-cpu", "host"] if accel == "kvm" else ["-accel", "tcg,thread=multi", "-cpu", "max"]
        argv = ["qemu-system-x86_64", "-machine", "q35"] + cpu + [
            "-smp", "2", "-m", str(MEM_MIB), "-display", "none", "-monitor", "none", "-nic", "none", "-no-reboot",
            "-serial", f"file:{self.console}",
            "-kernel", kernel, "-initrd", initrd,
            "-append", "root=/dev/vda rw console=ttyS0 panic=-1 systemd.show_status=1 net.ifnames=0",
            "-drive", f"file={root_image},format=raw,if=virtio,cache=unsafe",
            "-drive", f"file={scratch},format=raw,if=virtio,cache=unsafe",
            "-device", "virtio-serial", "-chardev", f"file,id=results,path={self.results}",
            "-device", "virtserialport,chardev=results,name=psidiag.results"] + (["-snapshot"] if probe else [])
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT)

    def tail(self, n=40):
        try:
            with open(self.console, errors="replace") as f:
                lines = f.read().splitlines()
        except OSError:
            return ""
        return "\n".join(lines[-n:])

    def lines(self):
        with open(self.results, errors="replace") as f:
            data = f.read()
        out = []
        for line in data.split("\n")[:-1]:
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                log(f"a line from the guest that is not JSON: {line[:200]!r}")
        return out

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        try:
            out = self.proc.communicate(timeout=10)[0]
        except subprocess.TimeoutExpired:
            out = b""
        return (out or b"").decode(errors="replace")


def kvm_boots(work, files, root_image, scratch):
    """Whether QEMU under KVM gets as far as the kernel's banner within KVM_PROBE_S (a nested guest
    can hang before it, or QEMU fail at once), and why not. The answer is kept beside the guests'
    results (KVM_PROBE_CACHE) for the host's boot and QEMU's version, so that the guests of one
    run probe once, not five times (20 s each where KVM hangs)."""
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return False, "no /dev/kvm to use"
    key = kvm_probe_key()
    try:
        with open(KVM_PROBE_CACHE) as f:
            kept = json.load(f)
        if kept.get("key") == key:
            return kept["kvm"], f"{kept['why']} (probed by an earlier guest of this boot)"
    except (OSError, ValueError, KeyError, AttributeError):
        pass
    kvm, why = kvm_probe(work, files, root_image, scratch)
    with open(KVM_PROBE_CACHE + ".tmp", "w") as f:
        json.dump({"key": key, "kvm": kvm, "why": why}, f)
    os.replace(KVM_PROBE_CACHE + ".tmp", KVM_PROBE_CACHE)
    return kvm, why


def kvm_probe_key():
    """The host's boot and QEMU's version: a probe's answer holds for both."""
    with open("/proc/sys/kernel/random/boot_id") as f:
        boot = f.read().strip()
    p = sh(["qemu-system-x86_64", "--version"], timeout=30)
    return [boot, p.stdout.splitlines()[0] if p.stdout else ""]


def kvm_probe(work, files, root_image, scratch):
    q = Qemu(work, *files, root_image, scratch, "kvm", probe=True)
    try:
        deadline = time.time() + KVM_PROBE_S
        while time.time() < deadline and q.proc.poll() is None:
            if "Linux version" in q.tail(200):
                return True, "booting"
            time.sleep(0.5)
    finally:
        out = q.stop().strip().splitlines()
    return False, (f"QEMU exited: {out[0] if out else '?'}" if q.proc.returncode not in (None, -9)
                   else f"no kernel banner within {KVM_PROBE_S} s")


def check_versions(started):
    """The versions the guest reported against packages.py's: a release that does not move (12,
    13) fails on a difference (the docs' table would be wrong); sid's are printed."""
    seen = {"kernel": ".".join(str(started.get("kernel")).split(".")[:2]), "systemd": started.get("systemd"),
            "taskstats": started.get("taskstats")}
    wrong = {k: (v, GUEST[k]) for k, v in seen.items() if v != GUEST[k]}
    if not wrong:
        log(f"versions as packages.py says: {seen}")
    elif GUEST.get("moves"):
        log(f"{GUEST['title']} moves: reported {seen}, packages.py says "
            f"{ {k: GUEST[k] for k in seen} } (update it and docs/testing.md)")
    else:
        check(False, f"{GUEST['title']} reported (seen, packages.py) {wrong}: update packages.py and docs/testing.md")


def write_result(name, result):
    with open(os.path.join(RESULTS, f"{name}.json"), "w") as f:
        json.dump(result, f)


def guest_crashed(qemu):
    """The guest's kernel oopsed or panicked (its console has the end of a kernel trace)."""
    with open(qemu.console, errors="replace") as f:
        text = f.read()
    return "---[ end trace" in text or "Kernel panic" in text


def run_guest(work, files, root_image, scratch, accel, done):
    """Boots the guest and follows its runner until QEMU exits, putting each case's first result in
    done (and its file). Returns (qemu, the runner's start line or None, QEMU's exit code); fails
    when it does not boot or finish within its deadlines."""
    t = time.monotonic()
    qemu = Qemu(work, *files, root_image, scratch, accel)
    started = None
    deadline = t + TOTAL_S
    while True:
        code = qemu.proc.poll()
        for line in qemu.lines():
            if line.get("event") == "start" and started is None:
                started = line
                TIMES["boot_s"] = round(time.monotonic() - t, 1)
                TIMES.update({k: line.get(k) for k in ("os", "kernel", "systemd", "taskstats")})
                log(f"guest runner started after {TIMES['boot_s']} s: {line.get('os')}, kernel "
                    f"{line.get('kernel')}, systemd {line.get('systemd')}, taskstats v{line.get('taskstats')}, "
                    f"{line.get('cgroup')}")
            elif line.get("event") == "settled" and "settle_s" not in TIMES:
                TIMES["settle_s"] = line.get("seconds")
                log(f"udev settled {TIMES['settle_s']} s after the runner started")
            elif "case" in line and line["case"] not in done:
                done[line["case"]] = line
                log(f"{line['case']}: {line['result']} in {line['seconds']} s")
                write_result(line["case"], line)
        if code is not None:
            break
        now = time.monotonic()
        if started is None and now - t > BOOT_S:
            qemu.stop()
            raise Failed(f"the VM did not boot to its case runner within {BOOT_S} s ({accel}); console:\n"
                         + qemu.tail())
        if now > deadline:
            qemu.stop()
            raise Failed(f"the VM did not finish within {TOTAL_S} s ({accel}); cases done: {list(done)}; "
                         f"console:\n" + qemu.tail())
        time.sleep(1)
    TIMES["vm_s"] = round(time.monotonic() - t, 1)
    out = qemu.stop()
    log(f"QEMU exited {code} after {TIMES['vm_s']} s")
    if not started:
        log(f"QEMU's output: {out[-2000:]}")
    return qemu, started, code


def main():
    if os.geteuid() != 0:
        skip("needs root (debootstrap, overlay mounts, mkfs.ext4 -d of a root)")
    for tool in ("qemu-system-x86_64", "debootstrap", "mkfs.ext4"):
        if not shutil.which(tool):
            skip(f"{tool} is not installed (scripts/test --vm installs qemu-system-x86, debootstrap and e2fsprogs)")
    os.makedirs(RESULTS, exist_ok=True)
    for old in glob.glob(os.path.join(RESULTS, "*.json")):
        os.unlink(old)
    debroot.sweep_overlays("vm", alive, log)
    TIMES.update(guest=NAME, release=GUEST["title"])
    t = time.monotonic()
    lower = debroot.ensure_root(GUEST["kind"], GUEST["recipe"], GUEST["packages"], log, timeout=1200,
                                suite=GUEST["suite"], steps=GUEST["steps"])
    TIMES["root_s"] = round(time.monotonic() - t, 1)
    overlay = qemu = None
    done = {}
    work = os.path.join(RESULTS, "work")
    os.makedirs(work, exist_ok=True)
    try:
        t = time.monotonic()
        overlay = debroot.Overlay(lower, "vm")
        overlay.mount()
        installed = debroot.install_build(BUILD, overlay.merged)
        stage(overlay.merged, installed)
        files = [os.path.join(work, n) for n in ("vmlinuz", "initrd.img")]
        for src, dst in zip(boot_files(overlay.merged), files):
            shutil.copy(src, dst)
        root_image = os.path.join(work, "root.raw")
        scratch = os.path.join(work, "scratch.raw")
        for p in (root_image, scratch):
            if os.path.exists(p):
                os.unlink(p)
        p = sh(["mkfs.ext4", "-q", "-F", "-L", "psidiag-vm", "-d", overlay.merged, root_image, f"{ROOT_IMAGE_MIB}M"],
               timeout=300)
        check(p.returncode == 0, f"mkfs.ext4 -d: {p.returncode}\n{p.stderr[-2000:]}")
        with open(scratch, "wb") as f:
            f.truncate(SCRATCH_MIB << 20)
        overlay.close()
        overlay = None
        TIMES["image_s"] = round(time.monotonic() - t, 1)
        log(f"root image {os.path.getsize(root_image) >> 20} MiB (sparse) in {TIMES['image_s']} s")

        t = time.monotonic()
        kvm, why = kvm_boots(work, files, root_image, scratch)
        accel = "kvm" if kvm else "tcg"
        TIMES["kvm_probe_s"] = round(time.monotonic() - t, 1)
        log(f"accelerator: {accel} (KVM probe {TIMES['kvm_probe_s']} s: {why})")
        TIMES["accel"] = accel
        for attempt in (1, 2):
            qemu, started, code = run_guest(work, files, root_image, scratch, accel, done)
            missing = [c for c in CASES if c not in done]
            # A guest kernel that oopses (sid's 7.2.13 under TCG once hit an oops in the
            # scheduler's dequeue_entities(), from rcu_gp_kthread, 76 s after boot; once an int3
            # oops in sched_clock_cpu() from devtmpfs_create_node(), 1.9 s after boot, before the
            # runner started) stops the runner with cases left: not psidiag's doing, so it boots
            # once more for them, saying so.
            if attempt == 1 and missing and guest_crashed(qemu):
                log(f"the guest's kernel crashed with {len(missing)} cases left; its console:\n{qemu.tail(60)}\n"
                    f"booting once more for {missing}")
                TIMES["kernel_crash"] = qemu.tail(60)
                qemu.stop()
                continue
            break
        check(started, f"QEMU exited {code} before the case runner started\nconsole:\n{qemu.tail()}")
        missing = [c for c in CASES if c not in done]
        check(not missing, f"the guest did not run {missing}; console:\n{qemu.tail()}")
        TIMES["cases"] = {c: done[c]["seconds"] for c in CASES}
        check_versions(started)
    except Exception as e:
        # The cases that never ran fail with the same reason and the console's last lines.
        for c in CASES:
            if not os.path.exists(os.path.join(RESULTS, f"{c}.json")):
                write_result(c, {"case": c, "result": "fail", "seconds": None, "log": f"not run: {e}"})
        raise
    finally:
        if qemu:
            qemu.stop()
        if overlay:
            overlay.close()
        TIMES["results"] = {c: done[c]["result"] if c in done else "fail" for c in CASES}
        TIMES["total_s"] = round(time.monotonic() - T0, 1)
        with open(os.path.join(RESULTS, "vm.json"), "w") as f:
            json.dump(TIMES, f, indent=1)
        log(f"timings: {json.dumps(TIMES)}")
        for p in glob.glob(os.path.join(work, "*.raw")):
            os.unlink(p)


def interrupted(signum, _frame):
    raise Failed(f"interrupted by signal {signum} (meson's timeout sends SIGTERM)")


for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    signal.signal(sig, interrupted)
run(main)
