#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Culprits on the real kernel: who is causing the pressure, with a trigger on the stalled
service's cgroup each time.
1. cpu: a busy service worker beside a sibling "batch" cgroup whose one process spins on 4
   threads: the first culprit process is the batch spinner, the first culprit cgroup is batch,
   the scope is the node, and the numbers are physically possible.
2. A fork storm in a sibling cgroup (children living 100 ms of cpu each, a build's compilers):
   its cgroup is the first culprit cgroup (its counters include the ended children) and its
   children are one aggregate, by comm, with a count.
3. memory: in one memory-limited cgroup, a grower beside a page-cache reader and an idle process:
   the scope is that cgroup with its limit, and the grower is the first culprit.
   The storm's children are short-lived gccs that each run a cc1: the cc1s' aggregate names their
   spawner, the live make behind the ended gccs.
4. oom: a grower that the OOM killer ends in the middle of a snapshot of its 48 MiB cgroup stays
   the first memory culprit, with its pid, ended, and the size its exit record says it reached.
5. writers: a storm of short writers (each writes and syncs 4 MiB, then ends): their aggregate has
   the bytes (from their exit records) and names their parent as spawner."""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (Failed, LimitedCgroup, ScratchCgroup, check, check_kernel, make_file, run,  # noqa: E402
                    snapshot_of, spawn, start_watching, stop_agent, validator, wait_lines)

PSIDIAG, WORKLOAD, SCHEMAS = sys.argv[1:4]
NCPU = os.cpu_count() or 1


def first_with_culprits(agent, out, log, timeout=60):
    try:
        lines = wait_lines(out, lambda ls: any(l.get("culprits") for l in ls), timeout)
    finally:
        stop_agent(agent)
    withc = [l for l in lines if l.get("culprits")]
    check(withc, f"no incident with culprits within {timeout} s:\n{open(log).read()[-3000:]}")
    return withc[0]


def plausible(inc):
    """Shares in 0..1; a cgroup or the total never above every core of the sample (10% slack for
    the sample's edges)."""
    c = inc["culprits"]
    dur_us = inc["sample"]["duration_ms"] * 1000
    for e in c["processes"] + c["cgroups"]:
        check(0 <= e["share"] <= 1, f"share out of range: {e}")
        if "cpu_us" in e["usage"]:
            check(e["usage"]["cpu_us"] <= dur_us * NCPU * 1.1, f"more cpu than the node has: {e}")
    victims = {p["pid"] for p in inc["most_delayed"]}
    for p in c["processes"]:
        # A program (psidiag 0.12) is a victim when one of its processes is: a live one (pids), or
        # one that ended (not listed).
        live = p["pid"] in victims or any(x in victims for x in p["pids"])
        check(p["victim"] == live or (p["victim"] and p["ended_processes"] > 0),
              f"victim flag wrong: {p['pid']} {p['pids']} {p['victim']}")
        check(p["pid"] is None or not p["pids"] or p["pid"] == p["pids"][0], f"pid not the first of pids: {p}")


def describe(c):
    return ([(p["pid"], p["comm"], p["cgroup"], p["processes"], p["usage"], round(p["share"], 3))
             for p in c["processes"]],
            [(g["path"], g["source"], g["usage"], round(g["share"], 3)) for g in c["cgroups"]])


def check_summary(inc, victim, culprit):
    """The sentence names the stalled process first and, when culprits.dominant, the culprit; when
    no cgroup dominates, it says so instead."""
    s, c = inc["summary"], inc["culprits"]
    check(s.startswith(victim), f"summary does not start with {victim!r}: {s!r}")
    if c["dominant"]:
        check(culprit in s, f"summary does not name the culprit {culprit!r}: {s!r}")
    elif inc["window"]["verdict"] == "passed":
        # A wakeup after the stall (it can come up to 2 s late): no culprit named, and it says why.
        check("the stall had passed before the sample" in s, f"summary: {s!r}, window {inc['window']}")
    else:
        check("no dominant culprit" in s and c["cgroups"][0]["share"] < 0.5, f"summary: {s!r}, culprits {c['cgroups']}")
    print(f"  summary: {s}")


def cpu_neighbour(mount, tmp, validate):
    with ScratchCgroup(mount, "cul-svc") as svc, ScratchCgroup(mount, "cul-batch") as batch:
        worker = svc.spawn([WORKLOAD, "spin", "svc-worker"])
        agent, out, log = start_watching(PSIDIAG, tmp, svc, "cpu", "cpu some 50ms 2s", top=5)
        spinner = batch.spawn([WORKLOAD, "spin", "batch-spin", "4"])
        inc = first_with_culprits(agent, out, log)
        validate(inc)
        c = inc["culprits"]
        check(c["resource"] == "cpu" and c["scope"] == "/" and c["limit"] is None and not c["own_limit"],
              f"scope: {c['scope']} {c['limit']} {c['own_limit']}")
        procs, cgroups = describe(c)
        first = c["processes"][0]
        check(first["pid"] == spinner.pid and "batch-spin" in (first["cmdline"] or "")
              and first["cgroup"] == "/" + batch.rel and not first["victim"], f"culprit processes: {procs}")
        check(first["share"] > 0.2, f"the spinner's share: {first['share']}")
        check(c["cgroups"] and c["cgroups"][0]["path"] == "/" + batch.rel and c["cgroups"][0]["source"] == "cgroup",
              f"culprit cgroups: {cgroups}")
        dur_us = inc["sample"]["duration_ms"] * 1000
        for p in c["processes"]:
            if p["pid"] == worker.pid:  # one thread: never above one cpu of the sample
                check(p["usage"]["cpu_us"] <= dur_us * 1.1, f"a one-thread spinner above one cpu: {p}")
                check(p["victim"], "the stalled worker is not flagged a victim")
        # The scheduler's run time, not utime + stime sampled at the tick (kernel-facts.md:
        # cpu-run-time): tick figures are all whole milliseconds (HZ <= 1000).
        used = [p["usage"]["cpu_us"] for p in c["processes"] if p["usage"]["cpu_us"]]
        check(len(used) < 2 or any(u % 1000 for u in used), f"cpu_us all whole milliseconds, tick-sampled: {used}")
        plausible(inc)
        check_summary(inc, f"svc-worker (/{svc.rel}) waited ", f": batch-spin (/{batch.rel}, pid {spinner.pid}) used ")
        print(f"cpu: {procs[0]}, cgroup {cgroups[0]}")


def fork_storm(mount, tmp, validate):
    with ScratchCgroup(mount, "cul-svc2") as svc, ScratchCgroup(mount, "cul-build") as build:
        svc.spawn([WORKLOAD, "spin", "svc-worker"])
        agent, out, log = start_watching(PSIDIAG, tmp, svc, "storm", "cpu some 50ms 2s", top=5)
        # make -> gcc (short-lived) -> cc1: the cc1s' spawner is the make behind their gone gccs.
        env = dict(os.environ, PSIDIAG_STORM_VIA="psidiag-gcc", PSIDIAG_STORM_PARENT="psidiag-make")
        make = spawn(build, [WORKLOAD, "storm", "psidiag-cc1", "4"], env)
        inc = first_with_culprits(agent, out, log)
        validate(inc)
        c = inc["culprits"]
        procs, cgroups = describe(c)
        check(c["cgroups"] and c["cgroups"][0]["path"] == "/" + build.rel and c["cgroups"][0]["source"] == "cgroup",
              f"culprit cgroups: {cgroups}")
        # The cc1s are one program (psidiag 0.12): those that came and went, and the one still
        # running at the end when one is (its pid then the entry's).
        first = c["processes"][0]
        check(first["comm"] == "psidiag-cc1" and first["cgroup"] == "/" + build.rel and first["ended_processes"] >= 2
              and first["processes"] == first["ended_processes"] + len(first["pids"])
              and (first["pid"] is None) == first["ended"] == (not first["pids"]), f"culprit processes: {procs}")
        check(make.poll() is None, "the storm's parent died")
        sp = first["spawner"]
        check(sp and sp["pid"] == make.pid and sp["comm"] == "psidiag-make" and "storm" in (sp["cmdline"] or "")
              and 1 <= sp["processes"] <= first["processes"] and sp["processes"] * 2 > first["processes"],
              f"the cc1s' spawner: {sp}, make {make.pid}")
        plausible(inc)
        n, ended = first["processes"], first["ended_processes"]
        check_summary(inc, "svc-worker (/", f" {n} psidiag-cc1 processes (/{build.rel}, ended) used " if first["ended"]
                      else f" psidiag-cc1 (/{build.rel}, {n} processes, {ended} ended) used ")
        print(f"storm: {procs[0]}, cgroup {cgroups[0]}")


def memory_grower(mount, tmp, validate):
    limit = 160 << 20
    data = make_file(tmp, 96 << 20)
    try:
        with ScratchCgroup(mount, "cul-mem") as cg, LimitedCgroup(mount, cg, "cul-mem", limit) as lim:
            env = dict(os.environ, PSIDIAG_FILE=data, PSIDIAG_ALLOC_MS="40", PSIDIAG_ALLOC_MAX_MB="110")
            spawn(cg, [WORKLOAD, "sleep", "psidiag-idle"], env, lim.extra)
            reader = spawn(cg, [WORKLOAD, "thrash", "psidiag-reader"], env, lim.extra)
            agent, out, log = start_watching(PSIDIAG, tmp, cg, "mem", "memory some 50ms 2s", top=5)
            grower = spawn(cg, [WORKLOAD, "alloc", "psidiag-grower"], env, lim.extra)
            inc = first_with_culprits(agent, out, log, timeout=90)
            validate(inc)
            c = inc["culprits"]
            procs, cgroups = describe(c)
            check(c["resource"] == "memory" and c["scope"] == "/" + cg.rel, f"scope {c['scope']} ({lim.how})")
            check(c["limit"] and c["limit"]["bytes"] == limit
                  and c["limit"]["file"] in ("memory.max", "memory.limit_in_bytes"), f"limit {c['limit']}")
            first = c["processes"][0]
            check(first["pid"] == grower.pid, f"the grower is not the first culprit: {procs}")
            check(16 << 20 <= first["usage"]["rss_bytes"] <= limit, f"grower rss: {first['usage']}")
            check(all(p["pid"] != reader.pid for p in c["processes"][:1]), "the reader ranks first")
            check(c["cgroups"] and c["cgroups"][0]["path"] == "/" + cg.rel
                  and c["cgroups"][0]["usage"]["memory_bytes"] <= limit * 11 // 10, f"culprit cgroups: {cgroups}")
            plausible(inc)
            print(f"memory ({lim.how}): {procs[:3]}, cgroup {cgroups[0]}")
    finally:
        os.unlink(data)


def oom_grower(mount, tmp, validate):
    limit = 48 << 20
    data = make_file("/var/tmp", 96 << 20)
    try:
        with ScratchCgroup(mount, "cul-oom") as cg, LimitedCgroup(mount, cg, "cul-oom", limit) as lim:
            env = dict(os.environ, PSIDIAG_FILE=data, PSIDIAG_ALLOC_MS="40")
            reader = spawn(cg, [WORKLOAD, "thrash", "psidiag-reader"], env, lim.extra)
            time.sleep(1)
            grower = spawn(cg, [WORKLOAD, "alloc", "psidiag-grower"], env, lim.extra)
            time.sleep(0.5)  # alive at the start of the sample, killed in its middle
            inc = snapshot_of(PSIDIAG, cg, "memory", 8000)
            try:
                grower.wait(1)
            except subprocess.TimeoutExpired:
                raise Failed("the grower was not OOM-killed during the 8 s sample")
            check(grower.returncode == -signal.SIGKILL, f"the grower ended with {grower.returncode}")
            validate(inc)
            c = inc["culprits"]
            procs, cgroups = describe(c)
            check(c["resource"] == "memory" and c["scope"] == "/" + cg.rel, f"scope {c['scope']} ({lim.how})")
            first = c["processes"][0]
            check(first["pid"] == grower.pid and first["ended"] and first["processes"] == 1,
                  f"the killed grower is not the first culprit: {procs}")
            u = first["usage"]
            check(16 << 20 <= u["rss_bytes"] <= limit * 11 // 10 and u["rss_growth_bytes"] > 0, f"grower usage {u}")
            check(all(p["pid"] != reader.pid for p in c["processes"][:1]), "the reader ranks first")
            plausible(inc)
            print(f"oom ({lim.how}): {procs[:3]}")
    finally:
        os.unlink(data)


def short_writers(mount, tmp, validate):
    wdir = tempfile.mkdtemp(prefix="psidiag-it-w-", dir="/var/tmp")  # a disk, not a tmpfs
    try:
        with ScratchCgroup(mount, "cul-writers") as cg:
            env = dict(os.environ, PSIDIAG_DIR=wdir, PSIDIAG_STORM_PARENT="psidiag-wparent")
            parent = spawn(cg, [WORKLOAD, "writers", "psidiag-writer", "2"], env)
            time.sleep(0.5)
            inc = snapshot_of(PSIDIAG, cg, "io", 3000, top=10)
            check(parent.poll() is None, "the writers' parent died")
            validate(inc)
            c = inc["culprits"]
            procs, cgroups = describe(c)
            # One program (psidiag 0.12): the writers that came and went, and one still writing at
            # the end when one is.
            mine = [p for p in c["processes"] if p["comm"] == "psidiag-writer" and p["ended_processes"] >= 2]
            check(mine, f"no entry of the short writers among {procs}")
            w = mine[0]
            check(w["usage"]["write_bytes"] >= (4 << 20) * (w["ended_processes"] // 2), f"the writers' entry: {w}")
            sp = w["spawner"]
            check(sp and sp["pid"] == parent.pid and sp["comm"] == "psidiag-wparent", f"the writers' spawner: {sp}")
            plausible(inc)
            print(f"writers: {[p for p in procs if p[1] == 'psidiag-writer']}, spawner {sp}")
    finally:
        shutil.rmtree(wdir, ignore_errors=True)


def main():
    mount = check_kernel()
    validate = validator(SCHEMAS)
    tmp = tempfile.mkdtemp(prefix="psidiag-it-")
    parts = os.environ.get("PSIDIAG_PARTS", "cpu,storm,memory,oom,writers").split(",")
    for name, part in (("cpu", cpu_neighbour), ("storm", fork_storm), ("memory", memory_grower), ("oom", oom_grower),
                       ("writers", short_writers)):
        if name in parts:
            part(mount, tmp, validate)


run(main)
