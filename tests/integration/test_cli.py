#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The command line without the kernel: help, version, usage errors and config validation, with
their exit codes (0 ok, 1 runtime failure, 2 usage or config error) and messages."""

import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import cap_eff, check, find_mount, run, validator  # noqa: E402

PSIDIAG = sys.argv[1]
EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "schemas", "examples")


def psidiag(*args):
    p = subprocess.run([PSIDIAG, *args], capture_output=True, timeout=30)
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


def write(tmp, name, text):
    path = os.path.join(tmp, name)
    with open(path, "wb" if isinstance(text, bytes) else "w") as f:
        f.write(text)
    return path


def main():
    code, out, _ = psidiag("--help")
    check(code == 0 and "psidiag snapshot [CGROUP | --pid PID]" in out and "psidiag check" in out and "Exit status" in out,
          "--help")
    code, out, _ = psidiag("--version")
    check(code == 0 and out.startswith("psidiag "), "--version")

    for args, what in [(["--bogus"], "unrecognized"), (["--log-level", "loud"], "--log-level"),
                       (["snapshot", "--top", "0"], "--top"), (["snapshot", "--sample-ms", "x"], "--sample-ms"),
                       (["snapshot", "--resource", "disk"], "--resource"), (["--top", "3"], "belong to"),
                       (["validate"], "needs a FILE"), (["snapshot", "a/../b"], "must be a path"),
                       (["snapshot", "a", "b"], "unexpected argument"), (["frobnicate"], "unexpected argument"),
                       (["validate", "x", "--config", "y"], "belong to the agent"),
                       (["check", "now"], "check takes no arguments"),
                       (["--check-config"], "needs --config FILE"),
                       (["snapshot", "a", "--pid", "1"], "not both"), (["snapshot", "--pid", "x"], "--pid must be"),
                       (["--pid", "1"], "belong to 'psidiag snapshot'")]:
        code, _, err = psidiag(*args)
        check(code == 2, f"{args}: exit {code}, want 2")
        check(what in err, f"{args}: stderr {err!r} does not mention {what!r}")

    code, out, err = psidiag("validate", os.path.join(EXAMPLES, "config.json"))
    check(code == 0, f"the example config does not validate: {err}")
    check("ok, 2 watches, 3 triggers" in out, out)

    with tempfile.TemporaryDirectory() as tmp:
        cases = [
            ('{"watch": [{"triggers": ["cpu some 1s 2s",\n  "irq some 1ms 2s"]}]}', ":2:3: bad trigger"),
            ('{"watch": [{"cgroup": "../etc", "triggers": ["cpu some 1s 2s"]}]}', ":1:23: cgroup \"../etc\""),
            ('{"watch": [], "top": 5, "top": 6}', "duplicate object key"),
            ('{"watch": [{"triggers": ["cpu some 1s 2s"]}], "sampel_ms": 5}', "unknown key \"sampel_ms\""),
            ('', "the config file is empty"),
            ('{', "end of file"),
            ('{"watch": [{"triggers": ["cpu some 1s 2s"]}], "top": 1e999}', "real number overflow"),
            ('{"watch": [{"triggers": ["cpu some 1s 2s"]}], "top": 99999999999999999999999}', "too big integer"),
            ('{"watch": [{"triggers": ["cpu some 1s 2s"]}], "top": "10"}', "top must be an integer"),
            ('{"watch": [{"triggers": ["cpu some 1s 2s"]}], "output_format": "otel"}',
             ':1:64: output_format must be "incident" (psidiag\'s incident lines) or "otlp"'),
            ('{"watch": [{"output_format": "otlp", "triggers": ["cpu some 1s 2s"]}]}',
             ':1:30: output_format is one setting for every output: set it at the top level'),
            ('{"watch": [{"triggers": ["cpu some 1s 2s"]}], "output": "/tmp/\\u0000x"}', "u0000 is not allowed"),
            (b'{"watch": [{"cgroup": "a\xffb", "triggers": ["cpu some 1s 2s"]}]}', "unable to decode byte 0xff"),
        ]
        mount = find_mount("cgroup2")
        if mount:
            # The mount point written into a path that is relative to it (and does not exist there).
            cases.append(('{"watch": [{"cgroup": "%s/psidiag-nope", "triggers": ["cpu some 1s 2s"]}]}' % mount,
                          ':1:23: cgroup paths are relative to the cgroup2 mount (%s): write "psidiag-nope"' % mount))
        for text, want in cases:
            path = write(tmp, "c.json", text)
            code, _, err = psidiag("validate", path)
            check(code == 2, f"{text!r}: exit {code}")
            check(want in err and err.startswith(path), f"{text!r}: {err!r} lacks {want!r}")
            # --check-config says the same with the same exit code.
            code, _, err3 = psidiag("--config", path, "--check-config")
            check(code == 2 and want in err3, f"--check-config with {text!r}: exit {code} {err3!r}")
            # The agent refuses the same config with the same message, before arming anything.
            code, _, err2 = psidiag("--config", path)
            check(code == 2 and want in err2, f"agent with {text!r}: exit {code} {err2!r}")

        code, _, err = psidiag("validate", os.path.join(tmp, "missing.json"))
        check(code == 2 and "No such file" in err, f"missing config: {code} {err!r}")

        # show: good lines are shown, a broken one is named by its line number, exit 1.
        example = open(os.path.join(EXAMPLES, "incident-pressure.json")).read().strip()
        p = subprocess.run([PSIDIAG, "show"], input=(example + "\n{broken\n\n" + example + "\n").encode(),
                           capture_output=True, timeout=30)
        out, err = p.stdout.decode(), p.stderr.decode()
        check(p.returncode == 1, f"show with a broken line exited {p.returncode}")
        check(out.count("pressure  /shop") == 2 and "api-worker" in out, f"show output:\n{out}")
        check("stdin:2: not JSON" in err, f"show stderr: {err!r}")
        code, out, err = psidiag("show", os.path.join(EXAMPLES, "incident-snapshot.json"))
        check(code == 0 and "snapshot" in out, f"show FILE: {code} {err!r}")
        code, out, err = psidiag("show", os.path.join(EXAMPLES, "incident-oom.json"))
        related = len(json.load(open(os.path.join(EXAMPLES, "incident-oom.json")))["related"])
        check(code == 0 and "killed    pid " in out and "report-builder in /shop" in out and
              f"related   {related} pressure incident" in out, f"show oom: {code} {out!r} {err!r}")
        # The examples the README points at are what the schema says.
        validate = validator(os.path.join(EXAMPLES, ".."))
        for name in ("incident-pressure.json", "incident-snapshot.json", "incident-oom.json"):
            with open(os.path.join(EXAMPLES, name)) as f:
                validate(json.loads(f.read()))
        code, _, err = psidiag("show", os.path.join(tmp, "missing.ndjson"))
        check(code == 2 and "No such file" in err, f"show missing file: {code} {err!r}")

        # Rounding without CAP_SYS_RESOURCE is shown, not hidden (privileged hosts keep the spec).
        path = write(tmp, "r.json", '{"watch": [{"cgroup": "a", "triggers": ["cpu some 50ms 1s"]}]}')
        code, out, _ = psidiag("validate", path)
        check(code == 0, "rounding config")
        if not cap_eff() & (1 << 24):
            check('armed as "cpu some 100ms 2s"' in out, f"rounding not shown: {out!r}")


run(main)
