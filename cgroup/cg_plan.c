/* cgroup/cg_plan.c — backend usability and choice, and the list of limit
 * writes. Pure: decides from facts and a spec, touches nothing. */
#include "cgroup/cg_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* PID_MAX_LIMIT: no cgroup can hold more tasks, and pids.max rejects more. */
#define CG_PIDS_CEILING (UINT64_C(1) << 22)

unsigned cg_v2_missing_subtree(const struct cg_facts *f)
{
        return (CG_CTRL_MEMORY | CG_CTRL_PIDS) & ~f->v2_subtree;
}

/* --cgroup-parent: the same rules, worded for a cgroup someone gave us. */
static const char *parent_unusable(const struct cg_facts *f)
{
        if (!f->v2_mounted)
                return "--cgroup-parent needs cgroup v2, and no cgroup2 hierarchy is mounted under /sys/fs/cgroup";
        if (f->parent_error)
                return f->parent_error;
        if (!f->v2_base_found)
                return "no such cgroup";
        if ((f->v2_controllers & (CG_CTRL_MEMORY | CG_CTRL_PIDS)) != (CG_CTRL_MEMORY | CG_CTRL_PIDS))
                return "memory and pids are not both in its cgroup.controllers (not delegated to it)";
        if (!f->v2_writable)
                return "not writable by this user (its directory, cgroup.procs and cgroup.subtree_control "
                       "must be: a delegated subtree)";
        if (cg_v2_missing_subtree(f) && f->v2_other_procs > 0)
                return "it holds processes other than nsbox, so memory and pids cannot be enabled below it "
                       "(no-internal-processes rule)";
        /* CLONE_INTO_CGROUP from outside needs write access to cgroup.procs of
         * the common ancestor of both cgroups (cgroup-v2.rst, "Delegation
         * Containment"; cgroup_procs_write_permission()). */
        if (f->v2_self_outside && !f->v2_ancestor_writable)
                return "nsbox's own cgroup and this one meet at a cgroup whose cgroup.procs this user cannot "
                       "write, so runs cannot be started inside it (start nsbox inside that subtree, or as root)";
        return NULL;
}

const char *cg_v2_unusable(const struct cg_facts *f)
{
        if (f->parent_given)
                return parent_unusable(f);
        if (!f->v2_mounted)
                return "no cgroup2 hierarchy is mounted under /sys/fs/cgroup";
        if (!f->v2_member)
                return "this process has no cgroup v2 path (no 0:: line in /proc/self/cgroup)";
        if (!f->v2_base_found)
                return "own v2 cgroup directory not found under the cgroup2 mount";
        if (!(f->v2_controllers & CG_CTRL_MEMORY))
                return "memory controller not available to own v2 cgroup (not in cgroup.controllers: "
                       "not delegated, or bound to cgroup v1)";
        if (!(f->v2_controllers & CG_CTRL_PIDS))
                return "pids controller not available to own v2 cgroup (not in cgroup.controllers: "
                       "not delegated, or bound to cgroup v1)";
        if (!f->v2_writable)
                return "own v2 cgroup is not writable by this user (not delegated; run under "
                       "systemd-run --user --scope -p Delegate=yes)";
        /* No internal processes: a non-root cgroup may enable controllers for its
         * children only while it has no processes itself. We can move ourselves
         * into a leaf, but not the others. (cgroup-v2.rst, "No Internal Process
         * Constraint") */
        if (cg_v2_missing_subtree(f) && !f->v2_base_is_root && f->v2_other_procs > 0)
                return "own v2 cgroup holds other processes, so memory and pids cannot be enabled "
                       "below it (no-internal-processes rule; run nsbox in its own delegated scope)";
        return NULL;
}

const char *cg_v1_unusable(const struct cg_facts *f)
{
        static const char *const why[2][3] = {
                { "no v1 memory hierarchy mounted under /sys/fs/cgroup",
                  "own v1 memory cgroup not found",
                  "own v1 memory cgroup not writable (needs root or a delegated hierarchy)" },
                { "no v1 pids hierarchy mounted under /sys/fs/cgroup",
                  "own v1 pids cgroup not found",
                  "own v1 pids cgroup not writable (needs root or a delegated hierarchy)" },
        };
        static const int need[2] = { CG_V1_MEMORY, CG_V1_PIDS };

        for (size_t i = 0; i < 2; i++) {
                const struct cg_v1_facts *v = &f->v1[need[i]];
                if (!v->mounted)
                        return why[i][0];
                if (!v->found)
                        return why[i][1];
                if (!v->writable)
                        return why[i][2];
        }
        return NULL;
}

void cg_facts_explain(struct cg_facts *f)
{
        const char *v2 = cg_v2_unusable(f), *v1 = cg_v1_unusable(f);

        if (f->parent_given)    /* no fallback from a cgroup we were given */
                snprintf(f->reason, sizeof f->reason, "--cgroup-parent: %s", v2 ? v2 : "usable (memory and pids)");
        else
                snprintf(f->reason, sizeof f->reason, "cgroup v2: %s; cgroup v1: %s",
                         v2 ? v2 : "usable (memory and pids)", v1 ? v1 : "usable (memory and pids writable)");
}

enum cg_backend cg_choose(const struct cg_facts *f, const char **ret_reason)
{
        enum cg_backend b;
        const char *why;

        if (!cg_v2_unusable(f)) {
                b = CG_BACKEND_V2;
                why = "cgroup v2: memory and pids usable in own cgroup";
        } else if (!cg_v1_unusable(f)) {
                b = CG_BACKEND_V1;
                why = cg_v2_unusable(f);
        } else {
                b = CG_BACKEND_RLIMIT;
                why = cg_v1_unusable(f);
        }
        if (ret_reason)
                *ret_reason = f->reason[0] ? f->reason : why;
        return b;
}

static bool unlimited(uint64_t v)
{
        return v == 0 || v == UINT64_MAX;
}

static void add(struct cg_plan *p, int ctrl, const char *file, const char *value, bool optional)
{
        struct cg_write *w = &p->w[p->n++];

        w->ctrl = ctrl;
        w->file = file;
        snprintf(w->value, sizeof w->value, "%s", value);
        w->optional = optional;
}

int cg_plan_limits(enum cg_backend b, const struct cg_spec *spec, struct cg_plan *ret, struct nsb_error *e)
{
        char mem[24], pids[24];

        memset(ret, 0, sizeof *ret);
        if (unlimited(spec->memory_bytes))
                snprintf(mem, sizeof mem, "%s", b == CG_BACKEND_V1 ? "-1" : "max");
        else
                snprintf(mem, sizeof mem, "%" PRIu64, spec->memory_bytes);
        if (unlimited(spec->pids_max) || spec->pids_max >= CG_PIDS_CEILING)
                snprintf(pids, sizeof pids, "max");
        else
                snprintf(pids, sizeof pids, "%" PRIu64, spec->pids_max);

        switch (b) {
        case CG_BACKEND_V2:
                add(ret, 0, "memory.max", mem, false);
                /* No swap: otherwise memory.max only bounds RAM and the program can
                 * page out past its limit. Absent when swap accounting is off. */
                add(ret, 0, "memory.swap.max", "0", true);
                add(ret, 0, "pids.max", pids, false);
                return 0;
        case CG_BACKEND_V1:
                /* Order matters: memsw.limit must stay >= limit at every step, so
                 * the RAM limit is lowered first, then RAM+swap to the same value. */
                add(ret, CG_V1_MEMORY, "memory.limit_in_bytes", mem, false);
                add(ret, CG_V1_MEMORY, "memory.memsw.limit_in_bytes", mem, true);
                add(ret, CG_V1_PIDS, "pids.max", pids, false);
                return 0;
        case CG_BACKEND_RLIMIT:
                return 0;       /* applied by child_join with setrlimit */
        case CG_BACKEND_NONE:
        default:
                return nsb_fail(e, NSB_STAGE_CGROUP, EINVAL, "no limit plan for cgroup backend %d", (int) b);
        }
}

unsigned cg_cpu_count(uint64_t pids_max, unsigned host_cpus)
{
        uint64_t k = pids_max / 4;

        if (host_cpus == 0)
                host_cpus = 1;
        if (unlimited(pids_max))
                return host_cpus;
        if (k == 0)
                k = 1;
        return k < host_cpus ? (unsigned) k : host_cpus;
}

uint64_t cg_rlimit_as_bytes(const struct cg_spec *spec)
{
        uint64_t threads = spec->pids_max, room;

        if (unlimited(spec->memory_bytes))
                return spec->memory_bytes;
        if (unlimited(threads) || threads > CG_AS_STACK_THREADS)
                threads = CG_AS_STACK_THREADS;
        room = threads * CG_AS_STACK_BYTES;
        if (room > spec->memory_bytes)
                room = spec->memory_bytes;      /* one process alone: never past twice the limit */
        return spec->memory_bytes > UINT64_MAX - 1 - room ? UINT64_MAX - 1 : spec->memory_bytes + room;
}

void cg_run_init(struct cg_run *run)
{
        memset(run, 0, sizeof *run);
        run->backend = CG_BACKEND_NONE;
        run->clone_fd = -1;
        for (size_t i = 0; i < CG_RUN_DIRS; i++) {
                run->join_fds[i] = -1;
                run->parent_fds[i] = -1;
                run->dir_fds[i] = -1;
        }
        for (size_t i = 0; i < CG_V1__MAX; i++)
                run->ctrl_dir[i] = -1;
        for (size_t i = 0; i < CG_U__MAX; i++)
                run->usage_fds[i] = -1;
        run->tree_clock_fd = -1;
}
