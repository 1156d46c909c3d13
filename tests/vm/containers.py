# SPDX-License-Identifier: MIT
"""The container cases of the VM (guest bookworm-ctr of tests/vm/packages.py), run by guest.py's
runner like its own cases: the real docker.io 20.10, podman 4.3 and containerd 1.6 of Debian 12,
images made offline from busybox-static (`docker import`, `podman import`, and `ctr run
--rootfs` for containerd). In each a container "web" (a busy shell) is stalled by a neighbour
"batch" (four `yes`) on the VM's 2 vCPUs, and the incidents must name both by name and image.

- docker: its systemd cgroup driver (system.slice/docker-<id>.scope, Config.Image in config.v2.json).
- podman: the systemd driver (machine.slice/libpod-<id>.scope) and the cgroupfs one
  (<parent>/libpod-<id>), names from containers.json.
- containerd as the CRI makes Kubernetes pods: no CRI client can be built here (Debian 12 ships
  no CRI API definitions: golang-k8s-cri-api-dev and cri-tools are in sid only, and grpcio
  without them has nothing to speak), so `ctr` creates what the CRI plugin creates: runc's
  systemd cgroup "kubepods-<qos>-pod<uid>.slice:cri-containerd:<id>" (systemd makes
  kubepods.slice/kubepods-<qos>.slice/kubepods-<qos>-pod<uid>.slice/cri-containerd-<id>.scope),
  a bundle in containerd's k8s.io namespace, and the OCI annotations the CRI writes
  (io.kubernetes.cri.*, containerd's pkg/cri/annotations): a pause sandbox and a container per pod.
- the agent in a container as dist/kubernetes/psidiag.yaml runs it: its config, capabilities,
  AppArmor, mounts, host pid and network, a private cgroup namespace, placed in a burstable pod's
  slice (docker, systemd driver); and `psidiag check` there, unconfined and under docker-default."""

import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import uuid

from common import check, read_lines, stop_agent

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "cases.json")) as _f:
    PSIDIAG = json.load(_f)["installed"]["binary"]
MANIFEST = os.path.join(HERE, "psidiag.yaml")
DOCKER_IMAGE = "psidiag-vm/busybox:1"
PODMAN_IMAGE = "localhost/psidiag-vm/busybox:1"
AGENT_IMAGE = "psidiag-vm/agent:1"
WEB = "while :; do :; done"
BATCH = "yes >/dev/null & yes >/dev/null & yes >/dev/null & yes >/dev/null"
CASES = {}
DEADLINE_S = {"docker-names": 240, "podman-names": 300, "containerd-pods": 240, "agent-in-container": 300}


def case(fn):
    CASES[fn.__name__.replace("_", "-")] = fn
    return fn


def sh(argv, timeout=120, **kw):
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, **kw)


def must(argv, timeout=120):
    p = sh(argv, timeout)
    check(p.returncode == 0, f"{' '.join(argv)}: {p.returncode}\n{p.stdout[-1500:]}\n{p.stderr[-1500:]}")
    return p.stdout.strip()


def rootfs(tmp, extra=()):
    """A busybox rootfs (with extra files: (host path, path in the rootfs)); returns its path."""
    root = os.path.join(tmp, "rootfs")
    os.makedirs(os.path.join(root, "bin"), exist_ok=True)
    shutil.copy("/bin/busybox", os.path.join(root, "bin", "busybox"))
    for applet in ("sh", "yes", "sleep", "true", "cat", "ls"):
        os.symlink("busybox", os.path.join(root, "bin", applet))
    for d in ("proc", "sys", "dev", "etc", "tmp", "run", "var/log"):
        os.makedirs(os.path.join(root, d), exist_ok=True)
    for src, dst in extra:
        path = os.path.join(root, dst.lstrip("/"))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        shutil.copy(src, path)
    return root


def tarball(root):
    tar = root + ".tar"
    must(["tar", "-C", root, "-cf", tar, "."])
    return tar


def service(name):
    if sh(["systemctl", "is-active", name]).stdout.strip() != "active":
        must(["systemctl", "start", name], timeout=180)


def docker(*args, timeout=120):
    return sh(["docker", *args], timeout)


def names_in(inc):
    """{(name, image, pod or None)} of every process and cgroup the incident names in a container."""
    out = set()
    c = inc.get("culprits") or {}
    for o in (inc.get("most_delayed") or []) + c.get("processes", []) + c.get("cgroups", []) + inc.get("cgroups", []):
        ct = (o.get("meta") or {}).get("container")
        if ct:
            pod = ct.get("pod") or {}
            # The CRI's containers have no name of their own: the pod spec's is theirs.
            out.add((ct["name"] or pod.get("container"), ct["image"],
                     (pod.get("namespace"), pod.get("name"), pod.get("container")) if pod else None))
    return out


def entries(inc):
    """Every process and cgroup entry of an incident (with where it was found)."""
    c = inc.get("culprits") or {}
    for k, xs in (("most_delayed", inc.get("most_delayed")), ("culprits", c.get("processes")),
                  ("culprit cgroups", c.get("cgroups")), ("cgroups", inc.get("cgroups"))):
        for x in xs or []:
            yield k, x


def cgroup_of(x):
    """A process's cgroup, or a cgroup entry's path."""
    return x.get("cgroup") if "pid" in x else x.get("path")


def node_agent(tmp, name, start_load, want, timeout=90):
    """The agent on the VM's host with one node-wide watch (cpu some 50ms 2s, top 8) until the
    incidents name every container in want; start_load() runs once it watches. Returns the
    incidents, their path and the agent's log."""
    out, cfg, log = (os.path.join(tmp, f"{name}.{x}") for x in ("ndjson", "json", "log"))
    with open(cfg, "w") as f:
        json.dump({"output": out, "sample_ms": 1000, "cooldown_ms": 0, "top": 8,
                   "watch": [{"triggers": ["cpu some 50ms 2s"]}]}, f)
    agent = subprocess.Popen([PSIDIAG, "--config", cfg, "--enable-delayacct"], stderr=open(log, "w"))
    try:
        deadline = time.time() + 60
        while "watching:" not in open(log).read():
            check(agent.poll() is None and time.time() < deadline, f"the agent did not start:\n{open(log).read()}")
            time.sleep(0.1)
        start_load()
        deadline = time.time() + timeout
        while time.time() < deadline:
            lines = read_lines(out)
            if want <= {n for inc in lines for n, _, _ in names_in(inc)}:
                break
            time.sleep(0.5)
    finally:
        stop_agent(agent)
    lines = read_lines(out)
    return lines, out, open(log).read()


def check_named(validate, lines, log, expect):
    """expect: {name: (image, pod or None)}; every incident valid, each name given with its image
    (and pod) somewhere, never another image for it; the summary or `psidiag show` says it."""
    check(lines, f"no incident:\n{log[-3000:]}")
    for inc in lines:
        validate(inc)
    seen = {}
    for inc in lines:
        for n, img, pod in names_in(inc):
            seen.setdefault(n, set()).add((img, pod))
    print(f"  {len(lines)} incidents; named: { {n: sorted(map(str, v)) for n, v in seen.items()} }")
    print(f"  summary: {lines[-1]['summary']}")
    for n, (img, pod) in expect.items():
        check(seen.get(n) == {(img, pod)}, f"{n}: expected {(img, pod)}, incidents say {seen.get(n)}\n"
              f"{[l['summary'] for l in lines]}")


def check_identities(lines):
    """No process with an empty identity; every cgroup a host path."""
    for inc in lines:
        for where, x in entries(inc):
            if "pid" in x:
                check(x.get("comm"), f"{where}: a process with no name: {x}")
            # A process that ended between its sample and the read of /proc has no cgroup: it
            # says why (unreadable), and taskstats named it.
            cg = cgroup_of(x)
            check(cg is None and (x.get("ended") or x.get("unreadable")) or isinstance(cg, str) and cg.startswith("/"),
                  f"{where}: cgroup {cg!r}: {json.dumps(x)[:600]}")


@case
def docker_names(validate):
    """docker.io 20.10, systemd driver: web stalled by batch, both named with their image."""
    service("docker")
    tmp = tempfile.mkdtemp(prefix="psidiag-vm-docker-")
    try:
        must(["docker", "import", tarball(rootfs(tmp)), DOCKER_IMAGE])
        ids = {}

        def load():
            for n, script in (("web", WEB), ("batch", BATCH)):
                ids[n] = must(["docker", "run", "-d", "--name", n, "--network", "none", DOCKER_IMAGE, "sh", "-c", script])
        lines, out, log = node_agent(tmp, "docker", load, {"web", "batch"})
        check_named(validate, lines, log, {"web": (DOCKER_IMAGE, None), "batch": (DOCKER_IMAGE, None)})
        check_identities(lines)
        cgs = {cgroup_of(x) for inc in lines for _, x in entries(inc)
               if ((x.get("meta") or {}).get("container") or {}).get("name") == "web"}
        check(cgs == {f"/system.slice/docker-{ids['web']}.scope"}, f"web's cgroups: {cgs}")
        shown = sh([PSIDIAG, "show", out]).stdout
        check(f"container web, image {DOCKER_IMAGE}" in shown or f"container batch, image {DOCKER_IMAGE}" in shown,
              f"psidiag show names no container:\n{shown[-2000:]}")
    finally:
        docker("rm", "-f", "web", "batch")
        shutil.rmtree(tmp, ignore_errors=True)


@case
def podman_names(validate):
    """podman 4.3, rootful: its systemd driver (machine.slice/libpod-<id>.scope), then its
    cgroupfs driver under a parent of its own; each pair named with its image."""
    tmp = tempfile.mkdtemp(prefix="psidiag-vm-podman-")
    try:
        must(["podman", "import", tarball(rootfs(tmp)), PODMAN_IMAGE])
        for driver, opts in (("systemd", []), ("cgroupfs", ["--cgroup-manager", "cgroupfs",
                                                             "--cgroup-parent", "/psidiag-vm-podman"])):
            web, batch = f"web-{driver}", f"batch-{driver}"
            ids = {}

            def load():
                for n, script in ((web, WEB), (batch, BATCH)):
                    ids[n] = must(["podman", *opts[:2], "run", "-d", *opts[2:], "--name", n, "--network", "none",
                                   PODMAN_IMAGE, "sh", "-c", script])
            try:
                print(f"podman, {driver} driver:")
                lines, _, log = node_agent(tmp, f"podman-{driver}", load, {web, batch})
                check_named(validate, lines, log, {web: (PODMAN_IMAGE, None), batch: (PODMAN_IMAGE, None)})
                check_identities(lines)
                cgs = {cgroup_of(x) for inc in lines for _, x in entries(inc)
                       if ((x.get("meta") or {}).get("container") or {}).get("name") == web}
                # crun puts the container's processes in a child "container" of its scope.
                want = (f"/machine.slice/libpod-{ids[web]}.scope" if driver == "systemd"
                        else f"/psidiag-vm-podman/libpod-{ids[web]}")
                check(cgs and cgs <= {want, want + "/container"}, f"{web}'s cgroups: {cgs}, not {want}")
            finally:
                sh(["podman", *opts[:2], "rm", "-f", "-t", "0", web, batch])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


class Pod:
    """A Kubernetes-shaped pod made with ctr as containerd's CRI plugin makes one (see the module's
    docstring): its sandbox (pause: a sleep) and one container, in namespace k8s.io."""

    def __init__(self, root, namespace, name, container, qos, script, driver="systemd"):
        self.root, self.namespace, self.name, self.container, self.qos = root, namespace, name, container, qos
        self.uid = str(uuid.uuid4())
        self.sandbox_id, self.id = uuid.uuid4().hex + uuid.uuid4().hex, uuid.uuid4().hex + uuid.uuid4().hex
        self.script = script
        self.slice = f"kubepods-{qos}-pod{self.uid.replace('-', '_')}.slice"
        self.cgroup = f"/kubepods.slice/kubepods-{qos}.slice/{self.slice}/cri-containerd-{self.id}.scope"
        self.driver = driver
        if driver == "cgroupfs":
            # The kubelet's cgroupfs driver: kubepods/<qos>/pod<uid>/<id>, no runtime in the path.
            self.cgroup = f"/kubepods/{qos}/pod{self.uid}/{self.id}"

    def run(self, cid, kind, image, argv):
        ann = {"io.kubernetes.cri.container-type": kind, "io.kubernetes.cri.sandbox-id": self.sandbox_id,
               "io.kubernetes.cri.sandbox-namespace": self.namespace, "io.kubernetes.cri.sandbox-name": self.name,
               "io.kubernetes.cri.sandbox-uid": self.uid}
        if kind == "container":
            ann.update({"io.kubernetes.cri.container-name": self.container, "io.kubernetes.cri.image-name": image})
        # `ctr run --rootfs` takes the rootfs where it takes an image: the first argument; with no
        # image config there is no PATH either.
        cgroup = (["--runc-systemd-cgroup", "--cgroup", f"{self.slice}:cri-containerd:{cid}"] if self.driver == "systemd"
                  else ["--cgroup", f"/kubepods/{self.qos}/pod{self.uid}/{cid}"])
        must(["ctr", "-n", "k8s.io", "run", "-d", "--rootfs", "--env", "PATH=/bin", *cgroup, "--label", f"io.kubernetes.pod.name={self.name}",
              "--label", f"io.kubernetes.pod.namespace={self.namespace}", "--label", f"io.kubernetes.pod.uid={self.uid}",
              *[a for k, v in ann.items() for a in ("--annotation", f"{k}={v}")], self.root, cid, *argv])

    def start(self, image):
        self.run(self.sandbox_id, "sandbox", "registry.k8s.io/pause:3.6", ["sleep", "3600"])
        self.run(self.id, "container", image, ["sh", "-c", self.script])

    def remove(self):
        for cid in (self.id, self.sandbox_id):
            sh(["ctr", "-n", "k8s.io", "tasks", "kill", "-s", "SIGKILL", cid])
        for cid in (self.id, self.sandbox_id):
            for _ in range(20):
                sh(["ctr", "-n", "k8s.io", "tasks", "rm", "-f", cid])
                if sh(["ctr", "-n", "k8s.io", "containers", "rm", cid]).returncode == 0:
                    break
                time.sleep(0.5)


def pods(tmp):
    root = rootfs(tmp)
    return (Pod(root, "shop", "web-6f9c7d", "web", "burstable", WEB),
            Pod(root, "jobs", "batch-28871", "batch", "besteffort", BATCH))


IMAGE_K8S = "registry.example.com/shop/busybox:1.36"


@case
def containerd_pods(validate):
    """containerd 1.6 as its CRI plugin makes pods (ctr, see the docstring): a burstable pod's
    container "web" stalled by a besteffort pod's "batch", with the systemd driver's cgroups, and a
    burstable pod's "cache" with the cgroupfs driver's; each named by pod namespace, name,
    container and image, its cgroup with the pod's uid and QoS."""
    service("containerd")
    tmp = tempfile.mkdtemp(prefix="psidiag-vm-pods-")
    web, batch = pods(tmp)
    cache = Pod(web.root, "shop", "cache-0", "cache", "burstable", WEB, driver="cgroupfs")
    try:
        lines, _, log = node_agent(tmp, "pods", lambda: [p.start(IMAGE_K8S) for p in (web, batch, cache)],
                                   {"web", "batch", "cache"})
        check_pods(validate, lines, log, web, batch, cache)
    finally:
        for p in (web, batch, cache):
            p.remove()
        shutil.rmtree(tmp, ignore_errors=True)


def check_pods(validate, lines, log, *pods):
    check_named(validate, lines, log, {p.container: (IMAGE_K8S, (p.namespace, p.name, p.container)) for p in pods})
    check_identities(lines)
    for p in pods:
        metas = {json.dumps({k: x["meta"].get(k) for k in ("pod_uid", "qos", "container_runtime")}) + cgroup_of(x)
                 for inc in lines for _, x in entries(inc)
                 if (((x.get("meta") or {}).get("container") or {}).get("pod") or {}).get("container") == p.container}
        # The cgroupfs path names no runtime (cgroup_meta's container_runtime may be null there).
        want = {json.dumps({"pod_uid": p.uid, "qos": p.qos, "container_runtime": rt}) + p.cgroup
                for rt in (("containerd",) if p.driver == "systemd" else ("containerd", None))}
        print(f"  {p.namespace}/{p.name}: {sorted(metas)}")
        check(metas and metas <= want, f"{p.name}: {metas}, not {want}")


def manifest():
    """The shipped DaemonSet's config (the ConfigMap) and its container's spec."""
    import yaml
    with open(MANIFEST) as f:
        docs = list(yaml.safe_load_all(f))
    config = json.loads(next(d for d in docs if d["kind"] == "ConfigMap")["data"]["config.json"])
    ds = next(d for d in docs if d["kind"] == "DaemonSet")["spec"]["template"]
    return config, ds


def agent_image(tmp):
    """The agent's image: the installed binary and the libraries it links, on busybox."""
    libs = re.findall(r"(/\S+) \(0x", must(["ldd", PSIDIAG]))
    root = rootfs(os.path.join(tmp, "agent"), [(PSIDIAG, PSIDIAG)] + [(os.path.realpath(l), l) for l in libs])
    must(["docker", "import", "--change", f'ENTRYPOINT ["{PSIDIAG}"]', tarball(root), AGENT_IMAGE])


def docker_opts(ds, tmp, confined=False):
    """`docker run` options that say what the manifest's pod spec says: host pid and network, the
    container's securityContext, its resources, its volumes (the ConfigMap as a directory), and a
    burstable pod's slice as its cgroup parent; the runtime's own cgroup namespace (private, as
    containerd and docker give every container on cgroup2)."""
    spec = ds["spec"]
    c = spec["containers"][0]
    sc = c["securityContext"]
    opts = ["--cgroupns", "private", "--cgroup-parent", f"kubepods-burstable-pod{uuid.uuid4().hex}.slice"]
    if spec.get("hostPID"):
        opts += ["--pid", "host"]
    if spec.get("hostNetwork"):
        opts += ["--network", "host"]
    opts += ["--user", str(sc.get("runAsUser", 0))]
    opts += [a for cap in sc["capabilities"].get("drop", []) for a in ("--cap-drop", cap)]
    opts += [a for cap in sc["capabilities"].get("add", []) for a in ("--cap-add", cap)]
    check(not sc.get("privileged"), "the manifest asks for a privileged container")
    if sc.get("allowPrivilegeEscalation") is False:
        opts += ["--security-opt", "no-new-privileges"]
    if sc.get("readOnlyRootFilesystem"):
        opts += ["--read-only"]
    if not confined:
        check(sc.get("appArmorProfile", {}).get("type") == "Unconfined", f"AppArmor: {sc.get('appArmorProfile')}")
        opts += ["--security-opt", "apparmor=unconfined"]
    lim = c.get("resources", {}).get("limits", {}).get("memory")
    if lim:
        opts += ["--memory", lim.replace("Mi", "m")]
    vols = {v["name"]: v for v in spec["volumes"]}
    for m in c["volumeMounts"]:
        v = vols[m["name"]]
        src = os.path.join(tmp, "configmap") if "configMap" in v else v["hostPath"]["path"]
        if v.get("hostPath", {}).get("type") == "DirectoryOrCreate":
            os.makedirs(src, exist_ok=True)
        opts += ["-v", f"{src}:{m['mountPath']}" + (":ro" if m.get("readOnly") else "")]
    return opts


@case
def agent_in_container(validate):
    """The agent in a docker container as the shipped manifest runs it (docker_opts()), with the
    manifest's own config, beside the Kubernetes-shaped pods of containerd-pods and a podman
    container "podweb": every trigger armed; the pods' containers named by pod and image, podweb
    and the agent's own container by name and image (through the manifest's mounts); every cgroup a host path with the pod's
    QoS, its own container's too; no process without a name. Then `psidiag check` in such a
    container: all ok but kmsg (a bind mount, refused by the device cgroup: it says so); and under
    docker's default AppArmor profile, its psi-trigger line names AppArmor."""
    service("docker")
    service("containerd")
    config, ds = manifest()
    tmp = tempfile.mkdtemp(prefix="psidiag-vm-agentctr-")
    os.makedirs(os.path.join(tmp, "configmap"))
    with open(os.path.join(tmp, "configmap", "config.json"), "w") as f:
        json.dump(config, f)
    out = config["output"]
    if os.path.exists(out):
        os.unlink(out)
    web, batch = pods(tmp)
    must(["sysctl", "-w", "kernel.task_delayacct=1"])
    agent_image(tmp)
    must(["podman", "import", tarball(rootfs(os.path.join(tmp, "podman"))), PODMAN_IMAGE])
    opts = docker_opts(ds, tmp)
    try:
        # The pods first: the config's watches of kubepods-burstable.slice and kubepods-besteffort.slice.
        web.run(web.sandbox_id, "sandbox", "registry.k8s.io/pause:3.6", ["sleep", "3600"])
        batch.run(batch.sandbox_id, "sandbox", "registry.k8s.io/pause:3.6", ["sleep", "3600"])
        agent_id = must(["docker", "run", "-d", "--name", "psidiag", *opts, AGENT_IMAGE, *ds["spec"]["containers"][0]["args"]])
        deadline = time.time() + 60
        while "watching:" not in docker("logs", "psidiag").stderr:
            running = docker("inspect", "-f", "{{.State.Running}}", "psidiag").stdout.strip()
            check(running == "true" and time.time() < deadline, f"the agent did not start:\n"
                  f"{docker('logs', 'psidiag').stderr[-3000:]}")
            time.sleep(0.2)
        web.run(web.id, "container", IMAGE_K8S, ["sh", "-c", WEB])
        batch.run(batch.id, "container", IMAGE_K8S, ["sh", "-c", BATCH])
        must(["podman", "run", "-d", "--name", "podweb", "--network", "none", PODMAN_IMAGE, "sh", "-c", WEB])
        want = {"web", "batch", "podweb"}
        deadline = time.time() + 120
        while time.time() < deadline and not want <= {n for inc in read_lines(out) for n, _, _ in names_in(inc)}:
            time.sleep(0.5)
        log = docker("logs", "psidiag").stderr
        print("  the agent's log:\n" + "\n".join("    " + l for l in log.splitlines()[:12]))
        # The device cgroup refuses the bind-mounted /dev/kmsg; CAP_SYSLOG is there: not to be blamed.
        check("cannot read /dev/kmsg although CAP_SYSLOG is present" in log, f"the kmsg warning:\n{log[-3000:]}")
        n = sum(len(w["triggers"]) for w in config["watch"])
        check(f"watching: {n} triggers armed on {len(config['watch'])} watches" in log and "cannot arm" not in log,
              f"not every trigger armed ({n} in the config):\n{log[-3000:]}")
        lines = read_lines(out)
        check_pods(validate, lines, log, web, batch)
        check_named(validate, lines, log, {"podweb": (PODMAN_IMAGE, None)})
        # The agent's own container, when an incident names it (it is not always among the top).
        mine = {(img, pod) for inc in lines for n, img, pod in names_in(inc) if n == "psidiag"}
        check(mine <= {(AGENT_IMAGE, None)}, f"the agent's own container: {mine}")
        own = {cgroup_of(x): (x.get("meta") or {}).get("qos") for inc in lines for _, x in entries(inc)
               if agent_id in (cgroup_of(x) or "")}
        print(f"  the agent's own container as named: {own}")
        for cg, qos in own.items():
            check(cg.startswith("/kubepods.slice/kubepods-burstable.slice/") and qos == "burstable",
                  f"the agent's own cgroup {cg}: qos {qos}")
    finally:
        docker("rm", "-f", "psidiag")
        sh(["podman", "rm", "-f", "-t", "0", "podweb"])
        web.remove()
        batch.remove()
    try:
        for confined in (False, True):
            opts = docker_opts(ds, tmp, confined=confined)
            p = docker("run", "--rm", *opts, AGENT_IMAGE, "check")
            print(f"  psidiag check in the container{' under docker-default' if confined else ''}:\n{p.stdout}")
            lines = {m.group(2): (m.group(1), m.group(3)) for m in
                     re.finditer(r"^(ok|warn|fail)\s+(\S+)\s*(.*)$", p.stdout, re.M)}
            check(lines.get("kmsg", ("",))[0] == "warn" and "device" in lines["kmsg"][1],
                  f"kmsg: {lines.get('kmsg')}")
            if confined:
                check(lines.get("psi-trigger", ("",))[0] == "fail" and "AppArmor" in lines["psi-trigger"][1],
                      f"psi-trigger under docker-default: {lines.get('psi-trigger')}")
            else:
                bad = {k: v for k, v in lines.items() if v[0] != "ok" and k != "kmsg"}
                check(not bad, f"psidiag check in the manifest's container: {bad}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
