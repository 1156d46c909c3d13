/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <sys/epoll.h>

#include "agent/watchtrigger.h"
#include "base/log.h"
#include "base/macro.h"
#include "probes/system.h"

/* Our LSM label into label when an LSM confines us (a refused trigger is then its doing). */
static bool trigger_lsm_label(Agent *a, char *label, size_t size) {
        return system_read_lsm_label(a->rt.sysroot->proc_fd, label, size) >= 0 && system_lsm_confines(label);
}

Trigger *trigger_arm(Agent *a, Watch *w, int cgroup_fd, const WatchTrigger *cfg) {
        char label[128];
        bool cgroup = w->path != NULL;
        int dirfd = cgroup ? cgroup_fd : a->rt.sysroot->pressure_fd;
        const char *file = pressure_file_name(cfg->spec.resource, cgroup);
        Trigger *t;
        PressureStats ps;
        int r;

        if (dirfd < 0)
                return NULL;
        t = calloc(1, sizeof *t);
        if (!t) {
                log_error("out of memory");
                return NULL;
        }
        *t = (Trigger) { .watch = w, .cfg = cfg, .fd = -EBADF, .handle = -1 };
        if (psi_trigger_spec_effective(&cfg->spec, a->rt.privileged, &t->effective) > 0 && !a->started) {
                char buf[96];
                log_warning("trigger \"%s\" on %s: without CAP_SYS_RESOURCE the kernel accepts only windows "
                            "that are multiples of 2s; armed as \"%s\"",
                            cfg->text, w->name, psi_trigger_spec_format(&t->effective, buf, sizeof buf));
        }
        r = fd_budget_take(&a->fds, 1);
        if (r >= 0) {
                r = psi_trigger_open(dirfd, file, &t->effective, &t->fd);
                if (r < 0)
                        fd_budget_give(&a->fds, 1);
        }
        if (r < 0) {
                if (!fd_budget_starved(&a->fds, r, 1)) {
                        if (r == -EOPNOTSUPP)
                                log_error("cannot arm \"%s\" on %s: PSI is disabled for it (psi=0, or "
                                          "cgroup.pressure=0)",
                                          cfg->text, w->name);
                        else if (cgroup_is_gone(r))
                                log_debug("cannot arm \"%s\" on %s: the cgroup is going away", cfg->text, w->name);
                        else if ((r == -EACCES || r == -EPERM) && trigger_lsm_label(a, label, sizeof label))
                                log_error_errno(r,
                                                "cannot arm \"%s\" on %s (%s): psidiag runs confined by the LSM "
                                                "profile \"%s\", which refuses it (a container runtime's default "
                                                "AppArmor profile refuses writes under /proc): run it unconfined "
                                                "(psidiag check says how)",
                                                cfg->text, w->name, file, label);
                        else
                                log_error_errno(r, "cannot arm \"%s\" on %s (%s)", cfg->text, w->name, file);
                }
                free(t);
                return NULL;
        }
        if (pressure_read_fd(t->fd, &ps) >= 0 && ps.has[t->effective.stall])
                wakeup_total_arm(&t->total, ps.line[t->effective.stall].total_us, now_usec(CLOCK_MONOTONIC));
        t->handle = psi_set_add(a->psi, t->fd, EPOLLPRI, t);
        if (t->handle < 0) {
                log_error_errno((int) t->handle, "cannot watch the trigger fd of \"%s\" on %s", cfg->text, w->name);
                closer_push(a->closer, t->fd);
                fd_budget_give(&a->fds, 1);
                free(t);
                return NULL;
        }
        a->armed++;
        log_debug("armed \"%s\" on %s", cfg->text, w->name);
        return t;
}

/* Out of the set first (no event may name it once it is freed), then to the closer: the close
 * waits for an RCU grace period, which the loop must not (kernel-facts.md: trigger-close). */
void trigger_free(Agent *a, Trigger *t) {
        if (!t)
                return;
        (void) psi_set_remove(a->psi, t->handle);
        closer_push(a->closer, t->fd);
        a->armed--;
        fd_budget_give(&a->fds, 1);
        free(t);
}
