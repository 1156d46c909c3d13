/* SPDX-License-Identifier: MIT */
#include <assert.h>
#include <unistd.h>

#include "agent/health.h"
#include "agent/report.h"

void report_reserve_id(Agent *a, usec_t wakeup_real_us, char *id, size_t size) {
        incident_format_id(&a->rt.host, wakeup_real_us, getpid(), ++a->seq, id, size);
}

int report_publish(const SampleResult *result, const IncidentContext *ctx, const ReportEnd *end) {
        Agent *a = end->agent;
        json_auto_t *incident = NULL;
        CountedIncident count = end->count;
        int r;

        assert(ctx->id == end->id);
        if (!end->reserved)
                report_reserve_id(a, result->wakeup_real_us, end->id, end->id_size);
        r = incident_build(result, ctx, &incident);
        if (r < 0)
                return r;
        for (size_t i = 0; i < end->n_sinks; i++)
                (void) sink_write(end->sinks[i], incident); /* counts and reports failures itself */
        if (count.type == COUNTERS_INCIDENT_PRESSURE) {
                count.recorded = result->recorded;
                count.passed = ctx->has_trigger && sample_result_fired(result, &ctx->trigger).verdict == FIRED_PASSED;
                (void) sample_result_stall_us(result, &count.stall_us);
                count.exit_records_lost += result->b ? result->b->lost_exit_records : 0;
        }
        count.blkio_unstarted += result->ranking ? result->ranking->unstarted : 0;
        counters_count_incident(&a->counters, &count);
        health_update(a);
        return 0;
}
