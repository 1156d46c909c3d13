#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""On-cpu stacks in incidents (sampling/stacks.c, incident/stacks-report.c), on the real kernel
with real programs whose stacks are known, each incident checked against the schema:

- `psidiag snapshot --stacks-hz` of a scratch cgroup running a C workload built without frame
  pointers (main -> uw_outer -> uw_middle -> uw_leaf spinning), Debian's xz compressing and dd
  copying /dev/zero to /dev/null: the workload's stacks are that chain, its functions named in
  order, ended at the outermost frame; xz's pass through liblzma's lzma_code, its module carrying
  liblzma's build-id; dd's kernel frames are named (its read(2) path, ksys_read or vfs_read), in
  [kernel], and no kernel address is written anywhere;
- the same without CAP_PERFMON and CAP_SYS_ADMIN where kernel.perf_event_paranoid is above 0:
  the incident says why it has no stacks, and names its processes as ever;
- Node with --perf-basic-prof: its JIT code's frames named from its /tmp/perf-PID.map, and not
  without it;
- the agent with stacks_hz and a cpu trigger on a cgroup of three such workloads on the node's
  cpus: its cpu incident carries their stacks, the chain named, and every process of
  most_delayed that ran among stacks.processes; no perf event is open in the agent before the
  incident or after it;
- that incident through `psidiag stacks`: its folded lines name the chain outermost first, and
  its flame graph (--svg) is well-formed XML that headless Chromium lays out with the chain's
  frames shown in their boxes."""

import glob
import html
import json
import os
import re
import subprocess
import sys
import shutil
import tempfile
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (ScratchCgroup, check, find_mount, launch_agent, run, skip, validator,  # noqa: E402
                    wait_for, wait_lines)

PSIDIAG, WORKLOAD, SCHEMAS = sys.argv[1:4]
CHAIN = ["uw_leaf", "uw_middle", "uw_outer", "main"]
HZ = 199


def snapshot(cg, wrap=(), ms=3000):
    p = subprocess.run([*wrap, PSIDIAG, "snapshot", cg.rel, "--sample-ms", str(ms), "--top", "5", "--stacks-hz",
                        str(HZ)], capture_output=True, text=True, timeout=ms / 1000 + 120)
    check(p.returncode == 0, f"snapshot exited {p.returncode}: {p.stderr[-2000:]}")
    return json.loads(p.stdout)


def user_names(stack):
    return [f["function"] for f in stack["frames"] if not f["kernel"]]


def chain_share(proc):
    """The samples of proc's stacks that are the known chain, innermost first, ended outermost."""
    return sum(s["count"] for s in proc["stacks"] if user_names(s)[:4] == CHAIN and s["end"] == "outermost")


def perf_fds(pid):
    n = 0
    for fd in glob.glob(f"/proc/{pid}/fd/*"):
        try:
            n += os.readlink(fd) == "anon_inode:[perf_event]"
        except OSError:
            pass
    return n


def by_comm(stacks, comm):
    return [p for p in stacks["processes"] if p["comm"] == comm]


def snapshot_case(cg, validate):
    uw = cg.spawn([WORKLOAD])
    xz = cg.spawn(["sh", "-c", "exec xz -6 -T1 -c < /dev/urandom > /dev/null"])
    cg.spawn(["dd", "if=/dev/zero", "of=/dev/null", "bs=1M"])
    inc = snapshot(cg)
    validate(inc)
    st = inc["stacks"]
    if st["error"] and re.search(r"refused|CAP_PERFMON", st["error"]):
        skip(f"stacks refused here: {st['error']}")
    check(st["error"] is None and st["unwinder"], f"no stacks: {json.dumps(st)[:2000]}")
    check(st["over_budget_samples"] == 0, f"{st['over_budget_samples']} samples over the unwinding budget")
    print(f"snapshot: {st['samples']} samples in {st['duration_ms']} ms at {st['hz']} Hz, {st['unwind_ms']} ms "
          f"unwinding ({st['over_budget_samples']} over budget), its end {st['end_ms']} ms, "
          f"{len(json.dumps(st))} bytes of stacks; processes {[(p['comm'], p['samples']) for p in st['processes']]}")
    text = json.dumps(inc)
    check(not re.search(r'"0xffff[0-9a-f]{12}"', text), "a kernel address in the incident")

    mine = [p for p in st["processes"] if p["pid"] == uw.pid]
    check(mine and mine[0]["samples"] >= 50, f"the workload's stacks: {json.dumps(mine)[:2000]}")
    whole = chain_share(mine[0])
    print(f"workload: {whole} of {mine[0]['samples']} samples are {' <- '.join(CHAIN)}, ended outermost; "
          f"the top: {user_names(mine[0]['stacks'][0])}")
    check(whole >= 0.8 * mine[0]["samples"], f"the chain: {json.dumps(mine[0])[:3000]}")
    mods = st["modules"]
    top = mine[0]["stacks"][0]["frames"]
    check(all(mods[f["module"]]["path"].endswith("/unwind-workload") for f in top
              if f["function"] in CHAIN), f"the chain's frames are not the workload's module: {top}")

    xzs = [p for p in st["processes"] if p["pid"] == xz.pid]
    check(xzs and xzs[0]["samples"] >= 50, f"xz's stacks: {json.dumps(xzs)[:2000]}")
    through = sum(s["count"] for s in xzs[0]["stacks"] if "lzma_code" in user_names(s))
    shown = xzs[0]["samples"] - xzs[0]["other_samples"]
    lib = [m for m in mods if re.search(r"/liblzma\.so\.5[.0-9]*$", m["path"] or "")]
    print(f"xz: {through} of the {shown} samples shown pass through lzma_code; liblzma {lib}")
    check(through >= 0.5 * shown, f"xz's stacks: {json.dumps(xzs[0])[:3000]}")
    check(lib and lib[0]["build_id"], f"liblzma's module: {lib}")

    dd = by_comm(st, "dd")
    check(dd, f"no stacks of dd: {[p['comm'] for p in st['processes']]}")
    kernel = [f for s in dd[0]["stacks"] for f in s["frames"] if f["kernel"]]
    named = {f["function"] for f in kernel if f["function"]}
    print(f"dd: {len(kernel)} kernel frames, named {sorted(named)[:12]}")
    if st["kernel_callchains"] and st["kernel_names"] is None:
        check(named & {"ksys_read", "vfs_read", "ksys_write", "vfs_write"}, f"dd's kernel path: {sorted(named)}")
        check(all(mods[f["module"]]["path"] == "[kernel]" and f["address"] is None for f in kernel if f["function"]),
              f"dd's kernel frames: {kernel[:5]}")
    else:
        print(f"  kernel frames not judged: callchains {st['kernel_callchains']}, names {st['kernel_names']}")


def refused_case(cg, validate):
    with open("/proc/sys/kernel/perf_event_paranoid") as f:
        paranoid = int(f.read())
    if paranoid <= 0:
        print(f"without CAP_PERFMON: not judged, perf_event_paranoid is {paranoid}")
        return
    cg.spawn([WORKLOAD])
    inc = snapshot(cg, wrap=("setpriv", "--bounding-set=-perfmon,-sys_admin"), ms=1000)
    validate(inc)
    err = inc["stacks"]["error"]
    print(f"without CAP_PERFMON (perf_event_paranoid {paranoid}): {err!r}; most_delayed "
          f"{[p['comm'] for p in inc['most_delayed']]}")
    check(err and "CAP_PERFMON" in err and inc["stacks"]["processes"] == [], f"stacks: {inc['stacks']}")


def agent_case(cg, validate, tmp):
    n = 2 * os.cpu_count() + 1
    config = {"sample_ms": 2000, "cooldown_ms": 0, "stacks_hz": 99,
              "watch": [{"cgroup": cg.rel, "triggers": ["cpu some 200ms 2s"]}]}
    agent = launch_agent(PSIDIAG, tmp, "stacks", config, ["--enable-delayacct"], wait="watching:")
    try:
        check(perf_fds(agent.proc.pid) == 0, "a perf event open in the idle agent")
        pids = {cg.spawn([WORKLOAD]).pid for _ in range(n)}
        lines = wait_lines(agent.out, lambda ls: [i for i in ls if i.get("stacks")], timeout=90)
        inc = [i for i in lines if i.get("stacks")][0]
        open_after = perf_fds(agent.proc.pid)
    finally:
        agent.stop()
    validate(inc)
    st = inc["stacks"]
    check(st["error"] is None, f"the incident's stacks: {st['error']}")
    ours = [p for p in st["processes"] if p["pid"] in pids]
    named = sum(chain_share(p) for p in ours)
    total = sum(p["samples"] for p in ours)
    print(f"agent: {inc['summary']}; stacks of {st['scope'] or 'the node'}: {len(ours)} of the {n} workloads, "
          f"{named} of their {total} samples the chain; {len(json.dumps(st))} bytes, its end {st['end_ms']} ms; "
          f"{open_after} perf events open after")
    check(ours and named >= 0.8 * total, f"the workloads' stacks: {json.dumps(ours)[:3000]}")
    listed = {p["pid"] for p in st["processes"]}
    ran = [p["pid"] for p in inc["most_delayed"] if p["pid"] in pids]
    check(all(pid in listed for pid in ran[:3]), f"most_delayed {ran} not all in stacks.processes {listed}")
    check(open_after == 0, f"{open_after} perf events open in the agent after its incident")
    return inc


def stacks_command(inc, tmp):
    path = os.path.join(tmp, "one.ndjson")
    with open(path, "w") as f:
        f.write(json.dumps(inc) + "\n")
    p = subprocess.run([PSIDIAG, "stacks", path], capture_output=True, text=True, timeout=60)
    check(p.returncode == 0, f"psidiag stacks exited {p.returncode}: {p.stderr}")
    folded = [l for l in p.stdout.splitlines() if l.startswith("unwind-workload;_start;")]
    print(f"stacks: {len(p.stdout.splitlines())} folded lines; the workload's first: {folded[:1]}")
    # The chain outermost first, then the kernel's frames of a sample that hit it in an interrupt.
    chain = r"unwind-workload;_start;[^ ]*;main;uw_outer;uw_middle;uw_leaf(;[^ ;]+_\[k\])* (\d+)"
    check(folded and all(re.fullmatch(chain, l) for l in folded), f"the folded lines: {p.stdout[:3000]}")
    p = subprocess.run([PSIDIAG, "stacks", "--svg", "--id", inc["id"], path], capture_output=True, text=True,
                       timeout=60)
    check(p.returncode == 0, f"psidiag stacks --svg exited {p.returncode}: {p.stderr}")
    svg = p.stdout
    root = ET.fromstring(svg)  # well-formed, or this raises
    check(root.tag.endswith("svg"), f"not an SVG: {root.tag}")
    return svg


# Lays the SVG out in the page and lists the names its boxes show (a text the browser gave width).
PAGE = """<!doctype html><html><body>%s<pre id="out"></pre><script>
const seen = [];
for (const t of document.querySelectorAll("svg text")) {
  if (t.getComputedTextLength() > 0 && t.getBBox().width > 0) seen.push(t.textContent);
}
document.getElementById("out").textContent = JSON.stringify(
  {boxes: document.querySelectorAll("svg rect").length, seen: seen});
</script></body></html>"""


def render(svg, tmp):
    browser = shutil.which("chromium")
    check(browser, "chromium is missing (scripts/test installs it)")
    page = os.path.join(tmp, "flame.html")
    with open(page, "w") as f:
        f.write(PAGE % svg.split("?>", 1)[1])
    p = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", f"file://{page}"],
                       capture_output=True, text=True, timeout=120)
    m = re.search(r'<pre id="out">(.*?)</pre>', p.stdout, re.S)
    check(m, f"chromium showed nothing ({p.returncode}): {p.stderr[-2000:]}")
    shown = json.loads(html.unescape(m.group(1)))
    print(f"chromium laid out {shown['boxes']} boxes; names shown: {shown['seen'][:12]}")
    check(all(n in shown["seen"] for n in CHAIN + ["unwind-workload"]),
          f"the chain's frames are not shown: {shown}")


# A hot loop node compiles (TurboFan), its code named only by its perf map.
NODE_HOT = "function hotStep(x){for(let i=0;i<1000;i++){x=(x*31+7)%1000003;} return x} let y=1; for(;;){y=hotStep(y)}"


def jit_case(cg, validate):
    """Node with --perf-basic-prof writes /tmp/perf-PID.map: its JIT code's frames are named from
    it ("JS:*...", V8's names); without it they have no name."""
    node = shutil.which("node") or shutil.which("nodejs")
    check(node, "node is missing (scripts/test installs nodejs)")
    named = {}
    # V8 writes its isolate-*-v8.log in the working directory: a scratch one, not the tree
    scratch = tempfile.mkdtemp(prefix="psidiag-node-")
    try:
        for prof in (True, False):
            p = cg.spawn([node] + (["--perf-basic-prof"] if prof else []) + ["-e", NODE_HOT], cwd=scratch)
            wait_for("node's map", lambda: not prof or os.path.exists(f"/tmp/perf-{p.pid}.map"), 30)
            try:
                inc = snapshot(cg, ms=2000)
            finally:
                cg.kill_all()
                if os.path.exists(f"/tmp/perf-{p.pid}.map"):
                    os.unlink(f"/tmp/perf-{p.pid}.map")
            validate(inc)
            mine = [q for q in inc["stacks"]["processes"] if q["pid"] == p.pid]
            check(mine, f"no stacks of node: {json.dumps(inc['stacks'])[:2000]}")
            names = [f["function"] for s in mine[0]["stacks"] for f in s["frames"] if not f["kernel"] and f["function"]]
            named[prof] = sum(s["count"] for s in mine[0]["stacks"]
                              if any(re.match(r"(JS|LazyCompile|Builtin|Function):", f["function"] or "")
                                     for f in s["frames"]))
            print(f"node{' --perf-basic-prof' if prof else ''}: {named[prof]} of {mine[0]['samples']} samples in code "
                  f"its map names; names {sorted(set(names))[:6]}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    check(named[True] > 0 and named[False] == 0, f"JIT names: with the map {named[True]}, without {named[False]}")


def main():
    if os.geteuid() != 0:
        skip("needs root (scratch cgroups, perf events)")
    mount = find_mount("cgroup2")
    if not mount:
        skip("no cgroup2 mount")
    validate = validator(SCHEMAS)
    with ScratchCgroup(mount, "stacks") as cg:
        snapshot_case(cg, validate)
    with ScratchCgroup(mount, "stacksno") as cg:
        refused_case(cg, validate)
    with ScratchCgroup(mount, "stacksjit") as cg:
        jit_case(cg, validate)
    with tempfile.TemporaryDirectory(prefix="psidiag-stacks-") as tmp:
        with ScratchCgroup(mount, "stacksagent") as cg:
            inc = agent_case(cg, validate, tmp)
        render(stacks_command(inc, tmp), tmp)


run(main)
