#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Userspace OOM killers (docs/killers.md): the real earlyoom and nohang from Debian kill a grower in a
watched cgroup under memory pressure, and the agent writes one `kill` incident naming the grower,
the killer and the pressure incident before it. nohang 0.2.0 acts only below 50 % of the node's
memory available (its largest threshold): its grower takes the node below that (about half of its
memory, for a few seconds). systemd-oomd and Meta oomd cannot run on this hybrid host: the test
leaves their marks (cgroup xattrs, oomd's kmsg line) and kills the grower as they would.

Each killer runs in a PID namespace of its own (unshare --pid --fork --kill-child --mount-proc), so
its /proc holds only the grower (oom_score_adj 1000) and itself: it can kill nothing else on this
machine. Its threshold is set above what the node uses now (read from /proc/meminfo), so it acts as
soon as the test lets it start, after the agent's first pressure incident. Its output goes to a
log file with a syslog header, the file the agent is configured to read (kill_log_files); a second
earlyoom run gives the agent no log file, so it names the killer by its running process. A user
(nobody) who owns a cgroup below the watched one forges every mark they can write (a copy of sleep
named earlyoom, user.oomd_* xattrs, a log line): a kill there names no killer. Last, a
kill -TERM of an idle process in a watched cgroup without pressure must write nothing."""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (ChildCgroup, Failed, LimitedCgroup, ScratchCgroup, check, check_kernel,  # noqa: E402
                    launch_agent, make_file, read_lines, run, spawn, stop_agent, uncache, validator, wait_lines, wait_log)

PSIDIAG, WORKLOAD, SCHEMAS = sys.argv[1:4]
LIMIT = 48 << 20
# The grower a killer kills (any size does: the killer picks it by its oom_score_adj or the test
# kills it), small beside LIMIT: built with ASan, a grower of 24 MiB held 30.7 MiB and one of
# 12 MiB 17.5 MiB, and the kernel's OOM killer took it first in a CI run of each (earlyoom-nolog,
# oomd-meta).
GROWER_MB = 6


def mem_available_percent():
    info = {}
    with open("/proc/meminfo") as f:
        for line in f:
            k, v = line.split(":")
            info[k] = int(v.split()[0])
    return 100.0 * info["MemAvailable"] / info["MemTotal"]


def start_agent(tmp, name, watches, log_files):
    a = launch_agent(PSIDIAG, tmp, name, {"sample_ms": 500, "cooldown_ms": 0, "kill_window_s": 60,
                                          "metrics_file": os.path.join(tmp, f"{name}.prom"), "kill_log_files": log_files,
                                          "watch": [{"cgroup": cg.rel, "triggers": [trigger]} for cg, trigger in watches]},
                     ["--enable-delayacct", "--log-level", "debug"], wait="watching:")
    return a.proc, a.out, a.log


def relay(stream, path, ident):
    """The killer's output lines into path as a syslog daemon writes them."""
    host = socket.gethostname()
    with open(path, "a") as f:
        for raw in stream:
            line = raw.decode(errors="replace").rstrip("\n")
            f.write(f"{time.strftime('%b %d %H:%M:%S')} {host} {ident}: {line}\n")
            f.flush()


def start_killer(cg, extra, argv, go, ident, log_path):
    """The grower (in cg, oom_score_adj 1000) and, once go exists, the killer, alone in a PID
    namespace; unshare's death kills it all (--kill-child)."""
    join = "".join(f"echo $$ > {p}/cgroup.procs; " for p in [cg.path] + list(extra))
    # GROWER_MB, as xattr_kill's: the grower and the thrasher must stay under the limit's 48 MiB,
    # or the kernel's OOM killer takes the grower before the killer starts. The killer picks it by
    # its oom_score_adj of 1000, whatever its size.
    script = (f'sh -c \'{join}echo 1000 > /proc/self/oom_score_adj; '
              f'PSIDIAG_ALLOC_MAX_MB={GROWER_MB} exec {WORKLOAD} alloc grower\' & '
              f'while [ ! -e {go} ]; do sleep 0.1; done; exec {" ".join(argv)}')
    p = subprocess.Popen(["unshare", "--pid", "--fork", "--kill-child", "--mount-proc", "sh", "-c", script],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    t = threading.Thread(target=relay, args=(p.stdout, log_path, f"{ident}[{p.pid}]"), daemon=True)
    t.start()
    return p


def grower_pid(cg, timeout=10):
    deadline = time.time() + timeout
    while time.time() < deadline:
        for pid in open(os.path.join(cg.path, "cgroup.procs")).read().split():
            try:
                if open(f"/proc/{pid}/comm").read().strip() == "grower":
                    return int(pid)
            except OSError:
                pass
        time.sleep(0.05)
    raise Failed("the grower did not start")


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[-1][0] != "Z"
    except OSError:
        return False


def await_death(pid, killer, log_path, timeout):
    """Until the killer has killed pid; fails with the killer's log after timeout."""
    deadline = time.time() + timeout
    while alive(pid) and time.time() < deadline:
        time.sleep(0.05)
    check(not alive(pid), f"{killer} did not kill the grower:\n{open(log_path).read()[-3000:]}")


def grower_there(out, pid):
    """The grower alive for the killer, not taken by the kernel's OOM killer first (an oom incident)."""
    ooms = [i for i in read_lines(out) if i["type"] == "oom"]
    check(alive(pid) and not ooms, f"the grower (pid {pid}) is not there to kill: the kernel's OOM killer took "
          f"it ({[i['summary'] for i in ooms]}), the test's limit is too small for its workloads")


def await_kill_incident(out):
    wait_lines(out, lambda ls: any(i["type"] == "kill" for i in ls), 20)
    time.sleep(1.5)  # a second kill incident, if any, would come now


def the_kill(out, log, code, validate, pid, killer, basis, extra=""):
    """After the agent stopped (its exit code), its one kill incident, validated: the grower pid
    its first victim, the killer named on basis, the pressure incident before it."""
    check(code == 0, f"agent exit {code}:\n{open(log).read()[-3000:]}")
    lines = read_lines(out)
    kills = [i for i in lines if i["type"] == "kill"]
    check(len(kills) == 1, f"{len(kills)} kill incidents:\n{json.dumps(kills)[:3000]}\n{open(log).read()[-3000:]}{extra}")
    inc = kills[0]
    validate(inc)
    kill = inc["kill"]
    check(kill["victims"][0]["pid"] == pid and kill["victims"][0]["comm"] == "grower", f"victims {kill['victims']}")
    check(kill["killer"] and kill["killer"]["name"] == killer and kill["killer"]["basis"] == basis,
          f"killer {kill['killer']} (want {killer} by {basis}){extra}")
    pressure_ids = [i["id"] for i in lines if i["type"] == "pressure"]
    check(kill["pressure"]["incident"] in pressure_ids and inc["related"], f"pressure {kill['pressure']}")
    return inc


def one_kill(tmp, mount, data, validate, name, killer, argv, with_log):
    uncache(data)
    with ScratchCgroup(mount, name) as cg, LimitedCgroup(mount, cg, name, LIMIT) as lim:
        log_path = os.path.join(tmp, f"{name}-syslog")
        open(log_path, "w").close()
        agent, out, log = start_agent(tmp, name, [(cg, "memory some 50ms 2s")], [log_path] if with_log else [])
        go = os.path.join(tmp, f"{name}-go")
        k = None
        try:
            k = start_killer(cg, lim.extra, argv, go, killer, log_path)
            pid = grower_pid(cg)
            env = dict(os.environ, PSIDIAG_FILE=data)
            spawn(cg, [WORKLOAD, "thrash", "psidiag-thrash", "2"], env, lim.extra)
            lines = wait_lines(out, lambda ls: any(i["type"] == "pressure" for i in ls), 40)
            check(any(i["type"] == "pressure" for i in lines), f"no pressure incident:\n{open(log).read()[-2000:]}")
            grower_there(out, pid)
            open(go, "w").close()
            await_death(pid, killer, log_path, 30)
            if with_log:  # the killer's own process names it otherwise: keep it until the incident
                k.kill()
                k.wait()
            await_kill_incident(out)
        finally:
            if k and k.poll() is None:
                k.kill()
                k.wait()
            code = stop_agent(agent)
        want = "log_line" if with_log else "running_process"
        inc = the_kill(out, log, code, validate, pid, killer, want)
        kill = inc["kill"]
        check(kill["cgroup"] == "/" + cg.rel, f"cgroup {kill['cgroup']}")
        # The memory right after: cgroup2's files, or on a hybrid host the v1 memcg its processes are in.
        mem = kill["memory"]
        check(mem["current_kib"] and mem["max_kib"] == LIMIT // 1024, f"memory after the kill ({lim.how}): {mem}")
        print(f"{name}: {inc['summary']}")


NOHANG_KEYS = {
    # Memory only (PSI off: nohang 0.2.0 reads PSI only when swap exists and memory is low anyway).
    "psi_checking_enabled": "False",
    "low_memory_warnings_enabled": "False",
    # 50 % is the most nohang takes: the test grows a process until the node has less available.
    "warning_threshold_min_mem": "50 %",
    "soft_threshold_min_mem": "50 %",
    "hard_threshold_min_mem": "2 %",
    "min_sleep": "0.1",
    "max_sleep": "0.1",
    "print_victim_status": "True",
}


def nohang_config(tmp):
    """Debian's /etc/nohang/nohang.conf with NOHANG_KEYS changed."""
    lines = []
    with open("/etc/nohang/nohang.conf") as f:
        for line in f:
            key = line.split("=")[0].strip()
            lines.append(f"{key} = {NOHANG_KEYS[key]}\n" if "=" in line and not line.lstrip().startswith("#")
                         and key in NOHANG_KEYS else line)
    path = os.path.join(tmp, "nohang.conf")
    with open(path, "w") as f:
        f.writelines(lines)
    return path


def nohang_kill(tmp, mount, data, validate, nohang):
    """nohang's memory thresholds stop at 50 % of the node: the grower (in the watched cgroup, not
    in its 48 MiB memcg, which only the thrashers that make the pressure join) grows until less
    than half of the node's memory is available, and nohang, alone with it in a PID namespace,
    sends it SIGTERM."""
    with open("/proc/meminfo") as f:
        info = {l.split(":")[0]: int(l.split()[1]) for l in f}
    grow_mb = (info["MemAvailable"] - info["MemTotal"] * 45 // 100) // 1024
    check(grow_mb < info["MemTotal"] // 1024 * 3 // 4, f"the node would need {grow_mb} MiB: too much in use already")
    name = "nohang"
    uncache(data)
    with ScratchCgroup(mount, name) as cg, LimitedCgroup(mount, cg, name, LIMIT) as lim:
        log_path = os.path.join(tmp, f"{name}-syslog")
        open(log_path, "w").close()
        agent, out, log = start_agent(tmp, name, [(cg, "memory some 50ms 2s")], [log_path])
        go = os.path.join(tmp, f"{name}-go")
        conf = nohang_config(tmp)
        k = None
        try:
            env = dict(os.environ, PSIDIAG_FILE=data)
            spawn(cg, [WORKLOAD, "thrash", "psidiag-thrash", "2"], env, lim.extra)
            lines = wait_lines(out, lambda ls: any(i["type"] == "pressure" for i in ls), 40)
            check(any(i["type"] == "pressure" for i in lines), f"no pressure incident:\n{open(log).read()[-2000:]}")
            # Only the grower joins the watched cgroup: nohang's own end (killed below) is no kill.
            script = (f"sh -c 'echo $$ > {cg.path}/cgroup.procs; echo 1000 > /proc/self/oom_score_adj; "
                      f"PSIDIAG_ALLOC_MS=0 PSIDIAG_ALLOC_MAX_MB={grow_mb} exec {WORKLOAD} alloc grower' & "
                      f"touch {go}; exec {nohang} --monitor -c {conf}")
            k = subprocess.Popen(["unshare", "--pid", "--fork", "--kill-child", "--mount-proc", "sh", "-c", script],
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            threading.Thread(target=relay, args=(k.stdout, log_path, f"nohang[{k.pid}]"), daemon=True).start()
            pid = grower_pid(cg, 30)
            await_death(pid, "nohang", log_path, 90)
            k.kill()
            k.wait()
            await_kill_incident(out)
        finally:
            if k and k.poll() is None:
                k.kill()
                k.wait()
            code = stop_agent(agent)
        inc = the_kill(out, log, code, validate, pid, "nohang", "log_line", f"\n{open(log_path).read()[-2000:]}")
        print(f"{name}: {inc['summary']}")


def xattr_kill(tmp, mount, data, validate, name, xattrs, want, kmsg=None, basis="xattr"):
    """systemd-oomd and Meta oomd cannot run here (their memory controller must be on cgroup2): the
    test leaves their marks on a real watched cgroup (the xattrs they set on the cgroup they kill,
    or oomd's kmsg line, written as their sources write them, docs/killers.md) and SIGKILLs the
    grower as they would."""
    uncache(data)
    with ScratchCgroup(mount, name) as cg, LimitedCgroup(mount, cg, name, LIMIT) as lim:
        agent, out, log = start_agent(tmp, name, [(cg, "memory some 50ms 2s")], [])
        try:
            # The grower and the thrasher must stay under the limit's 48 MiB, or the kernel's OOM
            # killer takes the grower first (an oom incident, rightly no kill incident): GROWER_MB.
            env = dict(os.environ, PSIDIAG_FILE=data, PSIDIAG_ALLOC_MAX_MB=str(GROWER_MB))
            grower = spawn(cg, [WORKLOAD, "alloc", "grower"], env, lim.extra)
            spawn(cg, [WORKLOAD, "thrash", "psidiag-thrash", "2"], env, lim.extra)
            lines = wait_lines(out, lambda ls: any(i["type"] == "pressure" for i in ls), 40)
            check(any(i["type"] == "pressure" for i in lines), f"no pressure incident:\n{open(log).read()[-2000:]}")
            # The window's baseline of the xattrs is read when it opens: its members listed.
            wait_log(log, r"kill window of \S+ open for \d+ s: \d+ processes listed", 20, agent)
            for key, value in xattrs:
                os.setxattr(cg.path, key, value)
            if kmsg:  # as oomd's Log::kmsgLog() writes it: no <N> level
                with open("/dev/kmsg", "w") as f:
                    f.write(kmsg.format(cgroup=cg.rel))
            pid = grower.pid
            grower_there(out, pid)
            grower.send_signal(signal.SIGKILL)
            grower.wait()
            await_kill_incident(out)
        finally:
            code = stop_agent(agent)
        inc = the_kill(out, log, code, validate, pid, want, basis)
        check(inc["kill"]["victims"][0]["signal"] == "SIGKILL", f"victims {inc['kill']['victims']}")
        print(f"{name}: {inc['summary']}")


NOBODY = 65534


def as_nobody(argv, **kw):
    return subprocess.Popen(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"] + argv, **kw)


def real_killers_running(name, fake):
    """Processes of another test (a real killer, root's) that the agent may rightly see running."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            exe = os.readlink(f"/proc/{pid}/exe")
        except OSError:
            continue
        if os.path.basename(exe) == name and exe != fake:
            found.append(exe)
    return found


def forged_marks(tmp, mount, data, validate):
    """docs/killers.md, "Who may leave a mark": a user (nobody) who owns a cgroup delegated to them
    below the watched one forges the marks they can write: their copy of sleep named earlyoom
    running, systemd-oomd's user.oomd_* xattrs on their cgroup, an earlyoom line in a log file of
    theirs that the config lists. The test then SIGKILLs the grower in their cgroup: the kill
    incident names no killer."""
    uncache(data)
    home = tempfile.mkdtemp(prefix="psidiag-it-home-")
    os.chmod(home, 0o755)
    os.chown(home, NOBODY, NOBODY)
    fake = os.path.join(home, "earlyoom")
    shutil.copy("/bin/sleep", fake)
    os.chown(fake, NOBODY, NOBODY)
    log_path = os.path.join(home, "syslog")
    with open(log_path, "w") as f:
        f.write("")
    os.chown(log_path, NOBODY, NOBODY)
    sleeper = None
    with ScratchCgroup(mount, "forged") as cg, LimitedCgroup(mount, cg, "forged", LIMIT) as lim, \
            ChildCgroup(cg, "user") as user:
        for p in [user.path] + [os.path.join(user.path, f) for f in ("cgroup.procs", "cgroup.subtree_control")]:
            os.chown(p, NOBODY, NOBODY)  # as systemd delegates a cgroup to its user
        agent, out, log = start_agent(tmp, "forged", [(cg, "memory some 50ms 2s")], [log_path])
        try:
            sleeper = as_nobody([fake, "600"])
            env = dict(os.environ, PSIDIAG_FILE=data, PSIDIAG_ALLOC_MAX_MB=str(GROWER_MB))
            grower = spawn(user, [WORKLOAD, "alloc", "grower"], env, lim.extra)
            spawn(cg, [WORKLOAD, "thrash", "psidiag-thrash", "2"], env, lim.extra)
            lines = wait_lines(out, lambda ls: any(i["type"] == "pressure" for i in ls), 40)
            check(any(i["type"] == "pressure" for i in lines), f"no pressure incident:\n{open(log).read()[-2000:]}")
            # The window's baseline of the xattrs is read when it opens: its members listed.
            wait_log(log, r"kill window of \S+ open for \d+ s: \d+ processes listed", 20, agent)
            setx = ("import os, sys; os.setxattr(sys.argv[1], 'user.oomd_ooms', b'1'); "
                    "os.setxattr(sys.argv[1], 'user.oomd_kill', b'1')")
            check(as_nobody([sys.executable, "-c", setx, user.path]).wait() == 0, "nobody cannot set the xattrs")
            with open(log_path, "a") as f:  # what `logger -t earlyoom` writes to /var/log/syslog
                f.write(f"{time.strftime('%b %d %H:%M:%S')} {socket.gethostname()} earlyoom[{sleeper.pid}]: "
                        f"sending SIGTERM to process {grower.pid} uid 0 \"grower\": badness 1000, VmRSS 12 MiB\n")
            pid = grower.pid
            grower_there(out, pid)
            grower.send_signal(signal.SIGKILL)
            grower.wait()
            await_kill_incident(out)
            others = real_killers_running("earlyoom", fake)
        finally:
            if sleeper:
                sleeper.kill()
                sleeper.wait()
            code = stop_agent(agent)
            shutil.rmtree(home)
    check(code == 0, f"agent exit {code}:\n{open(log).read()[-3000:]}")
    kills = [i for i in read_lines(out) if i["type"] == "kill"]
    check(len(kills) == 1, f"{len(kills)} kill incidents:\n{json.dumps(kills)[:3000]}")
    validate(kills[0])
    kill = kills[0]["kill"]
    check(kill["victims"][0]["pid"] == pid, f"victims {kill['victims']}")
    killer = kill["killer"]
    # Another test's real earlyoom, root's, may run on the machine meanwhile: that one may be named.
    check(killer is None or (killer["basis"] == "running_process" and killer["name"] == "earlyoom" and others),
          f"a forged mark named the killer: {killer}")
    print(f"forged marks: {kills[0]['summary']}")


def idle_term(tmp, mount, validate):
    with ScratchCgroup(mount, "killidle") as cg:
        agent, out, log = start_agent(tmp, "idle", [(cg, "memory some 50ms 2s")], [])
        try:
            p = spawn(cg, [WORKLOAD, "sleep", "idle"], dict(os.environ))
            time.sleep(1)
            p.send_signal(signal.SIGTERM)
            p.wait()
            time.sleep(3)
        finally:
            code = stop_agent(agent)
        check(code == 0, f"agent exit {code}")
        check(not read_lines(out), f"incidents for a kill -TERM without pressure: {read_lines(out)}")
        print("kill -TERM of an idle process without pressure: no incident")


def main():
    mount = check_kernel()
    validate = validator(SCHEMAS)
    earlyoom, nohang = shutil.which("earlyoom"), shutil.which("nohang") or "/usr/sbin/nohang"
    check(earlyoom and os.path.exists(nohang) and shutil.which("unshare"),
          "earlyoom, nohang or unshare is missing (scripts/test installs the Debian packages)")
    tmp = tempfile.mkdtemp(prefix="psidiag-it-")
    # Above what the node has available now, so the killer acts at once (SIGTERM; SIGKILL at half).
    avail = mem_available_percent()
    threshold = 99  # earlyoom's largest -m
    check(avail < threshold, f"{avail:.1f}% of memory available: earlyoom takes no threshold above it")
    data = make_file("/var/tmp")
    try:
        one_kill(tmp, mount, data, validate, "earlyoom", "earlyoom",
                 [earlyoom, "-m", str(threshold), "-s", "100", "-r", "0"], True)
        one_kill(tmp, mount, data, validate, "earlyoom-nolog", "earlyoom",
                 [earlyoom, "-m", str(threshold), "-s", "100", "-r", "0"], False)
        nohang_kill(tmp, mount, data, validate, nohang)
        # systemd-oomd (src/oom/oomd-util.c): user.oomd_ooms, then user.oomd_kill with the count.
        xattr_kill(tmp, mount, data, validate, "oomd-systemd", [("user.oomd_ooms", b"1"), ("user.oomd_kill", b"1")],
                   "systemd-oomd")
        # Meta oomd 0.5.0 (BaseKillPlugin.cpp): trusted.oomd_ooms, trusted.oomd_kill, the kill uuid.
        xattr_kill(tmp, mount, data, validate, "oomd-meta",
                   [("trusted.oomd_ooms", b"1"), ("trusted.oomd_kill", b"1"),
                    ("trusted.oomd_kill_uuid", b"8e9d0c2a-4b1f-4f2e-9a53-3c7d2b1e6f00")], "oomd")
        # Meta oomd's kmsg line (BaseKillPlugin::tryToLogAndKillCgroup(), the same in 0.5.0 and HEAD),
        # written to /dev/kmsg as oomd writes it, without its xattrs.
        xattr_kill(tmp, mount, data, validate, "oomd-kmsg", [], "oomd",
                   kmsg="oomd kill: 61.35 40.12 12.50 {cgroup} 50331648 ruleset:[protection against low swap] "
                        "detectorgroup:[free swap goes below 10 percent] killer:kill_by_memory_size_or_growth v2\n",
                   basis="kmsg")
        forged_marks(tmp, mount, data, validate)
    finally:
        os.unlink(data)
    idle_term(tmp, mount, validate)


run(main)
