/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/base/macro.h"
#include "agent/output.h"

static int open_file(const char *path) {
        int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0640);
        return fd < 0 ? negative_errno() : fd;
}

int output_open(const char *path, OutputSink **ret) {
        OutputSink *o = calloc(1, sizeof *o);
        int fd;

        if (!o)
                return -ENOMEM;
        o->path = strdup(path);
        if (!o->path) {
                free(o);
                return -ENOMEM;
        }
        if (strcmp(path, "-") == 0)
                fd = STDOUT_FILENO;
        else {
                fd = open_file(path);
                if (fd < 0) {
                        free(o->path);
                        free(o);
                        return fd;
                }
        }
        o->fd = fd;
        *ret = o;
        return 0;
}

int output_write(OutputSink *o, const char *line, size_t len) {
        ssize_t k;

        do
                k = write(o->fd, line, len);
        while (k < 0 && errno == EINTR);

        if (k < 0) {
                o->failed++;
                return negative_errno();
        }
        if ((size_t) k != len) {
                o->failed++;
                return -EIO;
        }
        o->written++;
        return 0;
}

int output_reopen(OutputSink *o) {
        int fd;

        if (o->fd == STDOUT_FILENO)
                return 0;
        fd = open_file(o->path);
        if (fd < 0)
                return fd;
        safe_close(o->fd);
        o->fd = fd;
        return 0;
}

OutputSink *output_free(OutputSink *o) {
        if (!o)
                return NULL;
        if (o->fd != STDOUT_FILENO)
                safe_close(o->fd);
        free(o->path);
        free(o);
        return NULL;
}
