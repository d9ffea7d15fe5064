/* platform/posix/posix_plan.c — see posix.h. Pure. */
#include "platform/posix/posix.h"

#include <errno.h>
#include <string.h>
#include <sys/resource.h>

#include "supervisor/reduced.h"

static void add(struct px_rlimit_plan *p, int resource, const char *name, uint64_t value, int prot, bool lower_only)
{
        if (p->n < PX_MAX_RLIMITS)
                p->v[p->n++] = (struct px_rlimit){ resource, name, value, value, prot, lower_only };
}

uint64_t px_cpu_rlimit_s(const struct nsb_config *cfg)
{
        return (cfg_cpu_time_ms(cfg) + 999) / 1000;
}

void px_rlimits_plan(const struct nsb_config *cfg, long user_tasks, struct px_rlimit_plan *ret)
{
        memset(ret, 0, sizeof *ret);
        /* Per process. SIGXCPU at the limit, SIGKILL a second later (a
         * program that catches SIGXCPU gains at most that second): a SIGXCPU
         * death is the limit's beyond doubt, where POSIX gives no way to
         * read the clock the kernel checks (rusage can trail it by 10% and
         * more), so a SIGKILL at soft = hard could not be told from any other. */
        add(ret, RLIMIT_CPU, "RLIMIT_CPU", px_cpu_rlimit_s(cfg), PROT_CPU_TIME, false);
        ret->v[ret->n - 1].hard = px_cpu_rlimit_s(cfg) + 1;
        /* A longer write gets SIGXFSZ (EFBIG when ignored). */
        add(ret, RLIMIT_FSIZE, "RLIMIT_FSIZE", cfg->file_size_bytes, PROT_FILE_SIZE, false);
        add(ret, RLIMIT_CORE, "RLIMIT_CORE", 0, -1, false);
        add(ret, RLIMIT_NOFILE, "RLIMIT_NOFILE", PX_NOFILE_MAX, -1, true);
        /* Address space, per process (not the tree's sum): the POSIX limit
         * closest to a memory bound. Platforms that accept it without
         * enforcing it are named in docs/platforms.md. */
        if (cfg->memory_bytes)
                add(ret, RLIMIT_AS, "RLIMIT_AS", cfg->memory_bytes, PROT_MEMORY, false);
#ifdef RLIMIT_NPROC
        /* Not POSIX, but on Linux and the BSDs: per user, so the user's
         * other processes count too. */
        if (cfg->pids_max && user_tasks >= 0)
                add(ret, RLIMIT_NPROC, "RLIMIT_NPROC", cfg->pids_max + (uint64_t) user_tasks, PROT_PIDS, false);
#else
        (void) user_tasks;
#endif
}

int px_check(const struct nsb_config *cfg, const char *runner_dir, const char *sysname, struct nsb_error *e)
{
        int r;

        if (cfg->isolation != NSB_ISOLATION_REDUCED)
                return nsb_fail(e, NSB_STAGE_CLONE, ENOTSUP,
                                "strict isolation is not available on this platform (nsbox built for posix, "
                                "running on %s): it lacks user, mount, pid, network and IPC namespaces, cgroups, "
                                "seccomp and Landlock. Reduced isolation (a process group, rlimits, a private working "
                                "directory and a scrubbed environment; the program can read and write whatever your "
                                "user can, and reach the network) runs only when asked for by name: --isolation "
                                "reduced (docs/platforms.md)",
                                sysname);
        /* what reduced isolation refuses everywhere, in the same words */
        r = reduced_check(cfg, runner_dir, e);
        if (r < 0)
                return r;
        for (size_t i = 0; i < cfg->n_binds; i++)
                if (cfg->binds[i].read_only)
                        return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL,
                                        "--ro-bind %s cannot be enforced on the posix platform (no Landlock, no mount "
                                        "namespace): the program may write whatever your user may",
                                        cfg->binds[i].src);
        if (cfg->n_packages > 0)
                return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL,
                                "package %s is mounted read-only under Linux isolation, which the posix platform "
                                "cannot enforce (every package your user can read is importable, and writable where "
                                "your user may write)",
                                cfg->packages[0]);
        if (cfg->n_seccomp_deny > 0)
                return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL,
                                "seccomp_deny (%s, ...) cannot be enforced on the posix platform (no seccomp)",
                                cfg->seccomp_deny[0]);
        if (cfg->cgroup_parent)
                return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL,
                                "--cgroup-parent %s: the posix platform has no cgroups (memory and processes are "
                                "bounded per process by rlimits)",
                                cfg->cgroup_parent);
        return 0;
}
