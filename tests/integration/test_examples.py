#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The schema examples (schemas/examples/incident-*.json) are what this psidiag writes today.

A staged shop runs in a scratch cgroup: two "api-worker" processes spinning on two threads each, a
"search-indexer" spinning on one and a "health-check" that sleeps, started as /usr/lib/shop/... command lines (the workload takes its
real arguments from PSIDIAG_WORKLOAD), so nothing of the build machine appears in them. The agent
writes a pressure incident for `cpu some 20% 2s` on that cgroup; `psidiag snapshot` measures it;
then, under a 48 MiB memory limit, a "cache-warmer" thrashes the page cache and a
"report-builder" allocates until the OOM killer ends it, for an oom incident with `related`
pressure incidents. The scratch cgroup's name becomes "shop" and the host name "node-1"; nothing
else is edited.

Each generated incident must validate, and each example must: validate, carry this version, have
every field the generated one has (so an example never lags behind the agent), and hold no build
path or scratch name. With PSIDIAG_WRITE_EXAMPLES=1 (scripts/examples) the generated incidents are
written over the examples and the show fuzz corpus seeds instead."""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (Failed, LimitedCgroup, ScratchCgroup, check, check_kernel, make_file,  # noqa: E402
                    run, spawn, start_watching, stop_agent, validator, wait_lines)

PSIDIAG, WORKLOAD, SCHEMAS = sys.argv[1:4]
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
EXAMPLES = os.path.join(SCHEMAS, "examples")
CORPUS = os.path.join(ROOT, "tests", "fuzz", "corpus", "show")
WRITE = os.environ.get("PSIDIAG_WRITE_EXAMPLES") == "1"
NEUTRAL_CGROUP = "shop"
LEAKS = ("psidiag-it", "psidiag-workload", "/build", "/work/", "/tmp/", "/root")


def start(cg, argv0, args, mode, env=None, extra=()):
    """The workload as argv0 ARGS..., doing MODE, in cg (and the v1 cgroups extra)."""
    return spawn(cg, [argv0] + args, dict(env or os.environ, PSIDIAG_WORKLOAD=mode), extra, executable=WORKLOAD)


def agent(tmp, cg, name, trigger, **extra):
    return start_watching(PSIDIAG, tmp, cg, name, trigger, top=2, **extra)


def neutral(incident, scratch, memcg):
    """The scratch cgroup (and the v1 memcg standing for it) named as the shop's, and the host's
    name replaced; everything else as written."""
    text = json.dumps(incident)
    for name in filter(None, (memcg, scratch)):
        text = text.replace(name, NEUTRAL_CGROUP)
    inc = json.loads(text)
    inc["host"]["hostname"] = "node-1"
    return inc


def paths(value, prefix=""):
    """Every key path of a JSON value, list items folded into []."""
    out = set()
    if isinstance(value, dict):
        for k, v in value.items():
            out.add(prefix + "/" + k)
            out |= paths(v, prefix + "/" + k)
    elif isinstance(value, list):
        for v in value:
            out |= paths(v, prefix + "[]")
    return out


def strings(value):
    if isinstance(value, dict):
        return [s for v in value.values() for s in strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    return [value] if isinstance(value, str) else []


def shop(mount, tmp):
    """The pressure incident and the snapshot of the staged shop."""
    with ScratchCgroup(mount, "examples") as cg:
        a, out, log = agent(tmp, cg, "pressure", "cpu some 20% 2s")
        try:
            for _ in range(2):
                start(cg, "/usr/lib/shop/api-worker", ["--port", "8080"], "spin api-worker 2")
            # The api-workers are one culprit (a program, psidiag 0.12): a second one of the shop's
            # fills the top 2, or the build machine's own processes would.
            start(cg, "/usr/lib/shop/search-indexer", ["--rebuild"], "spin search-indexer 1")
            start(cg, "/usr/lib/shop/health-check", ["--interval", "1s"], "sleep health-check")
            lines = wait_lines(out, timeout=60)
        finally:
            stop_agent(a)
        check(lines, f"no pressure incident:\n{open(log).read()[-2000:]}")
        p = subprocess.run([PSIDIAG, "snapshot", cg.rel, "--resource", "cpu", "--sample-ms", "1000", "--top", "2"],
                           capture_output=True, text=True, timeout=60)
        check(p.returncode == 0, f"snapshot: {p.returncode} {p.stderr}")
        return neutral(lines[0], cg.rel, None), neutral(json.loads(p.stdout), cg.rel, None)


def oom(mount, tmp):
    """The oom incident of a report builder killed in the shop's 48 MiB, after cache pressure."""
    data = make_file(tmp)
    try:
        with ScratchCgroup(mount, "examples-oom") as cg, LimitedCgroup(mount, cg, "examples-oom", 48 << 20) as lim:
            env = dict(os.environ, PSIDIAG_FILE=data)
            a, out, log = agent(tmp, cg, "oom", "memory some 50ms 2s", oom_lookback_s=300)
            try:
                start(cg, "/usr/lib/shop/cache-warmer", ["--all"], "thrash cache-warmer 2", env, lim.extra)
                lines = wait_lines(out, lambda ls: sum(i["type"] == "pressure" for i in ls) >= 2, 60)
                check(sum(i["type"] == "pressure" for i in lines) >= 2, f"no pressure:\n{open(log).read()[-2000:]}")
                hog = start(cg, "/usr/lib/shop/report-builder", ["--month", "2026-11"], "alloc report-builder",
                            env, lim.extra)
                try:
                    hog.wait(60)
                except subprocess.TimeoutExpired:
                    raise Failed("the report builder was not OOM-killed within 60 s")
                check(hog.returncode == -signal.SIGKILL, f"the report builder ended with {hog.returncode}")
                lines = wait_lines(out, lambda ls: any(i["type"] == "oom" for i in ls), 30)
            finally:
                stop_agent(a)
            ooms = [i for i in lines if i["type"] == "oom"]
            check(ooms, f"no oom incident:\n{open(log).read()[-2000:]}")
            memcg = os.path.basename(lim.memcg.path) if lim.memcg else None
            return neutral(ooms[0], cg.rel, memcg)
    finally:
        os.unlink(data)


def main():
    mount = check_kernel()
    validate = validator(SCHEMAS)
    tmp = tempfile.mkdtemp(prefix="psidiag-it-")
    try:
        pressure, snapshot = shop(mount, tmp)
        generated = {"pressure": pressure, "snapshot": snapshot, "oom": oom(mount, tmp)}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    version = generated["pressure"]["agent"]["version"]
    for kind, inc in generated.items():
        validate(inc)
        leaks = [s for s in strings(inc) if any(x in s for x in LEAKS)]
        check(not leaks, f"the generated {kind} incident still names the build machine: {leaks}")
        path = os.path.join(EXAMPLES, f"incident-{kind}.json")
        if WRITE:
            with open(path, "w") as f:
                f.write(json.dumps(inc, separators=(",", ":")) + "\n")
            if kind in ("pressure", "snapshot"):
                shutil.copy(path, os.path.join(CORPUS, f"{kind}.json"))
            print(f"wrote {os.path.relpath(path, ROOT)}")
        with open(path) as f:
            example = json.load(f)
        validate(example)
        check(example["type"] == kind, f"{path}: type {example['type']}")
        check(example["agent"]["version"] == version,
              f"{path} is from psidiag {example['agent']['version']}, this is {version}: run scripts/examples")
        # worst_us and worst_at are null or an object by chance (a maximum rose in the window or
        # not): their keys are the delay classes either way, which the schema fixes.
        missing = sorted(m for m in paths(inc) - paths(example) if "/worst_us/" not in m and "/worst_at/" not in m)
        check(not missing, f"{path} lacks fields the agent writes today: {missing[:10]}; run scripts/examples")
        leaks = [s for s in strings(example) if any(x in s for x in LEAKS)]
        check(not leaks, f"{path} names the build machine: {leaks}")
        print(f"{kind}: the example is current ({len(paths(example))} fields, psidiag {version})")


run(main)
