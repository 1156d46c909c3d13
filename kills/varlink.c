/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "kills/varlink.h"
#include "base/macro.h"

/* The interfaces' descriptions, in the Varlink interface language (varlink.org), as
 * GetInterfaceDescription returns them. Notify's one parameter is systemd's (src/shared/
 * varlink-io.systemd.oom.Prekill.c: Notify(cgroup: string), an empty reply, no errors). */
static const char prekill_description[] = "# Told by systemd-oomd before it kills a cgroup; psidiag measures it.\n"
                                          "interface io.systemd.oom.Prekill\n"
                                          "\n"
                                          "# The cgroup about to be killed, from the cgroup root.\n"
                                          "method Notify(cgroup: string) -> ()\n";

static const char service_description[] = "# The Varlink service interface.\n"
                                          "interface org.varlink.service\n"
                                          "\n"
                                          "method GetInfo() -> (\n"
                                          "  vendor: string,\n"
                                          "  product: string,\n"
                                          "  version: string,\n"
                                          "  url: string,\n"
                                          "  interfaces: []string\n"
                                          ")\n"
                                          "\n"
                                          "method GetInterfaceDescription(interface: string) -> (description: string)\n"
                                          "\n"
                                          "error InterfaceNotFound (interface: string)\n"
                                          "error MethodNotFound (method: string)\n"
                                          "error MethodNotImplemented (method: string)\n"
                                          "error InvalidParameter (parameter: string)\n"
                                          "error PermissionDenied ()\n"
                                          "error ExpectedMore ()\n";

static const char empty_reply[] = "{\"parameters\":{}}";
static const char oversized_reply[] =
        "{\"error\":\"org.varlink.service.InvalidParameter\",\"parameters\":{\"parameter\":\"message\"}}";

const char *varlink_reply_empty(size_t *ret_len) {
        *ret_len = sizeof empty_reply; /* with its NUL */
        return empty_reply;
}

const char *varlink_reply_oversized(size_t *ret_len) {
        *ret_len = sizeof oversized_reply;
        return oversized_reply;
}

/* The message of o with its NUL: 0 or -ENOMEM. Takes o. */
static int dump(json_t *o, char **ret, size_t *ret_len) {
        char *s;

        if (!o)
                return -ENOMEM;
        s = json_dumps(o, JSON_COMPACT);
        json_decref(o);
        if (!s)
                return -ENOMEM;
        *ret_len = strlen(s) + 1;
        *ret = s;
        return 0;
}

static int error_reply(const char *error, const char *key, const char *value, char **ret, size_t *ret_len) {
        json_t *params = json_object();

        if (params && key && json_object_set_new(params, key, json_string(value)) < 0) {
                json_decref(params);
                return -ENOMEM;
        }
        return dump(json_pack("{s:s, s:o}", "error", error, "parameters", params), ret, ret_len);
}

/* "/" then parts that are neither empty, "." nor "..": what a cgroup under the root may be named. */
static bool cgroup_path_valid(const char *p, size_t len) {
        if (len == 0 || len >= VARLINK_CGROUP_MAX || p[0] != '/' || memchr(p, '\0', len))
                return false;
        if (len == 1)
                return true;
        for (size_t i = 1; i <= len;) {
                size_t n = strcspn(p + i, "/");
                if (n == 0 || (n == 1 && p[i] == '.') || (n == 2 && p[i] == '.' && p[i + 1] == '.'))
                        return false;
                i += n + 1;
        }
        return true;
}

static int info_reply(char **ret, size_t *ret_len) {
        return dump(json_pack("{s:{s:s, s:s, s:s, s:s, s:[s, s]}}", "parameters", "vendor", "psidiag", "product",
                              "psidiag", "version", PSIDIAG_VERSION, "url", "", "interfaces", VARLINK_INTERFACE_PREKILL,
                              VARLINK_INTERFACE_SERVICE),
                    ret, ret_len);
}

static int description_reply(json_t *params, char **ret, size_t *ret_len) {
        const char *iface = json_string_value(json_object_get(params, "interface"));

        if (!iface)
                return error_reply("org.varlink.service.InvalidParameter", "parameter", "interface", ret, ret_len);
        if (strcmp(iface, VARLINK_INTERFACE_PREKILL) == 0)
                return dump(json_pack("{s:{s:s}}", "parameters", "description", prekill_description), ret, ret_len);
        if (strcmp(iface, VARLINK_INTERFACE_SERVICE) == 0)
                return dump(json_pack("{s:{s:s}}", "parameters", "description", service_description), ret, ret_len);
        return error_reply("org.varlink.service.InterfaceNotFound", "interface", iface, ret, ret_len);
}

/* The verdict of one parsed call; *ret_reply as varlink_handle() says. */
static int dispatch(const char *method, json_t *params, VarlinkCall *call, char **ret_reply, size_t *ret_len) {
        const char *dot = strrchr(method, '.');
        int r;

        if (strcmp(method, VARLINK_INTERFACE_PREKILL ".Notify") == 0) {
                json_t *cg = json_object_get(params, "cgroup");
                const char *s = json_string_value(cg);

                if (!s || !cgroup_path_valid(s, json_string_length(cg))) {
                        r = error_reply("org.varlink.service.InvalidParameter", "parameter", "cgroup", ret_reply,
                                        ret_len);
                        return r < 0 ? r : VARLINK_REFUSED;
                }
                memcpy(call->cgroup, s, json_string_length(cg) + 1);
                return VARLINK_NOTIFY;
        }
        if (strcmp(method, VARLINK_INTERFACE_SERVICE ".GetInfo") == 0)
                r = info_reply(ret_reply, ret_len);
        else if (strcmp(method, VARLINK_INTERFACE_SERVICE ".GetInterfaceDescription") == 0)
                r = description_reply(params, ret_reply, ret_len);
        else {
                /* An interface we serve: its method is not there; else the interface is not. */
                size_t n = dot ? (size_t) (dot - method) : 0;
                bool known =
                        (n == strlen(VARLINK_INTERFACE_PREKILL) && memcmp(method, VARLINK_INTERFACE_PREKILL, n) == 0) ||
                        (n == strlen(VARLINK_INTERFACE_SERVICE) && memcmp(method, VARLINK_INTERFACE_SERVICE, n) == 0);
                if (known)
                        r = error_reply("org.varlink.service.MethodNotFound", "method", method, ret_reply, ret_len);
                else {
                        _cleanup_free_ char *iface = strndup(method, n);
                        if (!iface)
                                return -ENOMEM;
                        r = error_reply("org.varlink.service.InterfaceNotFound", "interface", iface, ret_reply,
                                        ret_len);
                }
                return r < 0 ? r : VARLINK_REFUSED;
        }
        if (r < 0)
                return r;
        /* Answered: an error reply is a refusal (counted), a reply to GetInfo is not. */
        return strstr(*ret_reply, "\"error\"") == *ret_reply + 1 ? VARLINK_REFUSED : VARLINK_ANSWERED;
}

int varlink_handle(const char *buf, size_t len, VarlinkCall *ret_call, char **ret_reply, size_t *ret_reply_len) {
        VarlinkCall call = {};
        json_t *msg, *params;
        const char *method;
        char *reply = NULL;
        size_t reply_len = 0;
        int r;

        msg = json_loadb(buf, len, JSON_REJECT_DUPLICATES, NULL);
        method = json_string_value(json_object_get(msg, "method"));
        params = json_object_get(msg, "parameters");
        if (!method || (params && !json_is_object(params)) ||
            memchr(method, '\0', json_string_length(json_object_get(msg, "method")))) {
                json_decref(msg);
                r = error_reply("org.varlink.service.InvalidParameter", "parameter", method ? "parameters" : "method",
                                &reply, &reply_len);
                if (r < 0)
                        return r;
                *ret_call = call;
                *ret_reply = reply;
                *ret_reply_len = reply_len;
                return VARLINK_REFUSED;
        }
        call.oneway = json_is_true(json_object_get(msg, "oneway"));
        r = dispatch(method, params, &call, &reply, &reply_len);
        json_decref(msg);
        if (r < 0)
                return r;
        if (call.oneway)
                reply = mfree(reply);
        *ret_call = call;
        *ret_reply = reply;
        *ret_reply_len = reply ? reply_len : 0;
        return r;
}
