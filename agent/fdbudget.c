/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <sys/resource.h>

#include "agent/fdbudget.h"
#include "base/log.h"

#define FD_RESERVE 16

long fd_budget_reserve(unsigned samples, unsigned recordings) {
        return FD_RESERVE + 2 * (long) samples + FD_BUDGET_PER_RECORDING * (long) recordings;
}

void fd_budget_init(FdBudget *b, long reserve, Closer *closer) {
        struct rlimit rl;
        DIR *d = opendir("/proc/self/fd");
        long open_now = 0;

        *b = (FdBudget) { .left = LONG_MAX, .closer = closer };
        if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || !d) {
                if (d)
                        closedir(d);
                return;
        }
        while (readdir(d))
                open_now++;
        closedir(d);
        open_now -= 2; /* "." and ".." */
        if (rl.rlim_cur != RLIM_INFINITY)
                b->left = (long) rl.rlim_cur - open_now - reserve;
}

int fd_budget_take(FdBudget *b, long n) {
        if (b->left < n)
                return -EMFILE;
        if (b->closer && b->left - (long) closer_pending(b->closer) < n)
                closer_wait_pending(b->closer, (size_t) (b->left - n));
        b->left -= n;
        return 0;
}

void fd_budget_give(FdBudget *b, long n) {
        b->left += n;
}

bool fd_budget_starved(FdBudget *b, int r, size_t n_triggers) {
        struct rlimit rl = {};

        if (r != -EMFILE && r != -ENFILE)
                return false;
        if (b->starved == 0) {
                (void) getrlimit(RLIMIT_NOFILE, &rl);
                log_error("out of file descriptors (%s, open-file limit %llu): psidiag needs 1 per trigger; raise "
                          "LimitNOFILE= (ulimit -n) or watch fewer cgroups. Triggers not armed are counted below",
                          r == -ENFILE ? "the system's table is full" : "this process's limit",
                          (unsigned long long) rl.rlim_cur);
        }
        b->starved += (unsigned) n_triggers;
        return true;
}
