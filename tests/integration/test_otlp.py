#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""output_format "otlp" on the real kernel: an agent watching a scratch cgroup under a 4-process
cpu hog writes OTLP/JSON lines. Each names the host and psidiag in its resource, has one record
with a digit-string timeUnixNano, an eventName under psidiag., no JSON integer but the
severityNumber enum, the process and trigger attributes, and the incident as a kvlist body that
validates against the incident schema once turned back. Every line is decoded by protobuf.js with
the code OpenTelemetry generates from its official proto definitions (tests/otlp/decode.js). A
SIGHUP that sets output_format back to "incident" switches the file to incident lines. A real OOM
kill in a memory-limited scratch cgroup becomes a psidiag.oom record (severity ERROR) naming the
victim, decoded the same way."""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (LimitedCgroup, ScratchCgroup, check, check_kernel, run, spawn, start_watching,  # noqa: E402
                    stop_agent, validator)

PSIDIAG, WORKLOAD, SCHEMAS = sys.argv[1:4]
OTLP_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "otlp")
DIGITS = re.compile(r"^[0-9]+$")
INT64 = re.compile(r"^-?[0-9]+$")


def node_modules():
    """tests/otlp/install: npm ci of the pinned packages into a cache directory (a no-op when
    scripts/test did it already)."""
    p = subprocess.run([os.path.join(OTLP_DIR, "install")], capture_output=True, text=True, timeout=600)
    check(p.returncode == 0, f"tests/otlp/install failed:\n{p.stderr}")
    return os.path.join(p.stdout.strip(), "node_modules")


def raw_lines(path):
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return []
    # The tail without its newline is a write in progress (common.read_lines()).
    return [line for line in data.split(b"\n")[:-1] if line]


def wait_raw(path, pred, timeout, agent, log):
    deadline = time.time() + timeout
    while time.time() < deadline:
        lines = raw_lines(path)
        if pred(lines):
            return lines
        check(agent.poll() is None, f"the agent exited:\n{open(log).read()[-3000:]}")
        time.sleep(0.25)
    check(False, f"not there within {timeout} s; agent log:\n{open(log).read()[-3000:]}")


def any_to_python(v):
    """An OTLP AnyValue back into the JSON value it was made from."""
    check(len(v) <= 1, f"an AnyValue with more than one value: {v}")
    if not v:
        return None
    (kind, x), = v.items()
    if kind == "kvlistValue":
        return {kv["key"]: any_to_python(kv["value"]) for kv in x.get("values", [])}
    if kind == "arrayValue":
        return [any_to_python(e) for e in x.get("values", [])]
    if kind == "intValue":
        check(isinstance(x, str) and INT64.match(x), f"intValue {x!r} is not a decimal string")
        return int(x)
    if kind in ("stringValue", "boolValue", "doubleValue"):
        return x
    check(False, f"unexpected AnyValue kind {kind}")


def no_json_integers(v, where="request"):
    if isinstance(v, bool):
        return
    if isinstance(v, int):
        check(where.endswith(".severityNumber"), f"{where} is a JSON integer ({v}), not a string")
    elif isinstance(v, dict):
        for k, e in v.items():
            no_json_integers(e, f"{where}.{k}")
    elif isinstance(v, list):
        for i, e in enumerate(v):
            no_json_integers(e, f"{where}[{i}]")


def attrs(kvs):
    return {kv["key"]: kv["value"] for kv in kvs}


def decode(modules, lines):
    """Every line through tests/otlp/decode.js: the decoded requests."""
    p = subprocess.run(["node", os.path.join(OTLP_DIR, "decode.js"), modules], input=b"\n".join(lines),
                       capture_output=True, timeout=120)
    check(p.returncode == 0, f"protobuf decoding failed: {p.stderr.decode()}")
    decoded = [json.loads(x) for x in p.stdout.splitlines()]
    check(len(decoded) == len(lines), f"{len(decoded)} of {len(lines)} lines decoded")
    return decoded


def oom_record(line):
    rec = json.loads(line)["resourceLogs"][0]["scopeLogs"][0]["logRecords"][0]
    return rec if rec["eventName"] == "psidiag.oom" else None


def oom_kill(mount, tmp, modules, validate):
    """A hog allocating past a 48 MiB limit is OOM-killed: the oom incident as an OTLP record."""
    with ScratchCgroup(mount, "otlp-oom") as cg, LimitedCgroup(mount, cg, "otlp-oom", 48 << 20) as lim:
        agent, out, log = start_watching(PSIDIAG, tmp, cg, "oom", "memory some 50ms 2s", output_format="otlp",
                                         sample_ms=300, top=5)
        try:
            hog = spawn(cg, [WORKLOAD, "alloc", "psidiag-hog"], dict(os.environ), lim.extra)
            try:
                hog.wait(60)
            except subprocess.TimeoutExpired:
                check(False, f"the hog was not OOM-killed within 60 s ({lim.how})")
            check(hog.returncode == -signal.SIGKILL, f"the hog ended with {hog.returncode}, not SIGKILL")
            lines = wait_raw(out, lambda ls: any(oom_record(x) for x in ls), 60, agent, log)
        finally:
            code = stop_agent(agent)
        check(code == 0, f"the agent exited with {code}")
    decode(modules, lines)
    rec = next(oom_record(x) for x in lines if oom_record(x))
    no_json_integers(rec, "record")
    check(rec["severityNumber"] == 17 and rec["severityText"] == "ERROR", f"severity {rec}")
    inc = any_to_python(rec["body"])
    validate(inc)
    a = attrs(rec["attributes"])
    if inc["oom"]["victim"] is not None:
        check(a["psidiag.oom.victim.pid"] == {"intValue": str(hog.pid)}, f"victim attribute {a}")
        check(a["psidiag.oom.victim.name"] == {"stringValue": "psidiag-hog"}, f"victim name {a}")
    return inc["oom"]["source"]


def main():
    mount = check_kernel()
    validate = validator(SCHEMAS)
    modules = node_modules()
    version = subprocess.run([PSIDIAG, "--version"], capture_output=True, text=True).stdout.split()[-1]
    with open("/proc/sys/kernel/random/boot_id") as f:
        boot_id = f.read().strip()
    tmp = tempfile.mkdtemp(prefix="psidiag-it-otlp-")
    try:
        with ScratchCgroup(mount, "otlp") as cg:
            start_ns = time.time_ns()
            agent, out, log = start_watching(PSIDIAG, tmp, cg, "otlp", "cpu some 50ms 2s", output_format="otlp",
                                             top=8, sample_ms=600, cooldown_ms=1000)
            try:
                # Two cores: four spinners make the cgroup wait for cpu.
                spin_pids = {cg.spawn([WORKLOAD, "spin", "psidiag-spin"]).pid for _ in range(4)}
                lines = wait_raw(out, lambda ls: len(ls) >= 2, 60, agent, log)
                end_ns = time.time_ns()

                for n, line in enumerate(lines):
                    req = json.loads(line)
                    no_json_integers(req)
                    check(list(req) == ["resourceLogs"] and len(req["resourceLogs"]) == 1, f"line {n}: {list(req)}")
                    rl = req["resourceLogs"][0]
                    res = attrs(rl["resource"]["attributes"])
                    check(res["host.name"] == {"stringValue": socket.gethostname()}, f"host.name {res['host.name']}")
                    check(res["host.id"] == {"stringValue": boot_id}, f"host.id {res['host.id']}")
                    check(res["service.name"] == {"stringValue": "psidiag"}, f"service.name {res['service.name']}")
                    check(res["service.version"] == {"stringValue": version}, f"service.version {res}")
                    check(len(rl["scopeLogs"]) == 1 and len(rl["scopeLogs"][0]["logRecords"]) == 1, "not one record")
                    rec = rl["scopeLogs"][0]["logRecords"][0]
                    check("traceId" not in rec and "spanId" not in rec, "a record with a trace context")
                    t, o = rec["timeUnixNano"], rec["observedTimeUnixNano"]
                    check(DIGITS.match(t) and DIGITS.match(o), f"times {t!r} {o!r}")
                    check(start_ns <= int(t) <= int(o) <= end_ns, f"times {t} {o} outside [{start_ns}, {end_ns}]")
                    check(rec["eventName"] == "psidiag.pressure", f"eventName {rec['eventName']}")
                    check(rec["severityNumber"] == 13 and rec["severityText"] == "WARN", f"severity {rec}")
                    check("kvlistValue" in rec["body"], f"body {str(rec['body'])[:200]}")
                    inc = any_to_python(rec["body"])
                    validate(inc)
                    check(inc["type"] == "pressure" and inc["trigger"]["cgroup"] == "/" + cg.rel,
                          f"incident {inc['type']} {inc['trigger']}")
                    check(inc["host"]["boot_id"] == boot_id, "the body's boot id differs")
                    a = attrs(rec["attributes"])
                    check(a["psidiag.incident.id"] == {"stringValue": inc["id"]}, "psidiag.incident.id")
                    check(a["psidiag.trigger.cgroup"] == {"stringValue": "/" + cg.rel}, f"{a['psidiag.trigger.cgroup']}")
                    check(a["psidiag.trigger.resource"] == {"stringValue": "cpu"}, "psidiag.trigger.resource")
                    check(a["psidiag.trigger.stall"] == {"stringValue": "some"}, "psidiag.trigger.stall")
                    check(a["psidiag.trigger.spec"] == {"stringValue": "cpu some 50ms 2s"}, "psidiag.trigger.spec")
                    first = inc["most_delayed"][0]
                    check(a["process.pid"] == {"intValue": str(first["pid"])}, f"process.pid {a['process.pid']}")
                    check(a["process.executable.name"] == {"stringValue": first["comm"]}, "process.executable.name")
                    check(a["process.command_line"] == {"stringValue": first["cmdline"]}, "process.command_line")
                    check("container.id" not in a and "k8s.pod.uid" not in a, "container attributes on the host")
                check(int(a["process.pid"]["intValue"]) in spin_pids, f"first process is not a spinner: {a}")

                # protobuf: every line decodes, and comes back the same.
                decoded = decode(modules, lines)
                drec = decoded[0]["resourceLogs"][0]["scopeLogs"][0]["logRecords"][0]
                check(drec["eventName"] == "psidiag.pressure" and drec["timeUnixNano"] == json.loads(lines[0])[
                    "resourceLogs"][0]["scopeLogs"][0]["logRecords"][0]["timeUnixNano"], f"decoded {str(drec)[:300]}")

                # SIGHUP with output_format back to "incident": the next lines are incidents.
                cfg = os.path.join(tmp, "otlp.json")
                with open(cfg) as f:
                    config = json.load(f)
                config["output_format"] = "incident"
                with open(cfg, "w") as f:
                    json.dump(config, f)
                before = len(raw_lines(out))
                agent.send_signal(signal.SIGHUP)
                later = wait_raw(out, lambda ls: any(b'"schema_version"' in x[:40] for x in ls[before:]), 60, agent,
                                 log)
                switched = [json.loads(x) for x in later[before:] if b'"schema_version"' in x[:40]]
                validate(switched[0])
            finally:
                code = stop_agent(agent)
            check(code == 0, f"the agent exited with {code}")
        source = oom_kill(mount, tmp, modules, validate)
        print(f"{len(lines)} OTLP lines decoded by protobuf; first process {first['comm']}[{first['pid']}] "
              f"cpu {first['delay_us']['cpu']} us; incident lines after SIGHUP; an oom kill ({source}) as "
              f"psidiag.oom")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


run(main)
