/* SPDX-License-Identifier: MIT */
/* The container runtimes' metadata parsers (containers/ctrmeta.h): the same bytes as docker's
 * config.v2.json, an OCI spec's annotations, a containers/storage containers.json (looked up for
 * the id the fuzzer's first 64 bytes would be), /etc/passwd and a storage.conf's graphroot. Every field stays
 * NUL-terminated within its buffer whatever the input; what jansson allocates for one parse never
 * exceeds ctrmeta_json_cost(), the bound the parsers check against CTRMETA_PARSE_BUDGET first. */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "containers/ctrmeta.h"
#include "tests/fuzz/fuzz.h"
#include "tests/json-count.h"

static void check(const ContainerInfo *i) {
        if (strnlen(i->name, sizeof i->name) == sizeof i->name ||
            strnlen(i->image, sizeof i->image) == sizeof i->image ||
            strnlen(i->pod_name, sizeof i->pod_name) == sizeof i->pod_name ||
            strnlen(i->pod_namespace, sizeof i->pod_namespace) == sizeof i->pod_namespace ||
            strnlen(i->pod_uid, sizeof i->pod_uid) == sizeof i->pod_uid ||
            strnlen(i->pod_container, sizeof i->pod_container) == sizeof i->pod_container)
                abort();
}

/* One parse within its bound: jansson's peak at most the cost, -E2BIG exactly past the budget. */
static void bounded(const char *buf, size_t size) {
        uint64_t cost = ctrmeta_json_cost(buf, size);
        CtrmetaStorage *s = NULL;
        int r;

        json_set_alloc_funcs(json_count_malloc, json_count_free);
        json_peak = json_bytes = 0;
        r = ctrmeta_storage_parse(buf, size, &s);
        ctrmeta_storage_free(s);
        if (json_peak > cost || (r == -E2BIG) != (cost > CTRMETA_PARSE_BUDGET))
                abort();
        json_set_alloc_funcs(malloc, free);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *buf = malloc(size ? size : 1), home[256], value[256];
        ContainerInfo i = {};
        CtrmetaUser u = {};

        if (!buf)
                return 0;
        memcpy(buf, data, size); /* exactly size bytes: ASan sees any read past them */
        bounded(buf, size);
        (void) ctrmeta_parse_docker(buf, size, &i);
        check(&i);
        i = (ContainerInfo) {};
        (void) ctrmeta_parse_oci(buf, size, &i);
        check(&i);
        i = (ContainerInfo) {};
        (void) ctrmeta_parse_storage(buf, size, "c259ab325826b8b00d41a77c5935548283afad4f39d1379691811634296c0bc7", &i);
        check(&i);
        if (ctrmeta_passwd_user(buf, size, 1000, &u) == 0 &&
            (strnlen(u.home, sizeof u.home) == sizeof u.home || strnlen(u.name, sizeof u.name) == sizeof u.name ||
             u.home[0] != '/'))
                abort();
        /* a path found and expanded is absolute, NUL-terminated, without a ".." component */
        for (int user = 0; user < 2; user++) {
                static const CtrmetaUser alice = { .uid = 1000, .name = "alice", .home = "/home/alice" };
                if (ctrmeta_storage_key(buf, size, user ? "rootless_storage_path" : "graphroot", value, sizeof value) >
                            0 &&
                    ctrmeta_storage_expand(value, user ? &alice : NULL, home, sizeof home) == 0 &&
                    (strnlen(home, sizeof home) == sizeof home || home[0] != '/' || strstr(home, "/../") ||
                     (strlen(home) >= 3 && strcmp(home + strlen(home) - 3, "/..") == 0)))
                        abort();
        }
        free(buf);
        return 0;
}
