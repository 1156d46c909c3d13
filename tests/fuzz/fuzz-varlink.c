/* SPDX-License-Identifier: MIT */
/* The prekill hook's Varlink message handler on any bytes a client may send between two NULs: never
 * a crash, and every reply is one JSON object with its NUL at the end and none before. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "kills/varlink.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        VarlinkCall call;
        char *reply = NULL;
        size_t len = 0;
        int r;

        if (size >= VARLINK_MESSAGE_MAX || memchr(data, '\0', size))
                return 0; /* the reader never hands these over */
        r = varlink_handle((const char *) data, size, &call, &reply, &len);
        if (r < 0)
                return 0;
        if (r == VARLINK_NOTIFY && (call.cgroup[0] != '/' || reply))
                abort();
        if (reply) {
                if (len == 0 || reply[len - 1] != '\0' || strlen(reply) + 1 != len)
                        abort();
                json_t *j = json_loads(reply, 0, NULL);
                if (!json_is_object(j))
                        abort();
                json_decref(j);
        }
        free(reply);
        return 0;
}
