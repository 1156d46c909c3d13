/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/fileio.h"
#include "probes/wchan.h"

/* Copies [s, s+n) to out, truncated to size-1 bytes. */
static void copy_truncated(char *out, size_t size, const char *s, size_t n) {
        n = n < size - 1 ? n : size - 1;
        memcpy(out, s, n);
        out[n] = '\0';
}

static bool is_symbol_byte(char c) {
        return (unsigned char) c > ' ' && (unsigned char) c < 0x7f;
}

int wchan_parse_buf(const char *buf, size_t len, char *out, size_t size) {
        /* Tolerate a trailing newline, which older kernels did not print either. */
        while (len > 0 && buf[len - 1] == '\n')
                len--;
        if (len == 0 || size == 0)
                return -EINVAL;
        for (size_t i = 0; i < len; i++)
                if (!is_symbol_byte(buf[i]))
                        return -EINVAL;
        if (len == 1 && buf[0] == '0')
                return 0;
        copy_truncated(out, size, buf, len);
        return 1;
}

static ssize_t read_task_file(int proc_fd, pid_t pid, pid_t tid, const char *name, char *buf, size_t size) {
        char path[64];
        ssize_t n;

        snprintf(path, sizeof path, "%d/task/%d/%s", (int) pid, (int) tid, name);
        n = read_file_at(proc_fd, path, buf, size);
        /* A thread that ended lost its directory (ENOENT) or is losing it (ESRCH). */
        return n == -ENOENT ? -ESRCH : n;
}

int wchan_read(int proc_fd, pid_t pid, pid_t tid, char *out, size_t size) {
        char buf[WCHAN_SYMBOL_MAX * 4 + 1];
        ssize_t n = read_task_file(proc_fd, pid, tid, "wchan", buf, sizeof buf);

        if (n < 0)
                return (int) n;
        return wchan_parse_buf(buf, (size_t) n, out, size);
}

/* One stack line "[<ADDR>] TEXT" into frame: TEXT without its "+0xoff/0xlen". 0 or -EINVAL. */
static int parse_frame(const char *s, const char *end, char *frame, size_t size) {
        const char *close, *text, *plus, *sp;

        if (end - s < 4 || s[0] != '[' || s[1] != '<')
                return -EINVAL;
        close = memchr(s, ']', (size_t) (end - s));
        if (!close || close[-1] != '>' || close + 1 >= end || close[1] != ' ')
                return -EINVAL;
        text = close + 2;
        if (text >= end)
                return -EINVAL;
        plus = memchr(text, '+', (size_t) (end - text));
        if (!plus) {
                copy_truncated(frame, size, text, (size_t) (end - text));
                return 0;
        }
        /* "sym+0x1/0x2 [mod]": keep "sym" and the " [mod]" after the offset, if any. */
        sp = memchr(plus, ' ', (size_t) (end - plus));
        if (!sp) {
                copy_truncated(frame, size, text, (size_t) (plus - text));
                return 0;
        }
        char joined[WCHAN_SYMBOL_MAX * 2];
        int n = snprintf(joined, sizeof joined, "%.*s%.*s", (int) (plus - text), text, (int) (end - sp), sp);
        copy_truncated(frame, size, joined, n < 0 ? 0 : (size_t) n < sizeof joined ? (size_t) n : sizeof joined - 1);
        return 0;
}

int wchan_parse_stack_buf(const char *buf, size_t len, WchanStack *ret) {
        WchanStack st = {};
        const char *p = buf, *end = buf + len;

        while (p < end) {
                const char *nl = memchr(p, '\n', (size_t) (end - p)), *le = nl ? nl : end;

                if (le > p) {
                        char frame[WCHAN_SYMBOL_MAX];

                        if (parse_frame(p, le, frame, sizeof frame) < 0)
                                return -EINVAL;
                        if (st.n_frames < WCHAN_STACK_FRAMES_MAX)
                                memcpy(st.frames[st.n_frames++], frame, sizeof frame);
                        else
                                st.truncated = true;
                }
                p = nl ? nl + 1 : end;
        }
        *ret = st;
        return 0;
}

int wchan_read_stack(int proc_fd, pid_t pid, pid_t tid, WchanStack *ret) {
        char buf[8192], dir[48];
        ssize_t n = read_task_file(proc_fd, pid, tid, "stack", buf, sizeof buf);

        if (n == -ESRCH) {
                /* ENOENT for the file of a thread that is still there: no CONFIG_STACKTRACE. */
                snprintf(dir, sizeof dir, "%d/task/%d", (int) pid, (int) tid);
                if (faccessat(proc_fd, dir, F_OK, 0) == 0)
                        return -ENOENT;
        }
        if (n < 0)
                return (int) n;
        return wchan_parse_stack_buf(buf, (size_t) n, ret);
}

const char *wchan_stack_error_reason(int r) {
        switch (r) {
        case -EACCES:
                return "needs CAP_SYS_ADMIN";
        case -EPERM:
                return "ptrace access refused";
        case -ENOENT:
                return "kernel without CONFIG_STACKTRACE";
        case -ESRCH:
                return "thread gone";
        default: {
                const char *s = strerrorname_np(r < 0 ? -r : r);
                return s ? s : "unknown error";
        }
        }
}
