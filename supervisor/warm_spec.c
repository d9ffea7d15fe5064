/* supervisor/warm_spec.c — see warm_spec.h. Pure. */
#include "supervisor/warm_spec.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct out {
        char *buf;
        size_t len, cap;
        bool oom;
};

static void put(struct out *o, const void *p, size_t n)
{
        if (o->oom)
                return;
        if (o->len + n > o->cap) {
                size_t cap = o->cap ? o->cap : 4096;
                char *nb;
                while (cap < o->len + n)
                        cap *= 2;
                if (!(nb = realloc(o->buf, cap))) {
                        o->oom = true;
                        return;
                }
                o->buf = nb;
                o->cap = cap;
        }
        memcpy(o->buf + o->len, p, n);
        o->len += n;
}

static void put_u32(struct out *o, uint32_t v) { put(o, &v, sizeof v); }
static void put_u64(struct out *o, uint64_t v) { put(o, &v, sizeof v); }

static void put_bytes(struct out *o, const void *p, size_t n)
{
        put_u32(o, (uint32_t) n);
        if (n)
                put(o, p, n);
}

static void put_str(struct out *o, const char *s)
{
        if (!s) {
                put_u32(o, UINT32_MAX);
                return;
        }
        put_bytes(o, s, strlen(s));
}

int warm_spec_encode(const struct warm_limits *lim, const struct filter_prog *filter, const struct ll_spec *landlock,
                     const struct mnt_plan *plan, char *const *argv, size_t argc, size_t script, char **ret,
                     size_t *ret_len, struct nsb_error *e)
{
        struct out o = { 0 };

        if (script >= argc)
                return nsb_fail(e, NSB_STAGE_PREPARE, EINVAL, "a warm job needs a program file in its argv");

        put_u32(&o, WARM_SPEC_MAGIC);
        put_u32(&o, WARM_SPEC_VERSION);
        put(&o, lim, sizeof *lim);
        put_bytes(&o, filter->insns, (size_t) filter->len * sizeof *filter->insns);
        put_u32(&o, (uint32_t) landlock->allow_tcp);
        put_u32(&o, (uint32_t) landlock->n_rules);
        for (size_t i = 0; i < landlock->n_rules; i++) {
                put_u32(&o, (uint32_t) landlock->rules[i].writable);
                put_str(&o, landlock->rules[i].path);
        }
        put_u32(&o, plan->sandbox_uid);
        put_u32(&o, plan->sandbox_gid);
        put_u32(&o, (uint32_t) plan->n_ops);
        for (size_t i = 0; i < plan->n_ops; i++) {
                const struct mnt_op *op = &plan->ops[i];
                if (op->kind == MNT_OPEN_TREE || op->kind == MNT_ATTACH || op->kind == MNT_MOUNTPOINT) {
                        free(o.buf);
                        return nsb_fail(e, NSB_STAGE_PREPARE, EINVAL,
                                        "a warm job's plan cannot carry a mount of a host source ('%s')",
                                        op->dst ? op->dst : "?");
                }
                put_u32(&o, (uint32_t) op->kind);
                put_u32(&o, (uint32_t) op->mode);
                put_u64(&o, op->attr);
                put_u64(&o, op->size);
                put_u32(&o, (uint32_t) op->writable);
                put_str(&o, op->src);
                put_str(&o, op->dst);
                put_bytes(&o, op->data, op->data ? op->data_len : 0);
        }
        put_u32(&o, (uint32_t) plan->n_fetch);   /* read back by the job's init (mnt_plan.fetch) */
        for (size_t i = 0; i < plan->n_fetch; i++)
                put_str(&o, plan->fetch[i]);
        put_u32(&o, (uint32_t) argc);
        put_u32(&o, (uint32_t) script);
        for (size_t i = 0; i < argc; i++)
                put_str(&o, argv[i]);
        if (o.oom) {
                free(o.buf);
                return nsb_fail(e, NSB_STAGE_PREPARE, ENOMEM, "out of memory");
        }
        *ret = o.buf;
        *ret_len = o.len;
        return 0;
}

struct in {
        const char *buf;
        size_t len, off;
        bool bad;
};

static const void *take(struct in *in, size_t n)
{
        const void *p;

        if (in->bad || n > in->len - in->off) {
                in->bad = true;
                return NULL;
        }
        p = in->buf + in->off;
        in->off += n;
        return p;
}

static uint32_t get_u32(struct in *in)
{
        uint32_t v = 0;
        const void *p = take(in, sizeof v);
        if (p)
                memcpy(&v, p, sizeof v);
        return v;
}

static uint64_t get_u64(struct in *in)
{
        uint64_t v = 0;
        const void *p = take(in, sizeof v);
        if (p)
                memcpy(&v, p, sizeof v);
        return v;
}

/* A string: NUL-terminated in a malloc'd copy (the buffer has no NULs). */
static char *get_str(struct in *in, bool *oom)
{
        uint32_t n = get_u32(in);
        const char *p;
        char *s;

        if (in->bad || n == UINT32_MAX)
                return NULL;
        if (!(p = take(in, n)))
                return NULL;
        if (memchr(p, '\0', n)) {
                in->bad = true;
                return NULL;
        }
        if (!(s = malloc((size_t) n + 1))) {
                *oom = true;
                return NULL;
        }
        memcpy(s, p, n);
        s[n] = '\0';
        return s;
}

int warm_spec_decode(const char *buf, size_t len, struct warm_job *ret, struct nsb_error *e)
{
        struct in in = { .buf = buf, .len = len };
        const void *p;
        uint32_t n, flen;
        bool oom = false;

        memset(ret, 0, sizeof *ret);
        if (get_u32(&in) != WARM_SPEC_MAGIC || get_u32(&in) != WARM_SPEC_VERSION || in.bad)
                return nsb_fail(e, NSB_STAGE_PREPARE, EPROTO, "not a warm job spec of this nsbox (magic or version)");
        if ((p = take(&in, sizeof ret->lim)))
                memcpy(&ret->lim, p, sizeof ret->lim);
        flen = get_u32(&in);
        if (!in.bad && (flen % sizeof *ret->filter.insns || flen / sizeof *ret->filter.insns > BPF_MAXINSNS))
                in.bad = true;
        if ((p = take(&in, flen)) && flen) {
                if (!(ret->filter.insns = malloc(flen)))
                        oom = true;
                else
                        memcpy(ret->filter.insns, p, flen);
                ret->filter.len = (unsigned short) (flen / sizeof *ret->filter.insns);
        }
        ret->landlock.allow_tcp = get_u32(&in) != 0;
        n = get_u32(&in);
        if (!in.bad && n > 4096)
                in.bad = true;
        if (!in.bad && n && !(ret->rules = calloc(n, sizeof *ret->rules)))
                oom = true;
        for (uint32_t i = 0; i < n && !in.bad && !oom; i++) {
                ret->rules[i].writable = get_u32(&in) != 0;
                ret->rules[i].path = get_str(&in, &oom);
                if (!ret->rules[i].path)
                        in.bad = true;
                ret->landlock.n_rules = i + 1;
        }
        ret->landlock.rules = ret->rules;
        ret->plan.sandbox_uid = get_u32(&in);
        ret->plan.sandbox_gid = get_u32(&in);
        ret->plan.starts_pivoted = true;
        n = get_u32(&in);
        if (!in.bad && n > 1024)
                in.bad = true;
        if (!in.bad && n && !(ret->plan.ops = calloc(n, sizeof *ret->plan.ops)))
                oom = true;
        for (uint32_t i = 0; i < n && !in.bad && !oom; i++) {
                struct mnt_op *op = &ret->plan.ops[i];
                uint32_t dlen;
                op->kind = (enum mnt_kind) get_u32(&in);
                op->mode = (mode_t) get_u32(&in);
                op->attr = get_u64(&in);
                op->size = get_u64(&in);
                op->writable = get_u32(&in) != 0;
                op->slot = -1;
                op->src = get_str(&in, &oom);
                op->dst = get_str(&in, &oom);
                dlen = get_u32(&in);
                op->data = take(&in, dlen);
                op->data_len = dlen;
                ret->plan.n_ops = i + 1;
                if (op->kind == MNT_OPEN_TREE || op->kind == MNT_ATTACH || op->kind == MNT_MOUNTPOINT ||
                    op->kind > MNT_READONLY || (!op->dst && op->kind != MNT_PIVOT && op->kind != MNT_DETACH_OLD))
                        in.bad = true;
        }
        n = get_u32(&in);
        if (!in.bad && n > MNT_MAX_JOB_FILES)
                in.bad = true;
        if (!in.bad && n && !(ret->plan.fetch = calloc(n, sizeof *ret->plan.fetch)))
                oom = true;
        for (uint32_t i = 0; i < n && !in.bad && !oom; i++) {
                if (!(ret->plan.fetch[i] = get_str(&in, &oom)))
                        in.bad = true;
                ret->plan.n_fetch = i + 1;
        }
        n = get_u32(&in);
        ret->script = get_u32(&in);
        if (!in.bad && (n == 0 || n > 65536 || ret->script >= n))
                in.bad = true;
        if (!in.bad && !oom && !(ret->argv = calloc((size_t) n + 1, sizeof *ret->argv)))
                oom = true;
        for (uint32_t i = 0; i < n && !in.bad && !oom; i++) {
                if (!(ret->argv[i] = get_str(&in, &oom)))
                        in.bad = true;
                ret->argc = i + 1;
        }
        if (!in.bad && in.off != in.len)
                in.bad = true;
        if (oom || in.bad) {
                warm_job_free(ret);
                return oom ? nsb_fail(e, NSB_STAGE_PREPARE, ENOMEM, "out of memory")
                           : nsb_fail(e, NSB_STAGE_PREPARE, EPROTO, "a malformed warm job spec (%zu bytes)", len);
        }
        ret->cfg.wall_time_ms = ret->lim.wall_time_ms;
        ret->cfg.cpu_time_ms = ret->lim.cpu_time_ms;
        ret->cfg.memory_bytes = ret->lim.memory_bytes;
        ret->cfg.pids_max = ret->lim.pids_max;
        ret->cfg.file_size_bytes = ret->lim.file_size_bytes;
        ret->cfg.network = NSB_NETWORK_NONE;
        ret->cg_spec.memory_bytes = ret->lim.cg_memory_bytes;
        ret->cg_spec.pids_max = ret->lim.cg_pids_max;
        return 0;
}

/* Freed memory stays in the zygote's heap, and every later job's address
 * space is a copy of it: nothing of a job (its argv may hold a judge case's
 * arguments) is left there for the next one to read. */
static void wipe_free(char *p)
{
        if (p) {
                explicit_bzero(p, strlen(p));
                free(p);
        }
}

void warm_job_free(struct warm_job *j)
{
        for (size_t i = 0; j->rules && i < j->landlock.n_rules; i++)
                wipe_free((char *) j->rules[i].path);
        if (j->rules)
                explicit_bzero(j->rules, j->landlock.n_rules * sizeof *j->rules);
        free(j->rules);
        for (size_t i = 0; j->plan.ops && i < j->plan.n_ops; i++) {
                wipe_free(j->plan.ops[i].src);
                wipe_free(j->plan.ops[i].dst);
        }
        /* the ops hold sizes too: the program's length among them */
        if (j->plan.ops)
                explicit_bzero(j->plan.ops, j->plan.n_ops * sizeof *j->plan.ops);
        free(j->plan.ops);
        for (size_t i = 0; j->plan.fetch && i < j->plan.n_fetch; i++)
                wipe_free(j->plan.fetch[i]);
        free(j->plan.fetch);
        for (size_t i = 0; j->argv && i < j->argc; i++)
                wipe_free(j->argv[i]);
        free(j->argv);
        if (j->filter.insns)
                explicit_bzero(j->filter.insns, (size_t) j->filter.len * sizeof *j->filter.insns);
        filter_prog_free(&j->filter);
        explicit_bzero(j, sizeof *j);
}
