/* supervisor/env_plan.c — the program's environment. Pure.
 * Nothing of the caller's environment passes: a fixed base set, then the
 * user's --env additions (which may override the base). */
#include "supervisor/env_plan.h"
#include "util/cleanup.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char *const base_env[] = {
        "PATH=" SBX_PROGRAM_PATH,
        "HOME=",                /* + the temporary directory */
        "LANG=C.UTF-8",
        "LC_ALL=C.UTF-8",
        "TMPDIR=",              /* + the temporary directory */
        "PYTHONDONTWRITEBYTECODE=1",
        "PYTHONUNBUFFERED=1",
        /* glibc gives each thread that mallocs its own arena, up to 8 per
         * CPU, each reserving 64 MiB of address space: under RLIMIT_AS (the
         * rlimit backend) 8 threads took 599 MiB on a 2-CPU host and failed
         * to start under 256M. Two arenas (the main one and one more) keep
         * 8 threads at 151 MiB, 16 at 223 MiB; Python's GIL serialises most
         * allocation anyway. The same on every backend, so the program sees
         * one environment whatever the host. */
        "MALLOC_ARENA_MAX=2",
};

static char *base_entry(const char *entry, const char *tmp_dir)
{
        size_t n = strlen(entry);
        char *s;

        if (entry[n - 1] != '=')
                return strdup(entry);
        s = malloc(n + strlen(tmp_dir) + 1);
        if (s) {
                memcpy(s, entry, n);
                strcpy(s + n, tmp_dir);
        }
        return s;
}

void env_free(char **envp)
{
        for (size_t i = 0; envp && envp[i]; i++)
                free(envp[i]);
        free(envp);
}

int env_build(const struct nsb_config *cfg, const char *tmp_dir, char ***ret, struct nsb_error *e)
{
        size_t n_base = ARRAY_SIZE(base_env), n = 0;
        size_t n_add = cfg->n_image_env + cfg->n_env_add;
        char **envp = calloc(n_base + n_add + 1, sizeof *envp);

        if (!envp)
                return nsb_fail(e, NSB_STAGE_CONFIG, ENOMEM, "out of memory");
        for (size_t i = 0; i < n_base; i++)
                if (!(envp[n++] = base_entry(base_env[i], tmp_dir ? tmp_dir : "/tmp")))
                        goto oom;
        /* an image's Env over nsbox's set, the profile's and --env over both */
        for (size_t i = 0; i < n_add; i++) {
                const char *add = i < cfg->n_image_env ? cfg->image_env[i] : cfg->env_add[i - cfg->n_image_env];
                size_t klen = strcspn(add, "=");
                size_t k;

                /* HOME and TMPDIR name the sandbox's own writable /tmp: an
                 * image's (HOME=/root) would point into its read-only root */
                if (i < cfg->n_image_env && (strncmp(add, "HOME=", 5) == 0 || strncmp(add, "TMPDIR=", 7) == 0))
                        continue;
                for (k = 0; k < n; k++)
                        if (strncmp(envp[k], add, klen + 1) == 0)
                                break;
                if (k < n)
                        free(envp[k]);
                if (!(envp[k] = strdup(add)))
                        goto oom;
                if (k == n)
                        n++;
        }
        envp[n] = NULL;
        *ret = envp;
        return 0;
oom:
        env_free(envp);
        return nsb_fail(e, NSB_STAGE_CONFIG, ENOMEM, "out of memory");
}
