# SPDX-License-Identifier: MIT
"""A CRI client, as small as the kubelet's part that makes pods: gRPC service runtime.v1.RuntimeService
(containerd 1.6's CRI plugin serves it beside v1alpha2, whose messages have the same field
numbers) on containerd's socket, through grpcio's generic unary calls with raw bytes, the few
protobuf messages it needs encoded here by hand (there is no protoc in Debian 12's python3-grpcio,
and no CRI API definitions before sid's golang-k8s-cri-api-dev). Field numbers are those of
kubernetes/cri-api's pkg/apis/runtime/v1/api.proto:

    RunPodSandboxRequest  config 1 (PodSandboxConfig), runtime_handler 2
    PodSandboxConfig      metadata 1, hostname 2, log_directory 3, labels 6, annotations 7, linux 8
    PodSandboxMetadata    name 1, uid 2, namespace 3, attempt 4
    LinuxPodSandboxConfig cgroup_parent 1, security_context 2 (LinuxSandboxSecurityContext)
    LinuxSandboxSecurityContext namespace_options 1 (NamespaceOption: network 1, pid 2, ipc 3;
                          NamespaceMode POD 0, CONTAINER 1, NODE 2)
    CreateContainerRequest pod_sandbox_id 1, config 2 (ContainerConfig), sandbox_config 3
    ContainerConfig       metadata 1 (ContainerMetadata: name 1, attempt 2), image 2 (ImageSpec:
                          image 1), command 3, args 4, envs 6 (KeyValue: key 1, value 2), labels 9,
                          annotations 10, linux 15 (LinuxContainerConfig: resources 1)
    LinuxContainerResources cpu_shares 3
    StartContainerRequest container_id 1; Stop/RemovePodSandboxRequest pod_sandbox_id 1
    RunPodSandboxResponse pod_sandbox_id 1; CreateContainerResponse container_id 1
    VersionRequest version 1; VersionResponse version 1, runtime_name 2, runtime_version 3,
                          runtime_api_version 4

A map<string, string> is a repeated message {key 1, value 2}."""

SOCKET = "unix:///run/containerd/containerd.sock"
SERVICE = "/runtime.v1.RuntimeService/"
NODE, CONTAINER = 2, 1


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def field(num, value):
    """One field: an int as a varint, bytes/str/encoded message as length-delimited; None and ""
    and 0 as nothing (proto3 defaults)."""
    if value is None or value == "" or value == 0:
        return b""
    if isinstance(value, int):
        return varint(num << 3) + varint(value)
    data = value.encode() if isinstance(value, str) else value
    return varint(num << 3 | 2) + varint(len(data)) + data


def message(*fields):
    """fields: (number, value) pairs, a value a list for a repeated field."""
    out = b""
    for num, value in fields:
        for v in value if isinstance(value, list) else [value]:
            out += field(num, v)
    return out


def string_map(num, d):
    return b"".join(varint(num << 3 | 2) + varint(len(e)) + e
                    for e in (message((1, k), (2, v)) for k, v in sorted((d or {}).items())))


def decode(data):
    """{field number: [values]}: varints as ints, length-delimited fields as bytes."""
    out, i = {}, 0
    while i < len(data):
        key, i = read_varint(data, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = read_varint(data, i)
        elif wt == 2:
            n, i = read_varint(data, i)
            v, i = data[i:i + n], i + n
        elif wt == 1:
            v, i = data[i:i + 8], i + 8
        elif wt == 5:
            v, i = data[i:i + 4], i + 4
        else:
            raise ValueError(f"wire type {wt} of field {num}")
        out.setdefault(num, []).append(v)
    return out


def read_varint(data, i):
    n = shift = 0
    while True:
        b = data[i]
        i += 1
        n |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return n, i


class Client:
    def __init__(self, socket=SOCKET, timeout=60):
        import grpc
        self.grpc = grpc
        self.channel = grpc.insecure_channel(socket)
        self.timeout = timeout

    def call(self, method, request):
        fn = self.channel.unary_unary(SERVICE + method, request_serializer=lambda b: b,
                                      response_deserializer=lambda b: b)
        return decode(fn(request, timeout=self.timeout))

    def version(self):
        r = self.call("Version", message((1, "v1")))
        return {k: r.get(n, [b""])[0].decode() for k, n in
                (("version", 1), ("runtime_name", 2), ("runtime_version", 3), ("runtime_api_version", 4))}

    def run_pod_sandbox(self, config):
        return self.call("RunPodSandbox", message((1, config)))[1][0].decode()

    def create_container(self, sandbox_id, config, sandbox_config):
        return self.call("CreateContainer", message((1, sandbox_id), (2, config), (3, sandbox_config)))[1][0].decode()

    def start_container(self, cid):
        self.call("StartContainer", message((1, cid)))

    def stop_pod_sandbox(self, sandbox_id):
        self.call("StopPodSandbox", message((1, sandbox_id)))

    def remove_pod_sandbox(self, sandbox_id):
        self.call("RemovePodSandbox", message((1, sandbox_id)))

    def close(self):
        self.channel.close()


def sandbox_config(name, uid, namespace, cgroup_parent):
    """A pod as the kubelet asks for one with hostNetwork (no CNI): its metadata, the labels the
    kubelet puts on every sandbox, the node's network namespace, a pid namespace per container."""
    labels = {"io.kubernetes.pod.name": name, "io.kubernetes.pod.namespace": namespace,
              "io.kubernetes.pod.uid": uid}
    return message((1, message((1, name), (2, uid), (3, namespace))), (2, "")) + string_map(6, labels) + message(
        (8, message((1, cgroup_parent), (2, message((1, message((1, NODE), (2, CONTAINER))))))))


def container_config(name, image, command, env=None, cpu_shares=0, pod=None):
    """A container of a pod spec: its name, image, command, environment and cpu shares, and the
    labels the kubelet puts on it (pod: (name, namespace, uid))."""
    labels = {"io.kubernetes.container.name": name}
    if pod:
        labels.update({"io.kubernetes.pod.name": pod[0], "io.kubernetes.pod.namespace": pod[1],
                       "io.kubernetes.pod.uid": pod[2]})
    envs = [message((1, k), (2, v)) for k, v in sorted((env or {}).items())]
    return (message((1, message((1, name))), (2, message((1, image))), (3, command), (6, envs))
            + string_map(9, labels) + message((15, message((1, message((3, cpu_shares)))))))
