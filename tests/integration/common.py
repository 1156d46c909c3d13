# SPDX-License-Identifier: MIT
"""Shared pieces of the integration tests: skip checks, scratch cgroups that are always removed,
workloads placed in them, and incident validation against schemas/incident.schema.json."""

import json
import os
import re
import signal
import subprocess
import sys
import time

SKIP = 77


def skip(reason):
    print(f"SKIP: {reason}")
    sys.exit(SKIP)


def find_mount(fstype, superopt=None):
    """The first mount point of fstype (whose super options include superopt, if given)."""
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            sep = fields.index("-")
            if fields[sep + 1] == fstype and (superopt is None or superopt in fields[sep + 3].split(",")):
                return fields[4].replace("\\040", " ")
    return None


def cap_eff():
    """Our effective capability mask."""
    with open("/proc/self/status") as f:
        return next(int(l.split()[1], 16) for l in f if l.startswith("CapEff:"))


def check_kernel():
    """Exit 77 with a reason unless the kernel has what the agent needs."""
    if os.geteuid() != 0:
        skip("integration tests need root (they create cgroups)")
    if not os.path.exists("/proc/pressure/cpu"):
        skip("the kernel has no PSI (/proc/pressure is missing; CONFIG_PSI or psi=1 needed)")
    mount = find_mount("cgroup2")
    if not mount:
        skip("no cgroup2 mount in /proc/self/mountinfo")
    if not cap_eff() & (1 << 12):
        skip("no CAP_NET_ADMIN: taskstats requests would be refused")
    return mount


class Failed(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Failed(msg)


def rmdir_retry(path, timeout=30):
    """Removes a cgroup directory, retrying while its last tasks finish exiting (a task killed in
    a memcg at its limit may take seconds on a busy host); raises after timeout."""
    deadline = time.time() + timeout
    while os.path.exists(path):
        try:
            os.rmdir(path)
        except OSError:
            if time.time() > deadline:
                raise
            time.sleep(0.05)


class ScratchCgroup:
    """A cgroup under the cgroup2 mount that is removed, with every task in it killed, on exit."""

    def __init__(self, mount, name):
        self.rel = f"psidiag-it-{name}-{os.getpid()}"
        self.path = os.path.join(mount, self.rel)
        self.procs = []

    def __enter__(self):
        os.mkdir(self.path)
        return self

    def spawn(self, argv, heavy=False, cwd=None):
        """Starts argv in this cgroup (in cwd, when given). heavy: a neighbour that outweighs every
        session beside it.
        Where tasks sit in the cpu controller's root (a host whose cpu controller is cgroup v1, like
        this one), the scheduler shares the cpus between sessions first
        (kernel-facts.md: autogroup), and a service whose processes each start a session
        (PostgreSQL's backends do) takes its share whatever runs beside it: measured here,
        stress-ng on 4 cpus of 2 in the test's own session stalled PostgreSQL's cgroup 3-8% of the
        time, under a 10% trigger. A heavy neighbour runs in a session of its own whose autogroup
        has nice -20: 66-82%."""
        path = self.path

        def enter():
            with open(os.path.join(path, "cgroup.procs"), "w") as f:
                f.write(str(os.getpid()))

        p = subprocess.Popen(argv, preexec_fn=enter, start_new_session=heavy, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, cwd=cwd)
        self.procs.append(p)
        if heavy and os.path.exists(f"/proc/{p.pid}/autogroup"):  # absent: no autogroup, nothing to outweigh
            with open(f"/proc/{p.pid}/autogroup", "w") as f:
                f.write("-20")
        return p

    def kill_all(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.wait()
        self.procs = []
        # Anything else that wandered in.
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                with open(os.path.join(self.path, "cgroup.procs")) as f:
                    pids = [int(x) for x in f.read().split()]
            except FileNotFoundError:
                return
            if not pids:
                return
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.05)

    def remove(self):
        self.kill_all()
        rmdir_retry(self.path)

    def __exit__(self, *exc):
        try:
            self.remove()
        except OSError as e:
            print(f"warning: could not remove {self.path}: {e}", file=sys.stderr)
        return False


class ChildCgroup(ScratchCgroup):
    """A cgroup below another scratch cgroup: created on enter, emptied and removed on exit."""

    def __init__(self, parent, name):
        self.rel = f"{parent.rel}/{name}"
        self.path = os.path.join(parent.path, name)
        self.procs = []


class V1Group:
    """A cgroup-v1 directory (memcg or blkio) that is removed on exit, its tasks moved out first."""

    def __init__(self, mount, name):
        self.path = os.path.join(mount, f"psidiag-it-{name}-{os.getpid()}")

    def __enter__(self):
        os.mkdir(self.path)
        return self

    def __exit__(self, *exc):
        try:
            rmdir_retry(self.path)
        except OSError as e:
            print(f"warning: could not remove {self.path}: {e}", file=sys.stderr)
        return False


def spawn(cg, argv, env, extra_procs=(), executable=None):
    """A workload in the cgroup2 scratch cgroup and in the given v1 cgroup.procs files (run as
    executable with argv as its command line, when given)."""
    paths = [os.path.join(cg.path, "cgroup.procs")] + [os.path.join(p, "cgroup.procs") for p in extra_procs]

    def enter():
        for p in paths:
            with open(p, "w") as f:
                f.write(str(os.getpid()))
    p = subprocess.Popen(argv, executable=executable, preexec_fn=enter, env=env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    cg.procs.append(p)
    return p


def enable_controller(mount, cg, name):
    """cgroup2: enable a controller for the scratch cgroup's parent (the root). False if absent."""
    with open(os.path.join(mount, "cgroup.controllers")) as f:
        if name not in f.read().split():
            return False
    with open(os.path.join(mount, "cgroup.subtree_control"), "w") as f:
        f.write(f"+{name}")
    return os.path.exists(os.path.join(cg.path, f"{name}.max" if name != "io" else "io.max"))


def whole_disk(path):
    """MAJ:MIN and name of the disk holding path (a partition's parent disk)."""
    st = os.stat(path)
    dev = f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
    sysdir = os.path.realpath(f"/sys/dev/block/{dev}")
    if os.path.exists(os.path.join(sysdir, "partition")):
        sysdir = os.path.dirname(sysdir)
        with open(os.path.join(sysdir, "dev")) as f:
            dev = f.read().strip()
    return dev, os.path.basename(sysdir)


def make_file(tmp_dir, size=128 << 20):
    """A file of size bytes on tmp_dir's disk, out of the page cache, for thrash and dio-read."""
    path = os.path.join(tmp_dir, f"psidiag-it-data-{os.getpid()}")
    block = b"\xa5" * (1 << 20)
    with open(path, "wb") as f:
        for _ in range(size >> 20):
            f.write(block)
        f.flush()
        os.fsync(f.fileno())
        # Out of the page cache: cached pages stay charged to whoever wrote them, and the
        # thrasher's cgroup must pay for every page it reads.
        os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
    return path


class V1Fallback:
    """A limit on a scratch cgroup that falls back to a cgroup-v1 directory (v1: its V1Group, None
    on cgroup2): on exit the scratch cgroup's tasks are killed and the v1 directory removed."""

    v1 = None

    def __exit__(self, *exc):
        self.cg.kill_all()
        if self.v1:
            self.v1.__exit__(None, None, None)
        return False


class LimitedCgroup(V1Fallback):
    """A scratch cgroup's memory limit: cgroup2 memory.max where the controller is there, else a
    cgroup-v1 memcg (hybrid hosts) that the workloads join too; no_swap also keeps it off swap.
    extra: the v1 cgroup.procs directories to put tasks in; how: which it was. On exit the
    cgroup's tasks are killed and the memcg removed."""

    def __init__(self, mount, cg, name, limit, no_swap=True):
        self.mount, self.cg, self.name, self.limit, self.no_swap = mount, cg, name, limit, no_swap
        self.memcg, self.extra = None, []

    def __enter__(self):
        if enable_controller(self.mount, self.cg, "memory"):
            with open(os.path.join(self.cg.path, "memory.max"), "w") as f:
                f.write(str(self.limit))
            swap = os.path.join(self.cg.path, "memory.swap.max")
            if self.no_swap and os.path.exists(swap):
                with open(swap, "w") as f:
                    f.write("0")
            self.how = "cgroup2 memory.max"
            return self
        v1 = find_mount("cgroup", "memory")
        check(v1, "neither a cgroup2 memory controller nor a cgroup-v1 memcg")
        self.memcg = self.v1 = V1Group(v1, self.name).__enter__()
        with open(os.path.join(self.memcg.path, "memory.limit_in_bytes"), "w") as f:
            f.write(str(self.limit))
        if self.no_swap:
            with open(os.path.join(self.memcg.path, "memory.swappiness"), "w") as f:
                f.write("0")
        self.extra = [self.memcg.path]
        self.how = f"cgroup-v1 memcg {self.memcg.path}"
        return self


class CpuCappedCgroup(V1Fallback):
    """A scratch cgroup's cpu quota: cgroup2 cpu.max where the controller is there, else a
    cgroup-v1 cpu cgroup's cfs quota (hybrid hosts) that the workloads join too (extra: its
    directory, for spawn()). On exit the cgroup's tasks are killed and the v1 cgroup removed."""

    def __init__(self, mount, cg, name, quota_us, period_us):
        self.mount, self.cg, self.name, self.quota_us, self.period_us = mount, cg, name, quota_us, period_us
        self.group, self.extra = None, []

    def __enter__(self):
        if enable_controller(self.mount, self.cg, "cpu"):
            with open(os.path.join(self.cg.path, "cpu.max"), "w") as f:
                f.write(f"{self.quota_us} {self.period_us}")
            return self
        v1 = find_mount("cgroup", "cpu")
        check(v1, "neither a cgroup2 cpu controller nor a cgroup-v1 cpu mount")
        self.group = self.v1 = V1Group(v1, self.name).__enter__()
        for name, value in (("cpu.cfs_period_us", self.period_us), ("cpu.cfs_quota_us", self.quota_us)):
            with open(os.path.join(self.group.path, name), "w") as f:
                f.write(str(value))
        self.extra = [self.group.path]
        return self


def uncache(path):
    """The data file out of the page cache again: pages a removed memcg charged stay cached (moved
    to its parent), and a thrasher that finds them makes no pressure."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def stop_agent(agent, timeout=10):
    """SIGTERM, then the exit code; killed and None if it does not stop within timeout."""
    if agent.poll() is None:
        agent.send_signal(signal.SIGTERM)
        try:
            return agent.wait(timeout)
        except subprocess.TimeoutExpired:
            agent.kill()
            agent.wait()
            return None
    return agent.returncode


class Agent:
    """An agent launch_agent() started: proc (its Popen), cfg (its config file, None for the
    embedded default), out and prom (its config's output and metrics_file), log (its stderr)."""

    def __init__(self, proc, cfg, out, prom, log):
        self.proc, self.cfg, self.out, self.prom, self.log = proc, cfg, out, prom, log

    def text(self):
        """What the agent has logged so far."""
        return open(self.log).read()

    def alive(self, name="the agent"):
        """For wait_for(alive=...)."""
        return (name, self.proc, self.log)

    def stop(self, timeout=10):
        return stop_agent(self.proc, timeout)


def launch_agent(psidiag, tmp, name, config=None, args=(), wrap=(), wait=None, timeout=60, **popen):
    """The agent `WRAP... psidiag --config TMP/NAME.json ARGS...`, its stderr in TMP/NAME.log. config:
    a dict, written as JSON ("output" defaults to TMP/NAME.ndjson), or a string, written as it is
    (mode 0644);
    None: no --config, the embedded default config. wrap: a command the agent runs under (setpriv
    ...); popen: the rest of Popen's arguments (stdout, env). wait: a pattern the log must show
    (within timeout s; failing, the agent stopped, at once if it exits) before this returns. Returns an
    Agent."""
    cfg = out = prom = None
    argv = [*wrap, psidiag]
    if config is not None:
        cfg = os.path.join(tmp, f"{name}.json")
        if isinstance(config, dict):
            config = {"output": os.path.join(tmp, f"{name}.ndjson"), **config}
            out, prom = config["output"], config.get("metrics_file")
            text = json.dumps(config)
        else:
            text = config
        with open(cfg, "w") as f:
            f.write(text)
        os.chmod(cfg, 0o644)  # whatever the umask: readable by an agent that runs as another user
        argv += ["--config", cfg]
    log = os.path.join(tmp, f"{name}.log")
    with open(log, "w") as err:
        proc = subprocess.Popen(argv + list(args), stderr=err, **popen)
    agent = Agent(proc, cfg, out, prom, log)
    if wait:
        try:
            wait_log(log, wait, timeout, proc)
        except Failed:
            agent.stop()
            raise
    return agent


def start_watching(psidiag, tmp, cg, name, trigger, **config):
    """The agent with one watch of cg for trigger (and delay accounting on), once it says it is
    watching: tasks started before delay accounting was on would report no delays. Returns the
    process, its output file and its log. A slow machine gets a generous deadline."""
    a = launch_agent(psidiag, tmp, name, {"sample_ms": 1000, "cooldown_ms": 0, **config,
                                          "watch": [{"cgroup": cg.rel, "triggers": [trigger]}]},
                     ["--enable-delayacct"], wait="watching:")
    return a.proc, a.out, a.log


def wait_for(what, fn, timeout, interval=0.5, alive=(), log=None):
    """Polls fn() until it returns something true and returns that; a fn that raises OSError or
    ValueError (a file not written yet, a line cut mid-write) has not succeeded yet. Fails after
    timeout with what, fn's last answer and the tail of log (a path, when given); and at once when
    a process of alive ((name, Popen, log path) triples) has exited."""
    deadline, last = time.time() + timeout, None
    while True:
        for name, p, plog in alive:
            check(p.poll() is None, f"{name} exited {p.returncode}:\n{open(plog).read()[-2000:]}")
        try:
            last = fn()
            if last:
                return last
        except (OSError, ValueError) as e:
            last = e
        if time.time() >= deadline:
            break
        time.sleep(interval)
    tail = f"\n{open(log).read()[-3000:]}" if log else ""
    raise Failed(f"timed out after {timeout} s waiting for {what}; last: {str(last)[:1500]}{tail}")


def wait_log(path, pattern, timeout, agent=None, start=0):
    """Polls the log at path (from its offset start on) until pattern matches and returns the
    match; fails after timeout, or as soon as agent (a Popen, when given) has exited."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        m = re.search(pattern, open(path).read()[start:])
        if m:
            return m
        check(agent is None or agent.poll() is None, f"the agent exited:\n{open(path).read()[-3000:]}")
        time.sleep(0.05)
    check(False, f"no {pattern!r} within {timeout} s:\n{open(path).read()[-3000:]}")


def wait_lines(path, pred=bool, timeout=40):
    """Polls the incident lines of path until pred(lines) holds or timeout runs out; returns what
    was read last."""
    deadline = time.time() + timeout
    while True:
        lines = read_lines(path)
        if pred(lines) or time.time() >= deadline:
            return lines
        time.sleep(0.25)


def wait_incident(agent, out, err_path, timeout=40):
    """Waits for the agent's first incident in out, stops the agent, and returns every incident."""
    try:
        wait_lines(out, timeout=timeout)
    finally:
        stop_agent(agent)
    incidents = read_lines(out)
    check(incidents, f"no incident within {timeout} s:\n{open(err_path).read()}")
    return incidents


def validator(schema_dir):
    try:
        import jsonschema
    except ImportError:
        raise Failed("python3-jsonschema is missing (scripts/test installs it)")
    with open(os.path.join(schema_dir, "incident.schema.json")) as f:
        schema = json.load(f)
    jsonschema.Draft202012Validator.check_schema(schema)
    v = jsonschema.Draft202012Validator(schema)

    def validate(incident):
        errors = sorted(v.iter_errors(incident), key=lambda e: list(e.path))
        if errors:
            raise Failed("incident does not match the schema: " +
                         "; ".join(f"{list(e.path)}: {e.message}" for e in errors[:5]))
    return validate


def read_lines(path):
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return []
    # Only whole lines: the agent writes each incident with one write(2), but a read of a regular
    # file can see part of a write in progress (a page of a long line): the tail without its
    # newline is not a line yet.
    return [json.loads(l) for l in data.split(b"\n")[:-1] if l]


def sh(argv, timeout=60, **kw):
    """argv run to its end, its output captured as text."""
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, **kw)


def snapshot(psidiag, *args, timeout=120):
    """`psidiag snapshot ARGS...`: checks that it exits 0 and prints one line, and returns the
    incident."""
    p = subprocess.run([psidiag, "snapshot", *args], capture_output=True, timeout=timeout)
    check(p.returncode == 0, f"snapshot {args} exited {p.returncode}: {p.stderr.decode(errors='replace')[-2000:]}")
    lines = p.stdout.split(b"\n")
    check(len(lines) == 2 and lines[1] == b"", f"snapshot {args} printed {len(lines) - 1} lines")
    return json.loads(lines[0])


def snapshot_of(psidiag, cg, resource, ms=1000, top=5):
    """A snapshot of the scratch cgroup cg ranked by resource, over ms."""
    return snapshot(psidiag, cg.rel, "--resource", resource, "--sample-ms", str(ms), "--top", str(top),
                    timeout=ms / 1000 + 60)


def lines_where(path, pred):
    """The incident lines of path when pred(lines) holds, else None: for wait_for()."""
    lines = read_lines(path)
    return lines if pred(lines) else None


def metric(path, series):
    """The value of one series (its name and labels as the agent writes them, e.g.
    'psidiag_incidents_suppressed_total{reason="rate_limit"}') in the agent's metrics file, as an
    integer: 0 while the file or the series is not there yet."""
    try:
        with open(path) as f:
            for line in f:
                if line.startswith(series + " "):
                    return int(line.split()[-1])
    except FileNotFoundError:
        pass
    return 0


DELAYACCT = "/proc/sys/kernel/task_delayacct"


def run(main):
    """Runs a test; kernel.task_delayacct (which --enable-delayacct changes) is put back as it was."""
    try:
        with open(DELAYACCT) as f:
            delayacct = f.read()
    except OSError:
        delayacct = None
    try:
        main()
    except Failed as e:
        print(f"FAIL: {e}")
        sys.exit(1)
    finally:
        if delayacct is not None:
            try:
                with open(DELAYACCT, "w") as f:
                    f.write(delayacct)
            except OSError as e:
                print(f"warning: could not restore {DELAYACCT}: {e}", file=sys.stderr)
    print("PASS")
