/* report/report_run.c — `nsbox report`: open the inputs, stream their lines
 * through the aggregates, write the summary and the page. */
#include "report/report.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "report/report_internal.h"
#include "util/cleanup.h"
#include "util/resultfile.h"

#define REPORT_CHUNK 65536

/* A line reader with no bound on a line's length but memory. nsbox's own
 * writers have none either: a result keeps up to --output-limit per stream,
 * written \u0001-escaped (6 bytes a byte), and a judge verdict line holds one
 * result per case, so `nsbox batch` writes lines of hundreds of MiB from
 * ordinary limits (6 cases x 2 streams x 1 MiB of \x01: 75 MB). A cap here
 * dropped such a line as "bad" and with it a failing verdict (#27). A line
 * that does not fit in memory stops the report with an error: never a line
 * silently left out. */
struct line_reader {
        FILE *f;
        char *buf;
        size_t cap;
};

/* 1: a line in r->buf (*ret_len bytes, no '\n'; it may hold NUL bytes,
 * which make it a bad line); 0: end of input; -errno. */
static int next_line(struct line_reader *r, size_t *ret_len)
{
        ssize_t n;

        errno = 0;
        n = getdelim(&r->buf, &r->cap, '\n', r->f);
        if (n < 0) {
                if (ferror(r->f) || errno == ENOMEM || errno == EOVERFLOW)
                        return errno ? -errno : -EIO;
                return 0;
        }
        if (n > 0 && r->buf[n - 1] == '\n')
                r->buf[--n] = '\0';
        *ret_len = (size_t) n;
        return 1;
}

/* The page may not be one of the inputs: writing it would destroy the
 * results it reports (a swapped argument, `--html out.jsonl`). */
static int check_output(const struct nsb_config *cfg, struct nsb_error *e)
{
        struct stat hs, is;
        size_t dashes = 0;

        for (size_t i = 0; i < cfg->argc; i++)
                if (strcmp(cfg->argv[i], "-") == 0 && ++dashes > 1)
                        return nsb_fail(e, NSB_STAGE_USAGE, EINVAL,
                                        "'-' (standard input) given twice: it can be read once");
        if (!cfg->html_path)
                return 0;
        if (strcmp(cfg->html_path, "-") == 0)
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL,
                                "--html -: the page goes to a file (name one); the summary goes to stdout");
        /* before the inputs are read: a long read for a page that cannot be written */
        if (result_file_precheck("--html", cfg->html_path, e) < 0)
                return -EINVAL;
        if (stat(cfg->html_path, &hs) < 0)
                return 0;
        for (size_t i = 0; i < cfg->argc; i++)
                if (strcmp(cfg->argv[i], "-") != 0 && stat(cfg->argv[i], &is) == 0 && is.st_dev == hs.st_dev &&
                    is.st_ino == hs.st_ino)
                        return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "--html '%s' is the input '%s'",
                                        cfg->html_path, cfg->argv[i]);
        return 0;
}

static int row_of(const struct report_job *j, void *rows)
{
        return rows && j->failed ? report_html_row(rows, j) : 0;
}

/* A first line that is only "{": the file is indented JSON documents (a
 * verdict from `nsbox judge --json` or --result), never JSON Lines, where
 * every line is a whole object. Read whole and split into documents. */
static bool starts_document(const char *text, size_t len)
{
        while (len > 0 && (text[len - 1] == ' ' || text[len - 1] == '\t' || text[len - 1] == '\r'))
                len--;
        return len == 1 && text[0] == '{';
}

static int read_documents(struct line_reader *r, const char *name, struct report_agg *a, FILE *rows)
{
        size_t len = 2, n;
        char *nb;

        /* r->buf holds "{": keep it, then the rest of the stream. */
        if (r->cap < REPORT_CHUNK + 2) {
                if (!(nb = realloc(r->buf, REPORT_CHUNK + 2)))
                        return -ENOMEM;
                r->buf = nb;
                r->cap = REPORT_CHUNK + 2;
        }
        r->buf[0] = '{';
        r->buf[1] = '\n';
        for (;;) {
                if (len == r->cap) {
                        /* no cap but memory, as next_line's */
                        if (r->cap > SIZE_MAX / 2 || !(nb = realloc(r->buf, r->cap * 2)))
                                return -ENOMEM;
                        r->buf = nb;
                        r->cap *= 2;
                }
                n = fread(r->buf + len, 1, r->cap - len, r->f);
                len += n;
                if (n == 0)
                        break;
        }
        if (ferror(r->f))
                return errno ? -errno : -EIO;
        return report_add_documents(a, name, r->buf, len, row_of, rows);
}

static int read_input(const char *path, struct report_agg *a, FILE *rows, struct nsb_error *e)
{
        bool is_stdin = strcmp(path, "-") == 0;
        const char *name = is_stdin ? "(stdin)" : path;
        AUTO(fclose) FILE *own = NULL;
        struct line_reader r = { 0 };
        struct stat st;
        uint64_t line = 0;
        int k;

        if (!is_stdin) {
                int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);

                if (fd < 0)
                        return nsb_fail(e, NSB_STAGE_USAGE, errno, "cannot open '%s'", path);
                if (fstat(fd, &st) < 0 || S_ISDIR(st.st_mode)) {
                        int err = S_ISDIR(st.st_mode) ? EISDIR : errno;
                        close(fd);
                        return nsb_fail(e, NSB_STAGE_USAGE, err, "cannot read '%s'", path);
                }
                if (!(own = fdopen(fd, "r"))) {
                        close(fd);
                        return nsb_fail(e, NSB_STAGE_USAGE, ENOMEM, "cannot read '%s'", path);
                }
        }
        r.f = is_stdin ? stdin : own;
        for (;;) {
                struct report_job job;
                size_t len = 0;

                k = next_line(&r, &len);
                if (k <= 0)
                        break;
                line++;
                if (line == 1 && starts_document(r.buf, len)) {
                        k = read_documents(&r, name, a, rows);
                        break;
                }
                if (report_add_line(a, name, line, r.buf, len, &job) > 0) {
                        if (row_of(&job, rows) < 0)
                                k = -EIO;
                        report_job_clear(&job);
                        if (k < 0)
                                break;
                }
        }
        free(r.buf);
        if (k < 0)
                return nsb_fail(e, NSB_STAGE_USAGE, -k, "reading '%s'", name);
        return 0;
}

static int write_html(const struct nsb_config *cfg, const struct report_agg *a, FILE *rows, struct nsb_error *e)
{
        AUTO(fclose) FILE *f = NULL;
        int fd = result_file_open_as(cfg->html_path, false, "--html", e), r;

        if (fd < 0)
                return fd;
        if (!(f = fdopen(fd, "w"))) {
                close(fd);
                return nsb_fail(e, NSB_STAGE_OUTPUT, ENOMEM, "--html '%s'", cfg->html_path);
        }
        errno = 0;
        r = report_render_html(a, rows, f);
        if (r < 0 || fflush(f) != 0) {
                errno = r < 0 && !errno ? -r : errno;
                return result_file_fail(f, e, "--html: writing '%s'", cfg->html_path);
        }
        return 0;
}

int report_main(const struct frame_run *run, struct nsb_error *e)
{
        const struct nsb_config *cfg = run->cfg;
        FILE *out = run->out;
        AUTOFREE struct report_agg *a = malloc(sizeof *a);
        AUTO(fclose) FILE *rows = NULL;

        if (!a)
                return nsb_fail(e, NSB_STAGE_USAGE, ENOMEM, "out of memory"), REPORT_EXIT_SETUP;
        report_agg_init(a);
        if (cfg->argc == 0) {
                nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "expected RESULTS.jsonl... ('-' for stdin)");
                return REPORT_EXIT_SETUP;
        }
        if (check_output(cfg, e) < 0)
                return REPORT_EXIT_SETUP;
        /* The rows of the failed-jobs table, every one of them, wait on disk
         * (an unlinked file) rather than in memory. */
        if (cfg->html_path && !(rows = tmpfile())) {
                nsb_fail(e, NSB_STAGE_OUTPUT, errno, "--html: cannot make a temporary file");
                return REPORT_EXIT_SETUP;
        }
        for (size_t i = 0; i < cfg->argc; i++)
                if (read_input(cfg->argv[i], a, rows, e) < 0)
                        return REPORT_EXIT_SETUP;
        if (report_render_text(a, out) < 0 || fflush(out) != 0) {
                nsb_fail(e, NSB_STAGE_OUTPUT, errno ? errno : EIO, "cannot write the summary");
                return REPORT_EXIT_SETUP;
        }
        if (cfg->html_path && write_html(cfg, a, rows, e) < 0)
                return REPORT_EXIT_SETUP;
        if (a->valid == 0) {
                nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "no valid result or verdict line in %llu lines (%llu bad)",
                         (unsigned long long) a->lines, (unsigned long long) a->bad);
                return REPORT_EXIT_BAD;
        }
        return REPORT_EXIT_OK;
}
