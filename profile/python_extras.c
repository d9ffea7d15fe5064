/* profile/python_extras.c — what a python profile adds to the interpreter's
 * closure: a virtual environment's pyvenv.cfg and the package directories the
 * profile names. Reads the host (access, and lstat through profile_add_path).
 *
 * A venv (python3 -m venv) is a directory with pyvenv.cfg, bin/python (a
 * symlink to the base interpreter) and lib/pythonX.Y/site-packages. CPython
 * finds pyvenv.cfg next to argv[0] or one directory up, takes the standard
 * library from the base interpreter's prefix ("home = ..."), and puts the
 * venv's site-packages on sys.path. So inside the sandbox we need: the
 * bin/python symlink chain (mirrored by profile_add_python), pyvenv.cfg, and
 * of site-packages only the packages the profile names, each at its own host
 * path; argv[0] must be the venv's path (cfg_python_argv does that).
 */
#include "profile/profile.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* pyvenv.cfg of the venv @interpreter belongs to, into @ret; -ENOENT if none. */
static int find_pyvenv_cfg(const char *interpreter, char *ret)
{
        char dir[PATH_MAX];
        char *slash;

        if (interpreter[0] != '/' || strlen(interpreter) >= sizeof dir)
                return -ENOENT;
        snprintf(dir, sizeof dir, "%s", interpreter);
        for (int up = 0; up < 2; up++) {
                slash = strrchr(dir, '/');
                if (!slash || slash == dir)
                        return -ENOENT;
                *slash = '\0';
                if ((size_t) snprintf(ret, PATH_MAX, "%s/pyvenv.cfg", dir) < PATH_MAX && access(ret, R_OK) == 0)
                        return 0;
        }
        return -ENOENT;
}

int profile_add_python_extras(struct host_set *set, const char *interpreter, char *const *packages,
                              size_t n_packages, struct nsb_error *e)
{
        char cfg[PATH_MAX];
        int r;

        if (interpreter && find_pyvenv_cfg(interpreter, cfg) == 0) {
                r = profile_add_path(set, cfg, e);
                if (r < 0)
                        return nsb_error_prefix(e, "virtual environment of '%s'", interpreter);
        }
        for (size_t i = 0; i < n_packages; i++) {
                r = profile_add_path(set, packages[i], e);
                if (r < 0)
                        return nsb_error_prefix(e, "package");
        }
        return 0;
}
