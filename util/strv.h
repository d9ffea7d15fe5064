/* util/strv.h — a growable array of owned strings (char **v, size_t n), the
 * shape the profile's and the mount plan's path lists share. Pure. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* Append a copy of @s to *@v (*@n entries); with @unique, not when an equal
 * string is there already. 1: added; 0: there already; -ENOMEM (*@v and *@n
 * stay valid: free them as before). */
int strv_add(char ***v, size_t *n, const char *s, bool unique);
