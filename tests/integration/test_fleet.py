#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A fleet's view with the real Prometheus stack: the agent's metrics_file in a directory that
Debian's prometheus-node-exporter reads with its textfile collector, and Debian's prometheus
scraping that node_exporter and loading dist/prometheus/psidiag.rules.yml, each on its own
127.0.0.1 port with a scratch directory, started and stopped here. After a staged incident (more
spinners than cpus in a watched scratch cgroup), a PromQL query over Prometheus's HTTP API returns
psidiag_incidents_total with the watch, type and resource labels, psidiag_stall_seconds_total has
grown, node_exporter reports no textfile parse error (node_textfile_scrape_error 0), and the
rules are loaded and healthy."""

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ScratchCgroup, check, check_kernel, run, stop_agent, start_watching, wait_for, wait_lines  # noqa: E402

PSIDIAG, WORKLOAD, SCHEMAS = sys.argv[1:4]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NCPU = os.cpu_count() or 2


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def need(*names):
    for n in names:
        if shutil.which(n):
            return shutil.which(n)
    check(False, f"{names[0]} is missing (scripts/test installs prometheus and prometheus-node-exporter)")


def get(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


def query(port, promql):
    body = json.loads(get(f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": promql})))
    check(body["status"] == "success", f"query {promql}: {body}")
    return body["data"]["result"]


def main():
    mount = check_kernel()
    exporter = need("prometheus-node-exporter", "node_exporter")
    prometheus = need("prometheus")
    tmp = tempfile.mkdtemp(prefix="psidiag-it-fleet-")
    procs = []
    try:
        textfile = os.path.join(tmp, "textfile")
        os.mkdir(textfile)
        ne_port, prom_port = free_port(), free_port()
        ne_log, prom_log = os.path.join(tmp, "node_exporter.log"), os.path.join(tmp, "prometheus.log")
        ne = subprocess.Popen([exporter, f"--web.listen-address=127.0.0.1:{ne_port}", "--collector.disable-defaults",
                               "--collector.textfile", f"--collector.textfile.directory={textfile}"],
                              stdout=subprocess.DEVNULL, stderr=open(ne_log, "w"))
        procs.append(("node_exporter", ne, ne_log))
        shutil.copy(os.path.join(ROOT, "dist", "prometheus", "psidiag.rules.yml"), tmp)
        with open(os.path.join(tmp, "prometheus.yml"), "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nrule_files:\n  - psidiag.rules.yml\n"
                    f"scrape_configs:\n  - job_name: node\n    static_configs:\n      - targets: ['127.0.0.1:{ne_port}']\n")
        prom = subprocess.Popen([prometheus, f"--config.file={tmp}/prometheus.yml",
                                 f"--storage.tsdb.path={tmp}/data", f"--web.listen-address=127.0.0.1:{prom_port}"],
                                cwd=tmp, stdout=subprocess.DEVNULL, stderr=open(prom_log, "w"))
        procs.append(("prometheus", prom, prom_log))

        with ScratchCgroup(mount, "fleet") as cg:
            agent, out, log = start_watching(PSIDIAG, tmp, cg, "fleet", "cpu some 50ms 2s",
                                             metrics_file=os.path.join(textfile, "psidiag.prom"))
            procs.append(("psidiag", agent, log))
            try:
                for _ in range(NCPU + 2):
                    cg.spawn([WORKLOAD, "spin", "psidiag-spin"])
                check(wait_lines(out, timeout=60), f"no incident in 60 s:\n{open(log).read()[-2000:]}")
                series = wait_for(
                    "psidiag_incidents_total in Prometheus",
                    lambda: query(prom_port, f'psidiag_incidents_total{{watch="{cg.rel}"}} >= 1'), 120, alive=procs)
                labels = series[0]["metric"]
                check(labels.get("type") == "pressure" and labels.get("resource") == "cpu"
                      and labels.get("job") == "node", f"labels: {labels}")
                stall = wait_for("psidiag_stall_seconds_total > 0",
                                 lambda: query(prom_port, f'psidiag_stall_seconds_total{{watch="{cg.rel}"}} > 0'),
                                 60, alive=procs)
                errors = wait_for("node_textfile_scrape_error",
                                  lambda: query(prom_port, "node_textfile_scrape_error"), 60, alive=procs)
                check(errors[0]["value"][1] == "0", f"node_exporter could not parse the textfile: {errors}"
                      f"\n{open(ne_log).read()[-2000:]}")
                armed = query(prom_port, "psidiag_triggers_armed")
                check(armed and armed[0]["value"][1] == "1", f"psidiag_triggers_armed: {armed}")
                rules = json.loads(get(f"http://127.0.0.1:{prom_port}/api/v1/rules"))["data"]["groups"]
                names = {g["name"]: g for g in rules}
                check(set(names) == {"psidiag.rules", "psidiag.alerts"}, f"rule groups: {list(names)}")
                bad = [r["name"] for g in rules for r in g["rules"] if r.get("health") not in ("ok", "unknown")]
                check(not bad, f"unhealthy rules: {bad}")
                recorded = wait_for(
                    "the recorded incident rate",
                    lambda: query(prom_port, f'instance_watch_type_resource:psidiag_incidents:rate5m{{watch="{cg.rel}"}}'),
                    60, alive=procs)
                print(f"Prometheus: psidiag_incidents_total{{{', '.join(f'{k}={v}' for k, v in sorted(labels.items()))}}} "
                      f"= {series[0]['value'][1]}, stall {stall[0]['value'][1]} s, textfile errors 0, "
                      f"{sum(len(g['rules']) for g in rules)} rules healthy, recorded rate {recorded[0]['value'][1]}")
            finally:
                stop_agent(agent)
    finally:
        for name, p, _ in procs:
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(20)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        shutil.rmtree(tmp, ignore_errors=True)


run(main)
