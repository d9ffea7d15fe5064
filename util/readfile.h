/* util/readfile.h — whole reads and writes: a host file with a size cap, a
 * buffer to a descriptor. */
#pragma once
#include <stddef.h>
#include "util/error.h"
int read_file(const char *path, size_t max, char **ret, size_t *ret_len, struct nsb_error *e);
/* All of @fd up to @max bytes (more: EFBIG), NUL-terminated; @name in messages. */
int read_fd(int fd, const char *name, size_t max, char **ret, size_t *ret_len, struct nsb_error *e);

/* Writes all @len bytes of @buf to @fd, through short writes and EINTR.
 * 0, or -errno. */
int write_all(int fd, const void *buf, size_t len);
