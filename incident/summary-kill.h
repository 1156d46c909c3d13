/* SPDX-License-Identifier: MIT */
/* The summary sentence of a kill incident (incident/summary.h writes the others): who killed what
 * under which pressure, what the prekill hook measured before, or the kill systemd-oomd announced
 * that did not come. Pure: writes only to the FILE it is given. */
#pragma once

#include <jansson.h>
#include <stdio.h>

/* Writes the sentence of the incident's "kill" object to f. */
void summary_kill_put(FILE *f, const json_t *kill);
