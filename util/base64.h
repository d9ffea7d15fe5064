/* util/base64.h — RFC 4648 base64 (nettle), padded, one canonical spelling. */
#pragma once
#include <stddef.h>

/* @len bytes of @data as base64, malloc'd and NUL-terminated; NULL on ENOMEM. */
char *b64_encode(const void *data, size_t len);

/* Decode the @len characters of @text into *ret (malloc'd, NUL-terminated,
 * *ret_len bytes). Strict: only the canonical padded text b64_encode writes
 * (no blanks, no line breaks, zero trailing bits). 0, -EINVAL, or -ENOMEM. */
int b64_decode(const char *text, size_t len, char **ret, size_t *ret_len);
