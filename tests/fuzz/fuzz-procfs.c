/* SPDX-License-Identifier: MIT */
/* The /proc/<pid>/{stat,status,cgroup} parsers, and /proc/<tid>/sched's se.exec_start. The stat parser must keep the
 * comm within bounds whatever ')' and NUL bytes the input holds. */
#include <stdlib.h>
#include <string.h>

#include "probes/procfs.h"
#include "probes/schedclock.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        ProcStat st;
        uid_t uid;
        uint64_t ns;
        char path[256];

        if (proc_stat_parse_buf((const char *) data, size, &st) == 0 && st.comm_len >= sizeof st.comm)
                abort();
        (void) proc_status_parse_uid((const char *) data, size, &uid);
        (void) schedclock_parse_exec_start((const char *) data, size, &ns);
        if (proc_cgroup_parse_unified((const char *) data, size, path, sizeof path) == 0 &&
            strnlen(path, sizeof path) == sizeof path)
                abort(); /* not NUL-terminated */
        return 0;
}
