/* SPDX-License-Identifier: MIT */
#include "containers/ctrroots.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "base/fileio.h"
#include "base/log.h"
#include "base/macro.h"
#include "containers/ctrfile.h"
#include "containers/ctrmeta.h"

/* A path key of a storage.conf in buf, expanded for u (NULL: rootful) into path: 1, 0 (not set)
 * or -errno. */
static int storage_conf_path(const char *buf, size_t len, const char *key, const CtrmetaUser *u, char *path,
                             size_t size) {
        char value[PATH_MAX];
        int r = ctrmeta_storage_key(buf, len, key, value, sizeof value);

        if (r > 0 && (r = ctrmeta_storage_expand(value, u, path, size)) >= 0)
                r = 1;
        return r;
}

/* A path key of the system's storage.conf as containers/storage reads it: from
 * /etc/containers/storage.conf, else from the distribution's /usr/share/containers/storage.conf
 * (types/options.go), relative to the sysroot into dir. 1, 0 (not set, or no such file) or -errno
 * (the reason at debug level). */
static int system_storage_path(int root_fd, const char *key, const CtrmetaUser *u, char *dir, size_t size) {
        static const char *const confs[] = { "etc/containers/storage.conf", "usr/share/containers/storage.conf" };
        char buf[65536], path[PATH_MAX];

        for (size_t i = 0; i < ELEMENTSOF(confs); i++) {
                ssize_t n = read_file_at(root_fd, confs[i], buf, sizeof buf);
                int r;

                if (n == -ENOENT)
                        continue;
                r = n < 0 ? (int) n : storage_conf_path(buf, (size_t) n, key, u, path, sizeof path);
                if (r < 0)
                        log_debug("/%s: no %s read: %s", confs[i], key, strerror(-r));
                if (r > 0)
                        snprintf(dir, size, "%s", path + 1);
                return r;
        }
        return 0;
}

/* Rootful containers/storage's graph root, beneath the sysroot: graphroot of the system's
 * storage.conf, else /var/lib/containers/storage. */
static void rootful_graphroot(int root_fd, char *dir, size_t size) {
        if (system_storage_path(root_fd, "graphroot", NULL, dir, size) <= 0)
                snprintf(dir, size, "var/lib/containers/storage");
}

/* A rootless user's graph root, as containers/storage chooses it (types/options.go): the system
 * storage.conf's rootless_storage_path, else ~/.local/share/containers/storage; then, where the
 * user has a ~/.config/containers/storage.conf (a regular file of theirs), its graphroot, else
 * its rootless_storage_path, else the former. With run, the run root from the same read: that
 * file's runroot, else $XDG_RUNTIME_DIR/containers, /run/user/<uid>/containers (kernel-facts.md:
 * runtime-pidfiles); "" when its runroot cannot be known (no pidfile is read then).
 * XDG_DATA_HOME, XDG_CONFIG_HOME and XDG_RUNTIME_DIR are the user's environment, not the agent's
 * to know: their defaults are taken. */
static void rootless_roots(int root_fd, const CtrmetaUser *u, char *dir, size_t size, char *run, size_t run_size) {
        static const char *const keys[] = { "graphroot", "rootless_storage_path" };
        _cleanup_free_ char *buf = NULL;
        char conf[PATH_MAX + 64], path[PATH_MAX];
        size_t len = 0;
        int r;

        if (system_storage_path(root_fd, "rootless_storage_path", u, dir, size) <= 0)
                snprintf(dir, size, "%s/.local/share/containers/storage", u->home + 1);
        if (run)
                snprintf(run, run_size, "run/user/%u/containers", u->uid);
        snprintf(conf, sizeof conf, "%s/.config/containers/storage.conf", u->home + 1);
        r = ctrfile_read(root_fd, conf, u->uid, &buf, &len);
        if (r < 0) {
                if (r != -ENOENT && r != -ENOTDIR)
                        log_debug("/%s: not read: %s", conf, strerror(-r));
                return;
        }
        for (size_t i = 0; i < ELEMENTSOF(keys) && r == 0; i++) {
                r = storage_conf_path(buf, len, keys[i], u, path, sizeof path);
                if (r < 0)
                        log_debug("/%s: no %s read: %s", conf, keys[i], strerror(-r));
                if (r > 0)
                        snprintf(dir, size, "%s", path + 1);
        }
        if (!run)
                return;
        r = storage_conf_path(buf, len, "runroot", u, path, sizeof path);
        if (r < 0) {
                log_debug("/%s: no runroot read, so no pidfile: its containers' init is not checked: %s", conf,
                          strerror(-r));
                run[0] = '\0';
        } else if (r > 0)
                snprintf(run, run_size, "%s", path + 1);
}

int ctrroots_podman(int root_fd, int64_t user_uid, char *dir, size_t size, char *run, size_t run_size) {
        char passwd[65536];
        CtrmetaUser u = {};
        ssize_t n;
        int r;

        if (user_uid <= 0) {
                rootful_graphroot(root_fd, dir, size);
                if (run && system_storage_path(root_fd, "runroot", NULL, run, run_size) <= 0)
                        snprintf(run, run_size, "run/containers/storage");
                return 0;
        }
        n = read_file_at(root_fd, "etc/passwd", passwd, sizeof passwd);
        if (n < 0)
                return (int) n;
        r = ctrmeta_passwd_user(passwd, (size_t) n, (unsigned) user_uid, &u);
        if (r < 0)
                return r;
        rootless_roots(root_fd, &u, dir, size, run, run_size);
        return 0;
}
