# SPDX-License-Identifier: MIT
"""The container cases of the VM (guests bookworm-ctr and, podman-names alone, trixie of tests/vm/packages.py), run
by guest.py's runner like its own cases: the real docker.io 20.10, podman 4.3 and containerd 1.6 of
Debian 12 (podman-names with podman 5.4 of Debian 13 too),
images made offline from busybox-static (`docker import`, `podman import`, and for containerd
podman's image saved and imported with `ctr images import`). In each a container "web" (a busy
shell) is stalled by a neighbour "batch" (four `yes`) on the VM's 2 vCPUs, and the incidents must
name both by name and image.

- docker: its systemd cgroup driver (system.slice/docker-<id>.scope), then its cgroupfs one
  (docker/<id>, dockerd restarted with native.cgroupdriver=cgroupfs); Config.Image in config.v2.json.
- podman: rootful with the systemd driver (machine.slice/libpod-<id>.scope) and the cgroupfs one
  (<parent>/libpod-<id>), then rootless, as a user whose systemd instance (user@<uid>.service,
  lingering) holds the scope; names from containers.json (the user's own, rootless: with podman 5
  below the graph root its own ~/.config/containers/storage.conf sets).
- containerd as Kubernetes makes pods: its CRI plugin driven by a CRI client (tests/vm/cri.py,
  runtime.v1.RuntimeService over containerd's socket, as the kubelet calls it: RunPodSandbox with
  the node's network, so no CNI, then CreateContainer and StartContainer), the sandbox image
  imported offline under the name containerd is configured with (`containerd config dump`), runc's
  systemd cgroup driver (kubepods.slice/.../cri-containerd-<id>.scope) and then the cgroupfs one
  (kubepods/<qos>/pod<uid>/<id>): containerd restarted with SystemdCgroup set, as a node is
  configured. The names are what the CRI plugin itself wrote into each task's OCI spec.
- plain containerd, as `ctr run` makes containers: cgroup /<namespace>/<id>, named by the id.
- the agent in a container as dist/kubernetes/psidiag.yaml runs it: its config, capabilities,
  AppArmor, mounts, host pid and network, a private cgroup namespace, placed in a burstable pod's
  slice (docker, systemd driver), beside CRI pods; and `psidiag check` there, unconfined and under
  docker-default.

Every case undoes what it started, even when it fails (ctrutil.Cleanup, shared with the
integration tests): containers, pods, images, users, and the runtimes' configuration."""

import json
import os
import pwd
import re
import shutil
import subprocess
import tempfile
import time
import uuid

import cri
from common import check, read_lines, stop_agent
from ctrutil import Cleanup, rootfs, tarball

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "cases.json")) as _f:
    PSIDIAG = json.load(_f)["installed"]["binary"]
MANIFEST = os.path.join(HERE, "psidiag.yaml")
DOCKER_IMAGE = "psidiag-vm/busybox:1"
PODMAN_IMAGE = "localhost/psidiag-vm/busybox:1"
AGENT_IMAGE = "psidiag-vm/agent:1"
CTR_IMAGE = "registry.example.com/tools/ctrweb:1"
IMAGE_K8S = "registry.example.com/shop/busybox:1.36"
WEB = "while :; do :; done"
BATCH = "yes >/dev/null & yes >/dev/null & yes >/dev/null & yes >/dev/null"
CASES = {}
DEADLINE_S = {"docker-names": 420, "podman-names": 600, "containerd-pods": 360, "containerd-plain": 240,
              "agent-in-container": 360}


def case(fn):
    CASES[fn.__name__.replace("_", "-")] = fn
    return fn


def sh(argv, timeout=120, **kw):
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, **kw)


def must(argv, timeout=120):
    p = sh(argv, timeout)
    check(p.returncode == 0, f"{' '.join(argv)}: {p.returncode}\n{p.stdout[-1500:]}\n{p.stderr[-1500:]}")
    return p.stdout.strip()


def service(name):
    if sh(["systemctl", "is-active", name]).stdout.strip() != "active":
        must(["systemctl", "start", name], timeout=180)


def docker(*args, timeout=120):
    return sh(["docker", *args], timeout)


def wait_until(what, fn, timeout=60):
    deadline = time.time() + timeout
    while True:
        v = fn()
        if v:
            return v
        check(time.time() < deadline, f"{what}: not within {timeout} s")
        time.sleep(0.5)


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


def node_agent(tmp, name, start_load, want, timeout=90, more=(), until=lambda lines: True):
    """The agent on the VM's host with one node-wide watch (cpu some 50ms 2s, top 8), and the
    watches in more, until the incidents name every container in want and until(incidents) holds;
    start_load() runs once it watches. Returns the incidents, their path and the agent's log."""
    out, cfg, log = (os.path.join(tmp, f"{name}.{x}") for x in ("ndjson", "json", "log"))
    with open(cfg, "w") as f:
        json.dump({"output": out, "sample_ms": 1000, "cooldown_ms": 0, "top": 8,
                   "watch": [{"triggers": ["cpu some 50ms 2s"]}, *more]}, f)
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
            if want <= {n for inc in lines for n, _, _ in names_in(inc)} and until(lines):
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
    unnamed = {(cgroup_of(x), x["meta"]["container"]["unnamed"]) for inc in lines for _, x in entries(inc)
               if ((x.get("meta") or {}).get("container") or {}).get("unnamed")}
    for n, (img, pod) in expect.items():
        check(seen.get(n) == {(img, pod)}, f"{n}: expected {(img, pod)}, incidents say {seen.get(n)}; unnamed: "
              f"{sorted(unnamed)[:6]}\n{[l['summary'] for l in lines][:6]}")


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


def runtime_pods(lines, name):
    """The runtime_pod of every entry the incidents name as the container name."""
    return {x["meta"]["container"].get("runtime_pod") for inc in lines for _, x in entries(inc)
            if ((x.get("meta") or {}).get("container") or {}).get("name") == name}


def container_cgroups(lines, name):
    """The cgroups of every entry the incidents name as the container name."""
    return {cgroup_of(x) for inc in lines for _, x in entries(inc)
            if ((x.get("meta") or {}).get("container") or {}).get("name") == name}


def docker_driver(cgroupfs, done):
    """dockerd with the cgroupfs driver (daemon.json's exec-opts), or as Debian ships it (systemd);
    restarted, and put back at the end."""
    path = "/etc/docker/daemon.json"
    if cgroupfs:
        check(not os.path.exists(path), f"{path} exists: not the stock dockerd")
        with open(path, "w") as f:
            json.dump({"exec-opts": ["native.cgroupdriver=cgroupfs"]}, f)
        done.add("dockerd's systemd driver back", docker_driver, False, None)
    elif os.path.exists(path):
        os.unlink(path)
    must(["systemctl", "restart", "docker"], timeout=180)
    driver = must(["docker", "info", "--format", "{{.CgroupDriver}}"])
    check(driver == ("cgroupfs" if cgroupfs else "systemd"), f"docker's cgroup driver: {driver}")


@case
def docker_names(validate):
    """docker.io 20.10: with its systemd driver, then (dockerd restarted) its cgroupfs one: web
    stalled by batch, both named with their image, web's cgroup the driver's."""
    service("docker")
    tmp = tempfile.mkdtemp(prefix="psidiag-vm-docker-")
    with Cleanup() as done:
        done.add("the rootfs", shutil.rmtree, tmp, ignore_errors=True)
        must(["docker", "import", tarball(rootfs(tmp)), DOCKER_IMAGE])
        for driver in ("systemd", "cgroupfs"):
            web, batch = f"web-{driver}", f"batch-{driver}"
            ids = {}
            if driver == "cgroupfs":
                docker_driver(True, done)

            def load():
                for n, script in ((web, WEB), (batch, BATCH)):
                    ids[n] = must(["docker", "run", "-d", "--name", n, "--network", "none", DOCKER_IMAGE, "sh", "-c", script])
            with Cleanup() as these:
                these.docker(web, batch)
                print(f"docker, {driver} driver:")
                lines, out, log = node_agent(tmp, f"docker-{driver}", load, {web, batch})
                check_named(validate, lines, log, {web: (DOCKER_IMAGE, None), batch: (DOCKER_IMAGE, None)})
                check_identities(lines)
                want = f"/system.slice/docker-{ids[web]}.scope" if driver == "systemd" else f"/docker/{ids[web]}"
                cgs = container_cgroups(lines, web)
                print(f"  {web}'s cgroups: {sorted(cgs)}")
                check(cgs == {want}, f"{web}'s cgroups: {cgs}, not {want}")
                shown = sh([PSIDIAG, "show", out]).stdout
                check(f"container {web}, image {DOCKER_IMAGE}" in shown or f"container {batch}, image {DOCKER_IMAGE}" in shown,
                      f"psidiag show names no container:\n{shown[-2000:]}")


ROOTLESS_USER = "psidiag-rl"


def rootless_user(done):
    """A user for rootless podman as a node has one: a home, subordinate ids, and a systemd
    instance that lingers (user@<uid>.service with its bus, where podman's systemd driver makes its
    scopes). Returns its uid and the argv prefix that runs a command as it, with its session's
    environment. Removed at the end."""
    must(["useradd", "--create-home", "--shell", "/bin/sh", ROOTLESS_USER])
    done.add(f"user {ROOTLESS_USER}", sh, ["userdel", "--remove", "--force", ROOTLESS_USER])
    uid = int(must(["id", "-u", ROOTLESS_USER]))
    if not os.path.exists("/etc/subuid") or ROOTLESS_USER + ":" not in open("/etc/subuid").read():
        must(["usermod", "--add-subuids", "200000-265535", "--add-subgids", "200000-265535", ROOTLESS_USER])
    must(["loginctl", "enable-linger", ROOTLESS_USER])
    done.add(f"{ROOTLESS_USER}'s systemd instance", lambda: (sh(["loginctl", "disable-linger", ROOTLESS_USER]),
                                                            sh(["systemctl", "stop", f"user@{uid}.service"])))
    wait_until(f"user@{uid}.service and its bus",
               lambda: sh(["systemctl", "is-active", f"user@{uid}.service"]).stdout.strip() == "active"
               and os.path.exists(f"/run/user/{uid}/bus"))
    as_user = ["runuser", "-u", ROOTLESS_USER, "--", "env", f"HOME=/home/{ROOTLESS_USER}", f"XDG_RUNTIME_DIR=/run/user/{uid}",
               f"DBUS_SESSION_BUS_ADDRESS=unix:path=/run/user/{uid}/bus"]
    return uid, as_user


def podman_state(user, storage):
    """podman's version and where it keeps its state, printed: podman 4 in libpod's bbolt
    bolt_state.db, podman 5 on a fresh install in SQLite, <storage>/db.sql, with no bolt_state.db
    (podman 5 takes the bbolt file while there is one), so that the pod names of its case are read
    from the one file it says. Returns podman's major version."""
    version = must([*user, "podman", "version", "--format", "{{.Client.Version}}"])
    major = int(version.split(".")[0])
    bolt, sql = os.path.join(storage, "libpod", "bolt_state.db"), os.path.join(storage, "db.sql")
    if major >= 5:
        backend = must([*user, "podman", "info", "--format", "{{.Host.DatabaseBackend}}"])
        print(f"  podman {version}{' rootless' if user else ''}: DatabaseBackend {backend}")
        check(backend == "sqlite", f"podman {version}: DatabaseBackend {backend!r}, not sqlite")
        check(os.path.exists(sql) and not os.path.exists(bolt), f"podman {version}: {sql} "
              f"{'exists' if os.path.exists(sql) else 'missing'}, {bolt} {'exists' if os.path.exists(bolt) else 'missing'}")
    else:
        print(f"  podman {version}{' rootless' if user else ''}: bolt_state.db")
        check(os.path.exists(bolt), f"podman {version}: no {bolt}")
    return major


def user_storage_conf(uid):
    """The rootless user's own ~/.config/containers/storage.conf, moving the graph root to
    $HOME/psidiag-graph (the vfs driver, which podman 4.3 and 5.4 both have rootless): psidiag
    finds the user's containers where containers/storage puts them, not at the default."""
    conf = f"/home/{ROOTLESS_USER}/.config/containers"
    os.makedirs(conf, exist_ok=True)
    with open(os.path.join(conf, "storage.conf"), "w") as f:
        f.write('[storage]\ndriver = "vfs"\ngraphroot = "$HOME/psidiag-graph"\n')
    gid = pwd.getpwuid(uid).pw_gid
    for path in (os.path.dirname(conf), conf, os.path.join(conf, "storage.conf")):
        os.chown(path, uid, gid)


@case
def podman_names(validate):
    """podman 4.3 (bookworm-ctr) or 5.4 (trixie): rootful with its systemd driver
    (machine.slice/libpod-<id>.scope), with its cgroupfs driver under a parent of its own, then
    rootless with the systemd driver as a lingering user (user@<uid>.service/.../libpod-<id>.scope,
    names in the user's own containers.json: podman 4.3's at the default, podman 5.4's below the
    graph root that the user's own ~/.config/containers/storage.conf moved to $HOME/psidiag-graph);
    each pair named with its image. The batch container
    is made in a `podman pod` (with its infra container, whose pause image podman builds offline
    from catatonit; none with cgroupfs): its incidents name the pod (meta.container.runtime_pod,
    read from libpod's bolt_state.db with podman 4, from db.sql with podman 5, the user's own
    rootless), web's none; its cgroup is the pod's slice's (machine-libpod_pod_<pod id>.slice and
    the like)."""
    tmp = tempfile.mkdtemp(prefix="psidiag-vm-podman-")
    with Cleanup() as done:
        done.add("the rootfs", shutil.rmtree, tmp, ignore_errors=True)
        tar = tarball(rootfs(tmp))
        must(["podman", "import", tar, PODMAN_IMAGE])
        done.image("podman", PODMAN_IMAGE)
        major = podman_state([], "/var/lib/containers/storage")
        for driver, opts in (("systemd", []), ("cgroupfs", ["--cgroup-manager", "cgroupfs",
                                                             "--cgroup-parent", "/psidiag-vm-podman"]),
                             ("rootless", [])):
            web, batch, pod = f"web-{driver}", f"batch-{driver}", f"pod-{driver}"
            user, uid = [], None
            # podman 4.3's rootless storage where it is by default, podman 5.4's where the user's
            # own storage.conf moved it
            storage = f"/home/{ROOTLESS_USER}/" + ("psidiag-graph" if major >= 5 else ".local/share/containers/storage")
            if driver == "rootless":
                uid, user = rootless_user(done)
                if major >= 5:
                    user_storage_conf(uid)
                os.chmod(tmp, 0o755)
                must([*user, "podman", "import", tar, PODMAN_IMAGE])
                podman_state(user, storage)
            ids = {}

            # Rootful cgroupfs with an infra container, podman 4.3 makes the pod's cgroup itself
            # (libpod/runtime_pod_linux.go: cgroups.New with no resources), and on cgroup2 crun then
            # may not mknod /dev/null in it ("OCI permission denied", measured here): that pod
            # without infra, its cgroup crun's.
            # (A pod without infra has no network of its own to say.)
            infra = ["--infra=false"] if driver == "cgroupfs" else ["--network", "none"]

            def load():
                ids[pod] = must([*user, "podman", *opts[:2], "pod", "create", *opts[2:], *infra, "--name", pod])
                # a container in a pod has the pod's network: --network is the pod's to say
                in_pod = ["--pod", pod, *(["--network", "none"] if infra[0] == "--infra=false" else [])]
                for n, script, where in ((web, WEB, [*opts[2:], "--network", "none"]), (batch, BATCH, in_pod)):
                    ids[n] = must([*user, "podman", *opts[:2], "run", "-d", *where, "--name", n, PODMAN_IMAGE, "sh", "-c",
                                   script])
            with Cleanup() as these:
                these.add(f"podman pod rm {pod}", sh, [*user, "podman", *opts[:2], "pod", "rm", "-f", "-t", "0", pod])
                these.podman(web, batch, opts=opts[:2], user=user)
                print(f"podman, {driver}:")
                lines, _, log = node_agent(tmp, f"podman-{driver}", load, {web, batch})
                if user:
                    print("  the user's storage: " + " ".join(sh(["find", storage,
                                                                 "-maxdepth", "2", "-name", "*containers.json"]).stdout.split()))
                check_named(validate, lines, log, {web: (PODMAN_IMAGE, None), batch: (PODMAN_IMAGE, None)})
                check_identities(lines)
                cgs = container_cgroups(lines, web)
                print(f"  {web}'s cgroups: {sorted(cgs)}")
                # crun puts the container's processes in a child "container" of its scope.
                want = {"systemd": rf"/machine\.slice/libpod-{ids[web]}\.scope",
                        "cgroupfs": rf"/psidiag-vm-podman/libpod-{ids[web]}",
                        "rootless": rf"/user\.slice/user-{uid}\.slice/user@{uid}\.service/(\S+/)?libpod-{ids[web]}\.scope"}
                check(cgs and all(re.fullmatch(want[driver] + "(/container)?", c) for c in cgs),
                      f"{web}'s cgroups: {cgs}, not {want[driver]}")
                # the `podman pod`: batch's named, web's not
                pods = {n: runtime_pods(lines, n) for n in (web, batch)}
                print(f"  runtime_pod: {pods}; {batch}'s cgroups: {sorted(container_cgroups(lines, batch))}")
                check(pods[batch] == {pod}, f"{batch}: runtime_pod {pods[batch]}, not {{{pod!r}}}")
                check(pods[web] == {None}, f"{web}: runtime_pod {pods[web]}, not {{None}}")
                # the pod's infra container (<pod id's 12>-infra), where an incident names it: its pod too
                if infra[0] != "--infra=false":
                    infra_name = f"{ids[pod][:12]}-infra"
                    infra_pods = runtime_pods(lines, infra_name)
                    print(f"  {infra_name}: runtime_pod {infra_pods or 'not in an incident'}")
                    # a lookup during one of podman's commits (db.sql busy past psidiag's 50 ms) says
                    # the pod at the next lookup a second later: one CI run's incidents all read None,
                    # a busy schema read then taken for a corrupt file and never asked again
                    check(not infra_pods or (pod in infra_pods and infra_pods <= {pod, None}),
                          f"{infra_name}: runtime_pod {infra_pods}, not {{{pod!r}}}")
                # podman 4.3 makes a pod's cgroup for its infra container: without one (cgroupfs
                # here) the pod's containers are in podman's default parent; podman 5.4 makes the
                # pod's cgroup under the pod's parent all the same, <parent>/<pod id> (both measured)
                in_pod_cg = (rf"/libpod_parent/libpod-{ids[batch]}" if major < 5 else
                             rf"/psidiag-vm-podman/{ids[pod]}/libpod-{ids[batch]}") + "(/container)?"
                in_cg = (lambda c: re.fullmatch(in_pod_cg, c)) if driver == "cgroupfs" else (lambda c: ids[pod] in c)
                check(all(in_cg(c) for c in container_cgroups(lines, batch)),
                      f"{batch}'s cgroups are not where its pod {ids[pod]} puts them")
                said = [l["summary"] for l in lines if f"podman pod {pod}" in l["summary"]]
                shown = sh([PSIDIAG, "show", os.path.join(tmp, f"podman-{driver}.ndjson")]).stdout
                print(f"  a summary with the pod: {said[-1] if said else None}")
                check(said or f"podman pod {pod}" in shown, f"neither a summary nor psidiag show says podman pod {pod}")


class Containerd:
    """The node's containerd set up for the CRI as a node is: runc's cgroup driver in its
    config.toml (Debian's own file, with the CRI's runc runtime and SystemdCgroup appended), the
    sandbox image and the pods' image imported offline into the CRI's namespace k8s.io, the
    sandbox image under the name containerd is configured with. The config is put back (and
    containerd restarted) at the end."""

    CONFIG = "/etc/containerd/config.toml"

    def __init__(self, tmp, done):
        self.done = done
        with open(self.CONFIG) as f:
            self.original = f.read()
        done.add("containerd's config.toml back", self.restore)
        service("containerd")
        m = re.search(r'^\s*sandbox_image = "([^"]+)"', must(["containerd", "config", "dump"]), re.M)
        check(m, "no sandbox_image in `containerd config dump`")
        self.sandbox_image = m.group(1)
        root = rootfs(os.path.join(tmp, "cri"))
        for image, change in ((self.sandbox_image, ["--change", 'ENTRYPOINT ["/bin/sleep", "2147483647"]']),
                              (IMAGE_K8S, [])):
            archive = os.path.join(tmp, "cri", re.sub(r"\W", "_", image) + ".tar")
            must(["podman", "import", *change, tarball(root), image])
            must(["podman", "save", "--format", "docker-archive", "-o", archive, image])
            sh(["podman", "rmi", "-f", image])
            must(["ctr", "-n", "k8s.io", "images", "import", archive])
            done.add(f"image {image}", sh, ["ctr", "-n", "k8s.io", "images", "rm", image])
        print(f"  containerd {must(['containerd', '--version']).split()[2]}, sandbox image {self.sandbox_image}")
        self.client = None

    def driver(self, systemd):
        """containerd restarted with runc's systemd (or cgroupfs) cgroup driver; a CRI client that
        answers."""
        with open(self.CONFIG, "w") as f:
            f.write(self.original + f"""
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
    SystemdCgroup = {"true" if systemd else "false"}
""")
        self.restart()
        dump = must(["containerd", "config", "dump"])
        check(re.search(rf"SystemdCgroup = {'true' if systemd else 'false'}", dump), "containerd's config: no SystemdCgroup")
        return self.client

    def restart(self):
        if self.client:
            self.client.close()
        must(["systemctl", "restart", "containerd"], timeout=180)
        self.client = cri.Client()

        def answers():
            try:
                return self.client.version()
            except Exception:  # noqa: BLE001: not up yet
                return None
        v = wait_until("the CRI's Version", answers)
        print(f"  CRI: {v['runtime_name']} {v['runtime_version']}, API {v['runtime_api_version']}")

    def restore(self):
        with open(self.CONFIG, "w") as f:
            f.write(self.original)
        if self.client:
            self.client.close()
            self.client = None
        sh(["systemctl", "restart", "containerd"], timeout=180)


class CriPod:
    """A pod as the kubelet makes one through the CRI: its sandbox (RunPodSandbox, in the QoS
    class's cgroup parent as the kubelet names it for the driver) and one container (CreateContainer,
    StartContainer) running script."""

    def __init__(self, ctd, namespace, name, container, qos, script, systemd=True):
        self.ctd, self.namespace, self.name, self.container, self.qos = ctd, namespace, name, container, qos
        self.script, self.systemd = script, systemd
        self.driver = "systemd" if systemd else "cgroupfs"
        self.uid = str(uuid.uuid4())
        self.parent = (f"kubepods-{qos}-pod{self.uid.replace('-', '_')}.slice" if systemd
                       else f"/kubepods/{qos}/pod{self.uid}")
        self.sandbox_id = self.id = None

    def run_sandbox(self, done):
        self.config = cri.sandbox_config(self.name, self.uid, self.namespace, self.parent)
        self.sandbox_id = self.ctd.client.run_pod_sandbox(self.config)
        done.cri_pod(self)

    def run_container(self, image):
        c = self.ctd.client
        cc = cri.container_config(self.container, image, ["sh", "-c", self.script], env={"PATH": "/bin"},
                                  cpu_shares=102 if self.qos == "burstable" else 2,
                                  pod=(self.name, self.namespace, self.uid))
        self.id = c.create_container(self.sandbox_id, cc, self.config)
        c.start_container(self.id)

    def run(self, done, image):
        self.run_sandbox(done)
        self.run_container(image)

    @property
    def cgroup(self):
        if self.systemd:
            return f"/kubepods.slice/kubepods-{self.qos}.slice/{self.parent}/cri-containerd-{self.id}.scope"
        return f"{self.parent}/{self.id}"

    def remove(self):
        self.ctd.client.stop_pod_sandbox(self.sandbox_id)
        self.ctd.client.remove_pod_sandbox(self.sandbox_id)


@case
def containerd_pods(validate):
    """containerd 1.6's CRI plugin driven by a CRI client (tests/vm/cri.py; Containerd, CriPod):
    with runc's systemd driver a burstable pod's container "web" stalled by a besteffort pod's
    "batch"; then containerd restarted with the cgroupfs driver, and a burstable pod's "cache" beside
    them. Each named by pod namespace, name, container and image as the CRI plugin wrote them, its
    cgroup with the pod's uid and QoS, and containerd's namespace k8s.io."""
    tmp = tempfile.mkdtemp(prefix="psidiag-vm-pods-")
    with Cleanup() as done:
        done.add("the rootfs", shutil.rmtree, tmp, ignore_errors=True)
        ctd = Containerd(tmp, done)
        ctd.driver(systemd=True)
        web = CriPod(ctd, "shop", "web-6f9c7d", "web", "burstable", WEB)
        batch = CriPod(ctd, "jobs", "batch-28871", "batch", "besteffort", BATCH)
        cache = CriPod(ctd, "shop", "cache-0", "cache", "burstable", WEB, systemd=False)

        def load():
            web.run(done, IMAGE_K8S)
            batch.run(done, IMAGE_K8S)
            ctd.driver(systemd=False)
            cache.run(done, IMAGE_K8S)
        lines, _, log = node_agent(tmp, "pods", load, {"web", "batch", "cache"}, timeout=120)
        check_pods(validate, lines, log, web, batch, cache)


def check_pods(validate, lines, log, *pods):
    check_named(validate, lines, log, {p.container: (IMAGE_K8S, (p.namespace, p.name, p.container)) for p in pods})
    check_identities(lines)
    for p in pods:
        metas = {json.dumps({k: x["meta"].get(k) for k in ("pod_uid", "qos", "container_runtime")}
                            | {"ns": x["meta"]["container"].get("runtime_namespace")}) + cgroup_of(x)
                 for inc in lines for _, x in entries(inc)
                 if (((x.get("meta") or {}).get("container") or {}).get("pod") or {}).get("container") == p.container}
        # The cgroupfs path names no runtime: the files found say containerd.
        want = {json.dumps({"pod_uid": p.uid, "qos": p.qos, "container_runtime": "containerd", "ns": "k8s.io"})
                + p.cgroup}
        print(f"  {p.namespace}/{p.name} ({p.driver}): {sorted(metas)}")
        check(metas and metas <= want, f"{p.name}: {metas}, not {want}")


@case
def containerd_plain(validate):
    """containerd without Kubernetes, as `ctr run` makes containers from an image imported offline:
    "web" stalled by "batch" in namespace "default", cgroups /default/<id> (containerd's default,
    cgroupfs). Each named by its id, the name its user gave, with containerd's namespace, and its
    image from containerd's metadata database (meta.db, bbolt): batch runs the image under a second
    tag, so each container's own is read. A watch by image selects web's cgroup alone, armed as it
    appears, and its incidents come from that trigger."""
    service("containerd")
    tmp = tempfile.mkdtemp(prefix="psidiag-vm-plain-")
    image = "registry.example.com/tools/busybox:1"
    image2 = "registry.example.com/tools/batch:2"
    with Cleanup() as done:
        done.add("the rootfs", shutil.rmtree, tmp, ignore_errors=True)
        archive = os.path.join(tmp, "image.tar")
        must(["podman", "import", tarball(rootfs(tmp)), image])
        must(["podman", "save", "--format", "docker-archive", "-o", archive, image])
        sh(["podman", "rmi", "-f", image])
        must(["ctr", "images", "import", archive])
        done.add(f"image {image}", sh, ["ctr", "images", "rm", image])
        must(["ctr", "images", "tag", image, image2])
        done.add(f"image {image2}", sh, ["ctr", "images", "rm", image2])
        done.ctr("default", "web", "batch")

        def load():
            for n, img, script in (("web", image, WEB), ("batch", image2, BATCH)):
                must(["ctr", "run", "-d", "--env", "PATH=/bin", img, n, "sh", "-c", script])
        select = "registry.example.com/tools/busybox:*"

        def by_image(lines):
            return [i for i in lines if (i.get("trigger") or {}).get("cgroup") == "/default/web"]
        lines, _, log = node_agent(tmp, "plain", load, {"web", "batch"}, until=by_image,
                                   more=[{"image": select, "triggers": ["cpu some 50ms 2s"]}])
        check_named(validate, lines, log, {"web": (image, None), "batch": (image2, None)})
        armed = re.findall(r"container (\S+) \(containerd \S+, image (\S+)\) matches image=(\S+): arming (\S+)", log)
        print(f"  armed by image: {armed}; incidents of /default/web's own trigger: {len(by_image(lines))}")
        check(set(armed) == {("web", image, select, "default/web")},
              f"the watch by image did not arm web alone: {armed}\n{log[-3000:]}")
        check(by_image(lines), "no incident from the watch by image's trigger on /default/web")
        check(not [i for i in lines if (i.get("trigger") or {}).get("cgroup") == "/default/batch"],
              "an incident from a trigger on /default/batch, which no watch selects")
        check_identities(lines)
        for n in ("web", "batch"):
            seen = {json.dumps({k: x["meta"].get(k) for k in ("container_runtime", "container_id")}
                               | {"ns": x["meta"]["container"].get("runtime_namespace")}) + cgroup_of(x)
                    for inc in lines for _, x in entries(inc)
                    if ((x.get("meta") or {}).get("container") or {}).get("name") == n}
            want = json.dumps({"container_runtime": "containerd", "container_id": n, "ns": "default"}) + f"/default/{n}"
            print(f"  {n}: {sorted(seen)}")
            check(seen == {want}, f"{n}: {seen}, not {want}")


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
    manifest's own config, beside pods made through the CRI as in containerd-pods (systemd driver),
    a podman container "podweb" in a `podman pod` and a plain containerd container "ctrweb" (`ctr
    run`): every trigger armed; the pods' containers named by pod and image, podweb, ctrweb and the
    agent's own container by name and image, podweb's `podman pod` too (all through the manifest's
    mounts: ctrweb's image from containerd's meta.db, podweb's pod from libpod's bolt_state.db);
    every cgroup a host path with the pod's QoS, its own container's too; no process without a
    name. Then `psidiag check` in such a container: all ok but kmsg (a bind mount, refused by the
    device cgroup: it says so) and stacks (no CAP_PERFMON in the manifest: it says so); and under docker's default AppArmor profile, its psi-trigger line
    names AppArmor."""
    service("docker")
    config, ds = manifest()
    tmp = tempfile.mkdtemp(prefix="psidiag-vm-agentctr-")
    with Cleanup() as done:
        done.add("the rootfs", shutil.rmtree, tmp, ignore_errors=True)
        os.makedirs(os.path.join(tmp, "configmap"))
        with open(os.path.join(tmp, "configmap", "config.json"), "w") as f:
            json.dump(config, f)
        out = config["output"]
        if os.path.exists(out):
            os.unlink(out)
        ctd = Containerd(tmp, done)
        ctd.driver(systemd=True)
        web = CriPod(ctd, "shop", "web-6f9c7d", "web", "burstable", WEB)
        batch = CriPod(ctd, "jobs", "batch-28871", "batch", "besteffort", BATCH)
        must(["sysctl", "-w", "kernel.task_delayacct=1"])
        agent_image(tmp)
        must(["podman", "import", tarball(rootfs(os.path.join(tmp, "podman"))), PODMAN_IMAGE])
        done.image("podman", PODMAN_IMAGE)
        # ctr's image: podman's, saved under another name and imported into containerd's default
        # namespace (as containerd-plain does)
        archive = os.path.join(tmp, "ctr-image.tar")
        must(["podman", "tag", PODMAN_IMAGE, CTR_IMAGE])
        must(["podman", "save", "--format", "docker-archive", "-o", archive, CTR_IMAGE])
        sh(["podman", "rmi", CTR_IMAGE])
        must(["ctr", "images", "import", archive])
        done.add(f"image {CTR_IMAGE}", sh, ["ctr", "images", "rm", CTR_IMAGE])
        opts = docker_opts(ds, tmp)
        with Cleanup() as these:
            # The pods' sandboxes first: the config watches kubepods-burstable.slice and
            # kubepods-besteffort.slice, which they make.
            web.run_sandbox(these)
            batch.run_sandbox(these)
            these.docker("psidiag")
            these.add("podman pod rm podpod", sh, ["podman", "pod", "rm", "-f", "-t", "0", "podpod"])
            these.podman("podweb")
            these.ctr("default", "ctrweb")
            agent_id = must(["docker", "run", "-d", "--name", "psidiag", *opts, AGENT_IMAGE, *ds["spec"]["containers"][0]["args"]])
            deadline = time.time() + 60
            while "watching:" not in docker("logs", "psidiag").stderr:
                running = docker("inspect", "-f", "{{.State.Running}}", "psidiag").stdout.strip()
                check(running == "true" and time.time() < deadline, f"the agent did not start:\n"
                      f"{docker('logs', 'psidiag').stderr[-3000:]}")
                time.sleep(0.2)
            web.run_container(IMAGE_K8S)
            batch.run_container(IMAGE_K8S)
            must(["podman", "pod", "create", "--network", "none", "--name", "podpod"])
            must(["podman", "run", "-d", "--pod", "podpod", "--name", "podweb", PODMAN_IMAGE, "sh", "-c", WEB])
            must(["ctr", "run", "-d", "--env", "PATH=/bin", CTR_IMAGE, "ctrweb", "sh", "-c", WEB])
            want = {"web", "batch", "podweb", "ctrweb"}
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
            check_named(validate, lines, log, {"podweb": (PODMAN_IMAGE, None), "ctrweb": (CTR_IMAGE, None)})
            pods = runtime_pods(lines, "podweb")
            print(f"  podweb's runtime_pod: {pods}")
            check(pods == {"podpod"}, f"podweb: runtime_pod {pods}, not {{'podpod'}}")
            # The agent's own container, when an incident names it (it is not always among the top).
            mine = {(img, pod) for inc in lines for n, img, pod in names_in(inc) if n == "psidiag"}
            check(mine <= {(AGENT_IMAGE, None)}, f"the agent's own container: {mine}")
            own = {cgroup_of(x): (x.get("meta") or {}).get("qos") for inc in lines for _, x in entries(inc)
                   if agent_id in (cgroup_of(x) or "")}
            print(f"  the agent's own container as named: {own}")
            for cg, qos in own.items():
                check(cg.startswith("/kubepods.slice/kubepods-burstable.slice/") and qos == "burstable",
                      f"the agent's own cgroup {cg}: qos {qos}")
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
                # The manifest takes no stacks (docs/deploy.md: no CAP_PERFMON): the line says so.
                check(lines.get("stacks", ("",))[0] == "warn" and "would take no stacks" in lines["stacks"][1],
                      f"stacks in the manifest's container: {lines.get('stacks')}")
                bad = {k: v for k, v in lines.items() if v[0] != "ok" and k not in ("kmsg", "stacks")}
                check(not bad, f"psidiag check in the manifest's container: {bad}")
