/* SPDX-License-Identifier: MIT */
/* The decisions of kill incidents (kills/kills.h) on fake exit records and recorded killer
 * lines: which exits are kills, the kernel's victims, grouping, the log lines (syslog, journal
 * style, and the killers' raw output: earlyoom 1.7, nohang 0.2.0, systemd-oomd 252), the journal
 * entries of systemd-oomd 252 recorded in the VM (tests/vm), and the choice of the killer from the
 * marks. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "base/macro.h"
#include "kills/kills.h"
#include "tests/unit/test-util.h"

static void test_exit_signal(void **state) {
        TaskStats t = { .has_exit_code = true };

        t.exit_code = SIGKILL;
        assert_int_equal(kill_exit_signal(&t), SIGKILL);
        t.exit_code = SIGTERM;
        assert_int_equal(kill_exit_signal(&t), SIGTERM);
        t.exit_code = SIGKILL | 0x80; /* core dumped bit: still the signal */
        assert_int_equal(kill_exit_signal(&t), SIGKILL);
        t.exit_code = 9 << 8; /* exit(9) is not a kill */
        assert_int_equal(kill_exit_signal(&t), 0);
        t.exit_code = 0;
        assert_int_equal(kill_exit_signal(&t), 0);
        t.exit_code = SIGINT;
        assert_int_equal(kill_exit_signal(&t), 0);
        t.exit_code = SIGSEGV;
        assert_int_equal(kill_exit_signal(&t), 0);
        t = (TaskStats) { .exit_code = SIGKILL }; /* a reply without the field */
        assert_int_equal(kill_exit_signal(&t), 0);
}

static void test_members_and_kernel_victims(void **state) {
        KillMember items[3] = { { .pid = 30 }, { .pid = 10 }, { .pid = 20 } };
        KillMembers m = { .items = items, .n = 3, .cap = 3 };
        KernelVictims k = {};

        kill_members_sort(&m);
        assert_int_equal(m.items[0].pid, 10);
        assert_non_null(kill_members_find(&m, 20));
        assert_null(kill_members_find(&m, 21));

        kernel_victims_add(&k, 20, 1000);
        assert_true(kernel_victims_has(&k, 20, 2000));
        assert_false(kernel_victims_has(&k, 21, 2000));
        assert_false(kernel_victims_has(&k, 20, 1000 + KERNEL_VICTIM_KEEP_US + 1));
        for (int i = 0; i < KERNEL_VICTIMS_MAX; i++)
                kernel_victims_add(&k, 100 + i, 3000);
        assert_false(kernel_victims_has(&k, 20, 3000)); /* pushed out */
}

static KillVictim victim(pid_t pid, uint64_t rss, int sig) {
        return (KillVictim) { .pid = pid, .rss_kib = rss, .has_rss = true, .signal = sig, .uid = 0 };
}

static void test_group(void **state) {
        static KillGroup g;
        KillVictim v;

        /* 20 processes of one cgroup killed together: all counted, the 8 largest listed. */
        for (int i = 0; i < 20; i++) {
                v = victim(100 + i, (uint64_t) (i * 10 % 37), SIGKILL);
                assert_int_equal(kill_group_add(&g, &v), 1);
        }
        v = victim(105, 999, SIGKILL); /* another thread of a counted process */
        assert_int_equal(kill_group_add(&g, &v), 0);
        assert_int_equal(g.total, 20);
        assert_int_equal(g.n_listed, KILL_VICTIMS_LISTED);
        for (size_t i = 1; i < g.n_listed; i++)
                assert_true(g.listed[i - 1].rss_kib >= g.listed[i].rss_kib);
        assert_int_equal(g.listed[0].rss_kib, 36);
        assert_true(g.sigkill);
        assert_false(g.sigterm);
}

static int line(const char *s, KillLogState *st, KillMark *m) {
        return kill_log_parse_line(s, strlen(s), st, m);
}

static void test_log_lines(void **state) {
        KillLogState st;
        KillMark m;

        kill_log_state_init(&st);
        /* earlyoom 1.7 (kill.c: "sending %s to process %d uid %d \"%s\": badness %d, VmRSS %lld MiB") */
        assert_int_equal(line("Jan  2 03:04:05 node earlyoom[812]: sending SIGTERM to process 4242 uid 0 "
                              "\"grower\": badness 1000, VmRSS 40 MiB\n",
                              &st, &m),
                         1);
        assert_int_equal(m.killer, KILLER_EARLYOOM);
        assert_int_equal(m.pid, 4242);
        assert_int_equal(m.signal, SIGTERM);
        assert_string_equal(m.name, "grower");
        /* As the test's relay writes it (a PID-namespace pid). */
        assert_int_equal(line("Nov 24 21:33:38 vm earlyoom[22829]: sending SIGTERM to process 2 uid 0 \"grower\": "
                              "badness 1334, VmRSS 25 MiB\n",
                              &st, &m),
                         1);
        assert_string_equal(m.name, "grower");
        /* Its raw stderr, no header. */
        assert_int_equal(line("sending SIGKILL to process 77 uid 1000 \"a b\": badness 900, VmRSS 3 MiB", &st, &m), 1);
        assert_int_equal(m.pid, 77);
        assert_int_equal(m.signal, SIGKILL);
        /* Its startup report is not a kill. */
        assert_int_equal(line("earlyoom[812]: mem avail: 21000 of 23000 MiB (91.30%), swap free: 0 of 0 MiB", &st, &m),
                         0);

        /* nohang 0.2.0: the victim and the signal on separate lines (entries). */
        assert_int_equal(line("nohang[9]: Process with highest badness (found in 3ms):", &st, &m), 0);
        assert_int_equal(line("nohang[9]:   PID: 5151, Name: grower, badness: 1010", &st, &m), 0);
        assert_int_equal(line("nohang[9]: Implementing a corrective action:", &st, &m), 0);
        assert_int_equal(line("nohang[9]:   Sending SIGTERM to the victim", &st, &m), 1);
        assert_int_equal(m.killer, KILLER_NOHANG);
        assert_int_equal(m.pid, 5151);
        assert_int_equal(m.signal, SIGTERM);
        /* The same raw (its stdout). */
        assert_int_equal(line("  PID: 6161, Name: grower, badness: 1010", &st, &m), 0);
        assert_int_equal(line("  Sending SIGKILL to the victim", &st, &m), 1);
        assert_int_equal(m.pid, 6161);

        /* systemd-oomd 252 */
        assert_int_equal(line("node systemd-oomd[400]: Killed /system.slice/x.service due to memory pressure for "
                              "/system.slice being 63.54% > 50.00% for > 20s with reclaim activity",
                              &st, &m),
                         1);
        assert_int_equal(m.killer, KILLER_SYSTEMD_OOMD);
        assert_string_equal(m.cgroup, "/system.slice/x.service");

        /* Another program's line naming earlyoom is not a mark. */
        assert_int_equal(line("node sshd[1]: earlyoom is great", &st, &m), 0);
}

/* A syslog header is the first ": " of the line: a killer's header quoted inside another program's
 * message (a user name sshd logs, a remote one's) is that program's line, not the killer's. */
static void test_log_line_quoted_header(void **state) {
        KillLogState st;
        KillMark m;

        kill_log_state_init(&st);
        assert_int_equal(line("Dec  2 16:38:11 node sshd[900]: Invalid user earlyoom[1]: sending SIGTERM to process "
                              "4242 uid 0 \"grower\": oom_score 900, VmRSS 40 MiB, cmdline \"x from 10.0.0.9 port 2222",
                              &st, &m),
                         0);
        assert_int_equal(line("Dec  2 16:38:11 node cron[7]: (u) CMD (echo x earlyoom: sending SIGTERM to process 4242 "
                              "uid 0 \"grower\": oom_score 900, VmRSS 40 MiB, cmdline \"y)",
                              &st, &m),
                         0);
        /* An identifier that only starts or ends like a killer's; a pid that is not a number. */
        const char *tail = ": sending SIGTERM to process 4242 uid 0 \"grower\": badness 1000, VmRSS 40 MiB";
        static const char *const headers[] = { "node xearlyoom[1]", "node earlyoomx[1]", "node earlyoom[x]",
                                               "node earlyoom[]", "node earlyoom[1]x" };
        for (size_t i = 0; i < ELEMENTSOF(headers); i++) {
                char buf[256];
                snprintf(buf, sizeof buf, "%s%s", headers[i], tail);
                assert_int_equal(line(buf, &st, &m), 0);
        }
        /* The killer's own headers, RFC 3339 time and none. */
        assert_int_equal(line("2026-12-02T16:38:11.123456+00:00 node earlyoom[812]: sending SIGTERM to process 4242 "
                              "uid 0 \"grower\": badness 1000, VmRSS 40 MiB",
                              &st, &m),
                         1);
        assert_int_equal(
                line("node earlyoom: sending SIGTERM to process 4243 uid 0 \"a: b\": badness 1000, VmRSS 40 MiB", &st,
                     &m),
                1);
        assert_int_equal(m.pid, 4243);
        assert_string_equal(m.name, "a: b");
}

/* Journal entries as the VM's systemd 252 wrote them around a kill by systemd-oomd: only its Killed
 * line is a mark (pid 1's "systemd-oomd killed 1 process(es)" names no cgroup path and is pid 1's). */
/* Who sent each entry of the fixture, as journald recorded it: systemd-oomd's unit (its user
 * systemd-oom), pid 1 (root, init.scope). */
static const KillJournalSender OOMD_SENDER = { "systemd-oomd", "/usr/lib/systemd/systemd-oomd", "systemd-oomd.service",
                                               997 };
static const KillJournalSender PID1_SENDER = { "systemd", "/usr/lib/systemd/systemd", "init.scope", 0 };
static const KillJournalSender EARLYOOM_SENDER = { "earlyoom", "/usr/bin/earlyoom", "earlyoom.service", 61234 };
static const KillJournalSender NOHANG_SENDER = { "nohang", "/usr/bin/python3.11", "nohang.service", 0 };

static void test_journal_entries(void **state) {
        char buf[1024], ident[64];
        KillLogState st;
        KillMark m, found = {};
        int marks = 0;
        FILE *f = fopen(FIXTURE_DIR "/journal/systemd-oomd-252.tsv", "re");

        assert_non_null(f);
        kill_log_state_init(&st);
        while (fgets(buf, sizeof buf, f)) {
                char *tab = strchr(buf, '\t');
                if (buf[0] == '#' || !tab)
                        continue;
                snprintf(ident, sizeof ident, "%.*s", (int) (tab - buf), buf);
                const KillJournalSender *from = strcmp(ident, "systemd-oomd") == 0 ? &OOMD_SENDER : &PID1_SENDER;
                if (kill_journal_parse_entry(from, ident, strlen(ident), tab + 1, strlen(tab + 1), &st, &m) > 0) {
                        found = m;
                        marks++;
                }
        }
        fclose(f);
        assert_int_equal(marks, 1);
        assert_int_equal(found.killer, KILLER_SYSTEMD_OOMD);
        assert_int_equal(found.basis, KILLMARK_BASIS_LOG_LINE);
        assert_int_equal(found.signal, SIGKILL);
        assert_string_equal(found.cgroup, "/vmoomd.slice/vmoomd-thrash.service");

        /* The identifier must be the killer's, whole. */
        const char *killed = "Killed /a.service due to memory pressure for / being 50.00% > 10.00% for > 5s with "
                             "reclaim activity";
        assert_int_equal(kill_journal_parse_entry(&OOMD_SENDER, "systemd-oomdx", 13, killed, strlen(killed), &st, &m),
                         0);
        assert_int_equal(kill_journal_parse_entry(&OOMD_SENDER, "systemd", 7, killed, strlen(killed), &st, &m), 0);
        assert_int_equal(kill_journal_parse_entry(&OOMD_SENDER, "systemd-oomd", 12, killed, strlen(killed), &st, &m),
                         1);
        /* earlyoom and nohang entries, as their lines. */
        const char *e = "sending SIGTERM to process 4242 uid 0 \"grower\": badness 1000, VmRSS 40 MiB\n";
        assert_int_equal(kill_journal_parse_entry(&EARLYOOM_SENDER, "earlyoom", 8, e, strlen(e), &st, &m), 1);
        assert_int_equal(m.killer, KILLER_EARLYOOM);
        assert_int_equal(m.pid, 4242);
        assert_int_equal(kill_journal_parse_entry(&NOHANG_SENDER, "nohang", 6,
                                                  "  PID: 5151, Name: grower, badness: 1010", 40, &st, &m),
                         0);
        assert_int_equal(
                kill_journal_parse_entry(&NOHANG_SENDER, "nohang", 6, "  Sending SIGTERM to the victim", 31, &st, &m),
                1);
        assert_int_equal(m.killer, KILLER_NOHANG);
        assert_int_equal(m.pid, 5151);
}

/* SYSLOG_IDENTIFIER is the client's to choose: `logger -t earlyoom "sending SIGTERM ..."` by any user
 * writes an entry with earlyoom's identifier and message. What counts is who journald says sent it
 * (_SYSTEMD_UNIT, _UID, _EXE, _COMM, which no client can set). */
static void test_journal_forged(void **state) {
        static const struct {
                KillJournalSender from;
                int want;
                const char *what;
        } cases[] = {
                { { "logger", "/usr/bin/logger", "session-3.scope", 1000 }, 0, "logger -t earlyoom in a session" },
                { { "earlyoom", "/home/u/earlyoom", "session-3.scope", 1000 }, 0, "a user's copy named earlyoom" },
                { { "earlyoom", "/usr/bin/earlyoom", "session-3.scope", 1000 }, 0, "the real binary run by a user" },
                { { "earlyoom", "/usr/bin/earlyoom", "user@1000.service", 1000 }, 0, "a user unit earlyoom.service" },
                { { "earlyoom", "/usr/bin/earlyoom", NULL, 1000 }, 0, "no unit" },
                { { "logger", "/usr/bin/logger", "session-1.scope", 0 }, 0, "root's logger -t earlyoom" },
                { { "dockerd", "/usr/bin/dockerd", "docker.service", 0 }, 0, "a container's line, tag earlyoom" },
                { { NULL, NULL, NULL, -1 }, 0, "no sender fields at all" },
                { { "earlyoom", "/usr/bin/earlyoom", "earlyoom.service", 61234 }, 1, "earlyoom.service (DynamicUser)" },
                { { "earlyoom", "/usr/bin/earlyoom", "session-1.scope", 0 }, 1, "root running earlyoom --syslog" },
                { { "earlyoom", NULL, "session-1.scope", 0 }, 1, "root's process named earlyoom" },
        };
        const char *e = "sending SIGTERM to process 4242 uid 0 \"grower\": badness 1000, VmRSS 40 MiB";
        KillLogState st;
        KillMark m;

        kill_log_state_init(&st);
        for (size_t i = 0; i < ELEMENTSOF(cases); i++)
                if (kill_journal_parse_entry(&cases[i].from, "earlyoom", 8, e, strlen(e), &st, &m) != cases[i].want)
                        fail_msg("%s: %s", cases[i].what, cases[i].want ? "not a mark" : "taken for earlyoom's mark");

        /* systemd-oomd's identifier from earlyoom's unit is no systemd-oomd mark. */
        const char *killed = "Killed /a.service due to memory pressure for / being 50.00% > 10.00% for > 5s with "
                             "reclaim activity";
        assert_int_equal(
                kill_journal_parse_entry(&EARLYOOM_SENDER, "systemd-oomd", 12, killed, strlen(killed), &st, &m), 0);
        /* A forged victim line feeds no nohang block: the real signal line then has no pid to name. */
        const KillJournalSender user = { "logger", "/usr/bin/logger", "session-3.scope", 1000 };
        assert_int_equal(
                kill_journal_parse_entry(&user, "nohang", 6, "  PID: 5151, Name: grower, badness: 1010", 40, &st, &m),
                0);
        assert_int_equal(
                kill_journal_parse_entry(&NOHANG_SENDER, "nohang", 6, "  Sending SIGTERM to the victim", 31, &st, &m),
                0);
        /* nohang by hand as root (no unit): its comm, the exe being python's. */
        const KillJournalSender by_hand = { "nohang", "/usr/bin/python3.11", "session-1.scope", 0 };
        assert_true(kill_journal_from_killer(&by_hand, KILLER_NOHANG));
        assert_false(kill_journal_from_killer(&by_hand, KILLER_EARLYOOM));
        assert_true(kill_journal_from_killer(&OOMD_SENDER, KILLER_SYSTEMD_OOMD));
        assert_false(kill_journal_from_killer(&PID1_SENDER, KILLER_SYSTEMD_OOMD));
}

/* As in the VM (tests/vm, case oomd): oomd 0.5.0 killed at 72.21 s and wrote its kmsg line at
 * 73.24 s; at 500 ms only its running process named it. A group waits for a mark, up to 2.5 s from
 * the first victim; a named killer is written at once. */
static void test_mark_wait(void **state) {
        KillerChoice running = { .killer = KILLER_OOMD, .basis = KILLMARK_BASIS_RUNNING_PROCESS };
        KillerChoice none = { .killer = KILLER_UNKNOWN };
        KillerChoice kmsg = { .killer = KILLER_OOMD, .basis = KILLMARK_BASIS_KMSG };
        KillerChoice xattr = { .killer = KILLER_SYSTEMD_OOMD, .basis = KILLMARK_BASIS_XATTR };
        usec_t first = 72212517;

        assert_int_equal(kill_mark_wait_us(&running, first, first + 500000), 2000000);
        assert_int_equal(kill_mark_wait_us(&none, first, first + 500000), 2000000);
        assert_int_equal(kill_mark_wait_us(&running, first, first + 2499999), 1);
        assert_int_equal(kill_mark_wait_us(&running, first, first + 2500000), 0);
        assert_int_equal(kill_mark_wait_us(&none, first, first + 9000000), 0);
        assert_int_equal(kill_mark_wait_us(&kmsg, first, first + 500000), 0);
        assert_int_equal(kill_mark_wait_us(&xattr, first, first + 500000), 0);
}

static void test_choose_killer(void **state) {
        KillMark marks[3] = {
                { .killer = KILLER_OOMD, .basis = KILLMARK_BASIS_KMSG, .signal = SIGKILL, .cgroup = "other.slice" },
                { .killer = KILLER_EARLYOOM,
                  .basis = KILLMARK_BASIS_LOG_LINE,
                  .signal = SIGTERM,
                  .pid = 42,
                  .name = "g" },
                { .killer = KILLER_OOMD,
                  .basis = KILLMARK_BASIS_KMSG,
                  .signal = SIGKILL,
                  .cgroup = "work.slice/job",
                  .dry_run = true },
        };
        pid_t pids[] = { 41, 42 };
        KillerKind running[] = { KILLER_NOHANG };
        KillEvidence e = { .marks = marks, .n_marks = 3, .victim_cgroup = "work.slice/job/sub" };
        KillerChoice c;

        /* The line naming a victim's pid wins. */
        kill_choose_killer(&e, pids, 2, &c);
        assert_int_equal(c.killer, KILLER_EARLYOOM);
        assert_int_equal(c.basis, KILLMARK_BASIS_LOG_LINE);
        assert_non_null(strstr(c.mark, "pid 42"));

        /* Another PID namespace's pid for our victim: its comm names it. */
        const char *comms[] = { "x", "g" };
        pids[1] = 4343;
        e.comms = comms;
        e.n_comms = 2;
        kill_choose_killer(&e, pids, 2, &c);
        assert_int_equal(c.killer, KILLER_EARLYOOM);
        e.n_comms = 0;

        /* Not our pid, a dry run and another cgroup: nothing but the xattr. */
        pids[1] = 43;
        strcpy(e.xattr_name, "user.oomd_kill");
        e.xattr_killer = KILLER_SYSTEMD_OOMD;
        kill_choose_killer(&e, pids, 2, &c);
        assert_int_equal(c.killer, KILLER_SYSTEMD_OOMD);
        assert_int_equal(c.basis, KILLMARK_BASIS_XATTR);

        /* oomd's kmsg line naming the victims' cgroup (an ancestor) comes before xattrs. */
        marks[2].dry_run = false;
        kill_choose_killer(&e, pids, 2, &c);
        assert_int_equal(c.killer, KILLER_OOMD);
        assert_int_equal(c.basis, KILLMARK_BASIS_KMSG);
        /* A mark's cgroup as its killer wrote it (cgpath_covers_untrimmed()); a sibling that shares
         * a prefix is not an ancestor. */
        strcpy(marks[2].cgroup, "/work.slice/job/");
        kill_choose_killer(&e, pids, 2, &c);
        assert_int_equal(c.killer, KILLER_OOMD);
        strcpy(marks[2].cgroup, "work.slice/jo");
        kill_choose_killer(&e, pids, 2, &c);
        assert_int_equal(c.basis, KILLMARK_BASIS_XATTR);

        /* No mark: one known killer running names it, with its basis. */
        e = (KillEvidence) { .victim_cgroup = "a", .running = running, .n_running = 1 };
        kill_choose_killer(&e, pids, 2, &c);
        assert_int_equal(c.killer, KILLER_NOHANG);
        assert_int_equal(c.basis, KILLMARK_BASIS_RUNNING_PROCESS);

        /* Two running, or none: unknown. */
        KillerKind two[] = { KILLER_NOHANG, KILLER_EARLYOOM };
        e.running = two;
        e.n_running = 2;
        kill_choose_killer(&e, pids, 2, &c);
        assert_int_equal(c.killer, KILLER_UNKNOWN);
        e.n_running = 0;
        kill_choose_killer(&e, pids, 2, &c);
        assert_int_equal(c.killer, KILLER_UNKNOWN);
}

/* A record judged while a refresh replaces the members: either listing knows it, a newborn is
 * placed by its parent, a stranger is nobody's; merging keeps the old and adds the new. */
static void test_members_judge_and_merge(void **state) {
        KillMember a_items[2] = { { .pid = 10 }, { .pid = 20, .has_cgroup = true, .cgroup = "w/a" } };
        KillMember b_items[2] = { { .pid = 20 }, { .pid = 30, .has_cmdline = true } };
        KillMembers before = { .items = a_items, .n = 2, .cap = 2 }, after = { .items = b_items, .n = 2, .cap = 2 };
        KillMember placed;
        const KillMember *m;

        assert_int_equal(kill_members_judge(&before, &after, 10, 1, &placed)->pid, 10); /* gone since */
        m = kill_members_judge(&before, &after, 30, 1, &placed);                        /* listed now only */
        assert_true(m->pid == 30 && m->has_cmdline);
        m = kill_members_judge(&before, NULL, 40, 20, &placed); /* born since: its parent's cgroup */
        assert_ptr_equal(m, &placed);
        assert_true(m->pid == 40 && m->has_cgroup && !m->has_cmdline && !m->has_rss);
        assert_string_equal(m->cgroup, "w/a");
        assert_null(kill_members_judge(&before, &after, 50, 1, &placed));
        assert_null(kill_members_judge(&before, &after, 50, 50, &placed));
        assert_null(kill_members_judge(NULL, NULL, 10, 20, &placed));

        /* After lost records: gone from the listing, no record of it, not in the group in flight. */
        KillGroup g = {};
        KillVictim v = { .pid = 10, .signal = 0 };
        assert_true(kill_members_unheard(&before.items[0], &after, NULL));
        assert_false(kill_members_unheard(&before.items[1], &after, NULL)); /* still listed */
        assert_int_equal(kill_group_add(&g, &v), 1);
        assert_false(kill_members_unheard(&before.items[0], &after, &g)); /* reported already */
        assert_int_equal(g.unheard, 1);
        kill_members_mark_heard(&before, 10);
        assert_true(before.items[0].heard);
        assert_false(kill_members_unheard(&before.items[0], &after, NULL)); /* its record came */

        KillMembers into = {};
        assert_int_equal(kill_members_merge(&into, &before), 0);
        assert_int_equal(kill_members_merge(&into, &after), 0);
        assert_int_equal(into.n, 3);
        assert_int_equal(into.items[0].pid, 10);
        assert_int_equal(into.items[2].pid, 30);
        assert_true(into.items[1].has_cgroup); /* the one kept is the first listing's */
        kill_members_done(&into);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_exit_signal),
                cmocka_unit_test(test_members_and_kernel_victims),
                cmocka_unit_test(test_group),
                cmocka_unit_test(test_log_lines),
                cmocka_unit_test(test_log_line_quoted_header),
                cmocka_unit_test(test_journal_entries),
                cmocka_unit_test(test_journal_forged),
                cmocka_unit_test(test_mark_wait),
                cmocka_unit_test(test_choose_killer),
                cmocka_unit_test(test_members_judge_and_merge),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
