/* mount/mnt_path.c — sandbox path checks the configuration needs on every
 * platform (mnt.h: mnt_path_under, mnt_path_is_reserved, mnt_dst_normalize).
 * Pure and portable; the Linux mount plan itself is mnt_plan.c. */
#include "mount/mnt.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

const char *const mnt_reserved[MNT_N_RESERVED] = { "/proc",    "/dev",    "/tmp",  "/workspace",
                                                   "/program", "/harness", "/nsbox" };

bool mnt_path_under(const char *path, const char *dir)
{
        size_t n = strlen(dir);
        if (strcmp(dir, "/") == 0)
                return true;
        return strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

bool mnt_path_is_reserved(const char *dst)
{
        if (strcmp(dst, "/") == 0)
                return true;
        for (size_t i = 0; i < MNT_N_RESERVED; i++)
                if (mnt_path_under(dst, mnt_reserved[i]))
                        return true;
        return false;
}

int mnt_dst_normalize(const char *dst, const char *what, char **ret, struct nsb_error *e)
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
