/* profile/pyvenv_parse.c — the two keys of a venv's pyvenv.cfg nsbox needs:
 * "home" (the base interpreter's directory: where CPython's getpath looks
 * for the standard library of a venv, --copies or not) and "version" (which
 * lib/pythonX.Y it is). The reading is getpath's: "key = value" lines, the
 * key compared without blanks and case, the value stripped. Pure. */
#include "profile/profile_internal.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* [*p, end): one line's key or value with blanks at both ends dropped. */
static void strip(const char **p, const char **end)
{
        while (*p < *end && isspace((unsigned char) **p))
                (*p)++;
        while (*end > *p && isspace((unsigned char) (*end)[-1]))
                (*end)--;
}

int pyvenv_parse(const char *buf, size_t len, char *ret_home, size_t home_size, unsigned *ret_major,
                 unsigned *ret_minor)
{
        const char *line = buf, *stop = buf + len;
        bool have_home = false;

        *ret_major = *ret_minor = 0;
        while (line < stop) {
                const char *nl = memchr(line, '\n', (size_t) (stop - line));
                const char *end = nl ? nl : stop, *eq = memchr(line, '=', (size_t) (end - line));
                const char *k = line, *kend = eq, *v = eq ? eq + 1 : NULL, *vend = end;

                line = nl ? nl + 1 : stop;
                if (!eq)
                        continue;
                strip(&k, &kend);
                strip(&v, &vend);
                if ((size_t) (kend - k) == 4 && strncasecmp(k, "home", 4) == 0) {
                        if (vend == v || memchr(v, '\0', (size_t) (vend - v)) || (size_t) (vend - v) >= home_size)
                                return -EINVAL;
                        memcpy(ret_home, v, (size_t) (vend - v));
                        ret_home[vend - v] = '\0';
                        have_home = true;
                } else if ((size_t) (kend - k) == 7 && strncasecmp(k, "version", 7) == 0) {
                        char ver[32];
                        size_t n = (size_t) (vend - v) < sizeof ver - 1 ? (size_t) (vend - v) : sizeof ver - 1;
                        memcpy(ver, v, n);
                        ver[n] = '\0';
                        if (sscanf(ver, "%u.%u", ret_major, ret_minor) != 2)
                                *ret_major = *ret_minor = 0;
                }
        }
        return have_home ? 0 : -ENOENT;
}
