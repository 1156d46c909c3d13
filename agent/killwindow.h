/* SPDX-License-Identifier: MIT */
/* The state killwatch.c (windows, the exit listener, members) and killwindow.c (a window's group
 * written as a kill incident) share; private to those two. */
#pragma once

#include <stdbool.h>

#include "agent/core.h"
#include "agent/killers.h"
#include "probes/memcg.h"
#include "probes/tasks.h"
#include "probes/taskstats.h"
#include "kills/kills.h"
#include "kills/prekill.h"

#define KILL_TICK_S 1.0
#define KILL_MEMBERS_MAX 4096
#define KILL_RELATED_MAX 64
#define KILL_DRAIN_MAX 4096 /* exit messages read per loop iteration */

typedef struct KillWindow {
        AgentKills *k;
        Watch *watch;
        char trigger[128];
        char incident[HISTORY_ID_MAX];
        usec_t incident_mono_us, until_us, last_wakeup_us;
        KillMembers members;
        /* While a refresh drains: the new listing, judged with members (kill_members_judge()). */
        KillMembers *fresh;
        bool all;      /* every process is a member (node-wide, no kill announced): known by its record */
        bool resync;   /* exit records were lost: the next refresh reports the members gone unheard */
        uint64_t lost; /* exit records lost since the window's last kill incident */
        uint64_t oom_kill_base;
        bool has_oom_kill_base;
        KillXattrBases xattrs;
        KillGroup *group; /* in flight, written when group_timer fires */
        ev_timer group_timer;
        PrekillMeasure *prekill; /* a kill systemd-oomd announced (agent/prekillhook.h), until prekill_until_us */
        /* The cgroup of that kill, from its Notify on (the measure comes after the answer): while
         * set, a node-wide window's members are its processes. */
        char announced[KILL_CGROUP_MAX];
        usec_t prekill_until_us;
} KillWindow;

struct AgentKills {
        Agent *a;
        KillWindow **windows;
        size_t n;
        TaskstatsExitListener *listener;
        ev_io listener_io;
        ev_timer tick;
        KernelVictims kernel;
        KillMark marks[KILL_MARKS_MAX]; /* ring, oldest at marks_next when full */
        usec_t mark_us[KILL_MARKS_MAX];
        size_t n_marks, marks_next;
        KillLogs logs;
        bool logs_open;
        uint64_t lost;
        size_t rcvbuf_bytes; /* the exit listener's buffer, as the kernel gave it */
        size_t rcvbuf_want;  /* what was last asked for it: it only grows while open */
        LogRateLimit lost_warned;
        ev_timer resync; /* lists the windows again after lost records, from the loop */
};

/* The processes of l as w's members, with what their exit records will not say (their command line,
 * cgroup and resident set), into *into, sorted. False without memory. */
bool killwindow_read_members(KillWindow *w, const TidList *l, KillMembers *into);
/* v into w's group in flight, which starts with it (its timer started) when there is none. */
void killwindow_add_victim(KillWindow *w, const KillVictim *v, usec_t now);
/* Exit records were lost: every member of w gone from now with no record heard ended while they
 * were, and is added to the group (signal unknown), never dropped. */
void killwindow_unheard(KillWindow *w, const KillMembers *now);
/* m into the ring of marks (a KillerLogFn). */
void killwindow_mark_push(const KillMark *m, void *userdata);
/* The watched cgroup's memory now: its cgroup2 files, or on a hybrid host the v1 memcg its processes
 * are in. */
void killwindow_read_memory(Agent *a, const Watch *watch, int cgroup_fd, MemcgState *ret);
/* Writes the group in flight; unless final, a group no mark names the killer of yet waits for one. */
void killwindow_write(KillWindow *w, bool final);
