#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""User stacks unwound with DWARF CFI on the real kernel (probes/unwind.c, from probes/perfring.c's
samples), for programs whose stacks are known:

- a C workload built without frame pointers, main -> uw_outer -> uw_middle -> uw_leaf spinning:
  most of its stacks are exactly that chain, innermost first, each frame named in its own binary,
  down to libc's start and the binary's _start, the walk ending at the outermost frame;
- Debian's own xz compressing (-6: its 94 MiB of buffers set up in well under the capture), its liblzma stripped to .dynsym: most stacks pass through liblzma's
  exported lzma_code, the frames inside it without a symbol given as liblzma's module and offset,
  liblzma's build-id the one in its ELF note; no frame outside a module the process maps;
- the same workload built without unwind tables, main keeping a frame pointer: its stacks stop
  at uw_leaf, saying no_cfi, never the frame-pointer guess that would go from uw_leaf straight to
  main's caller;
- without CAP_SYS_ADMIN (no /proc/PID/map_files), a binary seen only in the workload's own mount
  namespace is found through /proc/PID/root and symbolised; a binary replaced at its path after
  the exec (a bind mount over it in its namespace) is refused (ESTALE: not the inode mapped) and
  its frames are given without a name, never the other file's; a binary deleted after the exec
  is still symbolised, through map_files."""

import os
import platform
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ScratchCgroup, check, find_mount, run, skip  # noqa: E402

PROBE, WORKLOAD, NOCFI = sys.argv[1:4]
STACK = 16384
FREQ = 199
RUN_MS = 4000


def capture(cg, start, wrap=()):
    """Runs probe-unwind on cg for RUN_MS, start() called once its events are on; returns the
    stacks {pid: [(count, end, [frames])]}, the modules [(pid, error, debug, build_id, path)], the
    cost line and what start() returned."""
    probe = subprocess.Popen([*wrap, PROBE, cg.path, str(FREQ), str(STACK), str(RUN_MS)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        ready, _, _ = select.select([probe.stdout], [], [], 30)
        check(ready, "probe-unwind printed nothing in 30 s")
        first = probe.stdout.readline().split()
        if first[:2] in (["error", "EACCES"], ["error", "EPERM"]):
            skip(f"perf_event_open refused ({first[1]}): perf_event_paranoid or CAP_PERFMON")
        if first[:3] == ["error", "EOPNOTSUPP", "unwind_available"]:
            skip("psidiag was built without libdw's headers (libdw-dev), or libdw.so.1 does not load")
        check(first and first[0] == "info", f"probe-unwind said {first}")
        started = start()
        out, err = probe.communicate(timeout=RUN_MS / 1000 + 120)
    finally:
        if probe.poll() is None:
            probe.kill()
            probe.wait()
    check(probe.returncode == 0, f"probe-unwind exited {probe.returncode}: {out[-2000:]} {err}")
    stacks, modules, cost = {}, [], None
    for line in out.splitlines():
        f = line.split(" ")
        if f[0] == "stack":
            frames = [] if f[4] == "-" else f[4].split("|")
            stacks.setdefault(int(f[1]), []).append((int(f[2]), f[3], frames))
        elif f[0] == "module":
            modules.append((int(f[1]), f[2], f[3], f[4], " ".join(f[5:])))
        elif f[0] == "cost":
            cost = dict(kv.split("=") for kv in f[1:])
    check(cost, f"no cost line: {out[-2000:]}")
    return stacks, modules, cost, started


def frame_name(frame):
    """uw_leaf+0x20@unwind-workload -> (uw_leaf, unwind-workload); ?@xz+0x55ec -> (None, xz)."""
    if frame.startswith("?@"):
        mod = frame[2:]
        return None, None if mod == "-" else mod.rsplit("+", 1)[0]
    sym, mod = frame.rsplit("@", 1)
    return sym.rsplit("+", 1)[0], mod


def known_chain(cg):
    binary = os.path.basename(WORKLOAD)
    stacks, modules, cost, proc = capture(cg, lambda: cg.spawn([WORKLOAD]))
    mine = stacks.get(proc.pid, [])
    total = sum(c for c, _, _ in mine)
    print(f"workload: {total} stacks of pid {proc.pid}, {cost['unwind_ns']} ns unwinding {cost['unwound']} "
          f"samples ({int(cost['unwind_ns']) // max(1, int(cost['unwound']))} ns each, first ones included)")
    check(total >= 20, f"{total} stacks of the workload (pid {proc.pid}): {stacks}")
    chain = ["uw_leaf", "uw_middle", "uw_outer", "main"]
    whole = 0
    for count, end, frames in sorted(mine, reverse=True):
        names = [frame_name(f) for f in frames]
        if [n for n, _ in names[:4]] == chain and all(m == binary for _, m in names[:4]):
            whole += count
            # Below main: libc's start and the binary's _start, and nothing invented past them.
            check(end == "outermost", f"the chain's walk ended '{end}', not at the outermost frame: {frames}")
            check(names[-1] == ("_start", binary), f"the chain does not end at {binary}'s _start: {frames}")
            check(any(m == "libc.so.6" for _, m in names[4:-1]), f"no libc frame between main and _start: {frames}")
    print(f"{whole} of {total} stacks are {' <- '.join(chain)} and its start; the top: {sorted(mine)[-1]}")
    # The spinner is in uw_leaf nearly always; the rest of its time is in the loop's calls.
    check(whole >= 0.8 * total, f"only {whole} of {total} stacks are the known chain: {sorted(mine)[-5:]}")


def no_cfi(cg):
    binary = os.path.basename(NOCFI)
    stacks, _, _, proc = capture(cg, lambda: cg.spawn([NOCFI]))
    mine = stacks.get(proc.pid, [])
    total = sum(c for c, _, _ in mine)
    check(total >= 20, f"{total} stacks of the workload without CFI (pid {proc.pid}): {stacks}")
    stopped = sum(c for c, end, frames in mine if end == "no_cfi" and len(frames) == 1
                  and frame_name(frames[0]) == ("uw_leaf", binary))
    print(f"without CFI: {stopped} of {total} stacks are uw_leaf alone, ended no_cfi; the top: {sorted(mine)[-1]}")
    for count, end, frames in mine:
        names = [frame_name(f)[1] for f in frames]
        # A stack that starts in a library (with CFI) climbs to the binary's frame and stops
        # there; one whose own CFI needs more than the stack copy (an ASan build's start-up in
        # libm, seen once) stops before it.
        check(binary in names[:1] or not names or end in ("no_cfi", "no_module", "stack_copy"),
              f"a stack of the workload without CFI ending '{end}': {frames}")
        check(len(frames) <= 1 or frame_name(frames[0])[1] != binary,
              f"frames past {frames[0]}, which has no CFI: {frames}")
    check(stopped >= 0.8 * total, f"only {stopped} of {total} stacks stop at uw_leaf: {sorted(mine)[-5:]}")


# The probe as an agent without CAP_SYS_ADMIN (and CAP_CHECKPOINT_RESTORE) runs: no map_files.
NO_MAP_FILES = ("setpriv", "--bounding-set=-sys_admin,-checkpoint_restore")


def own_root(cg, tmp):
    """The workload's binary on a tmpfs mounted in its own mount namespace only."""
    inner = os.path.join(tmp, "inner")
    os.mkdir(inner)
    script = (f"mount -t tmpfs none {inner} && cp {WORKLOAD} {inner}/uw-own-root && "
              f"exec {inner}/uw-own-root")
    stacks, modules, _, proc = capture(cg, lambda: cg.spawn(["unshare", "-m", "--propagation", "private", "sh", "-c",
                                                            script]), wrap=NO_MAP_FILES)
    check(not os.path.exists(os.path.join(inner, "uw-own-root")), "the tmpfs is visible outside its namespace")
    mine = [(c, e, f) for pid, st in stacks.items() for c, e, f in st if f and "uw-own-root" in f[0]]
    total = sum(c for c, _, _ in mine)
    named = sum(c for c, _, f in mine if [frame_name(x)[0] for x in f[:4]] == ["uw_leaf", "uw_middle", "uw_outer",
                                                                               "main"])
    print(f"own mount namespace, no map_files: {named} of {total} stacks name the chain; "
          f"modules {[m for m in modules if 'uw-own-root' in m[4]]}")
    check(total >= 20, f"{total} stacks of the workload in its own mount namespace: {list(stacks)}")
    check(named >= 0.8 * total, f"only {named} of {total} stacks name the chain through /proc/PID/root: {mine[:3]}")


def replaced(cg, tmp):
    """The workload's binary, in its own mount namespace, covered by a bind mount of another file
    after the exec: its path names another file, which is not the one mapped."""
    path = os.path.join(tmp, "uw-replaced")
    shutil.copy(WORKLOAD, path)

    # Started and covered before the capture: the probe reads its maps and opens its modules at
    # its first sample, after the mount.
    p = cg.spawn(["unshare", "-m", "--propagation", "private", path])
    deadline = time.time() + 30
    while time.time() < deadline and os.readlink(f"/proc/{p.pid}/exe") != path:
        time.sleep(0.05)
    subprocess.run(["nsenter", "-t", str(p.pid), "-m", "mount", "--bind", NOCFI, path], check=True)

    stacks, modules, _, proc = capture(cg, lambda: p, wrap=NO_MAP_FILES)
    mine = stacks.get(proc.pid, [])
    total = sum(c for c, _, _ in mine)
    own = [m for m in modules if m[0] == proc.pid and m[4] == path]
    print(f"covered binary: modules {own}; the top stack {sorted(mine)[-1] if mine else None}")
    check(total >= 20, f"{total} stacks of the covered workload (pid {proc.pid})")
    check(own and own[0][1] == "ESTALE", f"the covered binary was not refused as another file: {own}")
    # Every frame in the covered binary unnamed, its walk ended there; a sample in a library it
    # calls (an ASan build's interceptors, seen once) names that library's frame and stops at it.
    inside = 0
    for count, end, frames in mine:
        names = [frame_name(f) for f in frames]
        check(all(n is None for n, m in names if m == "uw-replaced"), f"a frame of the covered binary was named: {frames}")
        check(names and names[-1][1] == "uw-replaced" and end == "no_elf",
              f"the walk did not end at the refused module (no_elf): {end} {frames}")
        inside += count if names[0][1] == "uw-replaced" else 0
    check(inside >= 0.8 * total, f"only {inside} of {total} stacks start in the covered binary: {sorted(mine)[-5:]}")


def deleted(cg, tmp):
    """The workload's binary deleted after the exec: map_files still opens the file mapped."""
    path = os.path.join(tmp, "uw-deleted")
    shutil.copy(WORKLOAD, path)

    p = cg.spawn([path])
    deadline = time.time() + 30
    while time.time() < deadline and not os.readlink(f"/proc/{p.pid}/exe").startswith(path):
        time.sleep(0.05)
    os.unlink(path)

    stacks, modules, _, proc = capture(cg, lambda: p)
    mine = stacks.get(proc.pid, [])
    total = sum(c for c, _, _ in mine)
    named = sum(c for c, _, f in mine if [frame_name(x)[0] for x in f[:4]] == ["uw_leaf", "uw_middle", "uw_outer",
                                                                               "main"])
    print(f"deleted binary: {named} of {total} stacks name the chain, through map_files")
    check(total >= 20, f"{total} stacks of the deleted workload (pid {proc.pid})")
    check(named >= 0.8 * total, f"only {named} of {total} stacks of the deleted binary name the chain: {mine[:3]}")


def build_id_of(path):
    out = subprocess.run(["readelf", "-n", path], capture_output=True, text=True, check=True).stdout
    m = re.search(r"Build ID: ([0-9a-f]+)", out)
    return m.group(1) if m else None


def xz_pid(cg, deadline):
    while time.time() < deadline:
        with open(os.path.join(cg.path, "cgroup.procs")) as f:
            for pid in f.read().split():
                try:
                    with open(f"/proc/{pid}/comm") as c:
                        if c.read().strip() == "xz":
                            return int(pid)
                except FileNotFoundError:
                    pass
        time.sleep(0.05)
    return None


def real_program(cg):
    if not os.path.exists("/usr/bin/xz"):
        skip("xz is not installed (Debian's xz-utils, Priority: required)")

    def start():
        cg.spawn(["sh", "-c", "head -c 4G /dev/zero | exec xz -6 -T1 > /dev/null"])
        return xz_pid(cg, time.time() + 30)

    stacks, modules, cost, pid = capture(cg, start)
    check(pid, "xz never showed in the cgroup")
    mine = stacks.get(pid, [])
    total = sum(c for c, _, _ in mine)
    print(f"xz: {total} stacks of pid {pid}, {cost['unwound']} samples unwound in {cost['unwind_ns']} ns")
    check(total >= 20, f"{total} stacks of xz (pid {pid}): {list(stacks)}")
    through = sum(c for c, _, frames in mine if any(frame_name(f) == ("lzma_code", "liblzma.so.5.4.1")
                                                    or (frame_name(f)[0] == "lzma_code"
                                                        and frame_name(f)[1].startswith("liblzma.so"))
                                                    for f in frames))
    print(f"{through} of {total} xz stacks pass through liblzma's lzma_code; the top: {sorted(mine)[-1]}")
    check(through >= 0.5 * total, f"only {through} of {total} xz stacks pass through lzma_code: {sorted(mine)[-5:]}")
    mapped = {os.path.basename(p) for q, _, _, _, p in modules if q == pid}
    for count, end, frames in mine:
        for f in frames:
            sym, mod = frame_name(f)
            check(mod in mapped, f"a frame {f} outside xz's modules {sorted(mapped)}: {frames}")
            if sym is None:
                check(re.search(r"\+0x[0-9a-f]+$", f), f"a frame without a symbol and without its offset: {f}")
    lzma = [m for m in modules if m[0] == pid and os.path.basename(m[4]).startswith("liblzma.so")]
    check(lzma, f"liblzma not among xz's modules: {modules}")
    _, error, _, build_id, path = lzma[0]
    check(error == "-", f"liblzma could not be opened: {error}")
    want = build_id_of(path)
    check(build_id == want, f"liblzma's build-id {build_id}, its ELF note says {want}")
    print(f"liblzma {path}: build-id {build_id}, as its note says")


def main():
    if os.geteuid() != 0:
        skip("needs root (a scratch cgroup, cpu-wide perf events)")
    if platform.machine() != "x86_64":
        skip(f"the unwinder reads x86-64 registers; this is {platform.machine()}")
    mount = find_mount("cgroup2")
    if not mount:
        skip("no cgroup2 mount in /proc/self/mountinfo")
    with ScratchCgroup(mount, "unwind") as cg:
        known_chain(cg)
    with ScratchCgroup(mount, "unwind-nocfi") as cg:
        no_cfi(cg)
    with tempfile.TemporaryDirectory(prefix="psidiag-unwind-") as tmp:
        with ScratchCgroup(mount, "unwind-root") as cg:
            own_root(cg, tmp)
        with ScratchCgroup(mount, "unwind-replaced") as cg:
            replaced(cg, tmp)
        with ScratchCgroup(mount, "unwind-deleted") as cg:
            deleted(cg, tmp)
    with ScratchCgroup(mount, "unwind-xz") as cg:
        real_program(cg)


run(main)
