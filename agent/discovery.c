/* SPDX-License-Identifier: MIT */
#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "agent/dirwatch.h"
#include "agent/discovery.h"
#include "agent/health.h"
#include "agent/watch.h"
#include "base/array.h"
#include "base/cgpath.h"
#include "base/fileio.h"
#include "base/log.h"
#include "base/macro.h"
#include "base/text.h"
#include "config/target.h"
#include "probes/ctrselect.h"

/* Walks for containers not named yet, after the tree's last change: 3 x 31 s. */
#define DISCOVERY_RETRIES 3

/* A directory under inotify watch: somewhere a configured cgroup (or a glob's match) may appear. */
typedef struct WatchedDir {
        int wd;
        char *path; /* relative to the cgroup2 mount, "" the root */
} WatchedDir;

struct Discovery {
        Dirwatch *dirwatch;   /* where configured cgroups may appear */
        ev_timer retry;       /* a container its runtime's files did not name yet is asked again */
        unsigned retries;     /* walks the timer made since the tree last changed */
        bool rediscover;      /* a burst of its events asks for discovery_run() */
        bool watches_changed; /* ... or removed watches, for the metrics */
        WatchedDir *dirs;
        size_t n_dirs, cap_dirs;
        bool inotify_full_warned, nocache_warned;
        bool *missing_warned;         /* per config watch: "not there yet" said once */
        struct KnownContainer *known; /* containers judged, sorted by path */
        size_t n_known, cap_known;
};

/* inotify on a directory of the cgroup2 tree (relative path), once. */
static void dir_watch(Agent *a, const char *path) {
        Discovery *d = a->discovery;
        _cleanup_free_ char *at = NULL;
        int wd;

        /* Through the mount's directory the agent reads (its fd), not its path from "/": the same
         * directory whatever the sysroot (a test's tree is not at "/"). */
        if (!d->dirwatch || asprintf(&at, "/proc/self/fd/%d/%s", a->rt.sysroot->cgroup2_fd, path) < 0)
                return;
        wd = dirwatch_add(d->dirwatch, at,
                          IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_MOVED_FROM | IN_ONLYDIR | IN_DONT_FOLLOW);
        if (wd < 0) {
                if (wd == -ENOSPC && !d->inotify_full_warned) {
                        log_warning("out of inotify watches (fs.inotify.max_user_watches): new cgroups under %s/%s "
                                    "are not noticed until the next reload",
                                    a->rt.sysroot->cgroup2_path, path);
                        d->inotify_full_warned = true;
                }
                return;
        }
        for (size_t i = 0; i < d->n_dirs; i++)
                if (d->dirs[i].wd == wd)
                        return;
        if (array_grow((void **) &d->dirs, &d->cap_dirs, d->n_dirs, 16, sizeof *d->dirs) < 0)
                return;
        d->dirs[d->n_dirs] = (WatchedDir) { .wd = wd, .path = strdup(path) };
        if (d->dirs[d->n_dirs].path)
                d->n_dirs++;
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
        dir_watch(a, path);
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

/* Which container watches a container's cgroup matches, from its names read once: a walk asks
 * here before the cache, so a node with more containers than the cache holds does not read every
 * container's files again at every walk. Sorted by path; forgotten when the cgroup goes, all of it
 * at a reload (the watches change). */
typedef struct KnownContainer {
        char *path;
        bool *matches; /* per config watch */
} KnownContainer;

static KnownContainer *known_find(Discovery *d, const char *path, size_t *ret_at) {
        size_t lo = 0, hi = d->n_known;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                int c = strcmp(d->known[mid].path, path);
                if (c == 0)
                        return &d->known[mid];
                if (c < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        *ret_at = lo;
        return NULL;
}

/* Takes matches; frees it when out of memory (the container is judged again at the next walk). */
static void known_insert(Discovery *d, size_t at, const char *path, bool *matches) {
        char *p = strdup(path);

        if (!p || array_grow((void **) &d->known, &d->cap_known, d->n_known, 64, sizeof *d->known) < 0) {
                free(p);
                free(matches);
                return;
        }
        memmove(&d->known[at + 1], &d->known[at], (d->n_known - at) * sizeof *d->known);
        d->known[at] = (KnownContainer) { .path = p, .matches = matches };
        d->n_known++;
}

/* gone and what was below it. */
static void known_forget(Discovery *d, const char *gone) {
        size_t j = 0;

        for (size_t i = 0; i < d->n_known; i++) {
                if (cgpath_covers(gone, d->known[i].path)) {
                        free(d->known[i].path);
                        free(d->known[i].matches);
                } else
                        d->known[j++] = d->known[i];
        }
        d->n_known = j;
}

static void known_clear(Discovery *d) {
        for (size_t i = 0; i < d->n_known; i++) {
                free(d->known[i].path);
                free(d->known[i].matches);
        }
        d->n_known = 0;
}

/* Judges the container at path, as the cache named it (info; NULL: none), against every container
 * watch: NULL when it is not named yet (then a timer asks again) or out of memory; else the
 * verdicts, remembered. */
static const bool *judge(Agent *a, const char *path, const ContainerInfo *info) {
        Discovery *d = a->discovery;
        KnownContainer *k;
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
        if (known_find(d, path, &at))
                assert(!"judged twice");
        known_insert(d, at, path, matches);
        k = known_find(d, path, &at);
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
        const KnownContainer *k;
        const bool *matches;
        size_t at;

        if (kind == CTRSELECT_PARENT) {
                dir_watch(a, path);
                return 0;
        }
        k = known_find(a->discovery, path, &at);
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

/* Every container watch's matches: one walk of the tree for all of them. */
static void discover_containers(Agent *a) {
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
        r = ctrselect_walk(a->rt.sysroot->cgroup2_fd, on_container_walk,
                           &(ContainerWalk) { .a = a, .matched = matched });
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

/* Arms whatever the config asks for and is not armed yet: node-wide watches, concrete cgroups that
 * now exist, every current match of a glob, and every container a selector matches. */
void discovery_run(Agent *a) {
        Discovery *d = a->discovery;

        discover_containers(a);
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

/* Events on the directories where configured cgroups may appear. */
static void on_dir_event(Dirwatch *dw, const struct inotify_event *e, void *userdata) {
        Agent *a = ASSERT_PTR(userdata);
        Discovery *d = a->discovery;
        const WatchedDir *dir = NULL;

        if (!e) { /* the end of a burst: act once on what it said */
                if (d->rediscover) {
                        d->retries = 0;
                        discovery_run(a);
                }
                if (d->rediscover || d->watches_changed)
                        health_update(a);
                d->rediscover = d->watches_changed = false;
                return;
        }
        if (e->mask & IN_Q_OVERFLOW) {
                d->rediscover = true;
                return;
        }
        for (size_t i = 0; i < d->n_dirs; i++)
                if (d->dirs[i].wd == e->wd)
                        dir = &d->dirs[i];
        if (!dir)
                return;
        if (e->mask & IN_IGNORED) { /* the directory itself is gone */
                size_t i = (size_t) (dir - d->dirs);
                free(d->dirs[i].path);
                d->dirs[i] = d->dirs[--d->n_dirs];
                return;
        }
        if (!(e->mask & IN_ISDIR) || e->len == 0)
                return;
        if (e->mask & (IN_CREATE | IN_MOVED_TO))
                d->rediscover = true;
        if (e->mask & (IN_DELETE | IN_MOVED_FROM)) {
                _cleanup_free_ char *gone = NULL;
                if (asprintf(&gone, "%s%s%s", dir->path, dir->path[0] ? "/" : "", e->name) < 0)
                        return;
                known_forget(d, gone);
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
        a->discovery = d;
        /* Cgroups that appear later (a glob's new match, a configured path created after start, one
         * removed and created again) are noticed by inotify on their parent directories. */
        if (a->rt.sysroot->cgroup2_fd >= 0) {
                r = dirwatch_new(a->loop, on_dir_event, a, &d->dirwatch);
                if (r < 0)
                        log_warning_errno(r, "cannot watch for new cgroups (inotify); only those present now are "
                                             "armed");
        }
        return 0;
}

void discovery_stop(Agent *a) {
        Discovery *d = a->discovery;

        if (!d)
                return;
        ev_timer_stop(a->loop, &d->retry);
        d->dirwatch = dirwatch_free(d->dirwatch);
        for (size_t i = 0; i < d->n_dirs; i++)
                free(d->dirs[i].path);
        free(d->dirs);
        known_clear(d);
        free(d->known);
        free(d->missing_warned);
        free(d);
        a->discovery = NULL;
}

bool discovery_follows_new_cgroups(const Agent *a) {
        return a->discovery && a->discovery->dirwatch;
}

void discovery_take_warned(Agent *a, bool *missing_warned) {
        known_clear(a->discovery); /* judged against the old config's watches */
        free(a->discovery->missing_warned);
        a->discovery->missing_warned = missing_warned;
}
