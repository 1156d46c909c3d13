/* SPDX-License-Identifier: MIT */
/* A generated cgroup of many threads for unit tests: DIR/cgroup.threads lists tids first..first+n-1,
 * in processes of per_process threads each (tgid: the first tid of its run), DIR/cgroup.procs lists
 * the tgids, and DIR/proc/<tid>/task/<tid>/stat and DIR/proc/<tgid>/task/<tid>/stat give each
 * thread the state letter state(tid). */
#pragma once

#include <stddef.h>

typedef char (*FakeTreeState)(int tid);

/* template is a mkdtemp template, rewritten in place. 0 or -errno. */
int fake_tree_make(char *template, int first, int n, int per_process, FakeTreeState state);
/* Copies the tree at from (a fixture) into a new directory made from template (a mkdtemp template,
 * rewritten in place), for a test that changes it. 0 or -errno. */
int fake_tree_copy(char *template, const char *from);
/* Makes dir/path ("a/b/c") and whatever of its parents is missing. 0 or -errno. */
int fake_tree_mkdirs(const char *dir, const char *path);
/* Writes s to the file dir/path (replacing it), its directory made first. 0 or -errno. */
int fake_tree_write(const char *dir, const char *path, const char *s);
/* The same with len bytes of buf (NULs in them: a cmdline). 0 or -errno. */
int fake_tree_write_bytes(const char *dir, const char *path, const void *buf, size_t len);
/* Makes the cgroup path ("/a/b") beneath dir as systemd and the container runtimes make cgroups:
 * each directory ours (root's, as the tests run) and 0755, down to the first user@<uid>.service,
 * that user's from there down (chown: needs root). 0 or -errno. */
int fake_tree_cgroup(const char *dir, const char *path);
/* Removes a scratch directory tree (a fake tree or any other). 0, or -1 when something stayed. */
int fake_tree_remove(const char *dir);
