#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Real software as the stalled service: PostgreSQL under its own benchmark client (pgbench, a
steady read-only load at a fixed rate) in a scratch cgroup, with the agent watching that cgroup's
cpu pressure, and real neighbours in a sibling cgroup (the cpu ones heavy: sessions of their own that
outweigh the database's, see ScratchCgroup.spawn in common.py):

1. stress-ng spinning on more cpus than the node has: the incident names a postgres or pgbench
   process of the database's cgroup as the most delayed, stress-ng (pid, cgroup) as the first
   culprit, the neighbour's cgroup as the first culprit cgroup, "contention" as the cpu verdict,
   and says so in its summary.
2. A compiler storm (make -j4 over generated C files, gcc's cc1 processes coming and going): the
   first culprit is the aggregate of the ended cc1 processes in the build's cgroup.
3. fio writing with O_DIRECT beside the database's commits (pgbench's write transactions), an io
   trigger on the database: the most delayed is a postgres or pgbench process waiting for io, fio
   in the neighbour's cgroup is the first culprit there, the node's disk is named (limits.io) and
   the summary says both.
4. A buffered writer (dd without O_DIRECT) beside the same commits: its writes land in the page
   cache and the flusher writes them later, behind which the database's fsyncs wait. The first
   culprit is the dd, whose bytes the summary says it dirtied, with the node's writeback
   (limits.io.writeback: kernel-facts.md: writeback).

Before each neighbour starts, the agent is started anew on the database's cgroup, which by then
has stall history (pgbench's start, the previous neighbour): no incident may come for three
windows (kernel-facts.md: trigger-history). The database runs as the postgres user from a scratch
data directory on a Unix socket of its own (no TCP), and is stopped and removed, with every cgroup,
whatever happens."""

import glob
import re
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (ScratchCgroup, check, check_kernel, read_lines, run, stop_agent,  # noqa: E402
                    start_watching, validator, wait_lines, whole_disk)

PSIDIAG, WORKLOAD, SCHEMAS = sys.argv[1:4]
TRIGGER, WINDOW_S = "cpu some 10% 2s", 2
NCPU = os.cpu_count() or 2


def pg_bin():
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"), key=lambda p: int(p.split("/")[4]))
    check(found, "PostgreSQL is not installed (scripts/test installs postgresql-15)")
    return os.path.dirname(found[-1])


def need(cmd, package):
    check(shutil.which(cmd), f"{cmd} is missing (scripts/test installs {package})")


class Postgres:
    """A PostgreSQL server in cg, as the postgres user, data and socket in a scratch directory."""

    # No io of the server's own making while a stage waits for quiet. One CI run's fio stage, 28 s
    # in, met pgbench's initialisation being written back (dirty for 30 s, then the flusher's) and
    # postgres evicting dirty buffers from 64 MiB of shared buffers: postgres dirtied 28.8 MiB in
    # the 1 s sample and waited behind 86.9 MiB of the node's writeback, a true incident before fio
    # started. So shared buffers hold the whole database (scale 5, about 80 MiB), no checkpoint
    # comes by time or by the WAL's size, no autovacuum; the io stages checkpoint first (settle).
    QUIET = ["-c", "shared_buffers=256MB", "-c", "checkpoint_timeout=1d", "-c", "max_wal_size=4GB",
             "-c", "autovacuum=off"]

    def __init__(self, cg, tmp):
        self.bin, self.cg = pg_bin(), cg
        self.dir = tempfile.mkdtemp(prefix="psidiag-it-pg-", dir=tmp)
        self.port = 40000 + os.getpid() % 20000
        self.user = pwd.getpwnam("postgres")
        os.chown(self.dir, self.user.pw_uid, self.user.pw_gid)
        self.server = None

    def preexec(self, cg=None):
        """Runs in the child: joins cg (as root), then becomes the postgres user."""
        uid, gid = self.user.pw_uid, self.user.pw_gid

        def fn():
            if cg is not None:
                with open(os.path.join(cg.path, "cgroup.procs"), "w") as f:
                    f.write(str(os.getpid()))
            os.setgroups([])
            os.setgid(gid)
            os.setuid(uid)
        return fn

    def env(self):
        return {"PATH": "/usr/bin:/bin", "PGHOST": self.dir, "PGPORT": str(self.port), "PGUSER": "postgres",
                "LC_ALL": "C"}

    def start(self):
        data = os.path.join(self.dir, "data")
        r = subprocess.run([f"{self.bin}/initdb", "-D", data, "-A", "trust", "-U", "postgres", "--no-sync", "-E",
                            "UTF8"], preexec_fn=self.preexec(), capture_output=True, text=True, env=self.env(),
                           cwd=self.dir, timeout=180)
        check(r.returncode == 0, f"initdb: {r.stderr[-2000:]}")
        self.log = os.path.join(self.dir, "server.log")
        log = open(self.log, "w")
        self.server = subprocess.Popen(
            [f"{self.bin}/postgres", "-D", data, "-k", self.dir, "-p", str(self.port), "-c", "listen_addresses=",
             "-c", "max_connections=20"] + self.QUIET,
            preexec_fn=self.preexec(self.cg), stdout=log, stderr=log, env=self.env(), cwd=self.dir)
        self.cg.procs.append(self.server)
        deadline = time.time() + 120
        while subprocess.run([f"{self.bin}/pg_isready", "-q"], env=self.env()).returncode != 0:
            check(self.server.poll() is None, f"postgres exited:\n{open(self.log).read()[-2000:]}")
            check(time.time() < deadline, f"postgres not ready in 120 s:\n{open(self.log).read()[-2000:]}")
            time.sleep(0.2)

    def settle(self):
        """A checkpoint now, then the node's dirty pages written: the database's and the node's
        writeback done before an io stage arms."""
        r = subprocess.run([f"{self.bin}/psql", "-q", "-c", "CHECKPOINT"], preexec_fn=self.preexec(),
                           capture_output=True, text=True, env=self.env(), cwd=self.dir, timeout=300)
        check(r.returncode == 0, f"psql CHECKPOINT: {r.stderr[-2000:]}")
        os.sync()

    def pgbench(self, args, cg=None):
        argv = [f"{self.bin}/pgbench"] + args
        if cg is None:
            r = subprocess.run(argv, preexec_fn=self.preexec(), capture_output=True, text=True, env=self.env(),
                               cwd=self.dir, timeout=600)
            check(r.returncode == 0, f"pgbench {args}: {r.stderr[-2000:]}")
            return None
        p = subprocess.Popen(argv, preexec_fn=self.preexec(cg), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             env=self.env(), cwd=self.dir)
        cg.procs.append(p)
        return p

    def stop(self):
        if self.server and self.server.poll() is None:
            self.server.send_signal(signal.SIGINT)  # fast shutdown
            try:
                self.server.wait(60)
            except subprocess.TimeoutExpired:
                self.server.kill()
                self.server.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def make_project(tmp):
    """C sources that take gcc about 100 ms of cpu each at -O2, and a Makefile that builds them: short
    enough that cc1s start and end inside a 1 s sample even with the database sharing 2 cpus."""
    src = tempfile.mkdtemp(prefix="psidiag-it-build-", dir=tmp)
    for i in range(32):
        with open(os.path.join(src, f"f{i}.c"), "w") as f:
            for j in range(20):
                f.write(f"int f{i}_{j}(int *a, int n) {{ int s = {j}; for (int k = 0; k < n; k++) "
                        f"{{ s += a[k] * {j + 1} ^ (s >> 3); if (s & 1) s -= a[(k * 7) % n]; }} return s; }}\n")
    objs = " ".join(f"f{i}.o" for i in range(32))
    with open(os.path.join(src, "Makefile"), "w") as f:
        f.write(f"all: {objs}\n%.o: %.c\n\tgcc -O2 -c $< -o $@\n")
    return src


def dd_mib(tmp):
    """A file size in MiB a quarter of the way from the node's background dirty threshold to its
    hard one (/proc/vmstat, pages; below the middle the dds are not throttled), at least 2 GiB,
    leaving a quarter of the scratch file system free."""
    v = dict(l.split() for l in open("/proc/vmstat"))
    bg, hard = int(v["nr_dirty_background_threshold"]), int(v["nr_dirty_threshold"])
    want = max(2048, (3 * bg + hard) // 4 * 4096 >> 20)
    st = os.statvfs(tmp)
    room = st.f_bavail * st.f_frsize * 3 // 4 >> 20
    check(room >= 2048, f"{room} MiB free in {tmp}: the writeback stage needs 2 GiB or more")
    return min(want, room)


def quiet_then_incident(tmp, db, name, start_neighbour, validate, trigger=TRIGGER):
    """The agent armed anew on db: nothing for three windows, then the neighbour's incident."""
    agent, out, log = start_watching(PSIDIAG, tmp, db, name, trigger, top=5)
    try:
        armed = time.time()
        while time.time() - armed < 3 * WINDOW_S + 1:
            early = read_lines(out)
            check(not early, f"{name}: an incident before the neighbour started (a false incident on the "
                  f"database's stall history?): {early[0].get('summary') if early else ''}")
            check(agent.poll() is None, f"the agent exited:\n{open(log).read()}")
            time.sleep(0.2)
        start_neighbour()
        lines = wait_lines(out, lambda ls: any(l.get("culprits") for l in ls), timeout=90)
    finally:
        stop_agent(agent)
    incidents = [l for l in lines if l.get("culprits")]
    check(incidents, f"{name}: no incident within 90 s of the neighbour's start:\n{open(log).read()[-3000:]}")
    inc = incidents[0]
    validate(inc)
    return inc


def check_victim(inc, db):
    top = inc["most_delayed"]
    check(top and top[0]["comm"] in ("postgres", "pgbench") and top[0]["cgroup"] == "/" + db.rel
          and top[0]["delay_us"]["cpu"] > 0, f"the most delayed is not the database's: "
          f"{[(p['comm'], p['cgroup'], p['delay_us']['cpu']) for p in top]}")
    check(inc["summary"].startswith(f"{top[0]['comm']} (/{db.rel}) waited "), f"summary: {inc['summary']!r}")
    check(inc["limits"]["cpu"]["verdict"] == "contention", f"limits.cpu: {inc['limits']['cpu']}")


def main():
    mount = check_kernel()
    need("runuser", "util-linux")
    need("stress-ng", "stress-ng")
    need("make", "make")
    need("gcc", "gcc")
    need("fio", "fio")
    validate = validator(SCHEMAS)
    tmp = tempfile.mkdtemp(prefix="psidiag-it-rw-")
    os.chmod(tmp, 0o755)
    try:
        with ScratchCgroup(mount, "db") as db, ScratchCgroup(mount, "batch") as batch, \
                ScratchCgroup(mount, "build") as build:
            pg = Postgres(db, tmp)
            try:
                stages(pg, db, batch, build, tmp, validate)
            finally:
                pg.stop()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def stages(pg, db, batch, build, tmp, validate):
    pg.start()
    pg.pgbench(["-i", "-q", "-s", "5"])
    # A steady read-only load at a fixed rate: busy, but not stalled on its own.
    pg.pgbench(["-c", "4", "-j", "2", "-T", "600", "-S", "-R", "400"], cg=db)

    def stress():
        batch.spawn(["stress-ng", "--cpu", str(NCPU + 2), "--timeout", "300"], heavy=True)
    inc = quiet_then_incident(tmp, db, "stress", stress, validate)
    check_victim(inc, db)
    c = inc["culprits"]
    check(c["cgroups"][0]["path"] == "/" + batch.rel and c["dominant"], f"culprit cgroups: {c['cgroups']}")
    # The dominant cgroup's top process is the one the summary names.
    first = next((p for p in c["processes"] if p["cgroup"] == "/" + batch.rel), None)
    check(first and first["comm"].startswith("stress-ng") and first["pid"] and not first["victim"],
          f"culprit processes: {[(p['comm'], p['cgroup']) for p in c['processes']]}")
    # Its workers are one program (psidiag 0.12): "stress-ng (/batch, 4 processes) used".
    named = (f"{first['comm']} (/{batch.rel}, {first['processes']} processes" if first["processes"] > 1
             else f"{first['comm']} (/{batch.rel}, pid {first['pid']}) used ")
    check(first["processes"] > 1 and first["pids"][0] == first["pid"], f"stress-ng's workers are not one: {first}")
    check(named in inc["summary"], f"the summary does not name stress-ng: {inc['summary']!r}")
    print(f"stress-ng: {inc['summary']}")
    batch.kill_all()

    src = make_project(tmp)

    def storm():
        build.spawn(["sh", "-c", f"cd {src} && while :; do make -s -B -j4 >/dev/null 2>&1; done"], heavy=True)
    inc = quiet_then_incident(tmp, db, "storm", storm, validate)
    check_victim(inc, db)
    c = inc["culprits"]
    check(c["cgroups"][0]["path"] == "/" + build.rel, f"culprit cgroups: {c['cgroups']}")
    # The compilers end during the sample: they are one program with those still running at its end
    # (psidiag 0.12), and an entry of those that started in it names the live process spawning them.
    cc1 = [p for p in c["processes"] if p["comm"] == "cc1" and p["cgroup"] == "/" + build.rel]
    listed = [(p["comm"], p["pid"], p["processes"], p["ended_processes"], p.get("spawner")) for p in c["processes"]]
    check(len(cc1) == 1 and cc1[0]["ended_processes"] >= 2, f"no one program of ended cc1s: {listed}")
    for agg in (p for p in cc1 if p["pid"] is None):
        check(agg["spawner"] and agg["spawner"]["comm"] in ("gcc", "make", "sh"), f"aggregate without spawner: {listed}")
    print(f"compiler storm: {inc['summary']}")
    build.kill_all()

    # 3. io: the database commits (pgbench's write transactions, each an fsync of the WAL) while
    # fio writes with O_DIRECT beside it; an io trigger on the database's cgroup.
    # Measured here: pgbench alone waits about 2% of the time for io; beside fio, about 50%.
    pg.settle()
    pg.pgbench(["-c", "2", "-j", "1", "-T", "600", "-N", "-R", "200"], cg=db)
    data = os.path.join(tmp, "fio-data")

    def fio():
        batch.spawn(["fio", "--name=psidiag-neighbour", f"--filename={data}", "--size=256M", "--rw=write",
                     "--bs=1M", "--direct=1", "--ioengine=libaio", "--iodepth=64", "--numjobs=4", "--fsync=4",
                     "--time_based", "--runtime=300", "--group_reporting"])
    inc = quiet_then_incident(tmp, db, "fio", fio, validate, trigger="io some 10% 2s")
    top = inc["most_delayed"]
    check(top and top[0]["comm"] in ("postgres", "pgbench") and top[0]["cgroup"] == "/" + db.rel
          and top[0]["delay_us"]["blkio"] > 0, f"the most delayed is not the database's, waiting for io: "
          f"{[(p['comm'], p['cgroup'], p['delay_us']['blkio']) for p in top]}")
    c = inc["culprits"]
    check(c["resource"] == "io" and c["cgroups"][0]["path"] == "/" + batch.rel, f"culprit cgroups: {c['cgroups']}")
    fios = [p for p in c["processes"] if p["cgroup"] == "/" + batch.rel]
    check(fios and fios[0]["comm"] == "fio" and fios[0]["usage"]["write_bytes"] > 1 << 20,
          f"culprit processes: {[(p['comm'], p['cgroup'], p['usage']) for p in c['processes']]}")
    io = inc["limits"]["io"]
    dev = whole_disk(tmp)[1]
    check(io and dev in {d["device"] for d in io["node_devices"] or []}, f"limits.io: {io}")
    check(" for io on " in inc["summary"] and " fio (/" in inc["summary"], f"summary: {inc['summary']!r}")
    print(f"fio: {inc['summary']}")
    batch.kill_all()
    os.unlink(data)

    # 4. writeback: buffered dds beside the same commits, one after another over the same file
    # (conv=notrunc: the pages stay, dirtied again as the flusher cleans them), so that dirtying
    # goes on whenever the incident comes. A single dd of 4 GiB had ended, its pages still queued,
    # before one CI run's incident: then nothing in the window had dirtied them. The file is larger
    # than the node's background dirty threshold (and below the hard one), so the flusher writes
    # from the first pass on and the dds dirty again what it cleans: over 2 GiB, under this host's
    # 2.26 GiB threshold, nothing was written back for 30 s (dirty_expire_centisecs), a page
    # dirtied again while still dirty counts no write_bytes, and one ASan run's first incident had
    # only the database's own writes in its sample.
    big = os.path.join(tmp, "dd-data")
    mib = dd_mib(tmp)
    pg.settle()

    def dd():
        batch.spawn(["sh", "-c", f"while :; do dd if=/dev/zero of={big} bs=1M count={mib} conv=notrunc status=none; done"])
    inc = quiet_then_incident(tmp, db, "dd", dd, validate, trigger="io some 10% 2s")
    c = inc["culprits"]
    dds = [p for p in c["processes"] if p["cgroup"] == "/" + batch.rel]
    check(c["cgroups"][0]["path"] == "/" + batch.rel and dds and dds[0]["comm"] == "dd"
          and dds[0]["usage"]["write_bytes"] > 1 << 20,
          f"culprits: {[(p['comm'], p['cgroup'], p['usage']) for p in c['processes']]}, cgroups {c['cgroups']}")
    wb = inc["limits"]["io"]["writeback"]
    check(wb and wb["dirty_bytes"] + wb["writeback_bytes"] >= 32 << 20, f"limits.io.writeback: {wb}")
    # A live dd ("dd (/batch, pid N) dirtied"), the ones that ended in the sample ("2 dd processes
    # (/batch, ended) dirtied"), or both, one program ("dd (/batch, 3 processes, 2 ended) dirtied").
    check(re.search(rf"dd (processes )?\(/{re.escape(batch.rel)}(, pid \d+)?(, \d+ processes)?(, \d+ ended)?(, ended)?\)"
                    " dirtied ", inc["summary"]),
          f"summary: {inc['summary']!r}")
    print(f"dd: {inc['summary']}")
    batch.kill_all()
    os.unlink(big)


run(main)
