/* SPDX-License-Identifier: MIT */
/* The record layouts are include/uapi/linux/perf_event.h's, as perf_output_sample() writes them
 * (kernel-facts.md: perf-sample-layout). A record is read through a cursor that never moves past
 * its end: each field is taken only if the bytes left hold it. */
#include "probes/perfsample.h"

#include <errno.h>
#include <string.h>

#include "base/unaligned.h"

typedef struct Cursor {
        const uint8_t *p;
        size_t left;
} Cursor;

static bool take(Cursor *c, size_t n, const uint8_t **ret) {
        if (n > c->left)
                return false;
        if (ret)
                *ret = c->p;
        c->p += n;
        c->left -= n;
        return true;
}

static bool take_u64(Cursor *c, uint64_t *ret) {
        const uint8_t *p;

        if (!take(c, 8, &p))
                return false;
        *ret = unaligned_u64(p);
        return true;
}

static bool take_u32_pair(Cursor *c, uint32_t *a, uint32_t *b) {
        const uint8_t *p;

        if (!take(c, 8, &p))
                return false;
        *a = unaligned_u32(p);
        *b = unaligned_u32(p + 4);
        return true;
}

/* The sample_id trailer of a non-sample record (sample_id_all): TID, TIME, CPU in that order, at
 * the record's end. Cuts it off c. */
static bool take_id(Cursor *c, PerfSampleId *id) {
        Cursor t;
        uint32_t res;

        if (c->left < PERFSAMPLE_ID_BYTES)
                return false;
        c->left -= PERFSAMPLE_ID_BYTES;
        t = (Cursor) { c->p + c->left, PERFSAMPLE_ID_BYTES };
        return take_u32_pair(&t, &id->pid, &id->tid) && take_u64(&t, &id->time_ns) && take_u32_pair(&t, &id->cpu, &res);
}

static int parse_callchain(Cursor *c, PerfSample *s) {
        enum { CTX_NONE, CTX_KERNEL, CTX_USER, CTX_OTHER } ctx = CTX_NONE;
        const uint8_t *p;
        uint64_t nr;

        if (!take_u64(c, &nr) || nr > PERFSAMPLE_IPS_MAX || !take(c, nr * 8, &p))
                return -EBADMSG;
        for (uint64_t i = 0; i < nr; i++) {
                uint64_t ip = unaligned_u64(p + i * 8);

                if (ip >= (uint64_t) PERF_CONTEXT_MAX) {
                        ctx = ip == (uint64_t) PERF_CONTEXT_KERNEL ? CTX_KERNEL
                              : ip == (uint64_t) PERF_CONTEXT_USER ? CTX_USER
                                                                   : CTX_OTHER;
                        continue;
                }
                /* get_perf_callchain() always opens with a marker; an entry before one has no
                 * context we could trust, and is counted with the others. */
                if (ctx == CTX_KERNEL)
                        s->kernel_ips[s->n_kernel_ips++] = ip;
                else if (ctx == CTX_USER)
                        s->user_ips[s->n_user_ips++] = ip;
                else
                        s->n_other_ips++;
        }
        return 0;
}

static int parse_regs(Cursor *c, uint64_t regs_mask, PerfSample *s) {
        if (!take_u64(c, &s->regs_abi))
                return -EBADMSG;
        /* ABI_NONE: no registers follow (a kernel thread; perf_output_sample()). */
        if (s->regs_abi == PERF_SAMPLE_REGS_ABI_NONE)
                return 0;
        if (s->regs_abi != PERF_SAMPLE_REGS_ABI_32 && s->regs_abi != PERF_SAMPLE_REGS_ABI_64)
                return -EBADMSG;
        s->regs_mask = regs_mask;
        for (unsigned i = 0; i < PERFSAMPLE_REGS_MAX; i++)
                if ((regs_mask >> i) & 1 && !take_u64(c, &s->regs[i]))
                        return -EBADMSG;
        return 0;
}

static int parse_stack(Cursor *c, PerfSample *s) {
        uint64_t size;

        if (!take_u64(c, &size))
                return -EBADMSG;
        /* Size 0: no data and no dyn_size (perf_output_sample_ustack() without regs, or an
         * exiting task's sample whose perf_sample_ustack_size() was 0). */
        if (size == 0)
                return 0;
        if (size > c->left || !take(c, size, &s->stack) || !take_u64(c, &s->stack_dyn_size) || s->stack_dyn_size > size)
                return -EBADMSG;
        s->stack_size = size;
        return 0;
}

static int parse_sample(Cursor *c, uint16_t misc, uint64_t regs_mask, PerfSample *s) {
        uint32_t res;
        int r;

        *s = (PerfSample) {};
        s->user = (misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_USER;
        if (!take_u64(c, &s->ip) || !take_u32_pair(c, &s->id.pid, &s->id.tid) || !take_u64(c, &s->id.time_ns) ||
            !take_u32_pair(c, &s->id.cpu, &res))
                return -EBADMSG;
        r = parse_callchain(c, s);
        if (r >= 0)
                r = parse_regs(c, regs_mask, s);
        if (r >= 0)
                r = parse_stack(c, s);
        /* Nothing else was asked: bytes left over mean another layout than ours. */
        if (r >= 0 && c->left != 0)
                r = -EBADMSG;
        return r;
}

/* A NUL-terminated string that fills the rest of c (padded to 8 bytes with NULs). */
static const char *take_string(Cursor *c) {
        const char *s = (const char *) c->p;

        if (c->left == 0 || !memchr(c->p, 0, c->left))
                return NULL;
        c->p += c->left;
        c->left = 0;
        return s;
}

static int parse_mmap2(Cursor *c, uint16_t misc, PerfMmap2 *m) {
        const uint8_t *u;

        *m = (PerfMmap2) {};
        if (!take_id(c, &m->id) || !take_u32_pair(c, &m->pid, &m->tid) || !take_u64(c, &m->addr) ||
            !take_u64(c, &m->len) || !take_u64(c, &m->pgoff) || !take(c, 24, &u) ||
            !take_u32_pair(c, &m->prot, &m->flags))
                return -EBADMSG;
        m->data = misc & PERF_RECORD_MISC_MMAP_DATA;
        if (misc & PERF_RECORD_MISC_MMAP_BUILD_ID) {
                /* build_id_size u8, two reserved, then 20 bytes (perf_event_mmap_output()). */
                m->has_build_id = true;
                m->build_id_size = u[0];
                if (m->build_id_size > sizeof m->build_id)
                        return -EBADMSG;
                memcpy(m->build_id, u + 4, sizeof m->build_id);
        } else {
                m->maj = unaligned_u32(u);
                m->min = unaligned_u32(u + 4);
                m->ino = unaligned_u64(u + 8);
                m->ino_generation = unaligned_u64(u + 16);
        }
        m->filename = take_string(c);
        return m->filename ? 0 : -EBADMSG;
}

static int parse_comm(Cursor *c, uint16_t misc, PerfComm *m) {
        const char *name;

        *m = (PerfComm) {};
        if (!take_id(c, &m->id) || !take_u32_pair(c, &m->pid, &m->tid))
                return -EBADMSG;
        name = take_string(c);
        if (!name)
                return -EBADMSG;
        /* TASK_COMM_LEN is 16; a longer name is cut, as the kernel's own never is. */
        strncpy(m->comm, name, sizeof m->comm - 1);
        m->exec = misc & PERF_RECORD_MISC_COMM_EXEC;
        return 0;
}

static int parse_task(Cursor *c, PerfTask *t) {
        *t = (PerfTask) {};
        if (!take_id(c, &t->id) || !take_u32_pair(c, &t->pid, &t->ppid) || !take_u32_pair(c, &t->tid, &t->ptid) ||
            !take_u64(c, &t->time_ns) || c->left != 0)
                return -EBADMSG;
        return 0;
}

static int parse_lost(Cursor *c, uint32_t type, PerfLost *l) {
        PerfSampleId id;
        uint64_t event_id;

        *l = (PerfLost) {};
        if (!take_id(c, &id))
                return -EBADMSG;
        /* PERF_RECORD_LOST has the event's id before the count; LOST_SAMPLES only the count. */
        if (type == PERF_RECORD_LOST && !take_u64(c, &event_id))
                return -EBADMSG;
        if (!take_u64(c, &l->lost) || c->left != 0)
                return -EBADMSG;
        return 0;
}

int perfsample_parse(const uint8_t *rec, size_t rec_len, uint64_t regs_mask, PerfRecord *ret) {
        Cursor c = { rec, rec_len };
        const uint8_t *h;
        uint16_t misc, size;
        uint32_t type;
        int r;

        if (!take(&c, sizeof(struct perf_event_header), &h))
                return -EBADMSG;
        type = unaligned_u32(h);
        misc = unaligned_u16(h + 4);
        size = unaligned_u16(h + 6);
        if (size != rec_len)
                return -EBADMSG;
        ret->type = type;
        switch (type) {
        case PERF_RECORD_SAMPLE:
                ret->kind = PERF_REC_SAMPLE;
                r = parse_sample(&c, misc, regs_mask, &ret->sample);
                break;
        case PERF_RECORD_MMAP2:
                ret->kind = PERF_REC_MMAP2;
                r = parse_mmap2(&c, misc, &ret->mmap2);
                break;
        case PERF_RECORD_COMM:
                ret->kind = PERF_REC_COMM;
                r = parse_comm(&c, misc, &ret->comm);
                break;
        case PERF_RECORD_FORK:
        case PERF_RECORD_EXIT:
                ret->kind = type == PERF_RECORD_FORK ? PERF_REC_FORK : PERF_REC_EXIT;
                r = parse_task(&c, &ret->task);
                break;
        case PERF_RECORD_LOST:
        case PERF_RECORD_LOST_SAMPLES:
                ret->kind = PERF_REC_LOST;
                r = parse_lost(&c, type, &ret->lost);
                break;
        default:
                ret->kind = PERF_REC_OTHER;
                r = 0;
        }
        return r;
}

static void ring_copy(const uint8_t *data, size_t data_size, uint64_t pos, size_t n, uint8_t *out) {
        size_t off = pos & (data_size - 1), first = data_size - off < n ? data_size - off : n;

        memcpy(out, data + off, first);
        memcpy(out + first, data, n - first);
}

static void count(PerfRingStats *st, const PerfRecord *r) {
        switch (r->kind) {
        case PERF_REC_SAMPLE:
                st->samples++;
                break;
        case PERF_REC_MMAP2:
                st->mmap2++;
                break;
        case PERF_REC_COMM:
                st->comm++;
                break;
        case PERF_REC_FORK:
        case PERF_REC_EXIT:
                st->task++;
                break;
        case PERF_REC_LOST:
                st->lost += r->lost.lost;
                break;
        case PERF_REC_OTHER:
                st->other++;
                break;
        }
}

int perfsample_ring_walk(const uint8_t *data, size_t data_size, uint64_t tail, uint64_t head, uint64_t regs_mask,
                         uint8_t *scratch, PerfRingStats *stats, PerfRecordFn fn, void *userdata, uint64_t *ret_tail) {
        if (data_size < 4096 || (data_size & (data_size - 1)) || !scratch)
                return -EINVAL;
        /* The kernel never writes more than the ring holds past our tail; a head that claims so
         * (or lies behind us) leaves nothing we could frame. */
        if (head - tail > data_size) {
                stats->corrupt++;
                *ret_tail = head;
                return 0;
        }
        while (tail != head) {
                struct perf_event_header h;
                const uint8_t *rec;
                PerfRecord r;
                uint64_t avail = head - tail;
                size_t off = tail & (data_size - 1);

                if (avail < sizeof h) {
                        stats->corrupt++;
                        break;
                }
                ring_copy(data, data_size, tail, sizeof h, (uint8_t *) &h);
                if (h.size < sizeof h || h.size > avail) {
                        stats->corrupt++;
                        break;
                }
                if (off + h.size > data_size) {
                        ring_copy(data, data_size, tail, h.size, scratch);
                        rec = scratch;
                        stats->wrapped++;
                } else
                        rec = data + off;
                tail += h.size;
                stats->records++;
                if (perfsample_parse(rec, h.size, regs_mask, &r) < 0) {
                        stats->malformed++;
                        continue;
                }
                count(stats, &r);
                if (fn)
                        fn(&r, userdata);
        }
        *ret_tail = head;
        return 0;
}
