#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Writes seed inputs for fuzz-taskstats from the running kernel: real TASKSTATS_CMD_GET replies
# (a live thread, a tgid aggregate, an exited pid's NLMSG_ERROR), a CGROUPSTATS_CMD_GET reply for
# a cgroup-v1 directory, and the bare struct payload. Each file starts with the mode byte the
# target reads (0 taskstats reply, 1 cgroupstats reply, 3 payload). Needs root (CAP_NET_ADMIN).
#   tests/fuzz/capture-taskstats.py tests/fuzz/corpus/taskstats
import os
import socket
import struct
import sys

NETLINK_GENERIC, GENL_ID_CTRL, CTRL_CMD_GETFAMILY = 16, 0x10, 3
CTRL_ATTR_FAMILY_ID, CTRL_ATTR_FAMILY_NAME = 1, 2
TASKSTATS_CMD_GET, TASKSTATS_CMD_ATTR_PID, TASKSTATS_CMD_ATTR_TGID = 1, 1, 2
CGROUPSTATS_CMD_GET, CGROUPSTATS_CMD_ATTR_FD = 4, 1
NLM_F_REQUEST = 1


def attr(kind, payload):
    n = 4 + len(payload)
    return struct.pack("=HH", n, kind) + payload + b"\0" * ((4 - n % 4) % 4)


def request(sock, family, cmd, attrs, seq):
    body = struct.pack("=BBH", cmd, 1, 0) + attrs
    sock.send(struct.pack("=IHHII", 16 + len(body), family, NLM_F_REQUEST, seq, 0) + body)
    return sock.recv(65536)


def attrs_of(msg):
    out, off = {}, 20
    while off + 4 <= len(msg):
        n, kind = struct.unpack_from("=HH", msg, off)
        if n < 4:
            break
        out[kind & 0x3FFF] = msg[off + 4:off + n]
        off += (n + 3) & ~3
    return out


def main():
    out = sys.argv[1]
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_GENERIC)
    s.bind((0, 0))
    reply = request(s, GENL_ID_CTRL, CTRL_CMD_GETFAMILY, attr(CTRL_ATTR_FAMILY_NAME, b"TASKSTATS\0"), 1)
    family = struct.unpack("=H", attrs_of(reply)[CTRL_ATTR_FAMILY_ID][:2])[0]
    seeds = {
        "reply-pid": (0, request(s, family, TASKSTATS_CMD_GET, attr(TASKSTATS_CMD_ATTR_PID, struct.pack("=I", os.getpid())), 2)),
        "reply-tgid": (0, request(s, family, TASKSTATS_CMD_GET, attr(TASKSTATS_CMD_ATTR_TGID, struct.pack("=I", 1)), 3)),
        "reply-esrch": (0, request(s, family, TASKSTATS_CMD_GET, attr(TASKSTATS_CMD_ATTR_PID, struct.pack("=I", 0x3FFFFFFF)), 4)),
    }
    # The bare payload: the innermost attribute of the pid reply (AGGR_PID { PID, STATS }).
    nest = attrs_of(seeds["reply-pid"][1])
    inner = next(iter(nest.values()))
    off = 0
    while off + 4 <= len(inner):
        n, kind = struct.unpack_from("=HH", inner, off)
        if kind == 3:  # TASKSTATS_TYPE_STATS
            seeds["payload"] = (3, inner[off + 4:off + n])
        off += (n + 3) & ~3
    v1 = "/sys/fs/cgroup/cpu"
    if os.path.isdir(v1):
        fd = os.open(v1, os.O_RDONLY | os.O_DIRECTORY)
        seeds["reply-cgroupstats"] = (1, request(s, family, CGROUPSTATS_CMD_GET, attr(CGROUPSTATS_CMD_ATTR_FD, struct.pack("=I", fd)), 5))
        os.close(fd)
    for name, (mode, data) in seeds.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(bytes([mode]) + data)
        print(f"{name}: {len(data)} bytes")


if __name__ == "__main__":
    main()
