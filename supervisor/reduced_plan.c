/* supervisor/reduced_plan.c — see reduced.h. Pure: no syscalls. */
#include "supervisor/reduced.h"
#include "util/cleanup.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Device nodes every program may use: the same set strict isolation creates. */
static const char *const devices_rw[] = { "/dev/null", "/dev/zero", "/dev/full" };
static const char *const devices_ro[] = { "/dev/random", "/dev/urandom" };

int reduced_check(const struct nsb_config *cfg, const char *runner_dir, struct nsb_error *e)
{
        char why[NSB_ERROR_MSG_MAX];

        if (cfg_reduced_conflict(cfg, why, sizeof why))
                return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL, "%s", why);
        if (runner_dir)
                return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL,
                                "nsbox test needs strict isolation: its runner and harness are mounted at "
                                "/nsbox and /harness, which needs a mount namespace");
        if (cfg->harness)
                return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL,
                                "--harness is mounted at /harness, which needs a mount namespace; "
                                "under --isolation reduced use --ro-bind DIR (it stays at its host path)");
        return 0;
}

static int add(struct reduced_plan *p, size_t cap, const char *path, bool writable, struct nsb_error *e)
{
        if (p->n_rules >= cap)
                return nsb_fail(e, NSB_STAGE_PREPARE, E2BIG, "too many Landlock rules (%zu)", cap);
        p->rules[p->n_rules++] = (struct ll_path_rule){ path, writable };
        return 0;
}

int reduced_rules(struct reduced_plan *p, const struct nsb_config *cfg, const struct host_set *host,
                  const char *const *extra_ro, size_t n_extra, struct nsb_error *e)
{
        const size_t n_dev = ARRAY_SIZE(devices_rw)+ ARRAY_SIZE(devices_ro);
        const size_t cap = host->n + n_extra + cfg->n_binds + n_dev + 3;
        int r = 0;

        free(p->rules);
        p->n_rules = 0;
        p->rules = calloc(cap, sizeof *p->rules);
        if (!p->rules)
                return nsb_fail(e, NSB_STAGE_PREPARE, ENOMEM, "out of memory");
        /* Rules point into @host, @cfg and @p: they live as long as the run. */
        for (size_t i = 0; i < host->n && r == 0; i++)
                if (host->v[i].kind != HOST_SYMLINK)
                        r = add(p, cap, host->v[i].path, false, e);
        /* host->hidden is not enforced here: without a mount namespace
         * nothing covers it, and the rule for the directory holding it
         * grants its whole tree (docs/profiles.md, docs/security.md) */
        for (size_t i = 0; i < n_extra && r == 0; i++)
                r = add(p, cap, extra_ro[i], false, e);
        if (r == 0 && p->program_dir)
                r = add(p, cap, p->program_dir, false, e);
        for (size_t i = 0; i < cfg->n_binds && r == 0; i++)
                r = add(p, cap, cfg->binds[i].src, !cfg->binds[i].read_only, e);
        if (r == 0)
                r = add(p, cap, p->workdir, true, e);
        if (r == 0)
                r = add(p, cap, p->tmpdir, true, e);
        for (size_t i = 0; i < ARRAY_SIZE(devices_rw)&& r == 0; i++)
                r = add(p, cap, devices_rw[i], true, e);
        for (size_t i = 0; i < ARRAY_SIZE(devices_ro)&& r == 0; i++)
                r = add(p, cap, devices_ro[i], false, e);
        return r;
}

void reduced_argv_free(char **argv)
{
        for (size_t i = 0; argv && argv[i]; i++)
                free(argv[i]);
        free(argv);
}

int reduced_argv(const struct reduced_plan *p, const char *program_name, char *const *argv, size_t argc,
                 char ***ret, struct nsb_error *e)
{
        char **v = calloc(argc + 1, sizeof *v);
        char sandbox_path[4096];

        if (!v)
                return nsb_fail(e, NSB_STAGE_PREPARE, ENOMEM, "out of memory");
        if (program_name)
                snprintf(sandbox_path, sizeof sandbox_path, "/program/%s", program_name);
        for (size_t i = 0; i < argc; i++) {
                if (program_name && p->program_dir && strcmp(argv[i], sandbox_path) == 0) {
                        size_t n = strlen(p->program_dir) + 1 + strlen(program_name) + 1;
                        if ((v[i] = malloc(n)))
                                snprintf(v[i], n, "%s/%s", p->program_dir, program_name);
                } else {
                        v[i] = strdup(argv[i]);
                }
                if (!v[i]) {
                        reduced_argv_free(v);
                        return nsb_fail(e, NSB_STAGE_PREPARE, ENOMEM, "out of memory");
                }
        }
        *ret = v;
        return 0;
}
