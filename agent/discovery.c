/* SPDX-License-Identifier: MIT */
#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/dirset.h"
#include "agent/ctrknown.h"
#include "agent/dirwatch.h"
#include "agent/discovery.h"
#include "agent/health.h"
#include "agent/pace.h"
#include "agent/pathset.h"
#include "agent/watch.h"
#include "base/fileio.h"
#include "base/log.h"
#include "base/macro.h"
#include "base/text.h"
#include "base/timeutil.h"
#include "config/target.h"
#include "containers/ctrselect.h"
#include "probes/sysroot.h"
#include "probes/system.h"

/* Walks for containers not named yet, after the tree's last change: 3 x 31 s. */
#define DISCOVERY_RETRIES 3

/* Walks of the whole tree after a change, and of the cgroups bursts made, are paced (agent/pace.h):
 * each kind takes at most a tenth of the loop, however fast a user makes and removes directories;
 * the bursts' also at most one per DISCOVERY_BURST_GAP_US. Events are read once per READ_GAP. */
#define DISCOVERY_BURST_GAP_US (50 * USEC_PER_MSEC)
#define DISCOVERY_READ_GAP_S 0.02
/* A refused watch is warned about at most this often, with how many were refused since. */
#define DISCOVERY_REFUSED_LOG_US (60 * USEC_PER_SEC)
/* Cgroups made in one burst that are walked alone; beyond them the whole tree is walked. */
#define DISCOVERY_CREATED_MAX 256

/* Why a directory is watched: a cgroup of the config's paths or globs may appear in it; a
 * container may (the walk for containers goes through it, so what is made in it is walked alone). */
#define DIR_CGROUPS 1u
#define DIR_CONTAINERS 2u

struct Discovery {
        Dirwatch *dirwatch;   /* where configured cgroups may appear */
        ev_timer retry;       /* a container its runtime's files did not name yet is asked again */
        unsigned retries;     /* walks the timer made since the tree last changed */
        bool rediscover;      /* a burst of its events asks for discovery_run() */
        bool recgroups;       /* ... or for the walks of the config's paths and globs */
        Pathset created;      /* ... and for those of the cgroups made in container parents */
        bool watches_changed; /* ... or removed watches, for the metrics */
        Pace pace;            /* of the whole tree's walks after a change */
        Pace burst;           /* of the walks of what bursts made */
        Dirset *dirs;         /* where configured cgroups (or a glob's or a selector's matches) may appear */
        uint64_t kernel_max;  /* fs.inotify.max_user_watches, 0 unknown */
        LogRateLimit refused_log;
        uint64_t refused_unsaid; /* refused since the last warning */
        uint64_t refused_walk;   /* refused by the last walk */
        bool nocache_warned;
        bool *missing_warned; /* per config watch: "not there yet" said once */
        Ctrknown known;       /* containers judged against the watches */
};

/* The limit discovery watches within: max_dir_watches, and a quarter of what root may hold. */
static void dirs_limit(Agent *a) {
        Discovery *d = a->discovery;
        uint64_t max = a->config->max_dir_watches;

        if (d->kernel_max > 0)
                max = MIN(max, MAX(d->kernel_max / 4, (uint64_t) 1));
        dirset_set_max(d->dirs, (unsigned) max);
        a->counters.dir_watch_limit = max;
}

static void refused(Agent *a, const char *path, uid_t owner, int why, bool kernel) {
        Discovery *d = a->discovery;
        char safe[256];

        a->counters.dir_watches_refused++;
        d->refused_unsaid++;
        if (!log_ratelimit_pass(&d->refused_log, now_usec(CLOCK_MONOTONIC)))
                return;
        /* The path is a user's to name: never raw on a terminal. */
        text_terminal_safe(path, safe, sizeof safe);
        if (why == -EDQUOT)
                log_warning("cgroup directory /%s of uid %u is not watched: a user's directories take at most a "
                            "sixteenth of max_dir_watches (%u), all users' half; cgroups made in it are not noticed "
                            "(%" PRIu64 " refused since the last warning)",
                            safe, (unsigned) owner, dirset_max(d->dirs), d->refused_unsaid);
        else
                log_warning("cgroup directory /%s is not watched: %s%s; cgroups made in it are noticed only by the "
                            "next walk (%" PRIu64 " refused since the last warning)",
                            safe, kernel ? "inotify: " : "the limit, max_dir_watches (at most a quarter of ",
                            kernel ? strerror(-why) : "fs.inotify.max_user_watches)", d->refused_unsaid);
        d->refused_unsaid = 0;
}

/* inotify on a directory of the cgroup2 tree (relative path), once, within the limit (shared with
 * oomwatch's memory.events files) and its owner's share. 0 (watched, or it went); -EDQUOT beyond
 * its owner's share, -ENOSPC beyond the limit, another -errno from the kernel. */
static int dir_watch(Agent *a, const char *path, unsigned flags) {
        Discovery *d = a->discovery;
        int cgroup2_fd = a->rt.sysroot->cgroup2_fd;
        _cleanup_free_ char *at = NULL;
        struct stat st;
        uid_t owner;
        int wd, r;

        if (!d->dirwatch || !d->dirs || dirset_mark(d->dirs, path, flags))
                return 0;
        /* Its owner: a user's directory is one of a delegated subtree, theirs to fill. */
        if (fstatat(cgroup2_fd, path, &st, AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH) < 0)
                return 0; /* gone since it was listed: its parent's event says so */
        /* The agent's own directories (it may run unprivileged, on a tree delegated to it) are
         * as root's. */
        owner = st.st_uid == geteuid() ? 0 : st.st_uid;
        r = dirset_admit(d->dirs, owner);
        if (r >= 0 && dirset_count(d->dirs) + a->counters.oom_file_watches >= dirset_max(d->dirs))
                r = -ENOSPC;
        if (r < 0) {
                refused(a, path, owner, r, false);
                return r;
        }
        /* Through the mount's directory the agent reads (its fd), not its path from "/": the same
         * directory whatever the sysroot (a test's tree is not at "/"). */
        if (asprintf(&at, "/proc/self/fd/%d/%s", cgroup2_fd, path) < 0)
                return -ENOMEM;
        wd = dirwatch_add(d->dirwatch, at,
                          IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_MOVED_FROM | IN_ONLYDIR | IN_DONT_FOLLOW);
        if (wd < 0) {
                if (cgroup_is_gone(wd))
                        return 0;
                refused(a, path, owner, wd, true);
                return wd;
        }
        r = dirset_add(d->dirs, wd, path, owner, flags);
        if (r == -ENOMEM) /* watched, but its events are not known as its: the next walk adds it */
                dirwatch_remove(d->dirwatch, wd);
        a->counters.dir_watches = dirset_count(d->dirs);
        return 0;
}

static bool has_glob(const char *s, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (s[i] == '*' || s[i] == '?' || s[i] == '[')
                        return true;
        return false;
}

/* Walks the pattern's segments from dirfd (at path, depth segments in): arms a watch on every
 * match, and puts inotify on every directory where a match may appear later. Returns how many
 * cgroups match. */
static unsigned discover_walk(Agent *a, const WatchConfig *cfg, const char *rest, int dirfd, const char *path) {
        const char *seg, *slash;
        size_t seg_len;
        unsigned n = 0;

        while (*rest == '/')
                rest++;
        if (!*rest) {
                if (!watch_find(a, cfg, path))
                        (void) watch_new(a, cfg, path);
                return 1;
        }
        (void) dir_watch(a, path, DIR_CGROUPS);
        seg = rest;
        slash = strchrnul(seg, '/');
        seg_len = (size_t) (slash - seg);
        char pattern[256];
        if (seg_len >= sizeof pattern)
                return 0;
        memcpy(pattern, seg, seg_len);
        pattern[seg_len] = '\0';

        if (!has_glob(pattern, seg_len)) {
                _cleanup_free_ char *child_path = NULL;
                int child = openat(dirfd, pattern, O_DIRECTORY | O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
                if (child < 0)
                        return 0;
                if (asprintf(&child_path, "%s%s%s", path, path[0] ? "/" : "", pattern) >= 0)
                        n = discover_walk(a, cfg, slash, child, child_path);
                safe_close(child);
                return n;
        }
        DIR *d;
        struct dirent *de;

        if (opendir_at(dirfd, ".", &d) < 0)
                return 0;
        while ((de = readdir(d))) {
                _cleanup_free_ char *child_path = NULL;
                int child;

                if (de->d_type != DT_DIR || de->d_name[0] == '.' || fnmatch(pattern, de->d_name, FNM_PERIOD) != 0)
                        continue;
                child = openat(dirfd, de->d_name, O_DIRECTORY | O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
                if (child < 0)
                        continue;
                if (asprintf(&child_path, "%s%s%s", path, path[0] ? "/" : "", de->d_name) >= 0)
                        n += discover_walk(a, cfg, slash, child, child_path);
                safe_close(child);
        }
        closedir(d);
        return n;
}

/* Judges the container at path, as the cache named it (info; NULL: none), against every container
 * watch: NULL when it is not named yet (then a timer asks again) or out of memory; else the
 * verdicts, remembered. */
static const bool *judge(Agent *a, const char *path, const ContainerInfo *info) {
        Discovery *d = a->discovery;
        CtrknownEntry *k;
        bool *matches;
        size_t at = 0;

        if (!info)
                return NULL;
        /* Named by nothing yet (a lookup that raced the runtime writing its files, or a read that
         * failed): the cache asks again after CONTAINER_CACHE_RETRY_US, and so does the walk, a few
         * times after the tree's last change. A cgroup not verified as its runtime's (a user's
         * that claims a container's id) is judged at once: no watch by name selects it. */
        if (info->unnamed[0] && !info->sandbox && !info->unverified[0]) {
                if (d->dirwatch && !ev_is_active(&d->retry) && d->retries < DISCOVERY_RETRIES) {
                        ev_timer_set(&d->retry, (double) CONTAINER_CACHE_RETRY_US / USEC_PER_SEC + 1., 0.);
                        ev_timer_start(a->loop, &d->retry);
                }
                return NULL;
        }
        matches = calloc(a->config->n_watches, sizeof *matches);
        if (!matches)
                return NULL;
        for (size_t i = 0; i < a->config->n_watches; i++) {
                const WatchConfig *cfg = &a->config->watches[i];

                matches[i] = config_target_by_container(cfg) && ctrselect_match(&cfg->select, info);
                if (matches[i]) {
                        /* A rootless user writes its own containers' names: never raw on a terminal. */
                        char name[sizeof info->name], image[sizeof info->image];
                        log_info("container %s (%s %.12s, image %s) matches %s: arming %s",
                                 text_terminal_safe(info->pod_container[0] ? info->pod_container : info->name, name,
                                                    sizeof name),
                                 info->runtime, info->id,
                                 info->image[0] ? text_terminal_safe(info->image, image, sizeof image) : "unknown",
                                 cfg->select_text, path);
                }
        }
        if (ctrknown_find(&d->known, path, &at))
                assert(!"judged twice");
        ctrknown_insert(&d->known, at, path, matches);
        k = ctrknown_find(&d->known, path, &at);
        return k ? k->matches : NULL;
}

/* The walk for containers: a cgroup where containers may appear is watched (inotify); a
 * container's is armed for every container watch whose selector it matches. */
typedef struct ContainerWalk {
        Agent *a;
        unsigned *matched; /* per config watch: how many containers match */
} ContainerWalk;

static int on_container_walk(const char *path, CtrselectKind kind, void *userdata) {
        ContainerWalk *cw = userdata;
        Agent *a = cw->a;
        const CtrknownEntry *k;
        const bool *matches;
        size_t at;

        if (kind == CTRSELECT_PARENT)
                /* A user's directory beyond their share is not walked into either: what one user
                 * makes costs the walk at most their share's directories and their children. */
                return dir_watch(a, path, DIR_CONTAINERS) == -EDQUOT ? CTRSELECT_PRUNE : 0;
        k = ctrknown_find(&a->discovery->known, path, &at);
        if (k)
                matches = k->matches;
        else {
                const ContainerInfo *info = container_cache_lookup(a->rt.containers, path);
                /* "<ns>/<id>" is plain containerd's if containerd has that task (the cache reads its
                 * bundle, and remembers a cgroup that is not one for CONTAINER_CACHE_RETRY_US). */
                if (kind == CTRSELECT_MAYBE && !info)
                        return 0;
                matches = judge(a, path, info);
        }
        for (size_t i = 0; matches && i < a->config->n_watches; i++) {
                const WatchConfig *cfg = &a->config->watches[i];

                if (!matches[i])
                        continue;
                cw->matched[i]++;
                if (!watch_find(a, cfg, path))
                        (void) watch_new(a, cfg, path);
        }
        return kind == CTRSELECT_MAYBE ? 1 : 0;
}

/* Every container watch's matches: one walk of the tree for all of them (below: of the subtree of
 * a cgroup made in a parent that walk visited, NULL: the whole tree). */
static void discover_containers(Agent *a, const char *below) {
        _cleanup_free_ unsigned *matched = NULL;
        Discovery *d = a->discovery;
        bool any = false;
        int r;

        for (size_t i = 0; i < a->config->n_watches; i++)
                any = any || config_target_by_container(&a->config->watches[i]);
        if (!any || a->rt.sysroot->cgroup2_fd < 0)
                return;
        matched = calloc(a->config->n_watches, sizeof *matched);
        if (!matched) {
                log_warning("out of memory: containers that appeared are not armed until the next change");
                return;
        }
        if (!a->rt.containers) { /* no memory for the cache at start: nothing can be named */
                if (!d->nocache_warned)
                        log_warning("containers cannot be named (out of memory): container watches arm nothing");
                d->nocache_warned = true;
                return;
        }
        ContainerWalk cw = { .a = a, .matched = matched };
        if (below) {
                r = ctrselect_walk_below(a->rt.sysroot->cgroup2_fd, below, on_container_walk, &cw);
                /* Gone already, or its matches only: the whole tree's say what is missing. */
                if (r < 0 && !cgroup_is_gone(r))
                        log_warning_errno(r, "cannot walk the cgroup tree for containers below %s", below);
                return;
        }
        r = ctrselect_walk(a->rt.sysroot->cgroup2_fd, on_container_walk, &cw);
        container_cache_done(a->rt.containers);
        if (r < 0)
                log_warning_errno(r, "cannot walk the cgroup tree for containers");
        for (size_t i = 0; i < a->config->n_watches; i++) {
                const WatchConfig *cfg = &a->config->watches[i];

                if (!config_target_by_container(cfg))
                        continue;
                if (matched[i] == 0 && !d->missing_warned[i]) {
                        log_info("no container matches %s yet; matches are armed as they appear", cfg->select_text);
                        d->missing_warned[i] = true;
                } else if (matched[i] > 0)
                        d->missing_warned[i] = false;
        }
}

/* The config's paths and globs: each walk goes only as deep as its pattern. */
static void discover_cgroups(Agent *a) {
        Discovery *d = a->discovery;

        for (size_t i = 0; i < a->config->n_watches; i++) {
                const WatchConfig *cfg = &a->config->watches[i];
                unsigned n;

                if (config_target_by_container(cfg))
                        continue;
                if (!cfg->cgroup) {
                        if (!watch_find(a, cfg, NULL))
                                (void) watch_new(a, cfg, NULL);
                        continue;
                }
                if (a->rt.sysroot->cgroup2_fd < 0)
                        continue;
                n = discover_walk(a, cfg, cfg->cgroup, a->rt.sysroot->cgroup2_fd, "");
                if (n == 0 && !d->missing_warned[i]) {
                        if (has_glob(cfg->cgroup, strlen(cfg->cgroup)))
                                log_info("no cgroup matches %s yet; matches are armed as they appear", cfg->cgroup);
                        else
                                log_warning("cgroup %s does not exist (yet); it is armed when it appears", cfg->cgroup);
                        d->missing_warned[i] = true;
                } else if (n > 0)
                        d->missing_warned[i] = false;
        }
}

static void count_walk(Agent *a, usec_t start) {
        a->counters.discovery_walks++;
        a->counters.discovery_walk_us += now_usec(CLOCK_MONOTONIC) - start;
}

/* Node-wide watches, concrete cgroups that now exist, every current match of a glob, and every
 * container a selector matches. */
void discovery_run(Agent *a) {
        Discovery *d = a->discovery;
        usec_t start = now_usec(CLOCK_MONOTONIC);
        uint64_t refused = a->counters.dir_watches_refused;

        pace_stop(a->loop, &d->burst);
        pathset_clear(&d->created); /* all walked now */
        d->recgroups = false;
        discover_containers(a, NULL);
        discover_cgroups(a);
        count_walk(a, start);
        d->refused_walk = a->counters.dir_watches_refused - refused;
        pace_done(a->loop, &d->pace, start, 0);
}

/* The cgroups made in container parents, each walked alone: what a burst costs is what it made,
 * not the tree (a user making and removing directories in their own cgroup walks only those). */
static void walk_created(Agent *a) {
        Discovery *d = a->discovery;
        usec_t start = now_usec(CLOCK_MONOTONIC);

        if (d->created.n == 0 && !d->recgroups)
                return; /* all it made went before its walk */
        d->retries = 0; /* the tree changed: a container not named yet is asked again */
        for (size_t i = 0; i < d->created.n; i++)
                discover_containers(a, d->created.items[i]);
        if (d->created.n > 0 && a->rt.containers)
                container_cache_done(a->rt.containers);
        pathset_clear(&d->created);
        if (d->recgroups) {
                d->recgroups = false;
                discover_cgroups(a);
        }
        count_walk(a, start);
        pace_done(a->loop, &d->burst, start, DISCOVERY_BURST_GAP_US);
}

static void created_add(Discovery *d, const char *dir, const char *name) {
        if (d->rediscover)
                return; /* the whole tree is walked anyway */
        /* The same name made again is walked once; more names than the set holds, the whole tree. */
        if (pathset_add(&d->created, dir, name) < 0) {
                d->rediscover = true;
                pathset_clear(&d->created);
        }
}

/* What bursts made: walked now, or when the last such walk's pace allows. */
static bool walk_created_paced(Agent *a) {
        Discovery *d = a->discovery;

        if ((d->created.n == 0 && !d->recgroups) || !pace_ready(a->loop, &d->burst))
                return false;
        walk_created(a);
        return true;
}

/* A walk after a change: now, or when the last one's pace allows. */
static void walk_after_change(Agent *a) {
        Discovery *d = a->discovery;

        d->retries = 0;
        if (pace_ready(a->loop, &d->pace))
                discovery_run(a);
}

/* Events on the directories where configured cgroups may appear. */
static void on_dir_event(Dirwatch *dw, const struct inotify_event *e, void *userdata) {
        Agent *a = ASSERT_PTR(userdata);
        Discovery *d = a->discovery;
        unsigned flags = 0;
        const char *dir;

        if (!e) { /* the end of a burst: act once on what it said */
                bool changed = d->rediscover;
                if (d->rediscover)
                        walk_after_change(a);
                else
                        changed = walk_created_paced(a);
                if (changed || d->watches_changed)
                        health_update(a);
                d->rediscover = d->watches_changed = false;
                return;
        }
        if (e->mask & IN_Q_OVERFLOW) {
                d->rediscover = true;
                return;
        }
        dir = d->dirs ? dirset_path(d->dirs, e->wd, &flags) : NULL;
        if (!dir)
                return;
        if (e->mask & IN_IGNORED) { /* the directory itself is gone */
                (void) dirset_remove(d->dirs, e->wd);
                a->counters.dir_watches = dirset_count(d->dirs);
                d->watches_changed = true;
                /* A watch is free again: a directory refused before may take it. */
                if (d->refused_walk > 0)
                        d->rediscover = true;
                return;
        }
        if (!(e->mask & IN_ISDIR) || e->len == 0)
                return;
        if (e->mask & (IN_CREATE | IN_MOVED_TO)) {
                if (flags & DIR_CGROUPS)
                        d->recgroups = true;
                if (flags & DIR_CONTAINERS)
                        created_add(d, dir, e->name);
        }
        if (e->mask & (IN_DELETE | IN_MOVED_FROM)) {
                _cleanup_free_ char *gone = NULL;
                if (asprintf(&gone, "%s%s%s", dir, dir[0] ? "/" : "", e->name) < 0)
                        return;
                ctrknown_forget(&d->known, gone);
                pathset_remove(&d->created, gone); /* made and gone before its walk: nothing to walk */
                for (size_t i = 0; i < a->n_watches;) {
                        Watch *w = a->watches[i];
                        if (w->path && strcmp(w->path, gone) == 0) {
                                log_info("cgroup %s was removed: its triggers are closed", w->name);
                                a->counters.cgroups_gone++;
                                watch_remove(a, w); /* swaps the last watch into i */
                                d->watches_changed = true;
                        } else
                                i++;
                }
        }
}

static void on_pace(struct ev_loop *loop, ev_timer *t, int revents) {
        Agent *a = ASSERT_PTR(t->data);

        discovery_run(a);
        health_update(a);
}

static void on_burst(struct ev_loop *loop, ev_timer *t, int revents) {
        Agent *a = ASSERT_PTR(t->data);

        walk_created(a);
        health_update(a);
}

static void on_retry(struct ev_loop *loop, ev_timer *t, int revents) {
        Agent *a = ASSERT_PTR(t->data);

        a->discovery->retries++;
        discovery_run(a);
        health_update(a);
}

int discovery_start(Agent *a) {
        Discovery *d = calloc(1, sizeof *d);
        int r;

        if (!d)
                return -ENOMEM;
        d->missing_warned = calloc(MAX(a->config->n_watches, (size_t) 1), sizeof *d->missing_warned);
        if (!d->missing_warned) {
                free(d);
                return -ENOMEM;
        }
        ev_timer_init(&d->retry, on_retry, 0., 0.);
        d->retry.data = a;
        pace_init(&d->pace, on_pace, a);
        pace_init(&d->burst, on_burst, a);
        d->created.max = DISCOVERY_CREATED_MAX;
        d->refused_log.interval_us = DISCOVERY_REFUSED_LOG_US;
        a->discovery = d;
        /* Cgroups that appear later (a glob's new match, a configured path created after start, one
         * removed and created again) are noticed by inotify on their parent directories. */
        if (a->rt.sysroot->cgroup2_fd >= 0) {
                r = dirset_new(a->config->max_dir_watches, &d->dirs);
                if (r >= 0)
                        r = dirwatch_new(a->loop, on_dir_event, a, &d->dirwatch);
                if (r >= 0)
                        dirwatch_set_gap(d->dirwatch, DISCOVERY_READ_GAP_S);
                if (r < 0) {
                        log_warning_errno(r, "cannot watch for new cgroups (inotify); only those present now are "
                                             "armed");
                        d->dirs = dirset_free(d->dirs);
                } else {
                        if (system_read_inotify_max_watches(a->rt.sysroot->proc_fd, &d->kernel_max) < 0)
                                d->kernel_max = 0; /* unknown: max_dir_watches alone */
                        dirs_limit(a);
                }
        }
        return 0;
}

void discovery_stop(Agent *a) {
        Discovery *d = a->discovery;

        if (!d)
                return;
        ev_timer_stop(a->loop, &d->retry);
        pace_stop(a->loop, &d->pace);
        pace_stop(a->loop, &d->burst);
        d->dirwatch = dirwatch_free(d->dirwatch);
        d->dirs = dirset_free(d->dirs);
        pathset_done(&d->created);
        ctrknown_done(&d->known);
        free(d->missing_warned);
        free(d);
        a->discovery = NULL;
}

bool discovery_follows_new_cgroups(const Agent *a) {
        return a->discovery && a->discovery->dirwatch && a->discovery->dirs;
}

void discovery_take_warned(Agent *a, bool *missing_warned) {
        ctrknown_clear(&a->discovery->known); /* judged against the old config's watches */
        free(a->discovery->missing_warned);
        a->discovery->missing_warned = missing_warned;
        if (a->discovery->dirs)
                dirs_limit(a); /* max_dir_watches may have changed */
}
