/* SPDX-License-Identifier: MIT */
/* The Varlink protocol of the prekill hook (docs/killers.md, "systemd-oomd's prekill hook"), without
 * a socket: one message's bytes in (a JSON object, its NUL terminator taken off by the reader), the
 * call it is and the answer it gets out. Serves io.systemd.oom.Prekill (Notify) and
 * org.varlink.service (GetInfo, GetInterfaceDescription). Pure: no I/O, no logging, never reads
 * outside [buf, buf + len); agent/prekillhook.c owns the sockets. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* The longest message read, its NUL included: a Notify with the longest cgroup path fits many
 * times. A client that sends more without a NUL gets an error and is hung up on. */
#define VARLINK_MESSAGE_MAX (16 * 1024)
/* The longest cgroup path a Notify may name (the kernel's PATH_MAX). */
#define VARLINK_CGROUP_MAX 4096

#define VARLINK_INTERFACE_PREKILL "io.systemd.oom.Prekill"
#define VARLINK_INTERFACE_SERVICE "org.varlink.service"

typedef enum VarlinkVerdict {
        VARLINK_NOTIFY,   /* a Notify: the caller measures, then replies varlink_reply_empty() */
        VARLINK_ANSWERED, /* a call answered in *ret_reply (GetInfo, GetInterfaceDescription) */
        VARLINK_REFUSED,  /* a bad or unknown call: *ret_reply is its error reply */
} VarlinkVerdict;

typedef struct VarlinkCall {
        bool oneway;                     /* the client wants no reply ("oneway": true) */
        char cgroup[VARLINK_CGROUP_MAX]; /* Notify's: "/a/b", as systemd names it (from the root) */
} VarlinkCall;

/* One message, buf[0..len) (no NUL inside: the reader split at it). Returns the verdict (>= 0) with
 * *ret_call filled, and *ret_reply (malloc'd, NUL-terminated as sent, *ret_reply_len bytes with the
 * NUL) for ANSWERED and REFUSED, NULL for NOTIFY and for a oneway call, which gets no reply; or
 * -ENOMEM. Refused: not JSON, not an object, no string "method", an unknown interface or method,
 * Notify without a cgroup path ("/" and then no "." or ".." part, no empty part, no NUL, at most
 * VARLINK_CGROUP_MAX - 1 bytes). The error names are Varlink's own (org.varlink.service.*). */
int varlink_handle(const char *buf, size_t len, VarlinkCall *ret_call, char **ret_reply, size_t *ret_reply_len);

/* The empty reply of Notify, "{\"parameters\":{}}" and its NUL, in a static buffer: *ret_len bytes. */
const char *varlink_reply_empty(size_t *ret_len);

/* The error reply to a message longer than VARLINK_MESSAGE_MAX (static; *ret_len bytes, NUL
 * included). */
const char *varlink_reply_oversized(size_t *ret_len);
