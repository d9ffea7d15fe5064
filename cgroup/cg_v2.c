/* cgroup/cg_v2.c — the cgroup v2 backend: one run cgroup beneath our own,
 * entered by the child at birth through clone3(CLONE_INTO_CGROUP). */
#include "cgroup/cg_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "util/cleanup.h"

static void v2_destroy(struct cg_run *run);

static const char *ctrl_list(unsigned mask)
{
        switch (mask & (CG_CTRL_MEMORY | CG_CTRL_PIDS)) {
        case CG_CTRL_MEMORY:
                return "+memory";
        case CG_CTRL_PIDS:
                return "+pids";
        default:
                return "+memory +pids";
        }
}

/* The no-internal-processes rule (cgroup-v2.rst): a non-root cgroup can turn
 * on controllers for its children only while no process sits in it. So when
 * memory/pids are not yet enabled below our cgroup, we first move ourselves
 * into a leaf nsbox-sup-<pid> (we stay there for the rest of our life), then
 * enable them. Any other process in our cgroup makes the write fail (EBUSY):
 * cg_v2_unusable() already refused that case from the facts. */
static int v2_enable_controllers(const struct cg_env *env, const struct cg_facts *f, int base,
                                 struct nsb_error *e)
{
        char buf[512], sup[40], procs[64];
        unsigned missing;
        ssize_t n;
        int r;

        /* Facts may be stale: an earlier create in this process did it already. */
        n = cg_read_at(base, "cgroup.subtree_control", buf, sizeof buf);
        if (n < 0)
                return nsb_fail(e, NSB_STAGE_CGROUP, (int) -n, "read %s/cgroup.subtree_control", f->v2_base_rel);
        missing = (CG_CTRL_MEMORY | CG_CTRL_PIDS) & ~cg_parse_controllers(buf, (size_t) n);
        if (!missing)
                return 0;

        /* From outside a --cgroup-parent nothing of ours is in it: enable
         * directly (the kernel refuses, EBUSY, if someone else moved in). */
        if (!f->v2_base_is_root && !f->v2_in_sup_leaf && !f->v2_self_outside) {
                r = cg_format_sup_name(getpid(), sup, sizeof sup);
                if (r < 0)
                        return nsb_fail(e, NSB_STAGE_CGROUP, -r, "supervisor cgroup name");
                r = cg_mkdir_at(base, sup, env->fake_files);
                if (r < 0 && r != -EEXIST)
                        return nsb_fail(e, NSB_STAGE_CGROUP, -r, "mkdir %s/%s", f->v2_base_rel, sup);
                snprintf(procs, sizeof procs, "%s/cgroup.procs", sup);
                /* "0" = the writing process (all its threads, via cgroup.procs). */
                r = cg_write_at(base, procs, "0");
                if (r < 0)
                        return nsb_fail(e, NSB_STAGE_CGROUP, -r, "move the supervisor into %s/%s",
                                        f->v2_base_rel, sup);
        }
        r = cg_write_at(base, "cgroup.subtree_control", ctrl_list(missing));
        if (r < 0)
                return nsb_fail(e, NSB_STAGE_CGROUP, -r, "enable %s in %s/cgroup.subtree_control%s",
                                ctrl_list(missing), f->v2_base_rel,
                                r == -EBUSY ? " (other processes in this cgroup)" : "");
        return 0;
}

int cg_v2_prepare(const struct cg_env *env, const struct cg_facts *f, struct nsb_error *e)
{
        AUTOCLOSE int base = openat(env->sys_cgroup_fd, f->v2_base_rel, O_PATH | O_DIRECTORY | O_CLOEXEC);

        if (base < 0)
                return nsb_fail(e, NSB_STAGE_CGROUP, errno, "open %s", f->v2_base_rel);
        return v2_enable_controllers(env, f, base, e);
}

static int v2_mkdir_run(int base, const char *name, const char *const *fake_files)
{
        int r = cg_mkdir_at(base, name, fake_files);

        if (r != -EEXIST)
                return r;
        /* Our pid was reused after an earlier nsbox died and left this name
         * behind. rmdir succeeds only when it holds no live task (the kernel
         * checks), so a populated cgroup is never taken over. */
        r = cg_rmdir_at(base, name, fake_files, false);
        if (r < 0)
                return -EEXIST;
        return cg_mkdir_at(base, name, fake_files);
}

/* The usage files of @dir (the run cgroup, or its leaf once it is a parent). */
static int v2_open_usage(struct cg_run *run, int dir, struct nsb_error *e)
{
        static const struct { enum cg_usage_file slot; const char *file; bool optional; } files[] = {
                { CG_U_MEM_EVENTS, "memory.events", false },
                { CG_U_PIDS_EVENTS, "pids.events", false },
                { CG_U_CPU, "cpu.stat", false },
                { CG_U_MEM_PEAK, "memory.peak", true },         /* 5.19+ */
        };
        for (size_t i = 0; i < ARRAY_SIZE(files); i++) {
                int fd = openat(dir, files[i].file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
                if (fd < 0 && !(files[i].optional && errno == ENOENT))
                        return nsb_fail(e, NSB_STAGE_CGROUP, errno, "open %s/%s", run->name, files[i].file);
                run->usage_fds[files[i].slot] = fd;
        }
        if (run->usage_fds[CG_U_MEM_PEAK] < 0) {
                run->usage_fds[CG_U_MEM_CURRENT] = openat(dir, "memory.current", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
                if (run->usage_fds[CG_U_MEM_CURRENT] < 0)
                        return nsb_fail(e, NSB_STAGE_CGROUP, errno, "open %s/memory.current", run->name);
        }
        return 0;
}

/* @*base := its child @name when that is a parent run, ready for run
 * cgroups (memory and pids in its cgroup.subtree_control: make_parent got
 * that far); true then. Otherwise *base stays and the run goes there. */
static bool v2_enter_parent_run(int *base, const char *name)
{
        AUTOCLOSE int fd = -1;
        char buf[256];
        ssize_t n;

        if (cg_parse_name(name, &(pid_t){ 0 }) != CG_NAME_RUN)
                return false;   /* only a run cgroup of ours, never a path */
        fd = openat(*base, name, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return false;
        n = cg_read_at(fd, "cgroup.subtree_control", buf, sizeof buf);
        if (n < 0 || (cg_parse_controllers(buf, (size_t) n) & (CG_CTRL_MEMORY | CG_CTRL_PIDS)) !=
                             (CG_CTRL_MEMORY | CG_CTRL_PIDS))
                return false;
        close_fd(base);
        *base = move_fd(&fd);
        return true;
}

static int v2_create(const struct cg_env *env, const struct cg_facts *f, const struct cg_spec *spec,
                     struct cg_run *ret, struct nsb_error *e)
{
        const char *why = cg_v2_unusable(f);
        struct cg_plan plan;
        AUTOCLOSE int base = -1;
        int r;

        cg_run_init(ret);
        ret->backend = CG_BACKEND_V2;
        ret->fake_files = env->fake_files;
        if (why)
                return nsb_fail(e, NSB_STAGE_CGROUP, EOPNOTSUPP, "cgroup v2: %s", why);
        r = cg_plan_limits(CG_BACKEND_V2, spec, &plan, e);
        if (r < 0)
                return r;

        base = openat(env->sys_cgroup_fd, f->v2_base_rel, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (base < 0)
                return nsb_fail(e, NSB_STAGE_CGROUP, errno, "open own cgroup %s", f->v2_base_rel);
        if (spec->in_run && spec->join_by_fd && v2_enter_parent_run(&base, spec->in_run)) {
                ret->in_run = true;
        } else if (cg_v2_missing_subtree(f)) {
                r = v2_enable_controllers(env, f, base, e);
                if (r < 0)
                        return r;
        }

        r = cg_format_run_name(getpid(), spec->serial, ret->name, sizeof ret->name);
        if (r < 0)
                return nsb_fail(e, NSB_STAGE_CGROUP, -r, "run cgroup name");
        r = v2_mkdir_run(base, ret->name, env->fake_files);
        if (r < 0) {
                nsb_fail(e, NSB_STAGE_CGROUP, -r, "mkdir %s/%s", f->v2_base_rel, ret->name);
                ret->name[0] = '\0';    /* not ours: never remove it */
                return r;
        }
        ret->parent_fds[0] = move_fd(&base);

        ret->dir_fds[0] = openat(ret->parent_fds[0], ret->name, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (ret->dir_fds[0] < 0) {
                r = nsb_fail(e, NSB_STAGE_CGROUP, errno, "open %s", ret->name);
                goto out;
        }
        /* A second descriptor for clone3: the child closes its copy of this
         * one in child_join, the parent keeps dir_fds[0] for its own use. */
        ret->clone_fd = fcntl(ret->dir_fds[0], F_DUPFD_CLOEXEC, 3);
        if (ret->clone_fd < 0) {
                r = nsb_fail(e, NSB_STAGE_CGROUP, errno, "dup %s", ret->name);
                goto out;
        }
        if (spec->join_by_fd) {
                /* Inside a parent run the zygote may clone into it
                 * (clone_fd); the join fd is the fallback when it cannot. */
                if (!ret->in_run)
                        close_fd(&ret->clone_fd);
                ret->join_fds[0] = openat(ret->dir_fds[0], "cgroup.procs", O_WRONLY | O_CLOEXEC);
                if (ret->join_fds[0] < 0) {
                        r = nsb_fail(e, NSB_STAGE_CGROUP, errno, "open %s/cgroup.procs", ret->name);
                        goto out;
                }
        }
        /* A root caller's zygote runs as the sandbox's host uid, not root:
         * CLONE_INTO_CGROUP checks the caller's write access to the target's
         * cgroup.procs (cgroup_may_write), as delegation does for a user.
         * Only that file: the limits stay root's. */
        if (ret->in_run && spec->procs_owner != (uid_t) -1 &&
            fchownat(ret->dir_fds[0], "cgroup.procs", spec->procs_owner, spec->procs_group, 0) < 0) {
                r = nsb_fail(e, NSB_STAGE_CGROUP, errno, "chown %s/cgroup.procs", ret->name);
                goto out;
        }
        /* Limits are in place before any task enters: the child is born into
         * this cgroup already bounded. */
        for (size_t i = 0; i < plan.n; i++) {
                const struct cg_write *w = &plan.w[i];
                r = cg_write_at(ret->dir_fds[0], w->file, w->value);
                if (r == -ENOENT && w->optional)
                        continue;       /* e.g. no swap accounting: no memory.swap.max */
                if (r < 0) {
                        nsb_fail(e, NSB_STAGE_CGROUP, -r, "write %s=%s in %s", w->file, w->value, ret->name);
                        goto out;
                }
        }
        r = v2_open_usage(ret, ret->dir_fds[0], e);
        if (r < 0)
                goto out;
        return 0;
out:
        v2_destroy(ret);
        return r;
}

static int v2_make_parent(struct cg_run *run, pid_t init, uid_t procs_owner, gid_t procs_group,
                          struct nsb_error *e)
{
        char pid[24];
        int usage[CG_U__MAX];
        int r;

        if (run->dir_fds[0] < 0 || run->dir_fds[1] >= 0)
                return nsb_fail(e, NSB_STAGE_CGROUP, EINVAL, "%s: no run cgroup, or a parent already", run->name);
        r = cg_mkdir_at(run->dir_fds[0], CG_V2_RUN_LEAF, run->fake_files);
        if (r < 0)
                return nsb_fail(e, NSB_STAGE_CGROUP, -r, "mkdir %s/%s", run->name, CG_V2_RUN_LEAF);
        /* From here destroy removes the leaf first (dir_fds[1]). */
        run->dir_fds[1] = openat(run->dir_fds[0], CG_V2_RUN_LEAF, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (run->dir_fds[1] < 0)
                return nsb_fail(e, NSB_STAGE_CGROUP, errno, "open %s/%s", run->name, CG_V2_RUN_LEAF);
        /* The one move of the generation (a write to cgroup.procs takes
         * cgroup_threadgroup_rwsem for writing: an RCU grace period when
         * writes are sparse, the cost each job's own move paid). The init
         * waits for "go" and has forked nothing: it is the run's only task.
         * Its cgroup namespace stays rooted at the run cgroup, above the leaf. */
        snprintf(pid, sizeof pid, "%d", (int) init);
        r = cg_write_at(run->dir_fds[1], "cgroup.procs", pid);
        if (r < 0)
                return nsb_fail(e, NSB_STAGE_CGROUP, -r, "move the init into %s/%s", run->name, CG_V2_RUN_LEAF);
        if (procs_owner != (uid_t) -1 &&
            fchownat(run->dir_fds[0], "cgroup.procs", procs_owner, procs_group, 0) < 0)
                return nsb_fail(e, NSB_STAGE_CGROUP, errno, "chown %s/cgroup.procs", run->name);
        /* Only now, with no task in the run cgroup itself, may it enable
         * controllers for its children (no internal processes). This is
         * what makes it a parent (v2_enter_parent_run): the last step. */
        r = cg_write_at(run->dir_fds[0], "cgroup.subtree_control", "+memory +pids");
        if (r < 0)
                return nsb_fail(e, NSB_STAGE_CGROUP, -r, "enable memory and pids in %s/cgroup.subtree_control",
                                run->name);
        /* The run cgroup's own events now count its children's (memory.events
         * and cpu.stat are hierarchical): the run's usage is its leaf's (whose
         * files exist only now). Failing that, it is no parent after all. */
        for (size_t i = 0; i < CG_U__MAX; i++) {
                usage[i] = run->usage_fds[i];
                run->usage_fds[i] = -1;
        }
        r = v2_open_usage(run, run->dir_fds[1], e);
        for (size_t i = 0; i < CG_U__MAX; i++) {
                if (r < 0) {
                        close_fd(&run->usage_fds[i]);
                        run->usage_fds[i] = usage[i];
                } else {
                        close_fd(&usage[i]);
                }
        }
        if (r < 0) {
                (void) cg_write_at(run->dir_fds[0], "cgroup.subtree_control", "-memory -pids");
                return r;
        }
        run->is_parent = true;
        return 0;
}

static int v2_child_join(struct cg_run *run, const struct cg_spec *spec, struct nsb_error *e)
{
        /* Cold: nothing to join, clone3(CLONE_INTO_CGROUP) placed us; the
         * inherited descriptors are dropped so the program never sees a
         * cgroup fd. Warm (spec->join_by_fd): the parent's cgroup.procs fd. */
        return cg_join_by_fds(run, e);
}

static int v2_read_usage(struct cg_run *run, struct cg_usage *ret, struct nsb_error *e)
{
        char buf[2048];
        uint64_t v;
        int n;

        memset(ret, 0, sizeof *ret);
        if (run->usage_fds[CG_U_MEM_EVENTS] >= 0) {
                uint64_t max = 0, oom = 0, oom_kill = 0;
                n = cg_read_usage_slot(run, CG_U_MEM_EVENTS, buf, sizeof buf, e);
                if (n < 0)
                        return n;
                (void) cg_parse_kv(buf, (size_t) n, "max", &max);
                (void) cg_parse_kv(buf, (size_t) n, "oom", &oom);
                (void) cg_parse_kv(buf, (size_t) n, "oom_kill", &oom_kill);
                ret->oom_killed = oom_kill > 0;
                ret->memory_limit_hit = max > 0 || oom > 0 || oom_kill > 0;
        }
        n = cg_read_pids_and_peak(run, ret, buf, sizeof buf, e);
        if (n < 0)
                return n;
        if (run->usage_fds[CG_U_CPU] >= 0) {
                n = cg_read_usage_slot(run, CG_U_CPU, buf, sizeof buf, e);
                if (n < 0)
                        return n;
                ret->cpu_known = cg_parse_kv(buf, (size_t) n, "usage_usec", &ret->cpu_usec) == 0;
        }
        if (run->usage_fds[CG_U_MEM_PEAK] < 0 && run->usage_fds[CG_U_MEM_CURRENT] >= 0) {
                /* Before 5.19 there is no memory.peak: the largest value seen
                 * by any poll (a spike between polls is missed). */
                n = cg_read_usage_slot(run, CG_U_MEM_CURRENT, buf, sizeof buf, e);
                if (n < 0)
                        return n;
                if (cg_parse_u64(buf, (size_t) n, &v) == 0 && v > run->peak_seen)
                        run->peak_seen = v;
                ret->peak_memory_bytes = run->peak_seen;
                ret->peak_known = true;
        }
        return 0;
}

static int v2_kill_all(struct cg_run *run, struct nsb_error *e)
{
        int r;

        if (run->dir_fds[0] < 0)
                return 0;
        /* cgroup.kill (5.14+) SIGKILLs every task of the cgroup and its
         * descendants at once, with no pid races; older kernels get the loop. */
        r = cg_write_at(run->dir_fds[0], "cgroup.kill", "1");
        if (r == -ENOENT)
                r = cg_kill_procs(run->dir_fds[0]);
        if (r < 0)
                return nsb_fail(e, NSB_STAGE_CGROUP, -r, "kill the tasks of %s", run->name);
        return 0;
}

static void v2_destroy(struct cg_run *run)
{
        /* A cgroup that stays busy past the short retry is left for
         * cg_reap_stale() of a later nsbox, once this process is gone. */
        if (run->dir_fds[1] >= 0 && run->dir_fds[0] >= 0)    /* a parent run's own leaf */
                (void) cg_rmdir_at(run->dir_fds[0], CG_V2_RUN_LEAF, run->fake_files, true);
        if (run->name[0] && run->parent_fds[0] >= 0)
                (void) cg_rmdir_at(run->parent_fds[0], run->name, run->fake_files, true);
        run->name[0] = '\0';
        cg_close_run_fds(run);
}

const struct cg_ops cg_v2_ops = {
        .label = "cgroup2",
        .create = v2_create,
        .child_join = v2_child_join,
        .read_usage = v2_read_usage,
        .kill_all = v2_kill_all,
        .destroy = v2_destroy,
        .make_parent = v2_make_parent,
};
