/* util/portable.h — the few string helpers nsbox used from glibc's GNU
 * extensions (asprintf, memmem, sigabbrev_np), in plain C, so that the
 * portable files build against any POSIX libc (musl, the BSDs, macOS) with
 * -D_POSIX_C_SOURCE=200809L and no _GNU_SOURCE (docs/platforms.md); and
 * nsb_appendf, which the judge's and doctor's texts share.
 * Pure: allocation only. */
#pragma once

#include <stddef.h>

/* asprintf: *ret = the formatted string (malloc'd); its length, or -1 (and
 * *ret = NULL) when out of memory. */
__attribute__((format(printf, 2, 3))) int nsb_asprintf(char **ret, const char *fmt, ...);

/* Appends printf output to the string in @buf (@size bytes in all),
 * truncating silently: for human-readable texts in fixed buffers. */
__attribute__((format(printf, 3, 4))) void nsb_appendf(char *buf, size_t size, const char *fmt, ...);

/* memmem: the first @needle (@nlen bytes) in @hay (@hlen bytes), or NULL. An
 * empty needle is found at @hay. */
void *nsb_memmem(const void *hay, size_t hlen, const void *needle, size_t nlen);

/* sigabbrev_np: a signal's name without "SIG" ("KILL"), or NULL for a number
 * this platform gives no name (real-time signals, out of range). */
const char *nsb_signame(int sig);
