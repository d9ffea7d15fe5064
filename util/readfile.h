/* util/readfile.h — read a whole host file, with a size cap. */
#pragma once
#include <stddef.h>
#include "util/error.h"
int read_file(const char *path, size_t max, char **ret, size_t *ret_len, struct nsb_error *e);
