/* cgroup/proc_tree_parse.c — see proc_tree.h. Pure. */
#include "cgroup/proc_tree.h"

#include <ctype.h>
#include <errno.h>
#include <string.h>

/* One unsigned decimal at *p (leading blanks skipped); advances *p. */
static int take_u64(const char **p, const char *end, uint64_t *ret)
{
        const char *s = *p;
        uint64_t v = 0;

        while (s < end && (*s == ' ' || *s == '\t'))
                s++;
        if (s >= end || !isdigit((unsigned char) *s))
                return -EINVAL;
        for (; s < end && isdigit((unsigned char) *s); s++) {
                unsigned d = (unsigned) (*s - '0');
                if (v > (UINT64_MAX - d) / 10)
                        return -EINVAL;
                v = v * 10 + d;
        }
        *p = s;
        *ret = v;
        return 0;
}

/* Skip one blank-separated field. */
static int skip_field(const char **p, const char *end)
{
        const char *s = *p;

        while (s < end && *s == ' ')
                s++;
        if (s >= end)
                return -EINVAL;
        while (s < end && *s != ' ')
                s++;
        *p = s;
        return 0;
}

int proc_parse_stat(const char *buf, size_t len, struct proc_stat *ret)
{
        const char *end = buf + len, *p = NULL, *s;
        uint64_t v, *times[4] = { &ret->utime, &ret->stime, &ret->cutime, &ret->cstime };

        for (s = buf; s < end; s++)
                if (*s == ')')
                        p = s + 1;
        if (!p)
                return -EINVAL;
        /* after "pid (comm)": the state is field 3, the parent's pid field 4 */
        while (p < end && *p == ' ')
                p++;
        if (p >= end)
                return -EINVAL;
        ret->state = *p++;
        if (take_u64(&p, end, &v) < 0 || v > INT32_MAX)
                return -EINVAL;
        ret->ppid = (pid_t) v;
        for (int f = 5; f < 9; f++)
                if (skip_field(&p, end) < 0)
                        return -EINVAL;
        if (take_u64(&p, end, &ret->flags) < 0)
                return -EINVAL;
        for (int f = 10; f < 14; f++)
                if (skip_field(&p, end) < 0)
                        return -EINVAL;
        for (int f = 14; f <= 17; f++)
                if (take_u64(&p, end, times[f - 14]) < 0)
                        return -EINVAL;
        /* priority and nice may be negative: skipped whole */
        for (int f = 18; f < 22; f++)
                if (skip_field(&p, end) < 0)
                        return -EINVAL;
        if (take_u64(&p, end, &ret->start) < 0)
                return -EINVAL;
        /* arg_start (field 48): 0 until execve has laid out the new stack
         * (and 0 when we may not read it); absent before 3.5: unknown */
        ret->arg_start = UINT64_MAX;
        for (int f = 23; f < 48; f++)
                if (skip_field(&p, end) < 0)
                        return 0;
        (void) take_u64(&p, end, &ret->arg_start);
        return 0;
}

int proc_parse_stat_ticks(const char *buf, size_t len, uint64_t *ret)
{
        struct proc_stat st;

        if (proc_parse_stat(buf, len, &st) < 0 || st.utime > UINT64_MAX / 4 || st.stime > UINT64_MAX / 4 ||
            st.cutime > UINT64_MAX / 4 || st.cstime > UINT64_MAX / 4)
                return -EINVAL;
        *ret = st.utime + st.stime + st.cutime + st.cstime;
        return 0;
}

int proc_parse_status_kb(const char *buf, size_t len, const char *key, uint64_t *ret)
{
        const char *end = buf + len, *line = buf;
        size_t klen = strlen(key);

        while (line < end) {
                const char *nl = memchr(line, '\n', (size_t) (end - line));
                const char *stop = nl ? nl : end;
                if ((size_t) (stop - line) > klen && memcmp(line, key, klen) == 0 && line[klen] == ':') {
                        const char *p = line + klen + 1;
                        uint64_t v;
                        if (take_u64(&p, stop, &v) < 0 || v > UINT64_MAX / 1024)
                                return -EINVAL;
                        *ret = v;
                        return 0;
                }
                line = stop + 1;
        }
        return -ENOENT;
}

int proc_parse_children(const char *buf, size_t len, pid_t *pids, size_t cap)
{
        const char *p = buf, *end = buf + len;
        size_t n = 0;

        for (;;) {
                uint64_t v;
                while (p < end && (*p == ' ' || *p == '\n'))
                        p++;
                if (p >= end || n >= cap)
                        return (int) n;
                if (take_u64(&p, end, &v) < 0 || v == 0 || v > INT32_MAX)
                        return -EINVAL;
                pids[n++] = (pid_t) v;
        }
}
