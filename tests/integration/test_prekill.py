# SPDX-License-Identifier: MIT
"""systemd-oomd's prekill hook (docs/killers.md): the agent serves io.systemd.oom.Prekill on a
Varlink socket of the test's own scratch directory (prekill_socket), never the system's. The client
here calls it as systemd-oomd 260+ does (src/oom/oomd-util.c send_prekill_message(): connect, one
call {"method": "io.systemd.oom.Prekill.Notify", "parameters": {"cgroup": PATH}} ended by a NUL,
wait for the reply or its timeout), and hostile clients try the rest: malformed JSON, a message
with no NUL within the limit, an unknown method, a caller that is not root (the socket's mode
refuses it; with the mode loosened, the peer credentials check still does), a client that connects
and never sends, many clients at once. Every Notify must be answered within prekill_reply_ms (a
generous deadline here; the latencies are printed), and the loop must stay responsive: a pressure
incident is still written meanwhile."""

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (ChildCgroup, LimitedCgroup, ScratchCgroup, check, check_kernel, launch_agent,  # noqa: E402
                    make_file, metric, read_lines, run, spawn, stop_agent, validator, wait_lines, wait_log)

PSIDIAG, WORKLOAD, SCHEMAS = sys.argv[1], sys.argv[2], sys.argv[3]
REPLY_MS = 200
# Generous: the bound is REPLY_MS; a loaded 2-cpu test machine can hold the loop a little longer.
DEADLINE_S = 2.0


def call(path, msg, timeout=DEADLINE_S, raw=None):
    """One Varlink call as sd-varlink makes it: the reply (a dict, None on a hang-up) and the time
    from the send to the reply's NUL."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect(path)
        return exchange(s, msg, raw)
    finally:
        s.close()


def exchange(s, msg, raw=None):
    data = raw if raw is not None else json.dumps(msg).encode() + b"\0"
    t0 = time.monotonic()
    s.sendall(data)
    buf = b""
    while b"\0" not in buf:
        try:
            chunk = s.recv(65536)
        except ConnectionResetError:
            chunk = b""
        if not chunk:
            return None, time.monotonic() - t0
        buf += chunk
    return json.loads(buf[:buf.index(b"\0")]), time.monotonic() - t0


def notify(path, cgroup):
    return call(path, {"method": "io.systemd.oom.Prekill.Notify", "parameters": {"cgroup": cgroup}})


def start_agent(tmp, name, cg, trigger, make_dir=True, node_wide=False, **config):
    hook = os.path.join(tmp, f"{name}.hook")
    if make_dir:
        os.mkdir(hook, 0o755)
    sock = os.path.join(hook, "psidiag")
    a = launch_agent(PSIDIAG, tmp, name, {
        "sample_ms": 500, "cooldown_ms": 0, "metrics_file": os.path.join(tmp, f"{name}.prom"), "kill_log_files": [],
        "prekill_socket": sock, "prekill_reply_ms": REPLY_MS, **config,
        "watch": [{"triggers": [trigger]} if node_wide else {"cgroup": cg.rel, "triggers": [trigger]}]},
        ["--enable-delayacct", "--log-level", "debug"], wait=r"watching:")
    wait_log(a.log, r"serving systemd-oomd's prekill hook" if make_dir else r"prekill hook not served", 10, a.proc)
    return a.proc, sock, a.out, a.prom, a.log


def node_wide(tmp, mount, validate):
    """A node-wide watch (the installed config's) lists no members; while a kill systemd-oomd
    announced is awaited, its cgroup's processes are the members, and a process killed elsewhere
    meanwhile is not among the victims."""
    with ScratchCgroup(mount, "prekillnode") as cg, ScratchCgroup(mount, "prekillother") as other:
        agent, sock, out, prom, log = start_agent(tmp, "node", cg, "memory some 150ms 2s", node_wide=True,
                                                  prekill_wait_s=10)
        try:
            victims = [cg.spawn([WORKLOAD, "sleep", "psidiag-victim"]) for _ in range(2)]
            bystander = other.spawn([WORKLOAD, "sleep", "psidiag-bystander"])
            time.sleep(0.5)
            r, _ = notify(sock, "/" + cg.rel)
            check(r == {"parameters": {}}, f"Notify: {r}")
            time.sleep(0.3)
            bystander.kill()
            with open(os.path.join(cg.path, "cgroup.kill"), "w") as f:
                f.write("1")
            wait_lines(out, lambda ls: any(i["type"] == "kill" for i in ls), 20)
        finally:
            code = stop_agent(agent)
        check(code == 0, f"agent exit {code}")
        kills = kill_incidents(out)
        check(len(kills) == 1, f"kill incidents {len(kills)}:\n{open(log).read()[-2000:]}")
        k = kills[0]["kill"]
        validate(kills[0])
        pids = {v["pid"] for v in k["victims"]}
        check(pids == {p.pid for p in victims} and k["victims_total"] == 2, f"victims {k['victims']}")
        check(all(v["cgroup"] == "/" + cg.rel and v["cmdline"] for v in k["victims"]), f"victims {k['victims']}")
        check(k["killer"]["basis"] == "prekill" and k["prekill"]["outcome"] == "killed", f"kill {k['killer']}")
        print(f"node-wide: {kills[0]['summary']}")


def node_wide_no_kill(tmp, mount, validate):
    """A node-wide watch (the installed config's) told of a kill that does not come: its members
    are the announced cgroup's, refreshed each second while it waits (psidiag 0.9.0 crashed there,
    at the first refresh, on the watch's NULL path), and prekill_wait_s later a no_kill line."""
    with ScratchCgroup(mount, "prekillnone") as cg:
        agent, sock, out, prom, log = start_agent(tmp, "nodenone", cg, "memory some 150ms 2s", node_wide=True,
                                                  prekill_wait_s=3)
        try:
            sleeper = cg.spawn([WORKLOAD, "sleep", "psidiag-sleeper"])
            wait_log(log, r"watching:", 10, agent)
            deadline = time.time() + 10
            while str(sleeper.pid) not in open(os.path.join(cg.path, "cgroup.procs")).read().split():
                check(time.time() < deadline, "the sleeper is not in its cgroup")
                time.sleep(0.05)
            r, _ = notify(sock, "/" + cg.rel)
            check(r == {"parameters": {}}, f"Notify: {r}")
            wait_lines(out, lambda ls: any(i["type"] == "kill" for i in ls) or agent.poll() is not None, 20)
            check(agent.poll() is None, f"the agent exited {agent.returncode} while it waited:\n{open(log).read()[-2000:]}")
        finally:
            code = stop_agent(agent)
        check(code == 0, f"agent exit {code}:\n{open(log).read()[-2000:]}")
        kills = kill_incidents(out)
        check(len(kills) == 1, f"kill incidents {len(kills)}:\n{open(log).read()[-2000:]}")
        validate(kills[0])
        k = kills[0]["kill"]
        check(k["victims_total"] == 0 and k["prekill"]["outcome"] == "no_kill"
              and any(p["pid"] == sleeper.pid for p in k["prekill"]["processes"]), f"kill {k}")
        print(f"node-wide, no kill: {kills[0]['summary']}")


def replaced_no_kill(tmp, mount, validate):
    """An announcement of a second cgroup while the first one's kill is awaited (systemd-oomd 262
    named a slice 15 s after killing its unit): the first gets its no_kill line at once, not
    prekill_wait_s (30 s) later, and is not lost; the second waits for its own kill."""
    with ScratchCgroup(mount, "prekilltwo") as cg, ChildCgroup(cg, "a") as a, ChildCgroup(cg, "b") as b:
        agent, sock, out, prom, log = start_agent(tmp, "two", cg, "memory some 150ms 2s", prekill_wait_s=30)
        try:
            sleepers = [c.spawn([WORKLOAD, "sleep", "psidiag-sleeper"]) for c in (a, b)]
            wait_log(log, r"watching:", 10, agent)
            for c, p in zip((a, b), sleepers):
                deadline = time.time() + 10
                while str(p.pid) not in open(os.path.join(c.path, "cgroup.procs")).read().split():
                    check(time.time() < deadline, f"the sleeper is not in {c.rel}")
                    time.sleep(0.05)
            r, _ = notify(sock, "/" + a.rel)
            check(r == {"parameters": {}}, f"Notify a: {r}")
            r, _ = notify(sock, "/" + b.rel)
            check(r == {"parameters": {}}, f"Notify b: {r}")
            t0 = time.time()
            lines = wait_lines(out, lambda ls: any(i["type"] == "kill" for i in ls), 15)
            waited = time.time() - t0
            kills = [i for i in lines if i["type"] == "kill"]
            check(kills, f"no line for the first announcement within 15 s:\n{open(log).read()[-2000:]}")
        finally:
            code = stop_agent(agent)
        check(code == 0, f"agent exit {code}:\n{open(log).read()[-2000:]}")
        validate(kills[0])
        k = kills[0]["kill"]
        check(k["victims_total"] == 0 and k["prekill"]["outcome"] == "no_kill"
              and k["prekill"]["cgroup"].strip("/") == a.rel
              and any(p["pid"] == sleepers[0].pid for p in k["prekill"]["processes"]), f"first line: {k}")
        # The second, still awaited when the agent stopped, is nobody's line but its own.
        check(all(i["kill"]["prekill"]["cgroup"].strip("/") != a.rel for i in kill_incidents(out)[1:]),
              f"kill lines: {[(i['kill']['prekill'] or {}).get('cgroup') for i in kill_incidents(out)]}")
        print(f"two announcements: the first's line {waited:.1f} s after the second: {kills[0]['summary']}")


def reload_serves(tmp, mount):
    """No directory at start: nothing is served; made later, a reload serves it."""
    with ScratchCgroup(mount, "prekillreload") as cg:
        agent, sock, out, prom, log = start_agent(tmp, "reload", cg, "cpu some 50ms 2s", make_dir=False)
        try:
            check(not os.path.exists(os.path.dirname(sock)), "the agent made the hook's directory")
            os.mkdir(os.path.dirname(sock), 0o755)
            agent.send_signal(signal.SIGHUP)
            wait_log(log, r"serving systemd-oomd's prekill hook", 20, agent)
            r, _ = notify(sock, "/psidiag-it-none")
            check(r == {"parameters": {}}, f"Notify after the reload: {r}")
        finally:
            code = stop_agent(agent)
        check(code == 0 and not os.path.exists(sock), f"agent exit {code}, socket left: {os.path.exists(sock)}")
        print("no directory at start: nothing served; made, then SIGHUP: served")


def as_nobody(code):
    """Runs python code as nobody (setpriv): its stdout."""
    r = subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", sys.executable, "-c", code],
                       capture_output=True, text=True, timeout=30)
    return r.stdout.strip() + r.stderr.strip()


NOBODY_CALL = """
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(5)
try:
    s.connect(sys.argv[1] if len(sys.argv) > 1 else %r)
except OSError as e:
    print("connect:", e.errno); sys.exit()
try:
    s.sendall(b'{"method":"org.varlink.service.GetInfo","parameters":{}}\\0')
    print("reply:", s.recv(4096))
except OSError as e:
    print("reply: error", e.errno)
"""


def hostile(sock, prom, latencies):
    # Malformed JSON: an error reply, and the connection goes on (the next message is taken).
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(DEADLINE_S)
    s.connect(sock)
    r, _ = exchange(s, None, raw=b'{"method": "io.systemd.oom.Prekill.Notify", "parameters": {\0')
    check(r and r.get("error") == "org.varlink.service.InvalidParameter", f"malformed: {r}")
    r, _ = exchange(s, {"method": "org.varlink.service.GetInfo", "parameters": {}})
    check(r and "io.systemd.oom.Prekill" in r["parameters"]["interfaces"], f"GetInfo after malformed: {r}")
    s.close()
    r, _ = call(sock, {"method": "org.varlink.service.GetInterfaceDescription",
                       "parameters": {"interface": "io.systemd.oom.Prekill"}})
    check(r and "method Notify(cgroup: string) -> ()" in r["parameters"]["description"], f"description: {r}")
    r, _ = call(sock, {"method": "io.systemd.oom.Prekill.Kill", "parameters": {}})
    check(r and r.get("error") == "org.varlink.service.MethodNotFound", f"unknown method: {r}")
    r, _ = call(sock, {"method": "io.systemd.oom.Prekill.Notify", "parameters": {"cgroup": "/../etc"}})
    check(r and r.get("error") == "org.varlink.service.InvalidParameter", f"bad cgroup: {r}")
    # 64 KiB without a NUL: an error, then the agent hangs up.
    r, _ = call(sock, None, raw=b"{" + b" " * 65536)
    check(r is None or r.get("error") == "org.varlink.service.InvalidParameter", f"oversized: {r}")
    check(metric(prom, 'psidiag_prekill_calls_total{result="refused"}') >= 4, "refusals not counted")

    # Not root: the socket's mode refuses the connection...
    st = os.stat(sock)
    check(st.st_mode & 0o777 == 0o600 and st.st_uid == 0, f"socket mode {oct(st.st_mode)} uid {st.st_uid}")
    # Every directory on the way open to nobody: the socket's own mode is what refuses.
    for d in (os.path.dirname(os.path.dirname(sock)), os.path.dirname(sock)):
        os.chmod(d, 0o755)
    out = as_nobody(NOBODY_CALL % sock)
    check(out.startswith("connect: 13"), f"nobody connected to the 0600 socket: {out}")
    # ...and with the mode loosened, the peer's credentials do.
    os.chmod(sock, 0o666)
    denied = metric(prom, 'psidiag_prekill_calls_total{result="denied"}')
    out = as_nobody(NOBODY_CALL % sock)
    os.chmod(sock, 0o600)
    check(out.startswith("reply: b''") or out.startswith("reply: error"), f"nobody got an answer: {out}")
    deadline = time.time() + 5
    while metric(prom, 'psidiag_prekill_calls_total{result="denied"}') <= denied and time.time() < deadline:
        time.sleep(0.1)
    check(metric(prom, 'psidiag_prekill_calls_total{result="denied"}') > denied, "the refused caller not counted")

    # Silent clients, more of them than the agent keeps: a Notify is still answered in time.
    silent = []
    for _ in range(40):
        c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        c.connect(sock)
        silent.append(c)
    r, t = notify(sock, "/psidiag-it-none")
    check(r == {"parameters": {}}, f"Notify among silent clients: {r}")
    latencies.append(t)
    # Many callers at once.
    results = []

    def one():
        results.append(notify(sock, "/psidiag-it-none"))
    threads = [threading.Thread(target=one) for _ in range(12)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    for r, t in results:
        check(r == {"parameters": {}}, f"a concurrent Notify got {r}")
        latencies.append(t)
    # A silent client is hung up on after 5 s.
    c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    c.settimeout(15)
    c.connect(sock)
    t0 = time.monotonic()
    check(c.recv(16) == b"", "a silent client got bytes")
    check(time.monotonic() - t0 < 12, "a silent client was kept")
    c.close()
    for c in silent:
        c.close()


def kill_incidents(out):
    return [i for i in read_lines(out) if i["type"] == "kill"]


def prekill_kill(tmp, mount, data, validate, latencies):
    """As systemd-oomd does it: Notify for a thrashing cgroup, then SIGKILL to all of it
    (cgroup.kill); and a Notify for a calm child cgroup that is never killed."""
    with ScratchCgroup(mount, "prekillkill") as cg, LimitedCgroup(mount, cg, "prekillkill", 48 << 20) as lim, \
            ChildCgroup(cg, "calm") as calm:
        agent, sock, out, prom, log = start_agent(tmp, "kill", cg, "memory some 50ms 2s", kill_window_s=60,
                                                  prekill_wait_s=3)
        try:
            # 16 MiB under the 48 MiB limit: room for the sanitizer build's own overhead, so the
            # kernel's OOM killer does not take the grower before systemd-oomd's turn.
            env = dict(os.environ, PSIDIAG_FILE=data, PSIDIAG_ALLOC_MAX_MB="16")
            grower = spawn(cg, [WORKLOAD, "alloc", "grower"], env, lim.extra)
            spawn(cg, [WORKLOAD, "thrash", "psidiag-thrash", "2"], env, lim.extra)
            calm.spawn([WORKLOAD, "sleep", "psidiag-calm"])
            lines = wait_lines(out, lambda ls: any(i["type"] == "pressure" for i in ls), 40)
            check(any(i["type"] == "pressure" for i in lines), f"no pressure incident:\n{open(log).read()[-2000:]}")

            # Announced, never killed: after prekill_wait_s a line says so.
            r, t = notify(sock, "/" + calm.rel)
            check(r == {"parameters": {}}, f"Notify: {r}")
            latencies.append(t)
            wait_lines(out, lambda ls: any(i["type"] == "kill" for i in ls), 20)
            kills = kill_incidents(out)
            check(len(kills) == 1, f"no no_kill line:\n{open(log).read()[-3000:]}")
            nk = kills[0]
            validate(nk)
            check(nk["kill"]["prekill"]["outcome"] == "no_kill" and nk["kill"]["victims_total"] == 0,
                  f"no_kill: {nk['kill']}")
            print(f"no kill: {nk['summary']}")

            # Announced, then killed as systemd-oomd kills (cg_kill_recursive(), SIGKILL; cgroup.kill here).
            # What was alive when it was announced is what must have been measured.
            with open(os.path.join(cg.path, "cgroup.procs")) as f:
                alive = {int(x) for x in f.read().split()}
            check(grower.pid in alive, f"the grower {grower.pid} ended before the Notify (the kernel's OOM killer?): "
                  f"{alive}\n{open(log).read()[-2000:]}")
            r, t = notify(sock, "/" + cg.rel)
            check(r == {"parameters": {}}, f"Notify: {r}")
            latencies.append(t)
            pid = grower.pid
            with open(os.path.join(cg.path, "cgroup.kill"), "w") as f:
                f.write("1")
            wait_lines(out, lambda ls: len([i for i in ls if i["type"] == "kill"]) >= 2, 20)
        finally:
            code = stop_agent(agent)
        check(code == 0, f"agent exit {code}:\n{open(log).read()[-3000:]}")
        kills = kill_incidents(out)
        check(len(kills) >= 2, f"no kill incident:\n{open(log).read()[-3000:]}")
        inc = kills[1]
        validate(inc)
        k = inc["kill"]
        check(k["killer"] and k["killer"]["name"] == "systemd-oomd" and k["killer"]["basis"] == "prekill",
              f"killer {k['killer']}")
        pk = k.get("prekill")
        check(pk and pk["outcome"] == "killed" and pk["cgroup"] == "/" + cg.rel, f"prekill {pk}")
        check(pk["answered_us"] is not None and pk["answered_us"] < REPLY_MS * 1000 * 5, f"answered {pk['answered_us']}")
        procs = {p["pid"]: p for p in pk["processes"]}
        check(pid in procs, f"the grower {pid} not among {list(procs)} (alive at the Notify: {sorted(alive)})")
        g = procs[pid]
        check(g["rss_kib"] and g["rss_kib"] > 1024, f"grower rss {g['rss_kib']}")
        check(any(v for v in (g["delay_total_us"] or {}).values()), f"grower delays {g['delay_total_us']}")
        check(pk["memory"] and pk["memory"]["current_kib"], f"memory {pk['memory']}")
        check(any(v["pid"] == pid for v in k["victims"]), f"victims {k['victims']}")
        check(inc["related"], "no related pressure incident")
        print(f"killed: {inc['summary']}")
        print(f"prekill: answered in {pk['answered_us']} us, {pk['processes_total']} processes, window "
              f"{pk['window_ms']} ms, {pk['before_kill_ms']} ms before the kill; grower rss {g['rss_kib']} KiB, "
              f"delays over the window {g['delay_us']}")


def main():
    mount = check_kernel()
    validate = validator(SCHEMAS)
    tmp = tempfile.mkdtemp(prefix="psidiag-it-")
    os.chmod(tmp, 0o755)  # the non-root caller must reach the socket for its mode to be what refuses
    latencies = []
    with ScratchCgroup(mount, "prekill") as cg:
        agent, sock, out, prom, log = start_agent(tmp, "hook", cg, "cpu some 50ms 2s")
        try:
            for _ in range(20):
                r, t = notify(sock, "/psidiag-it-none")
                check(r == {"parameters": {}}, f"Notify: {r}")
                latencies.append(t)
            # Hostile clients while a cgroup stalls: its incident is written all the same.
            for _ in range(4):
                cg.spawn([WORKLOAD, "spin", "psidiag-spin"])
            hostile(sock, prom, latencies)
            lines = wait_lines(out, lambda ls: any(i["type"] == "pressure" for i in ls), 40)
            check(any(i["type"] == "pressure" for i in lines), f"no pressure incident:\n{open(log).read()[-3000:]}")
            for i in lines:
                validate(i)
            check(agent.poll() is None, "the agent exited")
        finally:
            code = stop_agent(agent)
        check(code == 0, f"agent exit {code}:\n{open(log).read()[-3000:]}")
        check(not os.path.exists(sock), "the socket was left behind")
        counts = {r: metric(prom, 'psidiag_prekill_calls_total{result="%s"}' % r)
                  for r in ("notify", "answered", "refused", "denied", "busy", "idle")}
        print("calls: " + ", ".join(f"{r} {n}" for r, n in counts.items()))
        check(counts["busy"] > 0 and counts["idle"] > 0, f"busy and idle clients not counted: {counts}")
    reload_serves(tmp, mount)
    node_wide(tmp, mount, validate)
    node_wide_no_kill(tmp, mount, validate)
    replaced_no_kill(tmp, mount, validate)
    data = make_file("/var/tmp")
    try:
        prekill_kill(tmp, mount, data, validate, latencies)
    finally:
        os.unlink(data)
    latencies.sort()
    check(latencies[-1] < DEADLINE_S, f"a Notify took {latencies[-1]:.3f} s")
    print(f"Notify answered: {len(latencies)} calls, median {latencies[len(latencies) // 2] * 1000:.2f} ms, "
          f"max {latencies[-1] * 1000:.2f} ms (bound {REPLY_MS} ms)")


if __name__ == "__main__":
    run(main)
