/* profile/shebang_parse.c — the "#!" line of a script, as execve(2) reads
 * it: the interpreter (up to the first blank) and at most one argument (the
 * rest of the line, blanks trimmed). Pure. */
#include "profile/profile.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static bool blank(char c)
{
        return c == ' ' || c == '\t';
}

int shebang_parse(const char *buf, size_t len, char **ret_interp, char **ret_arg)
{
        const char *p, *end, *nl;
        size_t n;

        *ret_interp = *ret_arg = NULL;
        if (len < 2 || buf[0] != '#' || buf[1] != '!')
                return 0;
        nl = memchr(buf, '\n', len);
        end = nl ? nl : buf + len;
        p = buf + 2;
        while (p < end && blank(*p))
                p++;
        for (n = 0; p + n < end && !blank(p[n]); n++)
                ;
        if (n == 0 || memchr(p, '\0', (size_t) (end - p)))
                return -EINVAL;
        if (!(*ret_interp = strndup(p, n)))
                return -ENOMEM;
        p += n;
        while (p < end && blank(*p))
                p++;
        while (end > p && (blank(end[-1]) || end[-1] == '\r'))
                end--;
        if (end > p && !(*ret_arg = strndup(p, (size_t) (end - p)))) {
                free(*ret_interp);
                *ret_interp = NULL;
                return -ENOMEM;
        }
        return 1;
}
