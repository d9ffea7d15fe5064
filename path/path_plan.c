/* path/path_plan.c — see path.h. Pure and portable. */
#include "path/path.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

const char *const path_reserved[PATH_N_RESERVED] = { "/proc",    "/dev",    "/tmp",  "/workspace",
                                                     "/program", "/harness", "/nsbox" };

bool path_under(const char *path, const char *dir)
{
        size_t n = strlen(dir);
        if (strcmp(dir, "/") == 0)
                return true;
        return strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

bool path_has_dotdot(const char *p)
{
        for (const char *s = p; (s = strstr(s, "..")); s += 2)
                if ((s == p || s[-1] == '/') && (s[2] == '/' || !s[2]))
                        return true;
        return false;
}

bool path_is_reserved(const char *dst)
{
        if (strcmp(dst, "/") == 0)
                return true;
        for (size_t i = 0; i < PATH_N_RESERVED; i++)
                if (path_under(dst, path_reserved[i]))
                        return true;
        return false;
}

int path_normalize(const char *dst, const char *what, char **ret, struct nsb_error *e)
{
        char *out, *o;
        const char *p = dst;

        if (!dst || dst[0] != '/')
                return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL, "%s: destination '%s' is not absolute", what,
                                dst ? dst : "");
        if (!(out = malloc(strlen(dst) + 2)))
                return nsb_fail(e, NSB_STAGE_CONFIG, ENOMEM, "out of memory");
        o = out;
        while (*p) {
                const char *c;
                size_t n;
                while (*p == '/')
                        p++;
                if (!*p)
                        break;
                c = p;
                while (*p && *p != '/')
                        p++;
                n = (size_t) (p - c);
                if (n == 1 && c[0] == '.')
                        continue;
                if (n == 2 && c[0] == '.' && c[1] == '.') {
                        free(out);
                        return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL,
                                        "%s: destination '%s' has a '..' component", what, dst);
                }
                *o++ = '/';
                memcpy(o, c, n);
                o += n;
        }
        if (o == out) {
                free(out);
                return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL, "%s: destination '%s' is the sandbox root", what, dst);
        }
        *o = '\0';
        *ret = out;
        return 0;
}

const char *path_conflict(const char *a, bool a_is_tmpfs, const char *b, bool b_is_tmpfs)
{
        if (strcmp(a, b) == 0)
                return "is mounted twice";
        if ((a_is_tmpfs || b_is_tmpfs) && (path_under(a, b) || path_under(b, a)))
                return "overlaps";
        return NULL;
}

bool path_nesting_refused(const char *inner, bool inner_ro, const char *outer, bool outer_ro)
{
        return inner_ro && !outer_ro && strcmp(inner, outer) != 0 && path_under(inner, outer);
}

int path_job_file_name(const char *key, const char *name, size_t len, struct nsb_error *e)
{
        const char *why = NULL;
        size_t comp = 0;

        if (len == 0)
                why = "is empty";
        else if (len > 1024)
                why = "is longer than 1024 bytes";
        else if (memchr(name, '\0', len))
                why = "holds a NUL";
        else if (name[0] == '/')
                why = "is absolute (names are relative to /workspace)";
        for (size_t i = 0; !why && i <= len; i++) {
                if (i < len && name[i] != '/') {
                        if (++comp > 255)
                                why = "has a component longer than 255 bytes";
                        continue;
                }
                if (comp == 0)
                        why = "has an empty component (\"//\" or a trailing \"/\")";
                else if ((comp == 1 && name[i - 1] == '.') || (comp == 2 && name[i - 1] == '.' && name[i - 2] == '.'))
                        why = "has a \".\" or \"..\" component (names stay inside /workspace)";
                comp = 0;
        }
        if (why)
                return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL, "%s: the name \"%.*s\" %s", key, len > 64 ? 64 : (int) len,
                                name, why);
        return 0;
}
