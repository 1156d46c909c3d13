/* SPDX-License-Identifier: MIT */
/* Where a sleeping thread waits in the kernel: /proc/<pid>/task/<tid>/wchan (one symbol, or "0")
 * and /proc/<pid>/task/<tid>/stack (the kernel stack, one frame a line). Pure parsers and readers
 * through a /proc directory fd. Grouping threads by wchan is sampling/blocked.h's; this module only
 * reads. Never logs. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* KSYM_NAME_LEN is 512 since 6.1 (Rust names); kernel C symbols fit in far less. Longer names are
 * truncated. */
#define WCHAN_SYMBOL_MAX 128
#define WCHAN_STACK_FRAMES_MAX 32

/* A /proc/<pid>/task/<tid>/wchan buffer (no newline: proc_pid_wchan() prints the bare symbol):
 * 1 and the symbol in out (truncated to size-1); 0 for "0", which the kernel prints both for a
 * task that is running (no wait channel) and when the reader may not ptrace-read the task
 * (fs/proc/base.c proc_pid_wchan(); kernel-facts.md: permissions), so "0" says nothing about why;
 * -EINVAL for an empty or malformed buffer (a symbol has no spaces nor control bytes). */
int wchan_parse_buf(const char *buf, size_t len, char *out, size_t size);

/* Reads and parses the wchan of thread tid of process pid. 1, 0 as above; -ESRCH when the thread
 * is gone; -errno. */
int wchan_read(int proc_fd, pid_t pid, pid_t tid, char *out, size_t size);

typedef struct WchanStack {
        size_t n_frames;
        char frames[WCHAN_STACK_FRAMES_MAX][WCHAN_SYMBOL_MAX]; /* innermost first: "do_nanosleep" or
                                                                * "fuse_wait [fuse]" */
        bool truncated;                                        /* more frames than WCHAN_STACK_FRAMES_MAX */
} WchanStack;

/* A /proc/<pid>/task/<tid>/stack buffer: lines "[<0>] symbol+0xoff/0xlen [module]" (the address
 * hidden as <0> since 4.19), kept as "symbol" or "symbol [module]"; a frame without a symbol
 * keeps its text. A running task has an empty stack (0 frames). 0, or -EINVAL for a line that is
 * not a frame. */
int wchan_parse_stack_buf(const char *buf, size_t len, WchanStack *ret);

/* Reads and parses the stack of thread tid of process pid. 0; -ESRCH (gone); -EACCES without
 * CAP_SYS_ADMIN in the initial user namespace (proc_pid_stack()) or when the file's 0400 mode
 * refuses a non-root reader; -EPERM when ptrace attach access is refused (lock_trace()); -ENOENT
 * without CONFIG_STACKTRACE; other -errno. */
int wchan_read_stack(int proc_fd, pid_t pid, pid_t tid, WchanStack *ret);

/* Why a stack could not be read, for a human: "needs CAP_SYS_ADMIN", "ptrace access refused",
 * "kernel without CONFIG_STACKTRACE", "thread gone", or strerror's name of r. Static string. */
const char *wchan_stack_error_reason(int r);
