/* serve/serve_loop.h — the service's loop: libmicrohttpd on @listen_fd,
 * the engine, signals, drain. Syscall layer (serve_loop.c, with
 * serve_http.c and serve_jobs.c behind serve_state.h). */
#pragma once

#include <stddef.h>

#include "serve/serve.h"

/* Serves until SIGTERM/SIGINT/SIGHUP has drained it. 0: drained; 1: a
 * second signal cancelled what was left; -errno with @e. Takes @listen_fd. */
int serve_loop_run(const struct serve_opts *o, int listen_fd, const char *token, size_t token_len,
                   const char *where, struct nsb_error *e);
