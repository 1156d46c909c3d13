/* SPDX-License-Identifier: MIT */
/* The taskstats and cgroupstats netlink reply parsers, fed whole messages (header, genl header,
 * nested attributes, payload), and the payload parser fed raw struct bytes of any version. The
 * first byte picks the parser (mod 4: 0 and 2 taskstats, the second also as an exit message, 1
 * cgroupstats, 3 payload); the rest is
 * the message, copied to its own exactly sized, aligned buffer as recv(2) would leave it. */
#include <stdlib.h>
#include <string.h>

#include "probes/taskstats.h"
#include "tests/fuzz/fuzz.h"

#define FAMILY 0x1c

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        TaskStats ts, process;
        TaskStateCounts counts;
        bool has_process;
        void *buf;

        if (size < 1)
                return 0;
        buf = malloc(size - 1 ? size - 1 : 1);
        if (!buf)
                return 0;
        memcpy(buf, data + 1, size - 1);
        /* Modes 0 and 1 take the family from the message itself, so captured replies (whose family
         * id the running kernel chose) parse; mode 2 checks a fixed one. */
        uint16_t family = size - 1 >= 6 ? ((const struct nlmsghdr *) buf)->nlmsg_type : FAMILY;

        switch (data[0] % 4) {
        case 0:
        case 2:
                if (taskstats_parse_reply(buf, size - 1, data[0] % 4 == 0 ? family : FAMILY, &ts) == 0 &&
                    strnlen(ts.comm, sizeof ts.comm) == sizeof ts.comm)
                        abort();
                if (data[0] % 4 == 2 && taskstats_parse_exit(buf, size - 1, family, &ts, &process, &has_process) == 0 &&
                    (strnlen(ts.comm, sizeof ts.comm) == sizeof ts.comm ||
                     (has_process && (process.pid != process.tgid || process.pid <= 0))))
                        abort();
                break;
        case 1:
                (void) cgroupstats_parse_reply(buf, size - 1, family, &counts);
                break;
        default:
                /* Every timestamp lies after its maximum in every layout that has one. */
                if (taskstats_parse_payload(buf, size - 1, &ts) == 0 &&
                    ((ts.present | ts.max_present | ts.max_ts_present) & ~TASK_DELAY_ALL ||
                     ts.max_ts_present & ~ts.max_present))
                        abort();
                break;
        }
        free(buf);
        return 0;
}
