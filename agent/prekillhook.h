/* SPDX-License-Identifier: MIT */
/* systemd-oomd's prekill hook (docs/killers.md, "systemd-oomd's prekill hook"): the Varlink socket
 * at the config's prekill_socket, served from the loop. Only root's calls are taken (mode 0600 and
 * the peer's credentials); each Notify is answered within prekill_reply_ms and its cgroup measured
 * (kills/prekill.h), the measuring it could not fit finished after the answer, then handed to the
 * kill windows (agent/killwatch.h). The protocol is kills/varlink.h's; bad calls get a Varlink error and
 * are counted (psidiag_prekill_calls_total), and no client can hold the loop or another client. */
#pragma once

#include "agent/core.h"

/* Serves the socket when prekill_socket is set and its directory exists (a stale socket there is
 * replaced); says why not otherwise (info), or what failed (error, once). Never fails the agent. */
void prekill_start(Agent *a);
/* Closes every connection and the socket, and removes it (when it is still the one made). */
void prekill_stop(Agent *a);
