/* cgroup/cg_v1.c — the cgroup v1 backend: one run cgroup per hierarchy
 * (memory, pids, and cpuacct when it is mounted and writable), each beneath
 * our own cgroup in that hierarchy. v1 has no CLONE_INTO_CGROUP: the parent
 * opens each "tasks" file, the child writes "0" to them (the supervisor
 * creates v1 cgroups after clone and sends these fds; the init joins before
 * it forks the program). */
#include "cgroup/cg_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "util/cleanup.h"

static void v1_destroy(struct cg_run *run);

static bool v1_cpuacct_usable(const struct cg_facts *f)
{
        const struct cg_v1_facts *v = &f->v1[CG_V1_CPUACCT];
        return v->mounted && v->found && v->writable;
}

static int v1_mkdir_run(int parent, const char *name, const char *const *fake_files)
{
        int r = cg_mkdir_at(parent, name, fake_files);

        if (r != -EEXIST)
                return r;
        /* Left by an earlier nsbox that had our pid; rmdir only succeeds when
         * no task is left in it (the kernel checks), so nothing live is taken. */
        if (cg_rmdir_at(parent, name, fake_files, false) < 0)
                return -EEXIST;
        return cg_mkdir_at(parent, name, fake_files);
}

/* One run cgroup in the hierarchy of controller @c, or reuse the directory of
 * an earlier controller co-mounted with it (same hierarchy id). */
static int v1_make_dir(const struct cg_env *env, const struct cg_facts *f, int c, int *n_dirs,
                       struct cg_run *run, struct nsb_error *e)
{
        const char *rel = f->v1[c].own_rel;
        int i, r;

        for (int j = 0; j < c; j++)
                if (run->ctrl_dir[j] >= 0 && f->v1[j].hierarchy_id == f->v1[c].hierarchy_id) {
                        run->ctrl_dir[c] = run->ctrl_dir[j];
                        return 0;
                }
        i = (*n_dirs)++;
        run->parent_fds[i] = openat(env->sys_cgroup_fd, rel, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (run->parent_fds[i] < 0)
                return nsb_fail(e, NSB_STAGE_CGROUP, errno, "open own cgroup %s", rel);
        r = v1_mkdir_run(run->parent_fds[i], run->name, env->fake_files);
        if (r < 0) {
                /* not ours: destroy must not remove it */
                close_fd(&run->parent_fds[i]);
                return nsb_fail(e, NSB_STAGE_CGROUP, -r, "mkdir %s/%s", rel, run->name);
        }
        run->dir_fds[i] = openat(run->parent_fds[i], run->name, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (run->dir_fds[i] < 0)
                return nsb_fail(e, NSB_STAGE_CGROUP, errno, "open %s/%s", rel, run->name);
        /* Opened here, by the privileged parent: v1 checks the opener's
         * credentials (f_cred) when the child, already in its own user
         * namespace, writes "0" to it.
         * "tasks", not "cgroup.procs": the kernel moves the writer itself
         * ("0" = current) without taking the global cgroup_threadgroup_rwsem
         * for writing (cgroup_procs_write_start(): threadgroup lock only for
         * a pid or a whole thread group), which costs an RCU grace period,
         * ~8 ms per hierarchy here. Moving one thread is moving the process:
         * the child is single-threaded (no thread exists next to clone). */
        run->join_fds[i] = openat(run->dir_fds[i], "tasks", O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
        if (run->join_fds[i] < 0)
                return nsb_fail(e, NSB_STAGE_CGROUP, errno, "open %s/%s/tasks", rel, run->name);
        run->ctrl_dir[c] = i;
        return 0;
}

static int v1_open_usage(struct cg_run *run, struct nsb_error *e)
{
        static const struct {
                enum cg_usage_file slot;
                int ctrl;
                const char *file;
                bool optional;
        } files[] = {
                { CG_U_MEM_OOMCTL, CG_V1_MEMORY, "memory.oom_control", false },
                { CG_U_MEM_FAILCNT, CG_V1_MEMORY, "memory.failcnt", false },
                { CG_U_MEM_PEAK, CG_V1_MEMORY, "memory.max_usage_in_bytes", false },
                { CG_U_PIDS_EVENTS, CG_V1_PIDS, "pids.events", true },
                { CG_U_CPU, CG_V1_CPUACCT, "cpuacct.usage", true },
        };

        for (size_t i = 0; i < ARRAY_SIZE(files); i++) {
                int d = run->ctrl_dir[files[i].ctrl], fd;
                if (d < 0)
                        continue;
                fd = openat(run->dir_fds[d], files[i].file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
                if (fd < 0 && !(files[i].optional && errno == ENOENT))
                        return nsb_fail(e, NSB_STAGE_CGROUP, errno, "open %s/%s", run->name, files[i].file);
                run->usage_fds[files[i].slot] = fd;
        }
        return 0;
}

static int v1_create(const struct cg_env *env, const struct cg_facts *f, const struct cg_spec *spec,
                     struct cg_run *ret, struct nsb_error *e)
{
        static const int order[] = { CG_V1_MEMORY, CG_V1_PIDS, CG_V1_CPUACCT };
        const char *why = cg_v1_unusable(f);
        struct cg_plan plan;
        int n_dirs = 0, r;

        cg_run_init(ret);
        ret->backend = CG_BACKEND_V1;
        ret->fake_files = env->fake_files;
        if (why)
                return nsb_fail(e, NSB_STAGE_CGROUP, EOPNOTSUPP, "cgroup v1: %s", why);
        r = cg_plan_limits(CG_BACKEND_V1, spec, &plan, e);
        if (r < 0)
                return r;
        r = cg_format_run_name(getpid(), spec->serial, ret->name, sizeof ret->name);
        if (r < 0)
                return nsb_fail(e, NSB_STAGE_CGROUP, -r, "run cgroup name");

        for (size_t k = 0; k < ARRAY_SIZE(order); k++) {
                int c = order[k];
                if (c == CG_V1_CPUACCT && !v1_cpuacct_usable(f))
                        continue;       /* CPU time then comes from wait4() rusage */
                r = v1_make_dir(env, f, c, &n_dirs, ret, e);
                if (r < 0)
                        goto out;
        }
        /* Every limit is written before the child exists, so it is bounded
         * from the moment it joins. */
        for (size_t i = 0; i < plan.n; i++) {
                const struct cg_write *w = &plan.w[i];
                int dir = ret->dir_fds[ret->ctrl_dir[w->ctrl]];
                r = cg_write_at(dir, w->file, w->value);
                if (r == -ENOENT && w->optional)
                        continue;       /* e.g. no swap accounting: no memsw files */
                if (r < 0) {
                        nsb_fail(e, NSB_STAGE_CGROUP, -r, "write %s=%s in %s", w->file, w->value, ret->name);
                        goto out;
                }
        }
        r = v1_open_usage(ret, e);
        if (r < 0)
                goto out;
        return 0;
out:
        v1_destroy(ret);
        return r;
}

static int v1_child_join(struct cg_run *run, const struct cg_spec *spec, struct nsb_error *e)
{
        /* Before the program exists: until these writes the child is only in the
         * supervisor's cgroups, unbounded. */
        return cg_join_by_fds(run, e);
}

static int v1_read_usage(struct cg_run *run, struct cg_usage *ret, struct nsb_error *e)
{
        char buf[1024];
        uint64_t v;
        int n;

        memset(ret, 0, sizeof *ret);
        if (run->usage_fds[CG_U_MEM_OOMCTL] >= 0) {
                n = cg_read_usage_slot(run, CG_U_MEM_OOMCTL, buf, sizeof buf, e);
                if (n < 0)
                        return n;
                /* "oom_kill N" exists since 4.13 */
                ret->oom_killed = cg_parse_kv(buf, (size_t) n, "oom_kill", &v) == 0 && v > 0;
        }
        if (run->usage_fds[CG_U_MEM_FAILCNT] >= 0) {
                n = cg_read_usage_slot(run, CG_U_MEM_FAILCNT, buf, sizeof buf, e);
                if (n < 0)
                        return n;
                ret->memory_limit_hit = ret->oom_killed || (cg_parse_u64(buf, (size_t) n, &v) == 0 && v > 0);
        }
        n = cg_read_pids_and_peak(run, ret, buf, sizeof buf, e);
        if (n < 0)
                return n;
        if (run->usage_fds[CG_U_CPU] >= 0) {
                n = cg_read_usage_slot(run, CG_U_CPU, buf, sizeof buf, e);
                if (n < 0)
                        return n;
                if (cg_parse_u64(buf, (size_t) n, &v) == 0) {   /* nanoseconds */
                        ret->cpu_usec = v / 1000;
                        ret->cpu_known = true;
                }
        }
        return 0;
}

static int v1_kill_all(struct cg_run *run, struct nsb_error *e)
{
        static const int order[] = { CG_V1_PIDS, CG_V1_MEMORY, CG_V1_CPUACCT };
        int done[CG_RUN_DIRS] = { 0 };

        /* pids first: cg_kill_procs sets pids.max = 0 there, so no task can
         * fork while we kill; the other hierarchies hold the same tasks. */
        for (size_t k = 0; k < ARRAY_SIZE(order); k++) {
                int d = run->ctrl_dir[order[k]], r;
                if (d < 0 || done[d] || run->dir_fds[d] < 0)
                        continue;
                done[d] = 1;
                r = cg_kill_procs(run->dir_fds[d]);
                if (r < 0)
                        return nsb_fail(e, NSB_STAGE_CGROUP, -r, "kill the tasks of %s", run->name);
        }
        return 0;
}

static void v1_destroy(struct cg_run *run)
{
        if (run->name[0])
                for (size_t i = 0; i < CG_RUN_DIRS; i++)
                        if (run->parent_fds[i] >= 0)
                                (void) cg_rmdir_at(run->parent_fds[i], run->name, run->fake_files, true);
        run->name[0] = '\0';
        cg_close_run_fds(run);
}

const struct cg_ops cg_v1_ops = {
        .label = "cgroup1",
        .create = v1_create,
        .child_join = v1_child_join,
        .read_usage = v1_read_usage,
        .kill_all = v1_kill_all,
        .destroy = v1_destroy,
};
