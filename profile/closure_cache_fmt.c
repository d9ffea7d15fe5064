/* profile/closure_cache_fmt.c — the cache file text. Pure: allocation only.
 *
 *   nsbox-closure/4
 *   key<TAB>KEY
 *   s<TAB>PRESENT<TAB>DEV<TAB>INO<TAB>MODE<TAB>SIZE<TAB>MTIME_S<TAB>MTIME_NS<TAB>CTIME_S<TAB>CTIME_NS<TAB>PATH
 *   e<TAB>d|f|l<TAB>PATH<TAB>TARGET
 *   h<TAB>PATH                      (a directory covered empty, host_set.hidden)
 *   end
 *
 * One record a line; paths with a tab or newline are never cached. The "end"
 * line proves the file is whole. */
#include "profile/closure_cache.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/cleanup.h"

/* Bump whenever what the closure walk produces changes (2: libgcc_s.so.1 is
 * added for pthread_exit; 3: a standard library holding site-packages or
 * dist-packages is listed entry by entry, without them; 4: it is whole
 * again, its packages directories listed as hidden, and /usr/local/lib is
 * searched), so no cache written by an older nsbox is used. */
#define CC_MAGIC "nsbox-closure/4"

void cc_entry_free(struct cc_entry *c)
{
        for (size_t i = 0; i < c->set.n; i++) {
                free(c->set.v[i].path);
                free(c->set.v[i].target);
        }
        free(c->set.v);
        c->set.v = NULL;
        c->set.n = 0;
        for (size_t i = 0; i < c->set.n_hidden; i++)
                free(c->set.hidden[i]);
        free(c->set.hidden);
        c->set.hidden = NULL;
        c->set.n_hidden = 0;
        for (size_t i = 0; i < c->n_stamps; i++)
                free(c->stamps[i].path);
        free(c->stamps);
        c->stamps = NULL;
        c->n_stamps = 0;
}

int cc_packages_key(char *const *packages, size_t n, char **ret)
{
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);

        if (!f)
                return -ENOMEM;
        fputs("packages:", f);
        for (size_t i = 0; i < n; i++)
                fprintf(f, "%zu:%s;", strlen(packages[i]), packages[i]);
        if (fclose(f) != 0) {
                free(buf);
                return -ENOMEM;
        }
        *ret = buf;
        return 0;
}

static bool writable_text(const char *s)
{
        return s && !strpbrk(s, "\t\n");
}

static char kind_char(enum host_kind k)
{
        return k == HOST_DIR ? 'd' : k == HOST_SYMLINK ? 'l' : 'f';
}

int cc_format(const char *key, const struct cc_entry *in, char **ret, size_t *ret_len)
{
        char *buf = NULL;
        size_t len = 0;
        FILE *f;
        bool ok;

        if (!writable_text(key))
                return -EINVAL;
        for (size_t i = 0; i < in->n_stamps; i++)
                if (!writable_text(in->stamps[i].path))
                        return -EINVAL;
        for (size_t i = 0; i < in->set.n; i++)
                if (!writable_text(in->set.v[i].path) ||
                    (in->set.v[i].target && !writable_text(in->set.v[i].target)))
                        return -EINVAL;
        for (size_t i = 0; i < in->set.n_hidden; i++)
                if (!writable_text(in->set.hidden[i]))
                        return -EINVAL;
        f = open_memstream(&buf, &len);
        if (!f)
                return -ENOMEM;
        fprintf(f, CC_MAGIC "\nkey\t%s\n", key);
        for (size_t i = 0; i < in->n_stamps; i++) {
                const struct cc_stamp *s = &in->stamps[i];
                fprintf(f, "s\t%d\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu32 "\t%" PRIu64 "\t%" PRId64 "\t%" PRId64
                           "\t%" PRId64 "\t%" PRId64 "\t%s\n",
                        s->present ? 1 : 0, s->dev, s->ino, s->mode, s->size, s->mtime_s, s->mtime_ns, s->ctime_s,
                        s->ctime_ns, s->path);
        }
        for (size_t i = 0; i < in->set.n; i++) {
                const struct host_entry *h = &in->set.v[i];
                fprintf(f, "e\t%c\t%s\t%s\n", kind_char(h->kind), h->path, h->target ? h->target : "");
        }
        for (size_t i = 0; i < in->set.n_hidden; i++)
                fprintf(f, "h\t%s\n", in->set.hidden[i]);
        fputs("end\n", f);
        ok = !ferror(f);
        if (fclose(f) != 0)
                ok = false;
        if (!ok) {
                free(buf);
                return -ENOMEM;
        }
        *ret = buf;
        *ret_len = len;
        return 0;
}

/* Split @line (modified in place) at tabs into at most @max fields. */
static size_t split(char *line, char **fields, size_t max)
{
        size_t n = 0;

        while (n < max) {
                char *tab = strchr(line, '\t');
                fields[n++] = line;
                if (!tab)
                        break;
                *tab = '\0';
                line = tab + 1;
        }
        return n;
}

static bool parse_u64(const char *s, uint64_t *ret)
{
        char *end;
        if (!*s || *s == '-')
                return false;
        errno = 0;
        *ret = strtoull(s, &end, 10);
        return !*end && errno == 0;
}

static bool parse_i64(const char *s, int64_t *ret)
{
        char *end;
        if (!*s)
                return false;
        errno = 0;
        *ret = strtoll(s, &end, 10);
        return !*end && errno == 0;
}

static int parse_stamp(char **fl, size_t nf, struct cc_entry *c)
{
        struct cc_stamp s = { 0 }, *nv;
        uint64_t present, mode;

        if (nf != 11 || !parse_u64(fl[1], &present) || present > 1 || !parse_u64(fl[2], &s.dev) ||
            !parse_u64(fl[3], &s.ino) || !parse_u64(fl[4], &mode) || mode > UINT32_MAX ||
            !parse_u64(fl[5], &s.size) || !parse_i64(fl[6], &s.mtime_s) || !parse_i64(fl[7], &s.mtime_ns) ||
            !parse_i64(fl[8], &s.ctime_s) || !parse_i64(fl[9], &s.ctime_ns) || fl[10][0] != '/')
                return -EBADMSG;
        s.present = present == 1;
        s.mode = (uint32_t) mode;
        nv = realloc(c->stamps, (c->n_stamps + 1) * sizeof *nv);
        if (!nv)
                return -ENOMEM;
        c->stamps = nv;
        if (!(s.path = strdup(fl[10])))
                return -ENOMEM;
        c->stamps[c->n_stamps++] = s;
        return 0;
}

static int parse_entry(char **fl, size_t nf, struct cc_entry *c)
{
        struct host_entry h = { 0 }, *nv;

        if (nf != 4 || strlen(fl[1]) != 1 || !strchr("dfl", fl[1][0]) || fl[2][0] != '/')
                return -EBADMSG;
        h.kind = fl[1][0] == 'd' ? HOST_DIR : fl[1][0] == 'l' ? HOST_SYMLINK : HOST_FILE;
        if ((h.kind == HOST_SYMLINK) != (fl[3][0] != '\0'))
                return -EBADMSG;        /* a link has a target, nothing else does */
        nv = realloc(c->set.v, (c->set.n + 1) * sizeof *nv);
        if (!nv)
                return -ENOMEM;
        c->set.v = nv;
        h.path = strdup(fl[2]);
        h.target = h.kind == HOST_SYMLINK ? strdup(fl[3]) : NULL;
        if (!h.path || (h.kind == HOST_SYMLINK && !h.target)) {
                free(h.path);
                free(h.target);
                return -ENOMEM;
        }
        c->set.v[c->set.n++] = h;
        return 0;
}

static int parse_hidden(const char *path, struct cc_entry *c)
{
        char **nv = realloc(c->set.hidden, (c->set.n_hidden + 1) * sizeof *nv);

        if (!nv)
                return -ENOMEM;
        c->set.hidden = nv;
        if (!(nv[c->set.n_hidden] = strdup(path)))
                return -ENOMEM;
        c->set.n_hidden++;
        return 0;
}

int cc_parse(const char *buf, size_t len, const char *key, struct cc_entry *ret)
{
        AUTOFREE char *text = NULL;
        struct cc_entry c = { 0 };
        char *line;
        size_t lineno = 0;
        bool ended = false;
        int r = 0;

        if (memchr(buf, '\0', len) || !(text = strndup(buf, len)))
                return memchr(buf, '\0', len) ? -EBADMSG : -ENOMEM;
        line = text;
        while (r == 0 && *line) {
                char *nl = strchr(line, '\n'), *fl[12];
                size_t nf;

                if (!nl || ended) {
                        r = -EBADMSG;   /* unterminated line, or data after "end" */
                        break;
                }
                *nl = '\0';
                nf = split(line, fl, ARRAY_SIZE(fl));
                if (lineno == 0)
                        r = strcmp(line, CC_MAGIC) == 0 ? 0 : -EBADMSG;
                else if (lineno == 1)
                        r = nf == 2 && strcmp(fl[0], "key") == 0 && strcmp(fl[1], key) == 0 ? 0 : -EBADMSG;
                else if (strcmp(fl[0], "s") == 0)
                        r = parse_stamp(fl, nf, &c);
                else if (strcmp(fl[0], "e") == 0)
                        r = parse_entry(fl, nf, &c);
                else if (strcmp(fl[0], "h") == 0)
                        r = nf == 2 && fl[1][0] == '/' ? parse_hidden(fl[1], &c) : -EBADMSG;
                else if (strcmp(fl[0], "end") == 0 && nf == 1)
                        ended = true;
                else
                        r = -EBADMSG;
                lineno++;
                line = nl + 1;
        }
        if (r == 0 && (!ended || c.set.n == 0))
                r = -EBADMSG;
        if (r < 0) {
                cc_entry_free(&c);
                return r;
        }
        *ret = c;
        return 0;
}
