/* SPDX-License-Identifier: MIT */
/* The journal reader's matches against the killers' table (kills/killmarks.c): every killer with a
 * log identifier is matched, so the journal hands over the lines kill_journal_parse_entry() parses
 * for it, and nothing else is. The reader itself needs libsystemd and a journal: integration-kills
 * reads systemd-oomd's, earlyoom's and nohang's entries for real. */
#include <stdio.h>
#include <string.h>

#include "kills/killmarks.h"
#include "kills/killjournal.h"
#include "tests/unit/test-util.h"

static bool matched(const KillJournalMatches *m, const char *match) {
        for (size_t i = 0; i < m->n; i++)
                if (strcmp(m->match[i], match) == 0)
                        return true;
        return false;
}

/* Each killer of the table that has a log identifier has its match. */
static void test_every_logging_killer_is_matched(void **state) {
        KillJournalMatches m;
        size_t logging = 0;

        kill_journal_matches(&m);
        for (KillerKind k = 0; k < _KILLER_MAX; k++) {
                const KillerInfo *i = killmarks_killer(k);
                char want[KILL_JOURNAL_MATCH_MAX];

                if (!i->log_ident)
                        continue;
                logging++;
                snprintf(want, sizeof want, "SYSLOG_IDENTIFIER=%s", i->log_ident);
                if (!matched(&m, want))
                        fail_msg("the killer %s logs as %s, but the journal reader does not match %s: its entries "
                                 "would be parsed and never read",
                                 i->name, i->log_ident, want);
        }
        /* The table's killers that log today: earlyoom, nohang, systemd-oomd. */
        assert_true(logging >= 3);
        assert_int_equal(m.n, logging);
}

/* Each match is a killer's: its entries are parsed by that killer's parser, not dropped. */
static void test_every_match_is_a_killer(void **state) {
        KillJournalMatches m;

        kill_journal_matches(&m);
        for (size_t j = 0; j < m.n; j++) {
                const char *ident = m.match[j] + strlen("SYSLOG_IDENTIFIER=");
                bool found = false;

                assert_true(strncmp(m.match[j], "SYSLOG_IDENTIFIER=", strlen("SYSLOG_IDENTIFIER=")) == 0);
                for (KillerKind k = 0; k < _KILLER_MAX; k++) {
                        const KillerInfo *i = killmarks_killer(k);
                        if (i->log_ident && strcmp(i->log_ident, ident) == 0 && i->log_parser)
                                found = true;
                }
                if (!found)
                        fail_msg("the journal reader matches %s, which no killer with a parser logs as", m.match[j]);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_every_logging_killer_is_matched),
                cmocka_unit_test(test_every_match_is_a_killer),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
