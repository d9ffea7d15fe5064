/* cgroup/cg_parse.c — parsers for the kernel's cgroup text files. Pure: every
 * function takes a buffer and its length (not necessarily NUL-terminated) and
 * matches whole tokens, never substrings (nsjail's strstr(buf, "cpu") also
 * matched "cpuset"). */
#include "cgroup/cg_internal.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

struct tok {
        const char *p;
        size_t n;
};

static bool tok_eq(struct tok t, const char *s)
{
        size_t n = strlen(s);
        return t.n == n && memcmp(t.p, s, n) == 0;
}

/* Next line of [*pos, end); false at the end. The newline is not included. */
static bool next_line(const char **pos, const char *end, struct tok *ret)
{
        const char *p = *pos, *nl;

        if (p >= end)
                return false;
        nl = memchr(p, '\n', (size_t) (end - p));
        ret->p = p;
        ret->n = (size_t) ((nl ? nl : end) - p);
        *pos = nl ? nl + 1 : end;
        return true;
}

static bool is_space(char c)
{
        return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* Next token of @line separated by @sep (' ' also skips tabs and repeats). */
static bool next_tok(struct tok *line, char sep, struct tok *ret)
{
        const char *p = line->p, *end = line->p + line->n, *q;

        if (sep == ' ')
                while (p < end && is_space(*p))
                        p++;
        if (p >= end) {
                line->p = end;
                line->n = 0;
                return false;
        }
        q = p;
        if (sep == ' ')
                while (q < end && !is_space(*q))
                        q++;
        else
                while (q < end && *q != sep)
                        q++;
        ret->p = p;
        ret->n = (size_t) (q - p);
        if (q < end)
                q++;            /* skip the separator */
        line->n = (size_t) (end - q);
        line->p = q;
        return true;
}

bool cg_has_token(const char *buf, size_t len, char sep, const char *word)
{
        struct tok line = { buf, len }, t;

        while (next_tok(&line, sep, &t))
                if (tok_eq(t, word))
                        return true;
        return false;
}

static int parse_u64_tok(struct tok t, uint64_t *ret)
{
        uint64_t v = 0;

        if (t.n == 0)
                return -EINVAL;
        for (size_t i = 0; i < t.n; i++) {
                unsigned d;
                if (t.p[i] < '0' || t.p[i] > '9')
                        return -EINVAL;
                d = (unsigned) (t.p[i] - '0');
                if (v > (UINT64_MAX - d) / 10)
                        return -ERANGE;
                v = v * 10 + d;
        }
        *ret = v;
        return 0;
}

static int copy_tok(struct tok t, char *buf, size_t size)
{
        if (t.n >= size)
                return -ENAMETOOLONG;
        memcpy(buf, t.p, t.n);
        buf[t.n] = '\0';
        return 0;
}

static const char *const v1_names[CG_V1__MAX] = {
        [CG_V1_MEMORY] = "memory",
        [CG_V1_PIDS] = "pids",
        [CG_V1_CPUACCT] = "cpuacct",
};

int cg_parse_proc_cgroup(const char *buf, size_t len, struct cg_self *ret)
{
        const char *pos = buf, *end = buf + len;
        struct tok line;

        memset(ret, 0, sizeof *ret);
        while (next_line(&pos, end, &line)) {
                struct tok id, ctrls, path;
                uint64_t hid;
                int r;

                if (line.n == 0)
                        continue;
                /* The path is everything after the second colon (it may hold ':'). */
                if (!next_tok(&line, ':', &id) || parse_u64_tok(id, &hid) < 0 || hid > INT_MAX)
                        return -EINVAL;
                ctrls.p = line.p;
                ctrls.n = 0;
                while (ctrls.n < line.n && line.p[ctrls.n] != ':')
                        ctrls.n++;
                if (ctrls.n == line.n)
                        return -EINVAL;
                path.p = line.p + ctrls.n + 1;
                path.n = line.n - ctrls.n - 1;
                if (path.n == 0 || path.p[0] != '/')
                        return -EINVAL;

                if (hid == 0 && ctrls.n == 0) {
                        r = copy_tok(path, ret->v2_path, sizeof ret->v2_path);
                        if (r < 0)
                                return r;
                        ret->has_v2 = true;
                        continue;
                }
                for (int c = 0; c < CG_V1__MAX; c++) {
                        if (!cg_has_token(ctrls.p, ctrls.n, ',', v1_names[c]))
                                continue;
                        r = copy_tok(path, ret->v1[c].path, sizeof ret->v1[c].path);
                        if (r < 0)
                                return r;
                        ret->v1[c].found = true;
                        ret->v1[c].hierarchy_id = (int) hid;
                }
        }
        return 0;
}

/* mountinfo escapes ' ', '\t', '\n' and '\\' as \ooo (see show_mountinfo()). */
static int unescape_tok(struct tok t, char *buf, size_t size)
{
        size_t o = 0;

        for (size_t i = 0; i < t.n; i++) {
                char c = t.p[i];
                if (c == '\\' && i + 3 < t.n &&
                    t.p[i + 1] >= '0' && t.p[i + 1] <= '3' && t.p[i + 2] >= '0' && t.p[i + 2] <= '7' &&
                    t.p[i + 3] >= '0' && t.p[i + 3] <= '7') {
                        c = (char) (((t.p[i + 1] - '0') << 6) | ((t.p[i + 2] - '0') << 3) | (t.p[i + 3] - '0'));
                        i += 3;
                }
                if (o + 1 >= size)
                        return -ENAMETOOLONG;
                buf[o++] = c;
        }
        buf[o] = '\0';
        return 0;
}

/* @path relative to @prefix, component-wise: "" when equal; NULL when outside. */
static const char *path_under(const char *path, const char *prefix)
{
        size_t n = strlen(prefix);

        while (n > 1 && prefix[n - 1] == '/')
                n--;
        if (n == 1 && prefix[0] == '/')
                return path[0] == '/' ? path + 1 : NULL;
        if (strncmp(path, prefix, n) != 0)
                return NULL;
        if (path[n] == '\0')
                return path + n;
        if (path[n] == '/')
                return path + n + 1;
        return NULL;
}

static int record_mount(struct cg_mount *m, const char *rel, const char *root)
{
        if (strlen(rel) >= sizeof m->rel || strlen(root) >= sizeof m->root)
                return -ENAMETOOLONG;
        /* The first mount wins, except that a later mount on the very same
         * mount point hides the earlier one (the later line is the visible one). */
        if (m->found && strcmp(m->rel, rel) != 0)
                return 0;
        strcpy(m->rel, rel);
        strcpy(m->root, root);
        m->found = true;
        return 0;
}

int cg_parse_mountinfo(const char *buf, size_t len, const char *sys_path, struct cg_mounts *ret)
{
        const char *pos = buf, *end = buf + len;
        struct tok line;
        char root[CG_PATH_MAX], mnt[CG_PATH_MAX];

        memset(ret, 0, sizeof *ret);
        while (next_line(&pos, end, &line)) {
                struct tok f[6], t, fstype, source, superopts;
                const char *rel;
                bool sep = false;
                int r;

                if (line.n == 0)
                        continue;
                for (size_t i = 0; i < 6; i++)
                        if (!next_tok(&line, ' ', &f[i]))
                                return -EINVAL;
                /* optional fields, up to the "-" separator */
                while (next_tok(&line, ' ', &t))
                        if (tok_eq(t, "-")) {
                                sep = true;
                                break;
                        }
                if (!sep || !next_tok(&line, ' ', &fstype) || !next_tok(&line, ' ', &source))
                        return -EINVAL;
                if (!next_tok(&line, ' ', &superopts))
                        superopts.n = 0;
                (void) source;
                if (!tok_eq(fstype, "cgroup2") && !tok_eq(fstype, "cgroup"))
                        continue;
                r = unescape_tok(f[3], root, sizeof root);
                if (r < 0)
                        return r;
                r = unescape_tok(f[4], mnt, sizeof mnt);
                if (r < 0)
                        return r;
                rel = path_under(mnt, sys_path);
                if (!rel)
                        continue;       /* mounted elsewhere: not ours to use */
                if (tok_eq(fstype, "cgroup2")) {
                        r = record_mount(&ret->v2, rel, root);
                        if (r < 0)
                                return r;
                        continue;
                }
                /* v1: the super options list the controllers, e.g. "rw,cpu,cpuacct". */
                for (int c = 0; c < CG_V1__MAX; c++) {
                        if (!cg_has_token(superopts.p, superopts.n, ',', v1_names[c]))
                                continue;
                        r = record_mount(&ret->v1[c], rel, root);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

int cg_own_rel(const struct cg_mount *m, const char *own_path, char *buf, size_t size)
{
        const char *sub;
        int n;

        if (!m->found)
                return -ENOENT;
        sub = path_under(own_path, m->root);
        if (!sub)
                return -ENOENT;
        while (*sub == '/')
                sub++;
        if (m->rel[0] && sub[0])
                n = snprintf(buf, size, "%s/%s", m->rel, sub);
        else if (m->rel[0] || sub[0])
                n = snprintf(buf, size, "%s", m->rel[0] ? m->rel : sub);
        else
                n = snprintf(buf, size, ".");
        if (n < 0 || (size_t) n >= size)
                return -ENAMETOOLONG;
        while (n > 1 && buf[n - 1] == '/')
                buf[--n] = '\0';
        /* Reject "." and ".." components (other than the lone "."): a cgroup
         * name can never be one, so such a path is not from the kernel. */
        if (strcmp(buf, ".") != 0) {
                struct tok line = { buf, (size_t) n }, t;
                while (next_tok(&line, '/', &t))
                        if (t.n == 0 || tok_eq(t, ".") || tok_eq(t, ".."))
                                return -EINVAL;
        }
        return 0;
}

unsigned cg_parse_controllers(const char *buf, size_t len)
{
        struct tok line = { buf, len }, t;
        unsigned mask = 0;

        while (next_tok(&line, ' ', &t)) {
                if (tok_eq(t, "memory"))
                        mask |= CG_CTRL_MEMORY;
                else if (tok_eq(t, "pids"))
                        mask |= CG_CTRL_PIDS;
                else if (tok_eq(t, "cpu"))
                        mask |= CG_CTRL_CPU;
        }
        return mask;
}

int cg_parse_kv(const char *buf, size_t len, const char *key, uint64_t *ret)
{
        const char *pos = buf, *end = buf + len;
        struct tok line, k, v;

        while (next_line(&pos, end, &line)) {
                if (!next_tok(&line, ' ', &k) || !tok_eq(k, key))
                        continue;
                if (!next_tok(&line, ' ', &v))
                        return -EINVAL;
                return parse_u64_tok(v, ret);
        }
        return -ENOENT;
}

int cg_parse_u64(const char *buf, size_t len, uint64_t *ret)
{
        struct tok line = { buf, len }, t, extra;

        if (!next_tok(&line, ' ', &t) || next_tok(&line, ' ', &extra))
                return -EINVAL;
        if (tok_eq(t, "max")) {
                *ret = UINT64_MAX;
                return 0;
        }
        return parse_u64_tok(t, ret);
}

int cg_parse_procs(const char *buf, size_t len, pid_t self, pid_t *pids, size_t cap,
                   size_t *ret_n, size_t *ret_others)
{
        struct tok line = { buf, len }, t;
        size_t n = 0, others = 0;

        while (next_tok(&line, ' ', &t)) {
                uint64_t v;
                int r = parse_u64_tok(t, &v);
                if (r < 0)
                        return r;
                if (v == 0 || v > INT_MAX)
                        return -EINVAL;
                if (pids && n < cap)
                        pids[n] = (pid_t) v;
                n++;
                if ((pid_t) v != self)
                        others++;
        }
        if (ret_n)
                *ret_n = n;
        if (ret_others)
                *ret_others = others;
        return 0;
}

static bool parse_pid_tok(struct tok t, pid_t *ret)
{
        uint64_t v;

        if (t.n == 0 || t.n > 10 || (t.n > 1 && t.p[0] == '0') || parse_u64_tok(t, &v) < 0 ||
            v == 0 || v > INT_MAX)
                return false;
        *ret = (pid_t) v;
        return true;
}

enum cg_name_kind cg_parse_name(const char *name, pid_t *ret_pid)
{
        static const char pfx[] = "nsbox-", sup[] = "nsbox-sup-";
        struct tok rest, a, b, extra;
        pid_t pid;
        uint64_t serial;

        if (strncmp(name, sup, sizeof sup - 1) == 0) {
                rest.p = name + sizeof sup - 1;
                rest.n = strlen(rest.p);
                if (!parse_pid_tok(rest, &pid))
                        return CG_NAME_OTHER;
                *ret_pid = pid;
                return CG_NAME_SUP;
        }
        if (strncmp(name, pfx, sizeof pfx - 1) != 0)
                return CG_NAME_OTHER;
        rest.p = name + sizeof pfx - 1;
        rest.n = strlen(rest.p);
        if (rest.n == 0 || rest.p[rest.n - 1] == '-' || !next_tok(&rest, '-', &a) ||
            !next_tok(&rest, '-', &b) || next_tok(&rest, '-', &extra))
                return CG_NAME_OTHER;
        if (!parse_pid_tok(a, &pid) || b.n == 0 || b.n > 10 || parse_u64_tok(b, &serial) < 0 ||
            serial > UINT_MAX)
                return CG_NAME_OTHER;
        *ret_pid = pid;
        return CG_NAME_RUN;
}

int cg_format_run_name(pid_t pid, unsigned serial, char *buf, size_t size)
{
        int n = snprintf(buf, size, "nsbox-%d-%u", (int) pid, serial);
        return n < 0 || (size_t) n >= size ? -ENAMETOOLONG : 0;
}

int cg_format_sup_name(pid_t pid, char *buf, size_t size)
{
        int n = snprintf(buf, size, "nsbox-sup-%d", (int) pid);
        return n < 0 || (size_t) n >= size ? -ENAMETOOLONG : 0;
}

int cg_format_scope_name(pid_t pid, unsigned long long nonce, char *buf, size_t size)
{
        int n = snprintf(buf, size, "nsbox-scope-%d-%llx.scope", (int) pid, nonce);
        return n < 0 || (size_t) n >= size ? -ENAMETOOLONG : 0;
}

pid_t cg_parse_scope_name(const char *name)
{
        static const char pfx[] = "nsbox-scope-", sfx[] = ".scope";
        size_t len = strlen(name);
        struct tok rest, a, b, extra;
        pid_t pid;

        if (len <= sizeof pfx - 1 + sizeof sfx - 1 || strncmp(name, pfx, sizeof pfx - 1) != 0 ||
            strcmp(name + len - (sizeof sfx - 1), sfx) != 0)
                return 0;
        rest.p = name + sizeof pfx - 1;
        rest.n = len - (sizeof pfx - 1) - (sizeof sfx - 1);
        if (rest.p[rest.n - 1] == '-' || !next_tok(&rest, '-', &a) || !next_tok(&rest, '-', &b) ||
            next_tok(&rest, '-', &extra) || !parse_pid_tok(a, &pid) || b.n == 0 || b.n > 16)
                return 0;
        for (size_t i = 0; i < b.n; i++)
                if (!isxdigit((unsigned char) b.p[i]))
                        return 0;
        return pid;
}

const char *cg_parent_rel(const char *path, const char *sys_path, char *buf, size_t size)
{
        const char *rest;
        size_t n = 0;
        struct tok line, t;

        if (!path || path[0] != '/')
                return "not an absolute path";
        rest = path_under(path, sys_path);
        if (!rest)
                return "not under the cgroup filesystem (/sys/fs/cgroup)";
        line.p = rest;
        line.n = strlen(rest);
        buf[0] = '\0';
        while (next_tok(&line, '/', &t)) {
                if (t.n == 0)
                        continue;       /* "//" or a trailing "/" */
                if (tok_eq(t, "..") || tok_eq(t, "."))
                        return "has a '.' or '..' component";
                if (n + (n ? 1 : 0) + t.n + 1 > size)
                        return "is too long";
                if (n)
                        buf[n++] = '/';
                memcpy(buf + n, t.p, t.n);
                n += t.n;
                buf[n] = '\0';
        }
        if (n == 0)
                snprintf(buf, size, ".");
        return NULL;
}

void cg_common_ancestor(const char *a, const char *b, char *buf, size_t size)
{
        size_t i = 0, last = 0;

        /* Whole components only: "x/ab" and "x/abc" meet at "x". */
        for (;; i++) {
                bool end_a = a[i] == '\0' || a[i] == '/', end_b = b[i] == '\0' || b[i] == '/';
                if (end_a && end_b)
                        last = i;
                if (a[i] != b[i] || a[i] == '\0')
                        break;
        }
        if (last == 0 || (last == 1 && a[0] == '.'))
                snprintf(buf, size, ".");
        else
                snprintf(buf, size, "%.*s", (int) last, a);
}
