/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdint.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/macro.h"
#include "containers/ctrmeta.h"

static void json_freep(json_t **j) {
        if (*j)
                json_decref(*j);
}
#define _cleanup_json_ _cleanup_(json_freep)

/* What jansson 2.14 allocates for a value, at most (measured with a counting allocator on 4 MiB of
 * each: 212 bytes for an empty object with its array slot, 116 for an empty array, 32 to 47 for
 * a number or an empty string, 290 for {"a":0}), with room for the tables' and arrays' growth:
 * a base (found by the fuzz target: jansson allocates for empty input too), every byte four times
 * (the lexer's buffer, which doubles, old and new both held while it grows, then the string's
 * copy: 274 KB for a 70 KB string, found by the fuzz target), an object its table, a member its
 * pair and buckets, a string or number its value, each element its slot. */
#define COST_BASE 4096 /* the lexer's buffer and the error's text, even for no input */
#define COST_BYTE 4
#define COST_OBJECT 320
#define COST_ARRAY 128
#define COST_MEMBER 160
#define COST_SCALAR 64
#define COST_ELEMENT 32

/* The cost of buf, or as soon as it is past stop a cost past stop. */
static uint64_t json_cost(const char *buf, size_t len, uint64_t stop) {
        uint64_t cost = COST_BASE + (uint64_t) len * COST_BYTE;
        bool in_string = false, escaped = false, in_scalar = false;

        for (size_t i = 0; i < len; i++) {
                char c = buf[i];

                if (in_string) {
                        if (escaped)
                                escaped = false;
                        else if (c == '\\')
                                escaped = true;
                        else if (c == '"')
                                in_string = false;
                        continue;
                }
                if ((c >= '0' && c <= '9') || c == '-' || (c >= 'a' && c <= 'z')) {
                        cost += in_scalar ? 0 : COST_SCALAR;
                        in_scalar = true;
                        continue;
                }
                in_scalar = false;
                cost += c == '"'   ? COST_SCALAR
                        : c == '{' ? COST_OBJECT
                        : c == '[' ? COST_ARRAY
                        : c == ':' ? COST_MEMBER
                        : c == ',' ? COST_ELEMENT
                                   : 0;
                in_string = c == '"';
                if (cost > stop)
                        break;
        }
        return cost;
}

uint64_t ctrmeta_json_cost(const char *buf, size_t len) {
        return json_cost(buf, len, UINT64_MAX);
}

/* jansson bounds its own nesting (JSON_PARSER_MAX_DEPTH) and reads only len bytes; what it would
 * build is bounded first, by a scan that builds nothing. */
static int load(const char *buf, size_t len, json_t **ret) {
        json_error_t err;
        json_t *j;

        if (json_cost(buf, len, CTRMETA_PARSE_BUDGET) > CTRMETA_PARSE_BUDGET)
                return -E2BIG;
        j = json_loadb(buf, len, 0, &err);
        if (!j)
                return json_error_code(&err) == json_error_out_of_memory ? -ENOMEM : -EBADMSG;
        *ret = j;
        return 0;
}

/* o[key] when it is a string, copied as bytes (a NUL inside ends it) into dst; false otherwise. */
static bool take(const json_t *o, const char *key, char *dst, size_t size) {
        const json_t *v = json_object_get(o, key);

        if (!json_is_string(v) || json_string_length(v) == 0)
                return false;
        snprintf(dst, size, "%s", json_string_value(v));
        return true;
}

static bool is(const json_t *o, const char *key, const char *value) {
        const json_t *v = json_object_get(o, key);

        return json_is_string(v) && strcmp(json_string_value(v), value) == 0;
}

/* The Kubernetes names dockershim and cri-dockerd put in labels, CRI-O in annotations. */
static void take_kubernetes(const json_t *o, ContainerInfo *ret) {
        take(o, "io.kubernetes.pod.namespace", ret->pod_namespace, sizeof ret->pod_namespace);
        take(o, "io.kubernetes.pod.name", ret->pod_name, sizeof ret->pod_name);
        take(o, "io.kubernetes.pod.uid", ret->pod_uid, sizeof ret->pod_uid);
        take(o, "io.kubernetes.container.name", ret->pod_container, sizeof ret->pod_container);
        /* dockershim's io.kubernetes.docker.type: "podsandbox" or "container" */
        if (is(o, "io.kubernetes.docker.type", "podsandbox"))
                ret->sandbox = true;
}

int ctrmeta_parse_docker(const char *buf, size_t len, ContainerInfo *ret) {
        _cleanup_json_ json_t *j = NULL;
        const json_t *config, *pid;
        const char *name;
        int r;

        r = load(buf, len, &j);
        if (r < 0)
                return r;
        if (!json_is_object(j))
                return -EBADMSG;
        config = json_object_get(j, "Config");
        /* moby's Name is "/web": the leading '/' is its own, not the operator's. */
        if (json_is_string(json_object_get(j, "Name"))) {
                name = json_string_value(json_object_get(j, "Name"));
                snprintf(ret->name, sizeof ret->name, "%s", name[0] == '/' ? name + 1 : name);
        }
        take(config, "Image", ret->image, sizeof ret->image);
        take_kubernetes(json_object_get(config, "Labels"), ret);
        pid = json_object_get(json_object_get(j, "State"), "Pid");
        if (json_is_integer(pid) && json_integer_value(pid) > 0 && json_integer_value(pid) <= INT32_MAX)
                ret->pid = (pid_t) json_integer_value(pid);
        return 0;
}

int ctrmeta_parse_oci(const char *buf, size_t len, ContainerInfo *ret) {
        _cleanup_json_ json_t *j = NULL;
        const json_t *a;
        bool named = false;
        int r;

        r = load(buf, len, &j);
        if (r < 0)
                return r;
        if (!json_is_object(j))
                return -EBADMSG;
        a = json_object_get(j, "annotations");
        if (!json_is_object(a))
                return 0;
        /* containerd's CRI plugin */
        named |= take(a, "io.kubernetes.cri.sandbox-namespace", ret->pod_namespace, sizeof ret->pod_namespace);
        named |= take(a, "io.kubernetes.cri.sandbox-name", ret->pod_name, sizeof ret->pod_name);
        take(a, "io.kubernetes.cri.sandbox-uid", ret->pod_uid, sizeof ret->pod_uid);
        named |= take(a, "io.kubernetes.cri.container-name", ret->pod_container, sizeof ret->pod_container);
        take(a, "io.kubernetes.cri.image-name", ret->image, sizeof ret->image);
        if (is(a, "io.kubernetes.cri.container-type", "sandbox"))
                ret->sandbox = true;
        /* CRI-O */
        take_kubernetes(a, ret);
        take(a, "io.kubernetes.cri-o.ImageName", ret->image, sizeof ret->image);
        if (is(a, "io.kubernetes.cri-o.ContainerType", "sandbox"))
                ret->sandbox = true;
        /* nerdctl, on plain containerd */
        named |= take(a, "nerdctl/name", ret->name, sizeof ret->name);
        named |= ret->pod_name[0] || ret->pod_container[0];
        return named;
}

/* podman's storage metadata: a JSON object in a JSON string ("image-name", "name"). */
static void take_storage_metadata(const json_t *entry, ContainerInfo *ret) {
        _cleanup_json_ json_t *m = NULL;
        const json_t *s = json_object_get(entry, "metadata");

        if (!json_is_string(s) || load(json_string_value(s), json_string_length(s), &m) < 0 || !json_is_object(m))
                return;
        take(m, "image-name", ret->image, sizeof ret->image);
        if (!ret->name[0])
                take(m, "name", ret->name, sizeof ret->name);
}

struct CtrmetaStorage {
        json_t *entries;
};

int ctrmeta_storage_parse(const char *buf, size_t len, CtrmetaStorage **ret) {
        _cleanup_json_ json_t *j = NULL;
        CtrmetaStorage *s;
        int r;

        r = load(buf, len, &j);
        if (r < 0)
                return r;
        if (!json_is_array(j))
                return -EBADMSG;
        s = malloc(sizeof *s);
        if (!s)
                return -ENOMEM;
        s->entries = TAKE_PTR(j);
        *ret = s;
        return 0;
}

int ctrmeta_storage_find(const CtrmetaStorage *s, const char *id, ContainerInfo *ret) {
        const json_t *e, *names;
        size_t i;

        json_array_foreach(s->entries, i, e) {
                if (!is(e, "id", id))
                        continue;
                names = json_object_get(e, "names");
                if (json_is_array(names) && json_is_string(json_array_get(names, 0)))
                        snprintf(ret->name, sizeof ret->name, "%s", json_string_value(json_array_get(names, 0)));
                take_storage_metadata(e, ret);
                return 1;
        }
        return 0;
}

CtrmetaStorage *ctrmeta_storage_free(CtrmetaStorage *s) {
        if (s) {
                json_decref(s->entries);
                free(s);
        }
        return NULL;
}

int ctrmeta_parse_storage(const char *buf, size_t len, const char *id, ContainerInfo *ret) {
        CtrmetaStorage *s = NULL;
        int r;

        r = ctrmeta_storage_parse(buf, len, &s);
        if (r < 0)
                return r;
        r = ctrmeta_storage_find(s, id, ret);
        ctrmeta_storage_free(s);
        return r;
}

int ctrmeta_passwd_user(const char *buf, size_t len, unsigned uid, CtrmetaUser *ret) {
        const char *p = buf, *end = buf + len;

        while (p < end) {
                const char *nl = memchr(p, '\n', (size_t) (end - p)), *eol = nl ? nl : end;
                const char *f[7];
                size_t n = 0;

                /* name:password:uid:gid:gecos:home:shell */
                f[n++] = p;
                for (const char *q = p; q < eol && n < 7; q++)
                        if (*q == ':')
                                f[n++] = q + 1;
                if (n == 7) {
                        char num[16];
                        size_t ulen = (size_t) (f[3] - 1 - f[2]), hlen = (size_t) (f[6] - 1 - f[5]),
                               nlen = (size_t) (f[1] - 1 - f[0]);
                        if (ulen > 0 && ulen < sizeof num) {
                                memcpy(num, f[2], ulen);
                                num[ulen] = '\0';
                                if (strspn(num, "0123456789") == ulen && strtoul(num, NULL, 10) == uid && hlen > 1 &&
                                    f[5][0] == '/' && !memchr(f[5], '\0', hlen) && !memchr(f[0], '\0', nlen)) {
                                        if (hlen >= sizeof ret->home || nlen >= sizeof ret->name)
                                                return -ENAMETOOLONG;
                                        ret->uid = uid;
                                        memcpy(ret->home, f[5], hlen);
                                        ret->home[hlen] = '\0';
                                        memcpy(ret->name, f[0], nlen);
                                        ret->name[nlen] = '\0';
                                        return 0;
                                }
                        }
                }
                p = eol + 1;
        }
        return -ENOENT;
}

static const char *skip_blank(const char *p, const char *end) {
        while (p < end && (*p == ' ' || *p == '\t'))
                p++;
        return p;
}

/* A TOML line's key, table header and string value: enough of TOML for a key of storage.conf,
 * whose tables are headers of their own lines. */
int ctrmeta_storage_key(const char *buf, size_t len, const char *key, char *out, size_t size) {
        const char *p = buf, *end = buf + len;
        size_t klen = strlen(key);
        bool in_storage = false;

        while (p < end) {
                const char *nl = memchr(p, '\n', (size_t) (end - p)), *eol = nl ? nl : end;
                const char *q = skip_blank(p, eol);

                p = eol + 1;
                if (q < eol && *q == '[') {
                        const char *k = skip_blank(q + 1, eol), *e = k;
                        while (e < eol && *e != ']' && *e != ' ' && *e != '\t')
                                e++;
                        in_storage = q[1] != '[' && (size_t) (e - k) == 7 && memcmp(k, "storage", 7) == 0 &&
                                     skip_blank(e, eol) < eol && *skip_blank(e, eol) == ']';
                        continue;
                }
                if (!in_storage || (size_t) (eol - q) < klen || memcmp(q, key, klen) != 0)
                        continue;
                q = skip_blank(q + klen, eol);
                if (q >= eol || *q != '=')
                        continue; /* another key that starts so */
                q = skip_blank(q + 1, eol);
                if (q >= eol || (*q != '"' && *q != '\''))
                        return -EBADMSG;
                char quote = *q++;
                const char *v = q;
                while (q < eol && *q != quote) {
                        if ((unsigned char) *q < 0x20 || *q == 0x7f || (quote == '"' && *q == '\\'))
                                return -EBADMSG;
                        q++;
                }
                size_t n = (size_t) (q - v);
                if (q >= eol || n == 0)
                        return -EBADMSG;
                const char *rest = skip_blank(q + 1, eol);
                if (rest < eol && *rest != '#' && *rest != '\r')
                        return -EBADMSG;
                if (n >= size)
                        return -ENAMETOOLONG;
                memcpy(out, v, n);
                out[n] = '\0';
                return 1;
        }
        return 0;
}

static bool name_char(char c) {
        return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

/* Appends the n bytes of s to out at *k: false when they do not fit. */
static bool append(char *out, size_t size, size_t *k, const char *s, size_t n) {
        if (n >= size - *k)
                return false;
        memcpy(out + *k, s, n);
        *k += n;
        return true;
}

int ctrmeta_storage_expand(const char *value, const CtrmetaUser *u, char *out, size_t size) {
        char uid[16];
        size_t k = 0;

        if (size == 0)
                return -ENAMETOOLONG;
        snprintf(uid, sizeof uid, "%u", u ? u->uid : 0);
        for (const char *c = value; *c;) {
                const char *name = c + 1, *after;
                size_t n;

                if (*c != '$') {
                        if (!append(out, size, &k, c++, 1))
                                return -ENAMETOOLONG;
                        continue;
                }
                if (!u)
                        return -EBADMSG;
                if (strncmp(c, "$UID", 4) == 0) { /* replaced as a string before the environment */
                        if (!append(out, size, &k, uid, strlen(uid)))
                                return -ENAMETOOLONG;
                        c += 4;
                        continue;
                }
                if (*name == '{') {
                        const char *close = strchr(++name, '}');
                        if (!close)
                                return -EBADMSG;
                        n = (size_t) (close - name);
                        after = close + 1;
                } else {
                        for (n = 0; name_char(name[n]); n++)
                                ;
                        after = name + n;
                }
                if (n == 4 && memcmp(name, "HOME", 4) == 0) {
                        if (!append(out, size, &k, u->home, strlen(u->home)))
                                return -ENAMETOOLONG;
                } else if (n == 4 && memcmp(name, "USER", 4) == 0) {
                        if (!append(out, size, &k, u->name, strlen(u->name)))
                                return -ENAMETOOLONG;
                } else
                        return -EBADMSG; /* the user's environment is not the agent's to know */
                c = after;
        }
        out[k] = '\0';
        if (out[0] != '/')
                return -EBADMSG;
        for (const char *c = out; *c;) {
                const char *slash = strchr(c + 1, '/'), *next = slash ? slash : c + strlen(c);
                /* c is at a '/': the component is (c, next) */
                if (next - c == 3 && c[1] == '.' && c[2] == '.')
                        return -EBADMSG;
                c = next;
        }
        return 0;
}
