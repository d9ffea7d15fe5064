/* batch/batch_run.c — `nsbox batch`: the driver. Syscall layer.
 *
 * The parent reads job lines, parses each (pure), and hands each to a worker
 * process, at most -j at once. A worker (one per slot, forked when its slot
 * first takes a job, kept for the slot's next jobs) receives the job's line
 * and the way it starts (the zygote's control socket, or why it runs cold)
 * on its socket, parses the line again, runs the job in a fresh sandbox
 * (sbx_run, or the judge's driver for a judge job), renders its line and
 * sends it over its pipe, then waits for the next job; it exits when its
 * socket closes. The parent polls the pipes, the input and the cancel fd in
 * one loop and writes each line to stdout as it arrives: completion order,
 * one whole line per write, nothing else on stdout. A worker per slot, not
 * per job (#28): forking one per job, and the copy-on-write faults of every
 * page it then wrote, cost about 0.4 ms of CPU a job.
 *
 * Why processes and not threads: sbx_run clone()s, and no thread may exist
 * next to clone (STYLE 14). Each job's cgroup is named by its worker's pid
 * and the worker's count of jobs (nsbox-PID-N), so no two jobs share one.
 *
 * Cancel: SIGINT/SIGTERM/SIGHUP arrive on the parent's signalfd (on the
 * posix platform a self-pipe: platform.h). The parent stops taking jobs and
 * sends SIGTERM to every worker. Workers keep those signals blocked and
 * inherit the signalfd, which reads the signals queued to the worker itself:
 * the running sbx_run sees it readable and kills its tree, and the worker
 * exits without a line (an idle worker, waiting for a job, exits too). A
 * cancel line ({"cancel": ID}, #29) sends SIGTERM to the one worker that holds
 * that job: it exits the same way, the parent writes the job's cancelled
 * line, and the slot's next job gets a fresh worker (a job that ended before
 * its worker saw the signal keeps its own line). A worker also gets SIGTERM if the parent dies
 * (PR_SET_PDEATHSIG; POSIX has none), and its sandbox dies with the worker
 * (the sandbox init has PR_SET_PDEATHSIG SIGKILL).
 */
#include "batch/batch_internal.h"
#include "batch/batch_tests.h"
#include "batch/split_harness.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "config/policy.h"
#include "config/schema.h"
#include "frame/frame.h"
#include "platform/platform.h"
#include "program/program.h"
#include "supervisor/sandbox.h"
#include "util/cleanup.h"
#include "util/json_cleanup.h"
#include "util/portable.h"
#include "util/readfile.h"
#include "util/resultfile.h"
#include "util/sha256.h"
#include "warm/warm_pool.h"

#define LINE_MAX_BYTES (64u << 20)      /* a longer job line is an error line */
#define READ_CHUNK 65536
#define PROGRESS_EVERY_MS 100.0
#define WORKER_CANCELLED 3              /* worker exit status: cancelled, no line */
#define HEAD_LAST 'a'                   /* a line's head from 'a' on: the worker ends after it */
/* One line per job; 9 significant digits, as `nsbox run --json` prints reals. */
#define LINE_FLAGS (JSON_COMPACT | JSON_REAL_PRECISION(9))

struct slot {
        pid_t pid;                      /* its worker; 0 = none yet (or it ended) */
        int fd;                         /* read end of the worker's pipe */
        int cmd;                        /* our end of the worker's job socket; -1 = closed */
        bool busy;                      /* a job was sent and its line has not come back */
        char *buf;                      /* what the worker sent so far */
        size_t len, cap;
        size_t line;
        json_t *id;
        enum batch_kind kind;
        bool cancel_asked;              /* a cancel line named its id: its end is a cancelled line */
        bool spent;                     /* its worker said its last line was its last: it is ending */
        bool warm;                      /* its job was sent with a zygote's control socket */
        char cold_reason[160];          /* --warm, sent cold: why ("" = --warm not asked) */
};

struct reader {
        int fd;
        char *buf;
        size_t start, len, cap;         /* unread bytes are buf[start, len) */
        bool eof;
        bool discarding;                /* inside an overlong line: drop until '\n' */
        size_t line;                    /* number of the last line handed out */
};

struct batch {
        const struct nsb_config *cli;
        int cancel_fd, out_fd;
        FILE *progress;
        struct timespec t0;
        struct slot *slots;
        unsigned n_slots, busy;
        unsigned max_busy;              /* -j, lowered until a worker ends when the host runs out of fds or processes */
        struct batch_job pending;       /* parsed, waiting for a worker that could not start yet */
        bool has_pending;
        char *text, *pending_text;      /* the line next_job parsed, and the pending job's (a worker parses it again) */
        size_t text_len, pending_len;
        const char *jobs_path;          /* for the workers' parse (NULL: stdin) */
        struct reader in;
        json_t *resume;                 /* set of id keys already done */
        json_t *seen;                   /* id key -> line, this run */
        struct host_set python_host;    /* the interpreter's closure, resolved once */
        bool python_host_tried;
        struct batch_progress prog;
        double last_draw_ms;
        bool cancelled;
        int out_err;            /* errno of the first failed write of a result line; 0: none */
        int result_fd;          /* --result FILE: every line goes there too; -1 = none */
        int result_err;         /* errno of the first failed write there */
        bool out_is_tty;                /* lines and the status line share a terminal */
        bool first_checked;             /* the first non-blank line was JSON Lines */
        bool refused;                   /* ... or not: nothing runs, @refusal says why */
        struct nsb_error refusal;
        bool result_pending;            /* --result FILE not opened yet (see open_result_late) */
        struct warm_pool warm;          /* --warm: the zygote generations */
};

/* How the next worker's job starts (decided by the parent, inherited). */
struct job_start {
        int warm_ctl;                   /* the zygote's control socket; -1 = cold */
        const char *warm_cgroup;        /* its generation's cgroup (warm_pool_cgroup), or NULL */
        const char *cold_reason;        /* --warm was asked and this job runs cold: why */
};

static double since_ms(const struct timespec *t0)
{
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        return (double) (now.tv_sec - t0->tv_sec) * 1e3 + (double) (now.tv_nsec - t0->tv_nsec) / 1e6;
}

/* ---- input lines ------------------------------------------------------- */

/* 1: the next line is in *ret_text and *ret_len (without '\n'; *ret_too_long when it
 * was cut); 0: more input is needed (poll the fd); -1: end of input. */
static int reader_next(struct reader *r, const char **ret_text, size_t *ret_len, bool *ret_too_long)
{
        for (;;) {
                char *nl = r->len > r->start ? memchr(r->buf + r->start, '\n', r->len - r->start) : NULL;

                *ret_too_long = false;
                if (nl || (r->eof && r->len > r->start)) {
                        size_t end = nl ? (size_t) (nl - r->buf) : r->len;
                        bool was_discarding = r->discarding;

                        *ret_text = r->buf + r->start;
                        *ret_len = end - r->start;
                        r->start = nl ? end + 1 : end;
                        r->discarding = false;
                        if (was_discarding)
                                continue;    /* the tail of a line already reported */
                        r->line++;
                        return 1;
                }
                if (r->eof)
                        return -1;
                if (!r->discarding && r->len - r->start > LINE_MAX_BYTES) {
                        /* Report it now, drop the rest as it comes. */
                        r->discarding = true;
                        *ret_too_long = true;
                        *ret_text = r->buf + r->start;   /* its head: valid until the next fill */
                        *ret_len = r->len - r->start;
                        r->start = r->len = 0;
                        r->line++;
                        return 1;
                }
                if (r->discarding)
                        r->start = r->len = 0;
                return 0;
        }
}

/* One read(); call it when poll says the fd is readable. */
static int reader_fill(struct reader *r)
{
        ssize_t n;

        if (r->start > 0) {
                memmove(r->buf, r->buf + r->start, r->len - r->start);
                r->len -= r->start;
                r->start = 0;
        }
        if (r->cap - r->len < READ_CHUNK) {
                char *nb = realloc(r->buf, r->cap + READ_CHUNK * 4);
                if (!nb)
                        return -ENOMEM;
                r->buf = nb;
                r->cap += READ_CHUNK * 4;
        }
        do
                n = read(r->fd, r->buf + r->len, r->cap - r->len);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return -errno;
        if (n == 0)
                r->eof = true;
        r->len += (size_t) n;
        return 0;
}

/* Lines this shard will take, for the progress bar: only for a regular file
 * (a pipe cannot be read twice). Blank lines are not jobs. */
static size_t count_jobs(const char *path, unsigned shard_index, unsigned shard_count)
{
        AUTOCLOSE int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        char buf[READ_CHUNK];
        size_t total = 0, line = 1;
        bool blank = true;
        ssize_t n;

        if (fd < 0)
                return 0;
        while ((n = read(fd, buf, sizeof buf)) > 0)
                for (ssize_t i = 0; i < n; i++) {
                        if (buf[i] == '\n') {
                                total += !blank && batch_shard_takes(shard_index, shard_count, line);
                                line++;
                                blank = true;
                        } else if (buf[i] != ' ' && buf[i] != '\t' && buf[i] != '\r') {
                                blank = false;
                        }
                }
        return total + (!blank && batch_shard_takes(shard_index, shard_count, line));
}

/* ---- output ------------------------------------------------------------ */

static void draw_progress(struct batch *b, bool final)
{
        char text[256];
        double now = since_ms(&b->t0);

        if (!b->progress || (!final && now - b->last_draw_ms < PROGRESS_EVERY_MS))
                return;
        b->last_draw_ms = now;
        b->prog.elapsed_ms = now;
        batch_progress_text(&b->prog, text, sizeof text);
        /* \r and erase-line: one status line, redrawn in place. */
        fprintf(b->progress, "\r\033[K%s%s", text, final ? "\n" : "");
        fflush(b->progress);
}

/* One result line to stdout. On a terminal shared with the status line,
 * the status line is erased first (and redrawn after), so they never mix. */
static void write_line(struct batch *b, const char *text, size_t len)
{
        int r;

        if (b->progress && b->out_is_tty) {
                fputs("\r\033[K", b->progress);
                fflush(b->progress);
                b->last_draw_ms = -PROGRESS_EVERY_MS;   /* redraw right after the line */
        }
        if (!b->out_err && (r = write_all(b->out_fd, text, len)) < 0)
                b->out_err = -r;
        if (b->result_fd >= 0 && !b->result_err && (r = write_all(b->result_fd, text, len)) < 0)
                b->result_err = -r;
}

static void count_line(struct batch *b, enum batch_outcome outcome)
{
        b->prog.done++;
        b->prog.count[outcome]++;
        draw_progress(b, false);
}

/* Writes @line (stolen) and counts it under @outcome. */
static void emit(struct batch *b, json_t *line, enum batch_outcome outcome)
{
        AUTO(json_decref) json_t *owned = line;
        AUTOFREE char *text = NULL;
        size_t n;

        if (!owned || !(text = textsafe_json_dumps(owned, LINE_FLAGS))) {
                b->out_err = ENOMEM;
                return;
        }
        n = strlen(text);
        text[n] = '\n';   /* json_dumps' NUL becomes the line's end */
        write_line(b, text, n + 1);
        count_line(b, outcome);
}

/* A worker's message: one byte, its outcome for the counts ('0' + enum
 * batch_outcome, or HEAD_LAST + it when the worker ends after this line),
 * then its line, written unchanged. */
static void emit_raw(struct batch *b, const char *msg, size_t len)
{
        char base = msg[0] >= HEAD_LAST ? HEAD_LAST : '0';
        enum batch_outcome outcome = msg[0] >= base && msg[0] < base + OUTCOME__MAX ? (enum batch_outcome) (msg[0] - base)
                                                                                   : OUTCOME_ERROR;

        write_line(b, msg + 1, len - 1);
        count_line(b, outcome);
}

static void emit_error(struct batch *b, const json_t *id, size_t line, const struct nsb_error *err)
{
        json_t *j = batch_error_line(id, line, err);

        /* --warm: nothing of this line ran, cold or warm; say so */
        if (j && b->cli->warm)
                json_object_set_new(j, "start_reason", json_string("not run: the line could not become a job"));
        emit(b, j, OUTCOME_ERROR);
}

/* A line that could not become a job: its error line, and the count that
 * makes the batch end with BATCH_EXIT_BAD_LINES. */
/* The line of a job that ended without its worker's line (cancelled, or
 * its worker died): @status, @e's error, and the start the parent assigned
 * it (#29 follow-up: a cancelled warm job said "cold"). @s NULL: a job cancelled
 * while it waited for a worker, never started (under --warm its reason says
 * so, as a bad line's does). */
static void emit_unfinished(struct batch *b, const struct slot *s, const json_t *id, size_t line, enum batch_kind kind,
                            enum run_status status, const struct nsb_error *e)
{
        struct run_result r;

        memset(&r, 0, sizeof r);
        r.status = status;
        if (e)
                r.error = *e;
        ledger_init(&r.ledger);
        r.warm = s && s->warm;
        if (b->cli->warm && !r.warm)
                snprintf(r.start_reason, sizeof r.start_reason, "%s",
                         s ? s->cold_reason : "not run: cancelled before it started");
        /* an error line has an outcome whatever its kind (batch_error_line) */
        emit(b, batch_line_render(id, line, result_to_json(&r, 0),
                                  status == RUN_ERROR || kind == BATCH_PYTHON ? OUTCOME_ERROR : -1, -1, -1),
             OUTCOME_ERROR);
}

static void emit_bad_line(struct batch *b, const json_t *id, size_t line, const struct nsb_error *err)
{
        if (!b->prog.bad_lines++)
                b->prog.first_bad_line = line;
        emit_error(b, id, line, err);
}

static int open_result(const struct nsb_config *cli, struct nsb_error *e);

/* --result FILE is opened (truncated, unless it is the --resume file) once
 * the input's first line passed as JSON Lines, still before any job runs:
 * input refused as not JSON Lines leaves an earlier results file whole. A
 * failure to open it is a refusal too. */
static void open_result_late(struct batch *b)
{
        if (!b->result_pending || b->refused)
                return;
        b->result_pending = false;
        b->result_fd = open_result(b->cli, &b->refusal);
        if (b->result_fd < 0)
                b->refused = true;
}

/* ---- workers ----------------------------------------------------------- */

static json_t *error_body(const struct nsb_error *e, enum batch_outcome *ret_outcome)
{
        struct run_result r;

        memset(&r, 0, sizeof r);
        r.status = RUN_ERROR;
        r.error = *e;
        ledger_init(&r.ledger);
        *ret_outcome = OUTCOME_ERROR;
        return result_to_json(&r, 0);
}

/* A test job's report key: 128 random bits, as hex. The code under test
 * never holds it (it travels in the tests part of the package), so no line
 * it writes can pass for the test process's. */
static int report_key(char *buf, size_t size)
{
        unsigned char raw[BATCH_TEST_KEY_LEN / 2];
        AUTOCLOSE int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC | O_NOCTTY);

        if (size < BATCH_TEST_KEY_LEN + 1 || fd < 0 || read(fd, raw, sizeof raw) != (ssize_t) sizeof raw)
                return -EIO;
        for (size_t i = 0; i < sizeof raw; i++)
                snprintf(buf + 2 * i, 3, "%02x", raw[i]);
        return 0;
}

/* A test job: the split harness as /program/main.py, the package on its
 * stdin (batch/batch_tests.h), the verdict from its keyed report. */
static json_t *run_tests_job(const struct nsb_config *cfg, const struct batch_job *job, int cancel_fd,
                             const struct host_set *python_host, const struct job_start *start, unsigned serial,
                             enum batch_outcome *ret_outcome)
{
        AUTOFREE char *package = NULL;
        AUTO(json_decref) json_t *verdict = NULL;
        char key[BATCH_TEST_KEY_LEN + 1];
        size_t package_len;
        struct prog_source src = {
                .kind = PROG_FILE, .name = "main.py", .data = (const char *) nsb_split_harness,
                .len = nsb_split_harness_len, .stdin_mode = PROG_STDIN_PER_RUN,
        };
        struct prog prog = { 0 };
        struct run_result r;
        struct nsb_error e;
        json_t *body;

        nsb_error_clear(&e);
        if (report_key(key, sizeof key) < 0) {
                nsb_fail(&e, NSB_STAGE_PREPARE, EIO, "test job: cannot read /dev/urandom for the report key");
                return error_body(&e, ret_outcome);
        }
        int pr = batch_test_package(job, batch_test_budget_ms(cfg->wall_time_ms), key, &package, &package_len);
        if (pr < 0) {
                if (pr == -EINVAL)
                        nsb_fail(&e, NSB_STAGE_USAGE, EINVAL, "test job: entry_point '%.40s...' is too long",
                                 job->entry_point ? job->entry_point : "");
                else
                        nsb_fail(&e, NSB_STAGE_PREPARE, -pr, "test job: out of memory packing the tests");
                return error_body(&e, ret_outcome);
        }
        src.stdin_data = package;
        src.stdin_len = package_len;
        if (prog_build(cfg, &src, &prog, &e) < 0)
                return error_body(&e, ret_outcome);
        prog.req.python_host = python_host && python_host->n ? python_host : NULL;
        prog.req.cancel_fd = cancel_fd;
        prog.req.serial = serial;   /* the worker's count: its jobs' cgroups never share a name */
        if (start->warm_ctl >= 0) {
                prog.req.start = SBX_WARM;
                prog.req.warm_ctl = start->warm_ctl;
                prog.req.warm_cgroup = start->warm_cgroup;
        }
        sbx_run(&prog.req, &r);
        if (start->cold_reason)
                snprintf(r.start_reason, sizeof r.start_reason, "%s", start->cold_reason);
        prog_free(&prog);
        verdict = batch_test_verdict(r.out.text, r.out.kept, key, &r, ret_outcome);
        body = result_to_json(&r, cfg->output_limit_bytes);
        run_result_free(&r);
        if (!verdict || !body || json_object_update(body, verdict) < 0) {
                json_decref(body);
                nsb_fail(&e, NSB_STAGE_OUTPUT, ENOMEM, "test job: out of memory");
                return error_body(&e, ret_outcome);
        }
        return body;
}

/* *ret_outcome: for the counts; the line carries it only for python and test jobs. */
static json_t *run_sandboxed(const struct nsb_config *cfg, const struct batch_job *job, int cancel_fd,
                             const struct host_set *python_host, const struct job_start *start, unsigned serial,
                             enum batch_outcome *ret_outcome)
{
        struct prog_source src = {
                .kind = PROG_FILE, .name = "main.py", .data = job->program, .len = job->program_len,
                .stdin_mode = PROG_STDIN_PER_RUN, .stdin_data = job->stdin_data, .stdin_len = job->stdin_len,
        };
        struct prog prog = { 0 };
        struct sbx_request req = {
                .cfg = cfg, .channel_fd = -1, .argv = job->argv, .argc = job->argc,
                .stdin_data = job->stdin_data, .stdin_len = job->stdin_len,
        };
        struct run_result r;
        struct nsb_error e;
        json_t *body;

        nsb_error_clear(&e);
        if (job->kind == BATCH_PYTHON) {
                /* The profile's interpreter and its args, as under nsbox python. */
                if (prog_build(cfg, &src, &prog, &e) < 0)
                        return error_body(&e, ret_outcome);
                req = prog.req;
                /* Resolved once in the parent, inherited through fork. */
                req.python_host = python_host && python_host->n ? python_host : NULL;
        } else if (!req.stdin_data && !cfg->stdin_path) {
                req.stdin_data = "";   /* jobs never read the batch's own stdin; --stdin FILE is opened per job */
        }
        req.cancel_fd = cancel_fd;
        /* Placed in and read back from the job's own fresh /workspace, by its init (cold or warm). */
        req.files = job->files;
        req.n_files = job->n_files;
        req.fetch = (const char *const *) job->fetch;
        req.n_fetch = job->n_fetch;
        if ((job->n_files || job->n_fetch) && cfg->isolation == NSB_ISOLATION_REDUCED) {
                prog_free(&prog);
                nsb_fail(&e, NSB_STAGE_CONFIG, EINVAL, "\"%s\": a job's files need strict isolation (its own /workspace)",
                         job->n_files ? "files" : "fetch_files");
                return error_body(&e, ret_outcome);
        }
        req.serial = serial;   /* the worker's count: its jobs' cgroups never share a name */
        if (start->warm_ctl >= 0) {
                req.start = SBX_WARM;
                req.warm_ctl = start->warm_ctl;
                req.warm_cgroup = start->warm_cgroup;
        }
        sbx_run(&req, &r);
        if (start->cold_reason)
                snprintf(r.start_reason, sizeof r.start_reason, "%s", start->cold_reason);
        prog_free(&prog);
        *ret_outcome = batch_outcome_of(&r);
        body = result_to_json(&r, cfg->output_limit_bytes);
        run_result_free(&r);
        return body;
}

static json_t *run_judge(struct nsb_config *cfg, const struct batch_job *job, int cancel_fd,
                         const struct host_set *python_host, const char *cold_reason, bool *ret_spent,
                         enum batch_outcome *ret_outcome)
{
        struct judge_report rep;
        struct nsb_error e;
        json_t *body;

        nsb_error_clear(&e);
        /* A spec that names its profile gets it, as under `nsbox judge`
         * (unless the batch's --profile says otherwise); the interpreter
         * closure resolved for the batch may not be that profile's. @cfg is
         * a shallow copy of the batch's config, and the overlay frees and
         * replaces its lists and strings in place, which the batch's config
         * shares: this worker's next job would read freed memory (#28). So
         * the worker ends after this job (*ret_spent) and the parent forks a
         * fresh one for the slot's next job; what the overlay took is never
         * used again. */
        if (job->spec.profile && !cfg->profile) {
                *ret_spent = true;
                if (cfg_profile_resolve(cfg, job->spec.profile, &e) < 0)
                        return error_body(&e, ret_outcome);
                python_host = NULL;
        }
        /* cli_explicit 0: the job's spec limits win over the batch flags. */
        if (judge_run_spec(cfg, 0, &job->spec, cancel_fd, python_host && python_host->n ? python_host : NULL, &rep,
                           &e) < 0) {
                judge_report_free(&rep);
                return error_body(&e, ret_outcome);
        }
        *ret_outcome = batch_verdict_outcome(rep.verdict);
        if (cold_reason)   /* --warm: a judge job's cases ran cold; the verdict says why */
                snprintf(rep.start_reason, sizeof rep.start_reason, "%s", cold_reason);
        body = judge_report_to_json(&rep, result_to_json);
        judge_report_free(&rep);
        return body;
}

static bool cancel_pending(int cancel_fd)
{
        struct pollfd p = { .fd = cancel_fd, .events = POLLIN };
        return cancel_fd >= 0 && poll(&p, 1, 0) > 0 && (p.revents & POLLIN);
}

/* A worker's job image (#30), kept for its next jobs (#28): opened once
 * per ref, not per job, so a persistent worker holds one image's strings and
 * one cache lock at most, however many jobs it runs. */
struct worker_image {
        char *ref;                      /* NULL: none open */
        bool python;                    /* opened for a python command (its interpreter found) */
        char *interpreter, *digest, *rootfs;
        char **env;
        size_t n_env;
        int lock_fd;                    /* the cache entry's shared lock (image rm waits) */
};

static void worker_image_free(struct worker_image *wi)
{
        free(wi->ref);
        free(wi->interpreter);
        free(wi->digest);
        free(wi->rootfs);
        for (size_t i = 0; wi->env && i < wi->n_env; i++)
                free(wi->env[i]);
        free(wi->env);
        if (wi->lock_fd >= 0)
                close(wi->lock_fd);
        *wi = (struct worker_image){ .lock_fd = -1 };
}

/* Open @img as @cfg's image into @wi (the one it held freed), or fail
 * keeping it. */
static int worker_image_open(struct worker_image *wi, const struct nsb_config *cfg, const char *img, bool python,
                             struct nsb_error *e)
{
        struct nsb_config c = *cfg;
        int lock = -1, r;

        c.image = strdup(img);
        c.image_digest = c.image_rootfs = NULL;
        c.image_env = NULL;
        c.n_image_env = 0;
        c.interpreter = cfg->interpreter ? strdup(cfg->interpreter) : NULL;
        if (!c.image || (cfg->interpreter && !c.interpreter))
                r = nsb_fail(e, NSB_STAGE_CONFIG, ENOMEM, "out of memory");
        else
                r = frame_open_image_lock(&c, python, &lock, e);
        if (r < 0) {
                struct worker_image t = { c.image, python, c.interpreter, c.image_digest, c.image_rootfs,
                                          c.image_env, c.n_image_env, lock };
                worker_image_free(&t);
                return r;
        }
        worker_image_free(wi);
        *wi = (struct worker_image){ c.image, python, c.interpreter, c.image_digest, c.image_rootfs,
                                     c.image_env, c.n_image_env, lock };
        return 0;
}

/* The job's own image (its "image", or its judge spec's) over --image:
 * opened in this worker (the cache's lock makes concurrent workers unpack
 * it once), or the one it opened for an earlier job with the same ref. The
 * fields point into @wi (or are the parent's copies): never freed here. */
static int job_image(struct nsb_config *cfg, const struct batch_job *job, struct worker_image *wi,
                     struct nsb_error *e)
{
        const char *img = job->image ? job->image : job->kind == BATCH_JUDGE ? job->spec.image : NULL;
        bool python = job->kind != BATCH_RUN;
        int r;

        if (!img || (cfg->image && strcmp(cfg->image, img) == 0 && cfg->image_digest))
                return 0;
        cfg->warm = false;
        /* what frame_open_image refuses for this job's limits is refused
         * again, not skipped by the cache */
        if ((!wi->ref || strcmp(wi->ref, img) != 0 || wi->python != python || cfg->n_packages ||
             cfg->isolation == NSB_ISOLATION_REDUCED) &&
            (r = worker_image_open(wi, cfg, img, python, e)) < 0)
                return r;
        cfg->image = wi->ref;
        cfg->image_digest = wi->digest;
        cfg->image_rootfs = wi->rootfs;
        cfg->image_env = wi->env;
        cfg->n_image_env = wi->n_env;
        cfg->interpreter = wi->interpreter;
        return 0;
}

/* ---- a worker: one per slot, its jobs one after the other --------------- */

/* What the parent sends a worker for each job, then the line's text and
 * the cold reason's; the zygote's control socket rides along (SCM_RIGHTS). */
struct job_msg {
        uint64_t line;
        uint64_t text_len;
        uint32_t reason_len;            /* 0: no cold reason */
        uint32_t has_ctl;               /* a warm job: its zygote's control socket is attached */
        char warm_cgroup[40];           /* its generation's cgroup's name ("" = none) */
};

static int send_all(int fd, const char *p, size_t len)
{
        while (len) {
                ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                p += n;
                len -= (size_t) n;
        }
        return 0;
}

static int send_job(int sock, size_t line, const char *text, size_t len, const struct job_start *st)
{
        struct job_msg h = {
                .line = line, .text_len = len, .has_ctl = st->warm_ctl >= 0,
                .reason_len = st->cold_reason ? (uint32_t) strlen(st->cold_reason) : 0,
        };

        if (st->warm_cgroup)
                snprintf(h.warm_cgroup, sizeof h.warm_cgroup, "%s", st->warm_cgroup);
        union {
                char buf[CMSG_SPACE(sizeof(int))];
                struct cmsghdr align;
        } ctl;
        struct iovec iov = { &h, sizeof h };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
        ssize_t n;
        int r;

        if (h.has_ctl) {
                struct cmsghdr *cm;

                memset(&ctl, 0, sizeof ctl);
                mh.msg_control = ctl.buf;
                mh.msg_controllen = sizeof ctl.buf;
                cm = CMSG_FIRSTHDR(&mh);
                cm->cmsg_level = SOL_SOCKET;
                cm->cmsg_type = SCM_RIGHTS;
                cm->cmsg_len = CMSG_LEN(sizeof(int));
                memcpy(CMSG_DATA(cm), &st->warm_ctl, sizeof(int));
        }
        do
                n = sendmsg(sock, &mh, MSG_NOSIGNAL);
        while (n < 0 && errno == EINTR);
        if (n != (ssize_t) sizeof h)
                return n < 0 ? -errno : -EIO;
        if ((r = send_all(sock, text, len)) < 0)
                return r;
        return h.reason_len ? send_all(sock, st->cold_reason, h.reason_len) : 0;
}

static int read_full(int fd, char *p, size_t len)
{
        while (len) {
                ssize_t n = read(fd, p, len);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        return n < 0 ? -errno : -EIO;
                p += n;
                len -= (size_t) n;
        }
        return 0;
}

/* 1: a job in *h, its text and reason (NUL-terminated, malloc'd) and its
 * control socket (or -1); 0: no more jobs (the parent's quit, line 0, or
 * its socket closed); <0: broken. */
static int recv_job(int sock, struct job_msg *h, int *ret_ctl, char **ret_text, char **ret_reason)
{
        union {
                char buf[CMSG_SPACE(sizeof(int))];
                struct cmsghdr align;
        } ctl;
        struct iovec iov = { h, sizeof *h };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
                             .msg_controllen = sizeof ctl.buf };
        ssize_t n;

        *ret_ctl = -1;
        do
                n = recvmsg(sock, &mh, MSG_WAITALL);
        while (n < 0 && errno == EINTR);
        for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); n > 0 && cm; cm = CMSG_NXTHDR(&mh, cm))
                if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS &&
                    cm->cmsg_len == CMSG_LEN(sizeof(int))) {
                        memcpy(ret_ctl, CMSG_DATA(cm), sizeof(int));
                        (void) fcntl(*ret_ctl, F_SETFD, FD_CLOEXEC);   /* one thread: no exec in between */
                }
        if (n == 0 || (n == (ssize_t) sizeof *h && h->line == 0))
                return 0;
        if (n != (ssize_t) sizeof *h || (mh.msg_flags & MSG_CTRUNC) || h->has_ctl != (*ret_ctl >= 0) ||
            h->text_len > LINE_MAX_BYTES)
                return -EPROTO;
        *ret_text = malloc(h->text_len + 1);
        *ret_reason = malloc(h->reason_len + 1);
        if (!*ret_text || !*ret_reason)
                return -ENOMEM;
        if (read_full(sock, *ret_text, h->text_len) < 0 || read_full(sock, *ret_reason, h->reason_len) < 0)
                return -EIO;
        (*ret_text)[h->text_len] = '\0';
        (*ret_reason)[h->reason_len] = '\0';
        return 1;
}

/* One job's line to the parent: its outcome's byte ('0' + enum
 * batch_outcome), then the line. */
static void send_line(int wfd, json_t *line, enum batch_outcome outcome, bool last)
{
        AUTOFREE char *text = line ? textsafe_json_dumps(line, LINE_FLAGS) : NULL;
        char head = (char) ((last ? HEAD_LAST : '0') + outcome);
        size_t n;

        if (!text)
                _exit(1);
        n = strlen(text);
        text[n] = '\n';   /* json_dumps' NUL becomes the line's end */
        if (write_all(wfd, &head, 1) < 0 || write_all(wfd, text, n + 1) < 0)
                _exit(1);
}

/* The line the parent parsed, parsed again here; run; its line sent.
 * True: this worker's state is no longer the batch's, it must end now (its
 * line said so). */
static bool run_line(const struct batch *b, const struct job_msg *h, const char *text, const struct job_start *st,
                     unsigned serial, struct worker_image *wi, int wfd)
{
        struct nsb_config cfg = *b->cli;
        struct batch_job job;
        struct nsb_error err;
        AUTO(json_decref) json_t *line = NULL;
        enum batch_outcome outcome = OUTCOME_ERROR;
        json_t *body;
        double start = since_ms(&b->t0);
        bool spent = false;

        nsb_error_clear(&err);
        if (batch_job_parse(text, (size_t) h->text_len, (size_t) h->line, b->jobs_path, &job, &err) < 0) {
                /* the parent parsed it: only a file it names changed since */
                line = batch_error_line(job.id, (size_t) h->line, &err);
                if (line && b->cli->warm)
                        json_object_set_new(line, "start_reason", json_string("not run: the line could not become a job"));
                batch_job_free(&job);
                send_line(wfd, line, OUTCOME_ERROR, false);
                return false;
        }
        cfg_limits_apply(&job.limits, job.limits_set, &cfg);
        /* The per-user budgets the kernel counts across user namespaces are
         * split over the slots that run at once (ns/ucount.h). */
        cfg.jobs = b->n_slots;
        if (job.kind == BATCH_JUDGE)
                cfg.warm = false;   /* a judge job's cases run cold in its worker (st->cold_reason) */
        nsb_error_clear(&err);
        if (job_image(&cfg, &job, wi, &err) < 0) {
                line = batch_error_line(job.id, job.line, &err);
                outcome = OUTCOME_ERROR;
        } else {
                body = job.kind == BATCH_JUDGE
                               ? run_judge(&cfg, &job, b->cancel_fd, &b->python_host, st->cold_reason, &spent, &outcome)
                       : job.kind == BATCH_TEST
                               ? run_tests_job(&cfg, &job, b->cancel_fd, &b->python_host, st, serial, &outcome)
                               : run_sandboxed(&cfg, &job, b->cancel_fd, &b->python_host, st, serial, &outcome);
                if (cancel_pending(b->cancel_fd))
                        _exit(WORKER_CANCELLED);   /* no line: --resume runs the job again (or it ends cancelled) */
                line = batch_line_render(job.id, job.line, body,
                                         job.kind == BATCH_PYTHON || job.kind == BATCH_TEST ? (int) outcome : -1,
                                         start, since_ms(&b->t0));
        }
        send_line(wfd, line, outcome, spent);
        batch_job_free(&job);
        return spent;
}

static __attribute__((noreturn)) void worker(const struct batch *b, int cmd, int wfd, pid_t parent)
{
        struct worker_image wi = { .lock_fd = -1 };
        unsigned serial = 0;
        int devnull;

        /* SIGTERM (a cancel, through the inherited signalfd) if the batch
         * dies; checked after, as the parent may already be gone. */
        if (plat_die_with_parent(parent) < 0)
                _exit(WORKER_CANCELLED);
        /* Only the parent writes stdout: nothing of ours may reach it. */
        devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (devnull >= 0) {
                dup2(devnull, STDIN_FILENO);
                dup2(devnull, STDOUT_FILENO);
                close(devnull);
        }
        for (;;) {
                struct pollfd p[2] = { { cmd, POLLIN, 0 }, { b->cancel_fd, POLLIN, 0 } };
                struct job_msg h;
                struct job_start st;
                AUTOFREE char *text = NULL;
                AUTOFREE char *reason = NULL;
                int ctl, r;

                /* idle: a cancel (or the batch's death) ends us too; other
                 * processes of the batch may hold our socket, so its close
                 * is not how we learn the batch is over (the quit is) */
                if (poll(p, b->cancel_fd >= 0 ? 2 : 1, -1) < 0 && errno != EINTR)
                        _exit(1);
                if (cancel_pending(b->cancel_fd))
                        _exit(WORKER_CANCELLED);
                if (!(p[0].revents & (POLLIN | POLLHUP | POLLERR)))
                        continue;
                r = recv_job(cmd, &h, &ctl, &text, &reason);

                if (r <= 0)
                        _exit(r == 0 ? 0 : 1);   /* 0: the batch has no more jobs for us */
                h.warm_cgroup[sizeof h.warm_cgroup - 1] = '\0';
                st = (struct job_start){ .warm_ctl = ctl, .cold_reason = h.reason_len ? reason : NULL,
                                         .warm_cgroup = ctl >= 0 && h.warm_cgroup[0] ? h.warm_cgroup : NULL };
                if (run_line(b, &h, text, &st, serial++, &wi, wfd))
                        _exit(0);   /* the parent forks the slot a fresh worker */
                if (ctl >= 0)
                        close(ctl);
        }
}

/* The python profile is the same for every python and judge job: the
 * parent resolves it once (about 1,500 stat calls) and every worker inherits
 * it. A failure is not cached: each job then resolves it and reports the
 * error in its own result. */
static void resolve_python_once(struct batch *b)
{
        struct nsb_error ignored;

        if (b->python_host_tried || b->cli->image_rootfs)
                return;         /* an image's interpreter is the image's (docs/images.md) */
        b->python_host_tried = true;
        if (plat_python_host(&b->python_host, cfg_interpreter(b->cli),
                             &ignored) < 0)
                host_set_free(&b->python_host);
}

/* --warm: whether this job starts from the zygote, or cold and why. */
static struct job_start job_start_for(struct batch *b, const struct batch_job *job)
{
        struct job_start st = { .warm_ctl = -1 };

        if (!b->cli->warm)
                return st;
        if (job->kind == BATCH_JUDGE) {
                st.cold_reason = "judge jobs in a batch run cold";
                return st;
        }
        if (job->image) {
                st.cold_reason = "the job names an image: the zygote is the host's interpreter";
                return st;
        }
        /* A test job's program is the split harness, a python program like
         * any other: the zygote forks it, and it forks the code's process. */
        if ((st.warm_ctl = warm_pool_take(&b->warm, job->kind == BATCH_PYTHON || job->kind == BATCH_TEST,
                                          &st.cold_reason)) >= 0) {
                st.cold_reason = NULL;
                st.warm_cgroup = warm_pool_cgroup(&b->warm);
        }
        return st;
}

/* A worker for slot @s; it inherits the parsed python profile, nothing of
 * another slot's and no zygote's control socket (each job brings its own:
 * a worker holding a retired generation's would keep that zygote alive). */
static int spawn_worker(struct batch *b, struct slot *s, size_t line, struct nsb_error *e)
{
        int p[2], sv[2] = { -1, -1 };
        pid_t parent = getpid(), pid;

        resolve_python_once(b);   /* before the first worker forks: every one inherits it */
        if (plat_pipe_cloexec(p) < 0)
                return nsb_fail(e, NSB_STAGE_PREPARE, errno, "pipe for the worker of line %zu", line);
        /* (POSIX.1-2008 has no SOCK_CLOEXEC; the parent is one thread) */
        if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0 || fcntl(sv[0], F_SETFD, FD_CLOEXEC) < 0 ||
            fcntl(sv[1], F_SETFD, FD_CLOEXEC) < 0) {
                int err = errno;
                close(p[0]);
                close(p[1]);
                if (sv[0] >= 0) {
                        close(sv[0]);
                        close(sv[1]);
                }
                return nsb_fail(e, NSB_STAGE_PREPARE, err, "socket for the worker of line %zu", line);
        }
        pid = fork();
        if (pid < 0) {
                int err = errno;
                close(p[0]);
                close(p[1]);
                close(sv[0]);
                close(sv[1]);
                return nsb_fail(e, NSB_STAGE_PREPARE, err, "fork the worker of line %zu", line);
        }
        if (pid == 0) {
                close(p[0]);
                close(sv[0]);
                for (unsigned i = 0; i < b->n_slots; i++)
                        if (b->slots[i].pid) {
                                close(b->slots[i].fd);
                                if (b->slots[i].cmd >= 0)
                                        close(b->slots[i].cmd);
                        }
                if (b->warm.ctl >= 0)
                        close(b->warm.ctl);
                worker(b, sv[1], p[1], parent);
        }
        close(p[1]);
        close(sv[1]);
        *s = (struct slot){ .pid = pid, .fd = p[0], .cmd = sv[0] };
        return 0;
}

/* The worker ended: reap it. A job it held ends as an error line (or, when
 * the batch was cancelled, with none: --resume runs it again). */
static void finish_worker(struct batch *b, struct slot *s)
{
        int status = 0;

        if (s->cmd >= 0)
                close(s->cmd);
        while (waitpid(s->pid, &status, 0) < 0 && errno == EINTR)
                ;
        if (s->busy && !b->cancelled && s->cancel_asked && WIFEXITED(status) &&
            WEXITSTATUS(status) == WORKER_CANCELLED) {
                emit_unfinished(b, s, s->id, s->line, s->kind, RUN_CANCELLED, NULL);   /* what the cancel line asked for */
        } else if (s->busy && !b->cancelled) {
                struct nsb_error e;
                const char *sig = WIFSIGNALED(status) ? nsb_signame(WTERMSIG(status)) : NULL;

                /* nsbox's own account, no errno: no call failed (#28 follow-up:
                 * "Input/output error" followed it; the start was "not run") */
                if (WIFSIGNALED(status))
                        nsb_fail(&e, NSB_STAGE_SUPERVISE, 0,
                                 "line %zu: the worker running this job died of signal %d (SIG%s) before the job's line; "
                                 "the job's sandbox was killed with it",
                                 s->line, WTERMSIG(status), sig ? sig : "UNKNOWN");
                else if (WEXITSTATUS(status) == WORKER_CANCELLED)
                        nsb_fail(&e, NSB_STAGE_SUPERVISE, 0,
                                 "line %zu: the worker running this job was sent a cancel signal (SIGTERM, SIGINT or "
                                 "SIGHUP) by a process other than nsbox; its sandbox was killed", s->line);
                else
                        nsb_fail(&e, NSB_STAGE_SUPERVISE, 0,
                                 "line %zu: the worker running this job exited with status %d before the job's line",
                                 s->line, WEXITSTATUS(status));
                emit_unfinished(b, s, s->id, s->line, s->kind, RUN_ERROR, &e);
        }
        close(s->fd);
        free(s->buf);
        json_decref(s->id);
        if (s->busy) {
                b->busy--;
                b->max_busy = b->n_slots;   /* a worker could not start? try again at -j: the host may have room now */
        }
        *s = (struct slot){ .fd = -1, .cmd = -1 };
}

/* Hand @job (its line's @text) to slot @s's worker, forked first if the
 * slot has none. */
static int start_job(struct batch *b, struct slot *s, struct batch_job *job, const char *text, size_t len,
                     struct nsb_error *e)
{
        struct job_start st;
        int r;

        /* A worker a cancel line was sent SIGTERM for, whose job ended
         * before it saw the signal: it is exiting, its job's line already
         * written; or one whose line said it was its last (spent): reaped
         * here (no line) and this job goes to a new one. */
        if (s->pid && (s->cancel_asked || s->spent)) {
                kill(s->pid, SIGKILL);
                finish_worker(b, s);
        }
        if (!s->pid && (r = spawn_worker(b, s, job->line, e)) < 0)
                return r;
        st = job_start_for(b, job);
        if ((r = send_job(s->cmd, job->line, text, len, &st)) < 0) {
                /* it died between two jobs: gone, and this job goes to a new one */
                kill(s->pid, SIGKILL);
                finish_worker(b, s);
                if ((r = spawn_worker(b, s, job->line, e)) < 0)
                        return r;
                if ((r = send_job(s->cmd, job->line, text, len, &st)) < 0) {
                        kill(s->pid, SIGKILL);
                        finish_worker(b, s);
                        return nsb_fail(e, NSB_STAGE_PREPARE, -r, "send line %zu to its worker", job->line);
                }
        }
        s->busy = true;
        s->line = job->line;
        s->kind = job->kind;
        s->len = 0;
        s->id = json_incref(job->id);
        s->warm = st.warm_ctl >= 0;
        snprintf(s->cold_reason, sizeof s->cold_reason, "%s", st.cold_reason ? st.cold_reason : "");
        b->busy++;
        return 0;
}

static void read_worker(struct batch *b, struct slot *s)
{
        ssize_t n;

        if (s->cap - s->len < READ_CHUNK) {
                char *nb = realloc(s->buf, s->cap * 2 + READ_CHUNK);
                if (!nb) {
                        /* Cannot keep its line: the job ends as an error. */
                        kill(s->pid, SIGKILL);
                        s->len = 0;
                        finish_worker(b, s);
                        return;
                }
                s->buf = nb;
                s->cap = s->cap * 2 + READ_CHUNK;
        }
        n = read(s->fd, s->buf + s->len, s->cap - s->len);
        if (n < 0 && errno == EINTR)
                return;
        if (n <= 0) {
                finish_worker(b, s);
                return;
        }
        s->len += (size_t) n;
        /* A whole line (the only newline a line has is its end): the job is done. */
        if (s->busy && s->len > 1 && s->buf[s->len - 1] == '\n') {
                s->spent = s->buf[0] >= HEAD_LAST;
                emit_raw(b, s->buf, s->len);
                s->busy = false;
                s->len = 0;
                json_decref(s->id);
                s->id = NULL;
                b->busy--;
                b->max_busy = b->n_slots;
        }
}

/* No more jobs: every worker told so (line 0), each reaped as it ends. */
static void stop_workers(struct batch *b)
{
        struct job_msg quit = { .line = 0 };

        for (unsigned i = 0; i < b->n_slots; i++)
                if (b->slots[i].pid && b->slots[i].cmd >= 0)
                        (void) send_all(b->slots[i].cmd, (const char *) &quit, sizeof quit);
        for (unsigned i = 0; i < b->n_slots; i++)
                if (b->slots[i].pid)
                        finish_worker(b, &b->slots[i]);
}

/* ---- the loop ---------------------------------------------------------- */

/* A cancel line: the running job with that id is sent SIGTERM (its worker
 * cancels its sandbox, as for the whole batch's cancel, and its line says
 * cancelled); a job parsed but waiting for a worker ends as cancelled at
 * once. An id no job has (it ended already, or never came) is no error: the
 * caller and the job raced. */
static void cancel_one(struct batch *b, const char *key)
{
        for (unsigned i = 0; i < b->n_slots; i++) {
                struct slot *s = &b->slots[i];
                /* only a job its worker holds: an idle worker's id is gone */
                AUTOFREE char *k = s->pid && s->busy && !s->cancel_asked ? batch_id_key(s->id) : NULL;

                if (k && strcmp(k, key) == 0) {
                        s->cancel_asked = true;
                        kill(s->pid, SIGTERM);
                }
        }
        if (b->has_pending) {
                AUTOFREE char *k = batch_id_key(b->pending.id);

                if (k && strcmp(k, key) == 0) {
                        emit_unfinished(b, NULL, b->pending.id, b->pending.line, b->pending.kind, RUN_CANCELLED, NULL);
                        batch_job_free(&b->pending);
                        free(b->pending_text);
                        b->pending_text = NULL;
                        b->has_pending = false;
                }
        }
}

/* 1: the line was a cancel line, handled (or refused as a bad line); 0: a job line. */
static int take_cancel_line(struct batch *b, const char *text, size_t len)
{
        AUTOFREE char *key = NULL;
        struct nsb_error err;
        int r = batch_cancel_parse(text, len, &key);

        if (r == 0)
                return 0;
        if (r < 0) {
                /* Its own id, when it has one, goes on its error line: a
                 * caller that waits for that id (nsbox serve, which adds one
                 * to every line it sends) is answered, not left waiting. */
                AUTO(json_decref) json_t *root = json_loadb(text, len, 0, NULL);
                const json_t *id = json_object_get(root, "id");

                nsb_fail(&err, NSB_STAGE_CONFIG, -r, "line %zu: a cancel line is {\"cancel\": ID} alone, ID a string or an integer",
                         b->in.line);
                emit_bad_line(b, json_is_string(id) || json_is_integer(id) ? id : NULL, b->in.line, &err);
                return 1;
        }
        cancel_one(b, key);
        return 1;
}

/* Every worker busy: cancel lines at the head of the input are taken now
 * (a job line there waits for a worker, and so do the lines behind it). */
static void take_cancel_lines(struct batch *b)
{
        for (;;) {
                struct reader saved = b->in;
                const char *text;
                size_t len;
                bool too_long;

                if (reader_next(&b->in, &text, &len, &too_long) <= 0)
                        return;
                if (!too_long && batch_line_blank(text, len))
                        continue;
                if (too_long || !take_cancel_line(b, text, len)) {
                        b->in = saved;   /* not consumed: nothing was moved or read meanwhile */
                        return;
                }
        }
}

/* Every worker busy: read the input only while no whole line waits in it
 * (so a cancel line gets through, and at most one job line is held). */
static bool want_input_while_busy(const struct batch *b)
{
        const struct reader *r = &b->in;

        return !r->eof && r->len - r->start <= LINE_MAX_BYTES &&
               !(r->len > r->start && memchr(r->buf + r->start, '\n', r->len - r->start));
}

/* The next job this run takes: 1 with *job set; 0 when the input needs a
 * poll or ended. Bad lines, other shards' lines and --resume'd ids are
 * handled here (a bad line's error line is written). */
static int next_job(struct batch *b, const char *jobs_path, struct batch_job *job)
{
        for (;;) {
                const char *text;
                size_t len;
                bool too_long;
                struct nsb_error err;
                AUTOFREE char *key = NULL;
                int r = reader_next(&b->in, &text, &len, &too_long);

                if (r <= 0)
                        return 0;
                if (b->in.line == 1 && !too_long) {
                        size_t bom = batch_bom_len(text, len);   /* read as the text it marks */

                        text += bom;
                        len -= bom;
                }
                /* Whatever the shard: the input's first non-blank line says
                 * whether it is JSON Lines at all. A JSON array, a
                 * pretty-printed object, a judge spec or plain text is
                 * refused whole before any job runs, not turned into one
                 * error line per physical line. */
                if (!b->first_checked && (too_long || !batch_line_blank(text, len))) {
                        char why[NSB_ERROR_MSG_MAX];

                        b->first_checked = true;
                        if ((!too_long && batch_input_refusal(text, len, b->in.len - (size_t) (text - b->in.buf),
                                                              jobs_path, why, sizeof why)) ||
                            (too_long && batch_long_line_refusal(text, len, jobs_path, why, sizeof why))) {
                                nsb_fail(&b->refusal, NSB_STAGE_USAGE, 0, "%s", why);
                                b->refused = true;
                                return 0;
                        }
                        open_result_late(b);
                        if (b->refused)
                                return 0;
                }
                if (!too_long && b->first_checked && take_cancel_line(b, text, len))
                        continue;   /* every shard takes cancel lines: an id is in one of them */
                if (!batch_shard_takes(b->cli->shard_index, b->cli->shard_count, b->in.line))
                        continue;
                if (too_long) {
                        nsb_fail(&err, NSB_STAGE_CONFIG, EFBIG, "line %zu: longer than %u bytes", b->in.line,
                                 LINE_MAX_BYTES);
                        emit_bad_line(b, NULL, b->in.line, &err);
                        continue;
                }
                if (batch_line_blank(text, len))
                        continue;
                nsb_error_clear(&err);
                r = batch_job_parse(text, len, b->in.line, jobs_path, job, &err);
                if (r == 0)
                        r = batch_files_fit(b->cli, job, &err);
                key = batch_id_key(job->id);
                if (r < 0) {
                        /* Its id has a line now: a later line with the same
                         * id is a duplicate, not a second job under it (which
                         * --resume would skip after a crash between them). */
                        if (key && !json_object_get(b->seen, key))
                                json_object_set_new(b->seen, key, json_integer((json_int_t) job->line));
                        emit_bad_line(b, job->id, job->line, &err);
                        batch_job_free(job);
                        continue;
                }
                if (key && json_object_get(b->resume, key)) {
                        b->prog.skipped++;
                        draw_progress(b, false);
                        batch_job_free(job);
                        continue;
                }
                if (key && json_object_get(b->seen, key)) {
                        nsb_fail(&err, NSB_STAGE_CONFIG, EINVAL, "line %zu: duplicate id %s (first on line %lld)",
                                 job->line, key, (long long) json_integer_value(json_object_get(b->seen, key)));
                        emit_bad_line(b, job->id, job->line, &err);
                        batch_job_free(job);
                        continue;
                }
                if (key)
                        json_object_set_new(b->seen, key, json_integer((json_int_t) job->line));
                /* its worker parses it again: the text, as parsed */
                free(b->text);
                b->text_len = len;
                if (!(b->text = malloc(len + 1))) {
                        nsb_fail(&err, NSB_STAGE_PREPARE, ENOMEM, "line %zu: out of memory", job->line);
                        emit_error(b, job->id, job->line, &err);
                        batch_job_free(job);
                        continue;
                }
                memcpy(b->text, text, len);
                b->text[len] = '\0';
                return 1;
        }
}

/* Out of a per-process resource (file descriptors for the worker's pipe,
 * processes for its fork): another worker's end frees one. */
static bool resource_errno(int err)
{
        return err == EMFILE || err == ENFILE || err == EAGAIN || err == ENOMEM;
}

/* Start jobs until max_busy workers run, the input needs a poll, or it
 * ended. A worker that cannot start while others run waits for one of them
 * to end (then it is tried again, and as many more as the host allows, up
 * to -j); one that cannot start alone is the job's error line. The batch
 * goes on. */
static void take_lines(struct batch *b, const char *jobs_path)
{
        while (b->busy < b->max_busy && !b->cancelled && !b->refused) {
                struct batch_job job;
                struct nsb_error err;
                AUTOFREE char *text = NULL;
                size_t len;
                struct slot *s = NULL;
                int r = -ENOSPC;

                if (b->has_pending) {
                        job = b->pending;
                        text = b->pending_text;
                        len = b->pending_len;
                        b->pending_text = NULL;
                        b->has_pending = false;
                } else if (next_job(b, jobs_path, &job) <= 0) {
                        return;
                } else {
                        text = b->text;
                        len = b->text_len;
                        b->text = NULL;
                }
                nsb_error_clear(&err);
                /* an idle worker first; else a slot without one */
                for (unsigned i = 0; i < b->n_slots && !s; i++)
                        if (!b->slots[i].busy && b->slots[i].pid)
                                s = &b->slots[i];
                for (unsigned i = 0; i < b->n_slots && !s; i++)
                        if (!b->slots[i].busy)
                                s = &b->slots[i];
                if (s)
                        r = start_job(b, s, &job, text, len, &err);
                if (r < 0 && b->busy > 0 && resource_errno(-r)) {
                        b->max_busy = b->busy;
                        b->pending = job;
                        b->pending_text = text;
                        b->pending_len = len;
                        text = NULL;
                        b->has_pending = true;
                        return;
                }
                if (r < 0)
                        emit_error(b, job.id, job.line, &err);
                batch_job_free(&job);
        }
}

/* Every worker gets SIGTERM: a busy one's sandbox dies (no line), an idle
 * one exits. */
static void cancel_all(struct batch *b)
{
        b->cancelled = true;
        for (unsigned i = 0; i < b->n_slots; i++)
                if (b->slots[i].pid)
                        kill(b->slots[i].pid, SIGTERM);
}

static int loop(struct batch *b, const char *jobs_path, struct nsb_error *e)
{
        struct pollfd *p = calloc(b->n_slots + 2, sizeof *p);
        int r = 0;

        if (!p)
                return nsb_fail(e, NSB_STAGE_PREPARE, ENOMEM, "out of memory");
        for (;;) {
                nfds_t n = 0;
                int i_cancel = -1, i_in = -1;

                if (!b->cancelled) {
                        unsigned busy = b->busy;

                        take_lines(b, jobs_path);
                        /* cancel lines already read behind a job line that
                         * waited for a worker and now has one: taken now, not
                         * at the next read (which may never come); only when
                         * a job just started (the head line is scanned) */
                        if (b->busy > busy && b->busy >= b->max_busy && b->first_checked && !b->refused)
                                take_cancel_lines(b);
                }
                if (b->refused)
                        break;   /* before any job: no worker runs */
                if ((b->out_err || b->result_err) && !b->cancelled)
                        cancel_all(b);
                if (b->busy == 0 && (b->cancelled || (b->in.eof && !b->has_pending)))
                        break;
                if (b->cancel_fd >= 0 && !b->cancelled)
                        p[i_cancel = (int) n++] = (struct pollfd){ b->cancel_fd, POLLIN, 0 };
                if (!b->cancelled && !b->in.eof && (b->busy < b->max_busy || want_input_while_busy(b)))
                        p[i_in = (int) n++] = (struct pollfd){ b->in.fd, POLLIN, 0 };
                for (unsigned i = 0; i < b->n_slots; i++)
                        if (b->slots[i].pid)
                                p[n++] = (struct pollfd){ b->slots[i].fd, POLLIN, 0 };
                if (poll(p, n, b->progress ? (int) PROGRESS_EVERY_MS * 5 : -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        r = nsb_fail(e, NSB_STAGE_SUPERVISE, errno, "poll");
                        cancel_all(b);
                        continue;
                }
                if (i_cancel >= 0 && p[i_cancel].revents)
                        cancel_all(b);   /* the signal stays queued: nsbox.c's exit path may read it */
                if (i_in >= 0 && p[i_in].revents && !b->cancelled) {
                        int k = reader_fill(&b->in);
                        if (k < 0) {
                                r = nsb_fail(e, NSB_STAGE_CONFIG, -k, "reading the jobs");
                                cancel_all(b);
                        } else if (b->busy >= b->max_busy && b->first_checked) {
                                take_cancel_lines(b);
                        }
                }
                for (nfds_t k = 0; k < n; k++) {
                        if ((int) k == i_cancel || (int) k == i_in || !p[k].revents)
                                continue;
                        for (unsigned i = 0; i < b->n_slots; i++)
                                if (b->slots[i].pid && b->slots[i].fd == p[k].fd) {
                                        read_worker(b, &b->slots[i]);
                                        break;
                                }
                }
                warm_pool_poll(&b->warm);
                draw_progress(b, false);
        }
        stop_workers(b);
        free(p);
        return r;
}

/* An earlier results file, line by line through the jobs' own reader: it
 * grows with the batch (a job that floods its output leaves a line of about
 * a MiB), so it is never held whole. A line over LINE_MAX_BYTES is skipped,
 * like a cut one: that job runs again. */
static int load_resume(const char *path, json_t *set, struct nsb_error *e)
{
        AUTOCLOSE int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        struct reader r = { .fd = fd };
        struct stat st;
        int err = 0;

        if (fd < 0 && errno == ENOENT)
                return 0;   /* a first run: nothing done yet */
        if (fd < 0 || fstat(fd, &st) < 0 || S_ISDIR(st.st_mode))
                return nsb_fail(e, NSB_STAGE_USAGE, fd < 0 ? errno : S_ISDIR(st.st_mode) ? EISDIR : errno,
                                "--resume: '%s'", path);
        for (;;) {
                const char *text;
                size_t len;
                bool too_long;
                int k = reader_next(&r, &text, &len, &too_long);

                if (k < 0)
                        break;
                if (k > 0 && !too_long)
                        batch_resume_add(set, text, len);
                if (k == 0 && (err = reader_fill(&r)) < 0)
                        break;
        }
        free(r.buf);
        if (err < 0)
                return nsb_fail(e, NSB_STAGE_USAGE, -err, "--resume: reading '%s'", path);
        return 0;
}

/* --result FILE, opened before any job runs (util/resultfile.h: no symlink
 * followed, regular files only). When it is also the --resume file, the new
 * lines go after the old ones, so `--resume R --result R` continues R; a
 * line cut by a crash is ended first, so the next line stays whole. */
static int open_result(const struct nsb_config *cli, struct nsb_error *e)
{
        struct stat rs, st;
        bool append = cli->resume_path && stat(cli->resume_path, &rs) == 0;
        AUTOCLOSE int fd = -1;
        char last = '\n';

        if (append) {
                fd = result_file_open(cli->result_path, true, e);
                if (fd < 0)
                        return fd;
                if (fstat(fd, &st) == 0 && (st.st_dev != rs.st_dev || st.st_ino != rs.st_ino)) {
                        close_fd(&fd);
                        append = false;   /* another file: truncated below, as for any --result */
                }
        }
        if (!append)
                return result_file_open(cli->result_path, false, e);
        {
                AUTOCLOSE int rfd = open(cli->resume_path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
                if (rfd >= 0 && fstat(rfd, &st) == 0 && st.st_size > 0 && pread(rfd, &last, 1, st.st_size - 1) == 1 &&
                    last != '\n' && write_all(fd, "\n", 1) < 0)
                        return nsb_fail(e, NSB_STAGE_OUTPUT, errno, "--result: cannot write '%s'", cli->result_path);
        }
        return move_fd(&fd);
}

static bool same_regular_file(const struct stat *a, const struct stat *b)
{
        return S_ISREG(a->st_mode) && a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* Nothing read may be the file the lines go to. The jobs: `nsbox batch J >>
 * J` (or `--result J`) reads its own lines back as jobs, each a bad line that
 * adds one more, without end; `--result J` alone would truncate J before a
 * job is read. --stdin: every job would read the lines of the jobs before it,
 * their output included; and --stdin J would give every program the tests
 * (test_code, judge expectations), as a JOBS file in the workspace would.
 * Only regular files: /dev/null in and out is fine. */
static int check_file_roles(int in_fd, int out_fd, const struct nsb_config *cli, struct nsb_error *e)
{
        struct stat in, out, res;
        bool have_in = fstat(in_fd, &in) == 0;
        bool have_out = fstat(out_fd, &out) == 0, have_res = cli->result_path && stat(cli->result_path, &res) == 0;

        if (have_in && have_out && same_regular_file(&in, &out))
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL,
                                "stdout is the jobs file: the result lines would be read back as jobs");
        if (have_in && have_res && same_regular_file(&in, &res))
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL,
                                "--result '%s' is the jobs file: it would be truncated or read back as jobs",
                                cli->result_path);
        /* --stdin: not the jobs (from a path or piped in), nor the results */
        return cfg_check_shared_stdin(cli, have_in && S_ISREG(in.st_mode) ? &in : NULL, "jobs file", e);
}

int batch_main(const struct frame_run *run, struct nsb_error *e)
{
        const struct nsb_config *cli = run->cfg;
        int cancel_fd = run->cancel_fd, out_fd = run->out_fd;
        FILE *progress = run->progress, *summary = run->summary;
        bool from_stdin = !cli->input_path || strcmp(cli->input_path, "-") == 0;
        AUTO(json_decref) json_t *resume = json_object();
        AUTO(json_decref) json_t *seen = json_object();
        AUTOCLOSE int in_fd = -1;
        struct batch b = {
                .cli = cli, .cancel_fd = cancel_fd, .out_fd = out_fd, .progress = progress,
                .resume = resume, .seen = seen, .result_fd = -1,
        };
        int r;

        clock_gettime(CLOCK_MONOTONIC, &b.t0);
        b.out_is_tty = isatty(out_fd);
        if (!resume || !seen) {
                nsb_fail(e, NSB_STAGE_PREPARE, ENOMEM, "out of memory");
                return BATCH_EXIT_SETUP;
        }
        if (cli->resume_path && load_resume(cli->resume_path, resume, e) < 0)
                return BATCH_EXIT_SETUP;
        /* One cgroup for every job, obtained here before any worker forks: a
         * worker that asked systemd itself would make one scope per job. */
        {
                struct cg_obtained cg;
                if (sbx_obtain_cgroup(cli, &cg, e) < 0)
                        return BATCH_EXIT_SETUP;
        }
        if (!from_stdin) {
                struct stat st;

                in_fd = open(cli->input_path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
                if (in_fd < 0 || fstat(in_fd, &st) < 0 || S_ISDIR(st.st_mode)) {
                        nsb_fail(e, NSB_STAGE_USAGE, in_fd < 0 ? errno : EISDIR, "cannot read jobs '%s'",
                                 cli->input_path);
                        return BATCH_EXIT_SETUP;
                }
                if (S_ISREG(st.st_mode) && progress)
                        b.prog.total = count_jobs(cli->input_path, cli->shard_index, cli->shard_count);
        }
        if (check_file_roles(from_stdin ? STDIN_FILENO : in_fd, out_fd, cli, e) < 0)
                return BATCH_EXIT_SETUP;
        b.result_pending = cli->result_path != NULL;
        b.in.fd = from_stdin ? STDIN_FILENO : in_fd;
        b.n_slots = cli->jobs ? cli->jobs : plat_cpu_count();
        b.max_busy = b.n_slots;
        b.slots = calloc(b.n_slots, sizeof *b.slots);
        if (!b.slots) {
                nsb_fail(e, NSB_STAGE_PREPARE, ENOMEM, "out of memory");
                return BATCH_EXIT_SETUP;
        }
        for (unsigned i = 0; i < b.n_slots; i++)
                b.slots[i].fd = b.slots[i].cmd = -1;
        b.jobs_path = from_stdin ? NULL : cli->input_path;
        if (cli->warm_rotate && !cli->warm) {
                nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "--warm-rotate needs --warm");
                free(b.slots);
                return BATCH_EXIT_SETUP;
        }
        warm_pool_init(&b.warm, cli, &b.python_host, cancel_fd);
        b.warm.slots = b.n_slots;
        r = loop(&b, from_stdin ? NULL : cli->input_path, e);
        /* The zygotes end when their last jobs have: every worker is gone. */
        warm_pool_stop(&b.warm);
        if (!b.cancelled && r == 0)
                open_result_late(&b);   /* an input without a job line: the results file is still made */
        if (b.result_fd >= 0)
                close(b.result_fd);     /* every line is written: only the parent writes it */
        if (b.refused) {
                free(b.slots);
                free(b.in.buf);
                host_set_free(&b.python_host);
                *e = b.refusal;
                return BATCH_EXIT_SETUP;
        }
        draw_progress(&b, true);
        /* Every batch that ran says what it did, on a terminal or not:
         * a pipeline's log shows the bad lines without reading the results. */
        if (summary) {
                char text[512];

                b.prog.elapsed_ms = since_ms(&b.t0);
                batch_summary_text(&b.prog, b.cancelled, text, sizeof text);
                fprintf(summary, "%s\n", text);
                fflush(summary);
        }
        if (b.has_pending)
                batch_job_free(&b.pending);   /* cancelled before it could start: no line, --resume runs it */
        free(b.pending_text);
        free(b.text);
        free(b.slots);
        free(b.in.buf);
        host_set_free(&b.python_host);
        if (b.out_err) {
                if (r == 0)
                        nsb_fail(e, NSB_STAGE_OUTPUT, b.out_err, "cannot write the results to stdout");
                return BATCH_EXIT_SETUP;
        }
        if (b.result_err) {
                if (r == 0)
                        nsb_fail(e, NSB_STAGE_OUTPUT, b.result_err, "--result: cannot write '%s'", cli->result_path);
                return BATCH_EXIT_SETUP;
        }
        if (r < 0)
                return BATCH_EXIT_SETUP;
        return b.cancelled ? BATCH_EXIT_CANCELLED : b.prog.bad_lines ? BATCH_EXIT_BAD_LINES : BATCH_EXIT_OK;
}
