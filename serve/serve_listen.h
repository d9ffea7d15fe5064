/* serve/serve_listen.h — the service's listening socket and its token.
 * Syscall layer (serve_listen.c). */
#pragma once

#include <stddef.h>

#include "serve/serve.h"

/* The token in @path: trailing blanks cut, at least 16 printable
 * characters, no '/' (it may be a path segment). */
int serve_token_load(const char *path, char **ret, size_t *ret_len, struct nsb_error *e);

/* A listening socket for @o (unix: mode 0600 from its bind; the default
 * path's directory 0700); @ret_where says where ("unix:PATH",
 * "tcp:HOST:PORT", the port actually bound). The fd, or -errno with @e. */
int serve_listen_open(const struct serve_opts *o, char *ret_where, size_t size, struct nsb_error *e);

/* The socket systemd passed (fd 3, sd_listen_fds(3)): checked to be a
 * listening stream socket; a TCP one needs @o's token file. LISTEN_* are
 * removed from the environment (the engine is not their addressee). */
int serve_listen_inherited(const struct serve_opts *o, char *ret_where, size_t size, struct nsb_error *e);
