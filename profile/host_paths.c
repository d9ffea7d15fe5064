/* profile/host_paths.c — the parts of profile.h every platform needs: a
 * host_set's memory and the PATH lookup of a command. Portable (POSIX). */
#include "profile/profile.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/strv.h"

void host_set_free(struct host_set *set)
{
        for (size_t i = 0; i < set->n; i++) {
                free(set->v[i].path);
                free(set->v[i].target);
        }
        free(set->v);
        set->v = NULL;
        set->n = 0;
        for (size_t i = 0; i < set->n_hidden; i++)
                free(set->hidden[i]);
        free(set->hidden);
        set->hidden = NULL;
        set->n_hidden = 0;
        free(set->root);
        set->root = NULL;
}

int host_set_add_hidden(struct host_set *set, const char *dir)
{
        return strv_add(&set->hidden, &set->n_hidden, dir, true) < 0 ? -ENOMEM : 0;
}

int profile_which(const char *name, const char *search_path, char **ret, struct nsb_error *e)
{
        char cand[PATH_MAX], denied[PATH_MAX] = "";
        const char *p = search_path;

        if (strchr(name, '/')) {
                if (name[0] != '/') {
                        char cwd[PATH_MAX];
                        if (!getcwd(cwd, sizeof cwd))
                                return nsb_fail(e, NSB_STAGE_PREPARE, errno, "getcwd");
                        snprintf(cand, sizeof cand, "%s/%s", cwd, name);
                } else {
                        snprintf(cand, sizeof cand, "%s", name);
                }
                if (access(cand, X_OK) < 0)
                        return nsb_fail(e, NSB_STAGE_PREPARE, errno, "command '%s'", name);
                return (*ret = strdup(cand)) ? 0 : nsb_fail(e, NSB_STAGE_PREPARE, ENOMEM, "out of memory");
        }
        while (p && *p) {
                const char *colon = strchr(p, ':');
                size_t n = colon ? (size_t) (colon - p) : strlen(p);
                struct stat st;
                if (n > 0 && p[0] == '/') {
                        snprintf(cand, sizeof cand, "%.*s/%s", (int) n, p, name);
                        if (access(cand, X_OK) == 0 && stat(cand, &st) == 0 && S_ISREG(st.st_mode))
                                return (*ret = strdup(cand)) ? 0 : nsb_fail(e, NSB_STAGE_PREPARE, ENOMEM, "out of memory");
                        if (!denied[0] && stat(cand, &st) == 0)
                                snprintf(denied, sizeof denied, "%s", cand);
                }
                p = colon ? colon + 1 : NULL;
        }
        /* execvp's rule (and so timeout(1)'s and env(1)'s 126): a name PATH
         * holds only as something that cannot be executed is not missing. */
        if (denied[0])
                return nsb_fail(e, NSB_STAGE_PREPARE, EACCES,
                                "command '%s' is on PATH only as '%s', which is not an executable file", name, denied);
        return nsb_fail(e, NSB_STAGE_PREPARE, ENOENT, "command '%s' not found on PATH", name);
}
