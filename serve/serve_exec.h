/* serve/serve_exec.h — how `nsbox serve` reaches the service program.
 *
 * nsbox execs nsbox-serve (serve_main.c) with its own path as the engine:
 * the HTTP library stays out of the nsbox binary (see serve_main.c). The
 * program is found as the warm zygote's files are: $NSBOX_SERVE (a copied
 * build, the tests), the build tree for the build tree's nsbox,
 * else where meson install put it (LIBDIR/nsbox). Syscall layer. */
#pragma once

#include "util/error.h"

/* Only returns on failure: -errno with @e. argv[0] is "serve". */
int serve_exec(int argc, char **argv, struct nsb_error *e);
