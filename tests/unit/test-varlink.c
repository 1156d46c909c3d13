/* SPDX-License-Identifier: MIT */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "kills/varlink.h"
#include "base/macro.h"
#include "tests/unit/test-util.h"

typedef struct Handled {
        int verdict;
        VarlinkCall call;
        char *reply;
        size_t reply_len;
        json_t *json; /* the reply parsed, NULL when none */
} Handled;

static void handle(const char *msg, Handled *h) {
        *h = (Handled) {};
        h->verdict = varlink_handle(msg, strlen(msg), &h->call, &h->reply, &h->reply_len);
        assert_true(h->verdict >= 0);
        if (h->reply) {
                /* One message: NUL-terminated, no NUL before its end. */
                assert_int_equal(strlen(h->reply) + 1, h->reply_len);
                h->json = json_loads(h->reply, 0, NULL);
                assert_non_null(h->json);
        }
}

static void handled_done(Handled *h) {
        free(h->reply);
        json_decref(h->json);
}

static const char *error_of(const Handled *h) {
        return json_string_value(json_object_get(h->json, "error"));
}

static const char *param_of(const Handled *h, const char *key) {
        return json_string_value(json_object_get(json_object_get(h->json, "parameters"), key));
}

/* systemd-oomd's call (oomd-util.c send_prekill_message(): sd_varlink_invoke() with {"cgroup": path}). */
static void test_notify(void **state) {
        Handled h;

        handle("{\"method\":\"io.systemd.oom.Prekill.Notify\",\"parameters\":{\"cgroup\":\"/system.slice/a "
               "b.service\"}}",
               &h);
        assert_int_equal(h.verdict, VARLINK_NOTIFY);
        assert_string_equal(h.call.cgroup, "/system.slice/a b.service");
        assert_false(h.call.oneway);
        assert_null(h.reply);
        handled_done(&h);

        size_t n;
        const char *e = varlink_reply_empty(&n);
        assert_int_equal(n, strlen(e) + 1);
        json_t *j = json_loads(e, 0, NULL);
        assert_true(json_is_object(json_object_get(j, "parameters")));
        assert_int_equal(json_object_size(json_object_get(j, "parameters")), 0);
        json_decref(j);

        /* oneway: acted on, never answered. */
        handle("{\"method\":\"io.systemd.oom.Prekill.Notify\",\"parameters\":{\"cgroup\":\"/x\"},\"oneway\":true}", &h);
        assert_int_equal(h.verdict, VARLINK_NOTIFY);
        assert_true(h.call.oneway);
        handled_done(&h);
}

static void test_bad_cgroups(void **state) {
        static const char *const bad[] = {
                "{\"method\":\"io.systemd.oom.Prekill.Notify\",\"parameters\":{}}",
                "{\"method\":\"io.systemd.oom.Prekill.Notify\"}",
                "{\"method\":\"io.systemd.oom.Prekill.Notify\",\"parameters\":{\"cgroup\":7}}",
                "{\"method\":\"io.systemd.oom.Prekill.Notify\",\"parameters\":{\"cgroup\":\"relative\"}}",
                "{\"method\":\"io.systemd.oom.Prekill.Notify\",\"parameters\":{\"cgroup\":\"/a/../../etc\"}}",
                "{\"method\":\"io.systemd.oom.Prekill.Notify\",\"parameters\":{\"cgroup\":\"/a//b\"}}",
                "{\"method\":\"io.systemd.oom.Prekill.Notify\",\"parameters\":{\"cgroup\":\"/a/./b\"}}",
                "{\"method\":\"io.systemd.oom.Prekill.Notify\",\"parameters\":{\"cgroup\":\"\"}}",
        };
        Handled h;

        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                handle(bad[i], &h);
                assert_int_equal(h.verdict, VARLINK_REFUSED);
                assert_string_equal(error_of(&h), "org.varlink.service.InvalidParameter");
                assert_string_equal(param_of(&h, "parameter"), "cgroup");
                handled_done(&h);
        }
        /* The longest path fits; one byte more does not. */
        char *msg = malloc(VARLINK_CGROUP_MAX + 128), *p;
        p = msg + sprintf(msg, "{\"method\":\"io.systemd.oom.Prekill.Notify\",\"parameters\":{\"cgroup\":\"");
        memset(p, 'a', VARLINK_CGROUP_MAX);
        p[0] = '/';
        strcpy(p + VARLINK_CGROUP_MAX - 1, "\"}}");
        handle(msg, &h);
        assert_int_equal(h.verdict, VARLINK_NOTIFY);
        assert_int_equal(strlen(h.call.cgroup), VARLINK_CGROUP_MAX - 1);
        handled_done(&h);
        p[VARLINK_CGROUP_MAX - 1] = 'a';
        strcpy(p + VARLINK_CGROUP_MAX, "\"}}");
        handle(msg, &h);
        assert_int_equal(h.verdict, VARLINK_REFUSED);
        handled_done(&h);
        free(msg);
}

static void test_malformed(void **state) {
        static const char *const bad[] = {
                "",
                "{",
                "not json",
                "[]",
                "null",
                "{\"method\":1}",
                "{\"parameters\":{}}",
                "{\"method\":\"io.systemd.oom.Prekill.Notify\",\"parameters\":[]}",
                "{\"method\":\"a\",\"method\":\"b\"}",
                "{\"method\":\"x\\u0000y\"}",
                /* jansson refuses a NUL in a string: the message is malformed, not its cgroup. */
                "{\"method\":\"io.systemd.oom.Prekill.Notify\",\"parameters\":{\"cgroup\":\"/a\\u0000b\"}}",
        };
        Handled h;

        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                handle(bad[i], &h);
                assert_int_equal(h.verdict, VARLINK_REFUSED);
                assert_string_equal(error_of(&h), "org.varlink.service.InvalidParameter");
                handled_done(&h);
        }
        size_t n;
        json_t *j = json_loads(varlink_reply_oversized(&n), 0, NULL);
        assert_string_equal(json_string_value(json_object_get(j, "error")), "org.varlink.service.InvalidParameter");
        json_decref(j);
}

static void test_unknown(void **state) {
        Handled h;

        handle("{\"method\":\"io.systemd.oom.Prekill.Kill\",\"parameters\":{}}", &h);
        assert_int_equal(h.verdict, VARLINK_REFUSED);
        assert_string_equal(error_of(&h), "org.varlink.service.MethodNotFound");
        assert_string_equal(param_of(&h, "method"), "io.systemd.oom.Prekill.Kill");
        handled_done(&h);

        handle("{\"method\":\"io.systemd.Other.Notify\"}", &h);
        assert_int_equal(h.verdict, VARLINK_REFUSED);
        assert_string_equal(error_of(&h), "org.varlink.service.InterfaceNotFound");
        assert_string_equal(param_of(&h, "interface"), "io.systemd.Other");
        handled_done(&h);

        handle("{\"method\":\"nodot\"}", &h);
        assert_int_equal(h.verdict, VARLINK_REFUSED);
        assert_string_equal(error_of(&h), "org.varlink.service.InterfaceNotFound");
        handled_done(&h);

        /* A oneway call that fails gets no reply either. */
        handle("{\"method\":\"io.systemd.Other.Notify\",\"oneway\":true}", &h);
        assert_int_equal(h.verdict, VARLINK_REFUSED);
        assert_null(h.reply);
        handled_done(&h);
}

static void test_service(void **state) {
        Handled h;

        handle("{\"method\":\"org.varlink.service.GetInfo\",\"parameters\":{}}", &h);
        assert_int_equal(h.verdict, VARLINK_ANSWERED);
        assert_string_equal(param_of(&h, "vendor"), "psidiag");
        json_t *ifaces = json_object_get(json_object_get(h.json, "parameters"), "interfaces");
        assert_int_equal(json_array_size(ifaces), 2);
        assert_string_equal(json_string_value(json_array_get(ifaces, 0)), "io.systemd.oom.Prekill");
        handled_done(&h);

        handle("{\"method\":\"org.varlink.service.GetInterfaceDescription\",\"parameters\":{\"interface\":"
               "\"io.systemd.oom.Prekill\"}}",
               &h);
        assert_int_equal(h.verdict, VARLINK_ANSWERED);
        assert_non_null(strstr(param_of(&h, "description"), "method Notify(cgroup: string) -> ()"));
        handled_done(&h);

        handle("{\"method\":\"org.varlink.service.GetInterfaceDescription\",\"parameters\":{\"interface\":\"x.y\"}}",
               &h);
        assert_int_equal(h.verdict, VARLINK_REFUSED);
        assert_string_equal(error_of(&h), "org.varlink.service.InterfaceNotFound");
        handled_done(&h);

        handle("{\"method\":\"org.varlink.service.GetInterfaceDescription\"}", &h);
        assert_int_equal(h.verdict, VARLINK_REFUSED);
        handled_done(&h);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_notify),  cmocka_unit_test(test_bad_cgroups), cmocka_unit_test(test_malformed),
                cmocka_unit_test(test_unknown), cmocka_unit_test(test_service),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
