/* SPDX-License-Identifier: MIT */
/* The killers' marks on recorded inputs: each line is written exactly as the killer's format string
 * (quoted next to it, with the file it was read in; docs/killers.md) produces it, then hostile comm
 * and cgroup names, cut lines and other programs' lines that must not match. Every parser gets a
 * heap copy of exactly the input's bytes, so ASan sees a read past them. The xattr reader runs on
 * a scratch directory under /dev/shm (tmpfs keeps user.* xattrs; trusted.* needs CAP_SYS_ADMIN). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "base/macro.h"
#include "kills/killmarks.h"
#include "kills/killtrust.h"
#include "tests/unit/test-util.h"

typedef int (*Parser)(const char *buf, size_t len, KillMark *ret);

/* Runs parser on an exact-size heap copy of s. */
static int run(Parser parser, const char *s, KillMark *ret) {
        size_t n = strlen(s);
        char *copy = malloc(n ? n : 1);
        int r;

        assert_non_null(copy);
        memcpy(copy, s, n);
        r = parser(copy, n, ret);
        free(copy);
        return r;
}

static int feed(const char *s, KillMark *state) {
        return run(killmarks_feed_nohang, s, state);
}

/* earlyoom 1.7 (Debian 12), kill.c kill_process(), to stderr (the journal under its unit):
 *   "sending %s to process %d uid %d \"%s\": badness %d, VmRSS %lld MiB\n"
 * 1.9.0 (upstream):
 *   "sending %s to process %d uid %d \"%s\": oom_score %d, oom_score_adj %d, VmRSS %lld MiB,
 *    cmdline \"%s\"\n" (1.8 had no oom_score_adj). */
static void test_earlyoom(void **state) {
        KillMark m;

        assert_int_equal(run(killmarks_parse_earlyoom_line,
                             "sending SIGTERM to process 4242 uid 1000 \"stress-ng\": badness 870, VmRSS 3012 MiB\n",
                             &m),
                         0);
        assert_int_equal(m.killer, KILLER_EARLYOOM);
        assert_int_equal(m.basis, KILLMARK_BASIS_LOG_LINE);
        assert_int_equal(m.signal, SIGTERM);
        assert_int_equal(m.pid, 4242);
        assert_int_equal(m.uid, 1000);
        assert_string_equal(m.name, "stress-ng");

        assert_int_equal(run(killmarks_parse_earlyoom_line,
                             "sending SIGKILL to process 77 uid 0 \"tail\": oom_score 900, oom_score_adj 0, VmRSS 812 "
                             "MiB, cmdline \"tail /dev/zero\"",
                             &m),
                         0);
        assert_int_equal(m.signal, SIGKILL);
        assert_int_equal(m.pid, 77);
        assert_int_equal(m.uid, 0);
        assert_string_equal(m.name, "tail");

        /* 1.8: no oom_score_adj; a uid earlyoom could not read is -9999 (PROCINFO_FIELD_NOT_SET). */
        assert_int_equal(run(killmarks_parse_earlyoom_line,
                             "sending SIGTERM to process 9 uid -9999 \"a\": oom_score 1, VmRSS 2 MiB, cmdline \"\"",
                             &m),
                         0);
        assert_int_equal(m.uid, -1);
        assert_string_equal(m.name, "a");

        /* "escalating to SIGKILL after %.1f seconds\n" (1.7), "%.3f" (1.8 and later). */
        assert_int_equal(run(killmarks_parse_earlyoom_line, "escalating to SIGKILL after 0.4 seconds\n", &m), 0);
        assert_int_equal(m.signal, SIGKILL);
        assert_int_equal(m.pid, 0);
        assert_int_equal(run(killmarks_parse_earlyoom_line, "escalating to SIGKILL after 1.300 seconds", &m), 0);
}

static void test_earlyoom_hostile(void **state) {
        KillMark m;

        /* A comm (15 bytes at most) with the closing quote and colon in it. */
        assert_int_equal(run(killmarks_parse_earlyoom_line,
                             "sending SIGTERM to process 5 uid 1 \"a\": badness 1\": badness 3, VmRSS 4 MiB", &m),
                         0);
        assert_string_equal(m.name, "a\": badness 1");
        assert_int_equal(run(killmarks_parse_earlyoom_line,
                             "sending SIGKILL to process 5 uid 1 \"x) Z \"q\": oom_score 2, VmRSS 4 MiB, cmdline \"\": "
                             "oom_score 9, VmRSS 1 MiB\"",
                             &m),
                         0);
        assert_string_equal(m.name, "x) Z \"q");
        assert_int_equal(run(killmarks_parse_earlyoom_line,
                             "sending SIGTERM to process 5 uid 1 \"\": badness 1, VmRSS 0 MiB", &m),
                         0);
        assert_string_equal(m.name, "");

        /* The startup self-test, and other earlyoom lines, are no kill. */
        assert_int_equal(run(killmarks_parse_earlyoom_line,
                             "sending 0 (no-op signal) to process 1 uid 0 \"systemd\": badness 0, VmRSS 9 MiB", &m),
                         -ENOMSG);
        assert_int_equal(run(killmarks_parse_earlyoom_line, "process exited after 0.3 seconds", &m), -ENOMSG);
        assert_int_equal(run(killmarks_parse_earlyoom_line, "kill failed: Operation not permitted", &m), -ENOMSG);
        assert_int_equal(run(killmarks_parse_earlyoom_line, "dryrun, not actually sending any signal", &m), -ENOMSG);
        assert_int_equal(run(killmarks_parse_earlyoom_line, "", &m), -ENOMSG);
        /* Cut lines. */
        assert_int_equal(
                run(killmarks_parse_earlyoom_line, "sending SIGTERM to process 4242 uid 1000 \"stress-ng\": badn", &m),
                -EINVAL);
        assert_int_equal(run(killmarks_parse_earlyoom_line, "sending SIGTERM to process ", &m), -EINVAL);
        assert_int_equal(run(killmarks_parse_earlyoom_line,
                             "sending SIGTERM to process 0 uid 1 \"a\": badness 1, VmRSS 0 MiB", &m),
                         -EINVAL);
        assert_int_equal(run(killmarks_parse_earlyoom_line, "sending SIGTERM", &m), -ENOMSG);
        assert_int_equal(run(killmarks_parse_earlyoom_line, "escalating to SIGKILL after ", &m), -EINVAL);
        /* A newline in the comm splits the line in two journal entries: neither half is a mark. */
        assert_int_equal(run(killmarks_parse_earlyoom_line, "sending SIGTERM to process 5 uid 1 \"a", &m), -EINVAL);
        assert_int_equal(run(killmarks_parse_earlyoom_line, "b\": badness 1, VmRSS 0 MiB", &m), -ENOMSG);
}

/* nohang 0.2.0 (Debian 12, /usr/sbin/nohang; upstream src/nohang alike), printed to stdout, one
 * journal entry per line, SyslogIdentifier=nohang:
 *   find_victim():  'Process with highest badness (found in {}ms):\n  PID: {}, Name: {}, badness: {}'
 *   find_victim_info(): 'Victim status (found in {}ms):\n  PID:       {}, name: {}, state: {}, EUID: {},
 *                   SID: {} ({}), lifetime: {}\n  badness: ...\n  cgroup_v1: {}\n  cgroup_v2: {}...'
 *   implement_corrective_action(): 'Implementing a corrective action:\n  Sending {} to the victim' */
static void test_nohang(void **state) {
        KillMark m = { .uid = -1 };

        assert_int_equal(feed("Process with highest badness (found in 9ms):", &m), 0);
        assert_int_equal(feed("  PID: 3141, Name: tail, badness: 912", &m), NOHANG_SEEN_VICTIM);
        assert_int_equal(m.pid, 3141);
        assert_string_equal(m.name, "tail");
        assert_int_equal(m.uid, -1);
        assert_int_equal(feed("Victim status (found in 1ms):", &m), 0);
        assert_int_equal(feed("  PID:       3141, name: tail, state: R (running), EUID: 1000, SID: 3000 (bash), "
                              "lifetime: 12.3s",
                              &m),
                         NOHANG_SEEN_VICTIM);
        assert_int_equal(m.uid, 1000);
        assert_int_equal(feed("  cgroup_v1: ", &m), 0);
        assert_int_equal(feed("  cgroup_v2: /user.slice/user-1000.slice/session-3.scope", &m), NOHANG_SEEN_CGROUP);
        assert_int_equal(feed("Implementing a corrective action:", &m), 0);
        assert_int_equal(feed("  Sending SIGTERM to the victim", &m), NOHANG_SEEN_SIGNAL);
        assert_int_equal(m.killer, KILLER_NOHANG);
        assert_int_equal(m.signal, SIGTERM);
        assert_int_equal(m.pid, 3141);
        assert_string_equal(m.cgroup, "/user.slice/user-1000.slice/session-3.scope");

        /* The same block as one message (nohang's separate log file keeps it whole). */
        m = (KillMark) { .uid = -1 };
        assert_int_equal(
                feed("Victim status (found in 1ms):\n  PID:       8, name: a, state: S (sleeping), EUID: 0, SID: "
                     "1 (systemd), lifetime: 1s\n  cgroup_v2: /system.slice/x.service\n",
                     &m),
                NOHANG_SEEN_VICTIM | NOHANG_SEEN_CGROUP);
        assert_int_equal(feed("Implementing a corrective action:\n  Sending SIGKILL to the victim\n", &m),
                         NOHANG_SEEN_SIGNAL);
        assert_int_equal(m.pid, 8);
        assert_int_equal(m.signal, SIGKILL);

        /* A cached victim: 'New victim is cached victim {} ({})'. A new victim resets the state. */
        assert_int_equal(feed("New victim is cached victim 99 (x (y))", &m), NOHANG_SEEN_VICTIM);
        assert_int_equal(m.pid, 99);
        assert_string_equal(m.name, "x (y)");
        assert_int_equal(m.signal, 0);
        assert_string_equal(m.cgroup, "");
}

static void test_nohang_hostile(void **state) {
        KillMark m = { .uid = -1 };

        /* Comms holding the separators. */
        assert_int_equal(feed("  PID: 5, Name: a, badness: 1, badness: 7", &m), NOHANG_SEEN_VICTIM);
        assert_string_equal(m.name, "a, badness: 1");
        assert_int_equal(feed("  PID:       6, name: b, state: X, state: S (sleeping), EUID: 2, SID: 1 (c, state: D, "
                              "EUID: 9, SID: ), lifetime: 1s",
                              &m),
                         NOHANG_SEEN_VICTIM);
        assert_string_equal(m.name, "b, state: X");
        assert_int_equal(m.uid, 2);
        /* A cgroup line with no victim before it says nothing. */
        m = (KillMark) { .uid = -1 };
        assert_int_equal(feed("  cgroup_v2: /x", &m), 0);
        /* Other lines and cut lines. */
        assert_int_equal(feed("  [ OK ] Sending SIGTERM to tail: 1", &m), 0);
        assert_int_equal(feed("  Sending SIGTERM to the victim now", &m), 0);
        assert_int_equal(feed("  Sending SIGHUP to the victim", &m), 0);
        assert_int_equal(feed("  PID: 5, Name: a, badn", &m), 0);
        assert_int_equal(feed("  PID: x, Name: a, badness: 1", &m), 0);
        assert_int_equal(feed("  PID:", &m), 0);
        assert_int_equal(feed("New victim is cached victim 99 (x", &m), 0);
        assert_int_equal(feed("victim (PID: 5, Name: a) badness (1) < min_badness (10); nothing to do", &m), 0);
        assert_int_equal(feed("", &m), 0);
        assert_int_equal(feed("\n\n\r\n", &m), 0);
        assert_int_equal(m.pid, 0);
        assert_int_equal(m.signal, 0);
}

/* systemd-oomd 252 (Debian 12), src/oom/oomd-manager.c, log_notice() without MESSAGE_ID:
 *   "Killed %s due to memory pressure for %s being %lu.%02lu%% > %lu.%02lu%% for > %s with reclaim
 *    activity"
 *   "Killed %s due to memory used (%"PRIu64") / total (%"PRIu64") and swap used (%"PRIu64") / total
 *    (%"PRIu64") being more than %i.%02i%%"
 * upstream now logs "Marked %s for killing due to ..." with the same rest. */
static void test_systemd_oomd(void **state) {
        KillMark m;

        assert_int_equal(
                run(killmarks_parse_systemd_oomd_line,
                    "Killed /user.slice/user-1000.slice/user@1000.service/app.slice/app-x.scope due to memory "
                    "pressure for /user.slice/user-1000.slice/user@1000.service being 62.35% > 50.00% for > 20s "
                    "with reclaim activity",
                    &m),
                0);
        assert_int_equal(m.killer, KILLER_SYSTEMD_OOMD);
        assert_int_equal(m.signal, SIGKILL);
        assert_int_equal(m.pid, 0);
        assert_string_equal(m.cgroup, "/user.slice/user-1000.slice/user@1000.service/app.slice/app-x.scope");

        assert_int_equal(
                run(killmarks_parse_systemd_oomd_line,
                    "Killed /system.slice/stress.service due to memory used (8123456789) / total (8300000000) and "
                    "swap used (1900000000) / total (2000000000) being more than 90.00%",
                    &m),
                0);
        assert_string_equal(m.cgroup, "/system.slice/stress.service");

        assert_int_equal(
                run(killmarks_parse_systemd_oomd_line,
                    "Marked /system.slice/a.service for killing due to memory pressure for /system.slice being "
                    "80.00% > 60.00% for > 30s with reclaim activity",
                    &m),
                0);
        assert_string_equal(m.cgroup, "/system.slice/a.service");

        /* The root slice as the monitored cgroup. */
        assert_int_equal(run(killmarks_parse_systemd_oomd_line,
                             "Killed /a.slice due to memory pressure for / being 1.00% > 0.50% for > 1s with reclaim "
                             "activity\n",
                             &m),
                         0);
        assert_string_equal(m.cgroup, "/a.slice");
}

/* The kill lines as systemd-oomd wrote them in the VM's guests (docs/killers.md: Seen in the VM):
 * 252 and 257 "Killed ...", 262 "Marked ... for killing ...", and the candidate dump beside them,
 * one journal entry a line, which is not a mark. */
static void test_systemd_oomd_seen(void **state) {
        static const char *const dump[] = {
                "Considered 1 cgroups for killing, top candidates were:",
                "\tPath: /vmoomd.slice/vmoomd-grow.service",
                "\t\tMemory Pressure Limit: 0.00%",
                "\t\tPressure: Avg10: 46.17, Avg60: 10.48, Avg300: 2.28, Total: 7s",
                "\t\tPgscan: 2255037",
                "\t\tPressure: Avg10: 40.45 Avg60: 8.38 Avg300: 1.79 Total: 6s",
                "No swap; memory pressure usage will be degraded",
        };
        KillMark m;

        /* 252.39 (Debian 12). */
        assert_int_equal(run(killmarks_parse_systemd_oomd_line,
                             "Killed /vmoomd.slice/vmoomd-thrash.service due to memory pressure for /vmoomd.slice "
                             "being 11.26% > 10.00% for > 5s with reclaim activity",
                             &m),
                         0);
        assert_string_equal(m.cgroup, "/vmoomd.slice/vmoomd-thrash.service");
        assert_int_equal(run(killmarks_parse_systemd_oomd_line,
                             "Killed /vmoomd.slice/vmoomd-grow.service due to memory pressure for /vmoomd.slice "
                             "being 39.24% > 10.00% for > 5s with reclaim activity",
                             &m),
                         0);
        assert_string_equal(m.cgroup, "/vmoomd.slice/vmoomd-grow.service");
        /* 257.13 (Debian 13). */
        assert_int_equal(run(killmarks_parse_systemd_oomd_line,
                             "Killed /vmoomd.slice/vmoomd-thrash.service due to memory pressure for /vmoomd.slice "
                             "being 10.96% > 10.00% for > 5s with reclaim activity",
                             &m),
                         0);
        assert_int_equal(m.killer, KILLER_SYSTEMD_OOMD);
        assert_int_equal(m.signal, SIGKILL);
        assert_string_equal(m.cgroup, "/vmoomd.slice/vmoomd-thrash.service");
        /* 262.1 (sid). */
        assert_int_equal(run(killmarks_parse_systemd_oomd_line,
                             "Marked /vmoomd.slice/vmoomd-grow.service for killing due to memory pressure for "
                             "/vmoomd.slice being 49.60% > 10.00% for > 5s with reclaim activity",
                             &m),
                         0);
        assert_int_equal(m.killer, KILLER_SYSTEMD_OOMD);
        assert_int_equal(m.signal, SIGKILL);
        assert_string_equal(m.cgroup, "/vmoomd.slice/vmoomd-grow.service");
        for (size_t i = 0; i < ELEMENTSOF(dump); i++)
                assert_int_equal(run(killmarks_parse_systemd_oomd_line, dump[i], &m), -ENOMSG);
}

static void test_systemd_oomd_hostile(void **state) {
        KillMark m;

        /* A delegated cgroup name holding the marker and " being ". */
        assert_int_equal(
                run(killmarks_parse_systemd_oomd_line,
                    "Killed /u.slice/x due to memory pressure for /u.slice being 9% due to memory pressure for "
                    "/u.slice being 70.00% > 60.00% for > 30s with reclaim activity",
                    &m),
                0);
        assert_string_equal(m.cgroup, "/u.slice/x due to memory pressure for /u.slice being 9%");
        assert_int_equal(
                run(killmarks_parse_systemd_oomd_line,
                    "Killed /s/a due to memory used (1) / total (2) due to memory used (3) / total (4) and swap "
                    "used (5) / total (6) being more than 1.00%",
                    &m),
                0);
        assert_string_equal(m.cgroup, "/s/a due to memory used (1) / total (2)");

        /* Other systemd-oomd lines, other programs' "Killed" lines, cut lines. */
        assert_int_equal(run(killmarks_parse_systemd_oomd_line, "Killed process 42 (tail)", &m), -ENOMSG);
        assert_int_equal(run(killmarks_parse_systemd_oomd_line,
                             "Failed to kill any cgroups under /x based on pressure: No such file", &m),
                         -ENOMSG);
        assert_int_equal(run(killmarks_parse_systemd_oomd_line,
                             "Killed /a due to memory pressure for /b being 1.00% > 0.50%", &m),
                         -EINVAL);
        assert_int_equal(
                run(killmarks_parse_systemd_oomd_line, "Killed /a due to memory pressure for /a being 1.0", &m),
                -EINVAL);
        assert_int_equal(run(killmarks_parse_systemd_oomd_line, "Killed /a due to memory used (", &m), -EINVAL);
        /* Y as systemd-oomd writes it, never trimmed: empty, or without X's leading slash, it covers
         * no X; with a trailing slash it covers what it prefixes. */
        assert_int_equal(run(killmarks_parse_systemd_oomd_line,
                             "Killed /a due to memory pressure for  being 1.00% > 0.50% for > 1s", &m),
                         -EINVAL);
        assert_int_equal(run(killmarks_parse_systemd_oomd_line,
                             "Killed /a/b due to memory pressure for a being 1.00% > 0.50% for > 1s", &m),
                         -EINVAL);
        assert_int_equal(run(killmarks_parse_systemd_oomd_line,
                             "Killed /a/bc due to memory pressure for /a/b being 1.00% > 0.50% for > 1s", &m),
                         -EINVAL);
        assert_int_equal(run(killmarks_parse_systemd_oomd_line,
                             "Killed /a/bc due to memory pressure for /a/ being 1.00% > 0.50% for > 1s", &m),
                         0);
        assert_string_equal(m.cgroup, "/a/bc");
        assert_int_equal(run(killmarks_parse_systemd_oomd_line, "Killed ", &m), -ENOMSG);
        assert_int_equal(run(killmarks_parse_systemd_oomd_line, "", &m), -ENOMSG);
}

/* Meta oomd 0.5.0 (Debian 12) and upstream, src/oomd/plugins/BaseKillPlugin.cpp
 * tryToLogAndKillCgroup(), written to /dev/kmsg by Log::kmsgLog() with the prefix "oomd kill" + ": ":
 *   mem_pressure.sec_10 << " " << sec_60 << " " << sec_300 << " " << relativePath() << " "
 *   << current_usage << " " << "ruleset:[" << R << "] " << "detectorgroup:[" << D << "] "
 *   << "killer:" << (dry_ ? "(dry)" : "") << getName() << " v2"       (setprecision(2), fixed) */
static void test_oomd_kmsg(void **state) {
        KillMark m;

        assert_int_equal(
                run(killmarks_parse_oomd_kmsg,
                    "oomd kill: 71.20 40.05 12.00 system.slice/stress.service 2147483648 ruleset:[protection "
                    "against heavy workload thrashing] detectorgroup:[sustained high workload memory pressure] "
                    "killer:kill_by_memory_size_or_growth v2",
                    &m),
                0);
        assert_int_equal(m.killer, KILLER_OOMD);
        assert_int_equal(m.basis, KILLMARK_BASIS_KMSG);
        assert_int_equal(m.signal, SIGKILL);
        assert_false(m.dry_run);
        assert_string_equal(m.cgroup, "system.slice/stress.service");

        assert_int_equal(run(killmarks_parse_oomd_kmsg,
                             "oomd kill: 0.00 0.00 0.00 workload.slice/a 0 ruleset:[r] detectorgroup:[d] "
                             "killer:(dry)kill_by_pressure v2\n",
                             &m),
                         0);
        assert_true(m.dry_run);
        assert_string_equal(m.cgroup, "workload.slice/a");
}

static void test_oomd_kmsg_hostile(void **state) {
        KillMark m;

        /* A cgroup name with spaces, digits and the ruleset text; the root cgroup (empty path). */
        assert_int_equal(
                run(killmarks_parse_oomd_kmsg,
                    "oomd kill: 1.00 2.00 3.00 w/a 5 ruleset:[x] b 77 ruleset:[r] detectorgroup:[d] killer:k v2", &m),
                0);
        assert_string_equal(m.cgroup, "w/a 5 ruleset:[x] b");
        assert_int_equal(run(killmarks_parse_oomd_kmsg,
                             "oomd kill: 1.00 2.00 3.00  77 ruleset:[r] detectorgroup:[d] killer:k v2", &m),
                         0);
        assert_string_equal(m.cgroup, "");

        /* The test line of oomd's LogTest.cpp: no ruleset, so not the format parsed here. */
        assert_int_equal(run(killmarks_parse_oomd_kmsg,
                             "oomd kill: 10.00 60.00 600.00 Evil  1999 detector:swap,12345MB killer:Evaporate ", &m),
                         -EINVAL);
        assert_int_equal(run(killmarks_parse_oomd_kmsg, "oomd kill: 1.00 2.00", &m), -EINVAL);
        assert_int_equal(run(killmarks_parse_oomd_kmsg, "oomd kill: 1.00 2.00 3.00 a ruleset:[r] killer:k v2", &m),
                         -EINVAL);
        assert_int_equal(run(killmarks_parse_oomd_kmsg, "oomd kill: 1.00 2.00 3.00 a 5 ruleset:[r", &m), -EINVAL);
        assert_int_equal(run(killmarks_parse_oomd_kmsg, "oomd kill: ", &m), -EINVAL);
        /* The kernel's own OOM lines and other kmsg writers. */
        assert_int_equal(run(killmarks_parse_oomd_kmsg,
                             "Memory cgroup out of memory: Killed process 4242 (tail) total-vm:1kB", &m),
                         -ENOMSG);
        assert_int_equal(run(killmarks_parse_oomd_kmsg, "oomd: starting", &m), -ENOMSG);
        assert_int_equal(run(killmarks_parse_oomd_kmsg, "", &m), -ENOMSG);
}

/* mm/oom_kill.c oom_kill_process(): memcg_memory_event(oom_group, MEMCG_OOM_GROUP_KILL); shown by
 * mm/memcontrol.c as "oom_group_kill %lu\n". Read on this VM (6.18): */
#define EVENTS "low 0\nhigh 0\nmax 1733\noom 1\noom_kill 1\noom_group_kill 2\nsock_throttled 0\n"

static void test_group_kill(void **state) {
        uint64_t v = 99;

        assert_int_equal(killmarks_parse_memory_events_group_kill(EVENTS, strlen(EVENTS), &v), 0);
        assert_int_equal(v, 2);
        assert_int_equal(killmarks_parse_memory_events_group_kill("oom_group_kill 0", 16, &v), 0);
        assert_int_equal(v, 0);
        /* Kernels before the counter; oom_kill is another key. */
        assert_int_equal(killmarks_parse_memory_events_group_kill("oom 1\noom_kill 1\n", 17, &v), -ENOENT);
        assert_int_equal(killmarks_parse_memory_events_group_kill("", 0, &v), -ENOENT);
        assert_int_equal(killmarks_parse_memory_events_group_kill("oom_group_kill x\n", 17, &v), -EINVAL);
        assert_int_equal(killmarks_parse_memory_events_group_kill("oom_group_kill \n", 16, &v), -EINVAL);
}

/* The xattrs as their killers set them, on a directory of the test's own (read as if the test's uid
 * were root's: the owner rule is test_xattrs_owner's). */
static void test_xattrs(void **state) {
        char dir[] = "/dev/shm/psidiag-killmarks-XXXXXX";
        CgroupKillXattrs x;
        int fd;

        assert_non_null(mkdtemp(dir));
        fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(fd >= 0);

        /* Nothing set. */
        assert_int_equal(killmarks_read_cgroup_xattrs(fd, geteuid(), &x), 0);
        assert_int_equal(killmarks_xattrs_killer(&x), KILLER_UNKNOWN);

        /* systemd-oomd's oomd_cgroup_kill(): user.oomd_ooms += 1 before, user.oomd_kill += killed after. */
        if (fsetxattr(fd, "user.oomd_ooms", "1", 1, 0) < 0) {
                /* Not expected on tmpfs; say so rather than pass silently. */
                print_message("user.* xattrs unsupported on /dev/shm: %s\n", strerror(errno));
                fail();
        }
        assert_int_equal(fsetxattr(fd, "user.oomd_kill", "3", 1, 0), 0);
        assert_int_equal(killmarks_read_cgroup_xattrs(fd, geteuid(), &x), 2);
        assert_true(x.present[KILL_XATTR_USER_OOMD_OOMS]);
        assert_true(x.has_count[KILL_XATTR_USER_OOMD_OOMS]);
        assert_int_equal(x.count[KILL_XATTR_USER_OOMD_OOMS], 1);
        assert_int_equal(x.count[KILL_XATTR_USER_OOMD_KILL], 3);
        assert_string_equal(x.value[KILL_XATTR_USER_OOMD_KILL], "3");
        assert_false(x.present[KILL_XATTR_USER_OOMD_KILL_UUID]);
        assert_int_equal(killmarks_xattrs_killer(&x), KILLER_SYSTEMD_OOMD);

        /* Meta oomd after 0.5.0 adds a user.oomd_kill_uuid (and the trusted.* ones, root only). */
        assert_int_equal(fsetxattr(fd, "user.oomd_kill_uuid", "0b3c2a1d-uuid", 13, 0), 0);
        assert_int_equal(killmarks_read_cgroup_xattrs(fd, geteuid(), &x), 3);
        assert_string_equal(x.value[KILL_XATTR_USER_OOMD_KILL_UUID], "0b3c2a1d-uuid");
        assert_false(x.has_count[KILL_XATTR_USER_OOMD_KILL_UUID]);
        assert_int_equal(killmarks_xattrs_killer(&x), KILLER_OOMD);
        if (fsetxattr(fd, "trusted.oomd_kill", "2", 1, 0) == 0) {
                assert_int_equal(killmarks_read_cgroup_xattrs(fd, geteuid(), &x), 4);
                assert_int_equal(x.count[KILL_XATTR_TRUSTED_OOMD_KILL], 2);
        } else
                assert_true(errno == EPERM || errno == ENOTSUP); /* not root */

        /* A value that is no counter, one longer than fits, one with a NUL. */
        assert_int_equal(fsetxattr(fd, "user.oomd_kill", "x1", 2, 0), 0);
        char big[200];
        memset(big, '7', sizeof big);
        assert_int_equal(fsetxattr(fd, "user.oomd_ooms", big, sizeof big, 0), 0);
        assert_int_equal(fsetxattr(fd, "user.oomd_kill_uuid", "a\0b", 3, 0), 0);
        assert_true(killmarks_read_cgroup_xattrs(fd, geteuid(), &x) >= 3);
        assert_true(x.present[KILL_XATTR_USER_OOMD_KILL]);
        assert_false(x.has_count[KILL_XATTR_USER_OOMD_KILL]);
        assert_true(x.present[KILL_XATTR_USER_OOMD_OOMS]);
        assert_false(x.has_count[KILL_XATTR_USER_OOMD_OOMS]);
        assert_string_equal(x.value[KILL_XATTR_USER_OOMD_OOMS], "");
        assert_string_equal(x.value[KILL_XATTR_USER_OOMD_KILL_UUID], "");

        close(fd);
        assert_int_equal(rmdir(dir), 0);
        /* A closed fd is an error, not "no marks". */
        assert_int_equal(killmarks_read_cgroup_xattrs(fd, geteuid(), &x), -EBADF);
}

/* user.* xattrs are anyone's who may write the cgroup's directory: on a cgroup delegated to a user
 * (systemd chowns it), that user's. They count only on a directory of the trusted owner's (root's
 * in the agent) that no one else may write; trusted.* (CAP_SYS_ADMIN to set) counts on any. */
static void test_xattrs_owner(void **state) {
        char dir[] = "/dev/shm/psidiag-killowner-XXXXXX";
        uid_t me = geteuid();
        CgroupKillXattrs x;
        int fd;

        assert_non_null(mkdtemp(dir));
        fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(fsetxattr(fd, "user.oomd_ooms", "1", 1, 0), 0);
        assert_int_equal(fsetxattr(fd, "user.oomd_kill", "1", 1, 0), 0);

        /* The owner's: systemd-oomd's marks. */
        assert_int_equal(killmarks_read_cgroup_xattrs(fd, me, &x), 2);
        assert_int_equal(killmarks_xattrs_killer(&x), KILLER_SYSTEMD_OOMD);
        assert_false(x.user_ignored);

        /* Another uid's directory (a delegated cgroup's owner set them): nothing, and said so. */
        assert_int_equal(killmarks_read_cgroup_xattrs(fd, me + 1, &x), 0);
        assert_false(x.present[KILL_XATTR_USER_OOMD_OOMS]);
        assert_false(x.present[KILL_XATTR_USER_OOMD_KILL]);
        assert_true(x.user_ignored);
        assert_int_equal(killmarks_xattrs_killer(&x), KILLER_UNKNOWN);

        /* The owner's, but writable by its group or by anyone. */
        assert_int_equal(fchmod(fd, 0770), 0);
        assert_int_equal(killmarks_read_cgroup_xattrs(fd, me, &x), 0);
        assert_true(x.user_ignored);
        assert_int_equal(fchmod(fd, 0757), 0);
        assert_int_equal(killmarks_read_cgroup_xattrs(fd, me, &x), 0);
        assert_int_equal(fchmod(fd, 0755), 0);

        if (me == 0) {
                /* As the agent reads them (root the trusted owner): a user's cgroup, then root's. */
                assert_int_equal(fchown(fd, 1000, 1000), 0);
                assert_int_equal(killmarks_read_cgroup_xattrs(fd, 0, &x), 0);
                assert_true(x.user_ignored);
                assert_int_equal(killmarks_xattrs_killer(&x), KILLER_UNKNOWN);
                /* trusted.* only CAP_SYS_ADMIN sets: Meta oomd's, whoever owns the cgroup. */
                assert_int_equal(fsetxattr(fd, "trusted.oomd_kill", "1", 1, 0), 0);
                assert_int_equal(killmarks_read_cgroup_xattrs(fd, 0, &x), 1);
                assert_true(x.present[KILL_XATTR_TRUSTED_OOMD_KILL]);
                assert_int_equal(killmarks_xattrs_killer(&x), KILLER_OOMD);
                assert_int_equal(fremovexattr(fd, "trusted.oomd_kill"), 0);
                assert_int_equal(fchown(fd, 0, 0), 0);
                assert_int_equal(killmarks_read_cgroup_xattrs(fd, 0, &x), 2);
                assert_int_equal(killmarks_xattrs_killer(&x), KILLER_SYSTEMD_OOMD);
        } else
                print_message("not root: the chown cases of root's and a user's cgroup are not run\n");

        close(fd);
        assert_int_equal(rmdir(dir), 0);
}

static void test_names(void **state) {
        assert_string_equal(killer_kind_to_string(KILLER_EARLYOOM), "earlyoom");
        assert_string_equal(killer_kind_to_string(KILLER_NOHANG), "nohang");
        assert_string_equal(killer_kind_to_string(KILLER_SYSTEMD_OOMD), "systemd-oomd");
        assert_string_equal(killer_kind_to_string(KILLER_OOMD), "oomd");
        assert_string_equal(killer_kind_to_string(KILLER_KERNEL_GROUP), "kernel-oom-group");
        assert_string_equal(killer_kind_to_string(_KILLER_MAX), "unknown");
        assert_string_equal(killmark_basis_to_string(KILLMARK_BASIS_LOG_LINE), "log_line");
        assert_string_equal(killmark_basis_to_string(KILLMARK_BASIS_KMSG), "kmsg");
        assert_string_equal(killmark_basis_to_string(KILLMARK_BASIS_XATTR), "xattr");
        assert_string_equal(killmark_basis_to_string(KILLMARK_BASIS_MEMORY_EVENTS), "memory.events");
        assert_string_equal(killmark_basis_to_string(KILLMARK_BASIS_RUNNING_PROCESS), "running_process");
        assert_string_equal(killmark_basis_to_string((KillMarkBasis) 99), "unknown");
        assert_string_equal(kill_xattr_name(KILL_XATTR_TRUSTED_OOMD_KILL_UUID), "trusted.oomd_kill_uuid");
        assert_null(kill_xattr_name(_KILL_XATTR_MAX));

        /* The executables of Debian 12's packages (dpkg-deb -c). */
        assert_int_equal(killmarks_known_executable("earlyoom"), KILLER_EARLYOOM);
        assert_int_equal(killmarks_known_executable("nohang"), KILLER_NOHANG);
        assert_int_equal(killmarks_known_executable("systemd-oomd"), KILLER_SYSTEMD_OOMD);
        assert_int_equal(killmarks_known_executable("oomd"), KILLER_OOMD);
        assert_int_equal(killmarks_known_executable("python3.11"), KILLER_UNKNOWN);
        assert_int_equal(killmarks_known_executable("earlyoom "), KILLER_UNKNOWN);
        assert_int_equal(killmarks_known_executable(""), KILLER_UNKNOWN);
        assert_int_equal(killmarks_known_executable(NULL), KILLER_UNKNOWN);
}

/* The killers' table: a row per kind, names unique and those of the incident schema's killer.name
 * enum, executables found back, a log parser exactly where a log identifier is. */
static void test_killer_table(void **state) {
        char schema[64 * 1024];
        FILE *f = fopen(SCHEMA_DIR "/incident.schema.json", "re");
        size_t n;

        assert_non_null(f);
        n = fread(schema, 1, sizeof schema - 1, f);
        fclose(f);
        schema[n] = '\0';
        const char *names = strstr(schema, "\"name\": { \"enum\": [\"earlyoom\"");
        assert_non_null(names);
        const char *names_end = strchr(names, ']');
        assert_non_null(names_end);

        for (KillerKind k = 0; k < _KILLER_MAX; k++) {
                const KillerInfo *i = killmarks_killer(k);
                char quoted[80];

                assert_int_equal(i->kind, k);
                assert_string_equal(killer_kind_to_string(k), i->name);
                for (KillerKind o = 0; o < k; o++)
                        assert_string_not_equal(killmarks_killer(o)->name, i->name);
                snprintf(quoted, sizeof quoted, "\"%s\"", i->name);
                const char *at = strstr(names, quoted);
                if (!at || at > names_end)
                        fail_msg("killer %s is not in schemas/incident.schema.json's killer.name enum", i->name);
                for (size_t e = 0; e < ELEMENTSOF(i->executables) && i->executables[e]; e++)
                        assert_int_equal(killmarks_known_executable(i->executables[e]), k);
                for (size_t u = 0; u < ELEMENTSOF(i->units) && i->units[u]; u++)
                        assert_int_equal(killtrust_unit_killer(i->units[u], strlen(i->units[u])), k);
                assert_true(!i->log_ident == !i->log_parser);
        }
        assert_ptr_equal(killmarks_killer(_KILLER_MAX), killmarks_killer(KILLER_UNKNOWN));
        assert_ptr_equal(killmarks_killer((KillerKind) -1), killmarks_killer(KILLER_UNKNOWN));
        assert_int_equal(killmarks_known_executable("python3"), KILLER_UNKNOWN);
        assert_int_equal(killmarks_known_executable(NULL), KILLER_UNKNOWN);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_killer_table),      cmocka_unit_test(test_earlyoom),
                cmocka_unit_test(test_earlyoom_hostile),  cmocka_unit_test(test_nohang),
                cmocka_unit_test(test_nohang_hostile),    cmocka_unit_test(test_systemd_oomd),
                cmocka_unit_test(test_systemd_oomd_seen), cmocka_unit_test(test_systemd_oomd_hostile),
                cmocka_unit_test(test_oomd_kmsg),         cmocka_unit_test(test_oomd_kmsg_hostile),
                cmocka_unit_test(test_group_kill),        cmocka_unit_test(test_xattrs),
                cmocka_unit_test(test_xattrs_owner),      cmocka_unit_test(test_names),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
