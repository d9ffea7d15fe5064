/* serve/serve_main.c — the nsbox-serve program: `nsbox serve` execs it.
 *
 * Why a program of its own: libmicrohttpd brings GnuTLS and its
 * dependencies (Debian links them in), and nsbox itself is linked
 * statically so that every cold run starts fast (docs/performance.md).
 * Only the service loads them; every job still runs in `nsbox batch`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "serve/serve.h"
#include "serve/serve_loop.h"
#include "serve/serve_listen.h"
#include "util/error.h"
#include "util/exitcode.h"

int serve_main(int argc, char **argv)
{
        struct serve_opts o;
        struct nsb_error e;
        char *token = NULL, where[256], buf[NSB_ERROR_MSG_MAX + 128];
        size_t token_len = 0;
        int fd, r = -1, n_activated;

        nsb_error_clear(&e);
        n_activated = serve_activation_count(getenv("LISTEN_PID"), getenv("LISTEN_FDS"), (long) getpid());
        if (n_activated < 0 || n_activated > 1) {
                fprintf(stderr, "nsbox: serve: socket activation: expected one socket (LISTEN_PID, LISTEN_FDS)\n");
                return NSB_EXIT_FAILURE;
        }
        if (serve_opts_parse(argc, argv, getenv("XDG_RUNTIME_DIR"), n_activated == 1, &o, &e) == 0 && o.help) {
                fputs(serve_usage, stdout);
                r = 0;
        } else if (e.stage == NSB_STAGE_NONE &&
            (!o.token_file || serve_token_load(o.token_file, &token, &token_len, &e) == 0) &&
            (fd = n_activated ? serve_listen_inherited(&o, where, sizeof where, &e)
                              : serve_listen_open(&o, where, sizeof where, &e)) >= 0)
                r = serve_loop_run(&o, fd, token, token_len, where, &e);
        if (token) {
                explicit_bzero(token, token_len);
                free(token);
        }
        serve_opts_free(&o);
        if (r < 0) {
                fprintf(stderr, "nsbox: serve: %s\n", nsb_error_describe(&e, buf, sizeof buf));
                return NSB_EXIT_FAILURE;
        }
        return r == 1 ? NSB_EXIT_CANCELLED : NSB_EXIT_OK;
}

int main(int argc, char **argv)
{
        return serve_main(argc, argv);
}
