/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <string.h>

#include "base/macro.h"
#include "incident/summary-kill.h"
#include "incident/textout.h"

/* "systemd-oomd announced the kill of /cg (3 processes, 40 MiB) but did not kill", or, of a cgroup
 * already empty (a slice whose unit it killed before), "... of /cg, which held no process: nothing
 * was killed" */
static void put_no_kill(FILE *f, const json_t *pk) {
        double procs = textout_field_or_zero(pk, "processes_total");

        fputs("systemd-oomd announced the kill of ", f);
        textout_put_name(f, textout_field_string(pk, "cgroup") ? textout_field_string(pk, "cgroup") : "?");
        if (procs == 0) {
                fputs(", which held no process: nothing was killed", f);
                return;
        }
        fprintf(f, " (%.0f process%s, ", procs, procs == 1 ? "" : "es");
        textout_put_bytes(f, textout_field_or_zero(pk, "rss_kib") * 1024);
        fputs(") but did not kill", f);
}

/* "killed by earlyoom: grower (/cg, pid N) holding 40 MiB, SIGKILL and 2 more" */
static void put_killer_and_victim(FILE *f, const json_t *kill, double total) {
        const json_t *v = json_array_get(json_object_get(kill, "victims"), 0),
                     *killer = json_object_get(kill, "killer");
        double pid, rss;

        if (json_is_object(killer)) {
                fputs("killed by ", f);
                textout_put_name(f, textout_field_string(killer, "name") ? textout_field_string(killer, "name") : "?");
                if (textout_field_string(killer, "basis") &&
                    strcmp(textout_field_string(killer, "basis"), "running_process") == 0)
                        fputs(" (running, no log of the kill)", f);
        } else
                fputs("killed by a signal (killer unknown)", f);
        fputs(": ", f);
        if (json_is_object(v)) {
                textout_put_name(f, textout_field_string(v, "comm") ? textout_field_string(v, "comm") : "?");
                fputs(" (", f);
                textout_put_name(f, textout_field_string(v, "cgroup")      ? textout_field_string(v, "cgroup")
                                    : textout_field_string(kill, "cgroup") ? textout_field_string(kill, "cgroup")
                                                                           : "?");
                if (textout_field_number(v, "pid", &pid))
                        fprintf(f, ", pid %.0f", pid);
                fputc(')', f);
                if (textout_field_number(v, "rss_kib", &rss)) {
                        fputs(" holding ", f);
                        textout_put_bytes(f, rss * 1024);
                }
                if (textout_field_string(v, "signal"))
                        fprintf(f, ", %s", textout_field_string(v, "signal"));
        }
        if (total > 1)
                fprintf(f, " and %.0f more", total - 1);
}

/* ", under memory pressure (some 50ms 2s) after incident ID, 2.1 s before" */
static void put_pressure(FILE *f, const json_t *p) {
        const char *trigger = textout_field_string(p, "trigger"), *id = textout_field_string(p, "incident");
        double since;

        if (trigger && strchr(trigger, ' ')) {
                /* "memory some 50ms 2s": "under memory pressure (some 50ms 2s)" */
                const char *sp = strchr(trigger, ' ');
                char res[16];
                snprintf(res, sizeof res, "%.*s", (int) MIN((size_t) (sp - trigger), sizeof res - 1), trigger);
                fputs(", under ", f);
                textout_put_name(f, res);
                fputs(" pressure (", f);
                textout_put_name(f, sp + 1);
                fputc(')', f);
        } else
                fputs(", under pressure", f);
        if (id) {
                fputs(" after incident ", f);
                textout_put_name(f, id);
                if (textout_field_number(p, "since_ms", &since)) {
                        fputs(", ", f);
                        textout_put_duration_us(f, since * 1000);
                        fputs(" before", f);
                }
        }
}

/* What the kill's report lacks or adds: exit records lost, the measure before it. */
static void put_notes(FILE *f, const json_t *kill, const json_t *pk) {
        double lost = textout_field_or_zero(kill, "lost_exit_records"),
               unheard = textout_field_or_zero(kill, "ended_unheard"), before;

        if (lost > 0) {
                /* "; 8361 exit records lost (the agent's buffer was full): 1 process ended unheard" */
                fprintf(f, "; %.0f exit record%s lost (the agent's buffer was full)", lost, lost == 1 ? "" : "s");
                if (unheard > 0)
                        fprintf(f, ": %.0f process%s ended unheard, how unknown", unheard, unheard == 1 ? "" : "es");
        }
        if (textout_field_number(pk, "before_kill_ms", &before)) {
                /* "; measured 88 ms before the kill (3 processes, 40 MiB)" */
                fputs("; measured ", f);
                textout_put_duration_us(f, before * 1000);
                fprintf(f, " before the kill (%.0f process%s, ", textout_field_or_zero(pk, "processes_total"),
                        textout_field_or_zero(pk, "processes_total") == 1 ? "" : "es");
                textout_put_bytes(f, textout_field_or_zero(pk, "rss_kib") * 1024);
                fputc(')', f);
        }
}

/* "killed by earlyoom: grower (/cg, pid N) holding 40 MiB, under memory pressure (incident ID, 2.1 s
 * before)", or "3 processes of /cg killed by SIGKILL (killer unknown): ...". */
void summary_kill_put(FILE *f, const json_t *kill) {
        const json_t *pk = json_object_get(kill, "prekill");
        double total = textout_field_or_zero(kill, "victims_total");

        if (json_is_object(pk) && total == 0) {
                put_no_kill(f, pk);
                return;
        }
        put_killer_and_victim(f, kill, total);
        put_pressure(f, json_object_get(kill, "pressure"));
        put_notes(f, kill, pk);
}
