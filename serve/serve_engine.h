/* serve/serve_engine.h — the job engine: `nsbox batch --quiet [-j N]
 * [--warm] [--profile P] [ARGS...] -` in a child process, fed one job line at a time on
 * its stdin and read one result line at a time (completion order) from its
 * stdout. Syscall layer.
 *
 * Invariants: the engine dies with the service (PR_SET_PDEATHSIG SIGTERM:
 * batch then cancels every job and its sandboxes die with their workers);
 * it is in a process group of its own, so a terminal's Ctrl-C reaches only
 * the service, which drains; writes never block the service (O_NONBLOCK,
 * an output buffer). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "serve/serve.h"

struct serve_engine {
        pid_t pid;                      /* 0: not running */
        int in_fd;                      /* its stdin (we write); -1 once closed */
        int out_fd;                     /* its stdout (we read); -1 once at EOF */
        char *obuf;                     /* lines not yet written */
        size_t olen, ocap;
        char *ibuf;                     /* what was read past the last whole line */
        size_t ilen, icap;
        unsigned gen;                   /* which engine of the service's life (set by the caller) */
        unsigned profile;               /* its index in opts.profiles (0 when there are none) */
        double started_ms;
        unsigned long sent;             /* job lines sent to it */
};

/* Its options: --profile o->profiles[@profile] when the service has profiles. */
int serve_engine_start(struct serve_engine *eng, const struct serve_opts *o, unsigned profile, struct nsb_error *e);
/* Queue @len bytes (a whole line, '\n' included). -ENOMEM or -EPIPE. */
int serve_engine_send(struct serve_engine *eng, const char *line, size_t len);
/* Write what the pipe takes now. -EPIPE when the engine is gone. */
int serve_engine_flush(struct serve_engine *eng);
/* One read; each whole line goes to @on_line. 1: more may come; 0: EOF. */
int serve_engine_read(struct serve_engine *eng, void (*on_line)(void *ctx, const char *line, size_t len), void *ctx);
/* Close its stdin (it ends when its jobs have), reap, free. The exit status. */
void serve_engine_close_input(struct serve_engine *eng);
int serve_engine_reap(struct serve_engine *eng);
