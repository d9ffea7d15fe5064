/* tests/musl/fortify_shim.c — glibc's _FORTIFY_SOURCE entry points for the
 * musl build (scripts/musl-check), and nothing else.
 *
 * Debian ships jansson, nettle, pcre2 and inih only as glibc builds, and
 * their static archives were compiled with _FORTIFY_SOURCE: five calls in
 * them go to glibc's checked variants (__snprintf_chk and friends), which
 * musl does not have. Each is implemented here as glibc documents it (the
 * size check, then the plain call); every other libc function those
 * libraries and nsbox call is musl's. nsbox's own code never reaches these:
 * musl's headers define no fortified variants. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int __vsnprintf_chk(char *s, size_t maxlen, int flag, size_t slen, const char *fmt, va_list ap);
int __snprintf_chk(char *s, size_t maxlen, int flag, size_t slen, const char *fmt, ...);
int __fprintf_chk(FILE *f, int flag, const char *fmt, ...);
void *__memcpy_chk(void *dst, const void *src, size_t n, size_t dstlen);
char *__strncpy_chk(char *dst, const char *src, size_t n, size_t dstlen);

int __vsnprintf_chk(char *s, size_t maxlen, int flag, size_t slen, const char *fmt, va_list ap)
{
        (void) flag;
        if (slen < maxlen)
                abort();
        return vsnprintf(s, maxlen, fmt, ap);
}

int __snprintf_chk(char *s, size_t maxlen, int flag, size_t slen, const char *fmt, ...)
{
        va_list ap;
        int n;

        va_start(ap, fmt);
        n = __vsnprintf_chk(s, maxlen, flag, slen, fmt, ap);
        va_end(ap);
        return n;
}

int __fprintf_chk(FILE *f, int flag, const char *fmt, ...)
{
        va_list ap;
        int n;

        (void) flag;
        va_start(ap, fmt);
        n = vfprintf(f, fmt, ap);
        va_end(ap);
        return n;
}

void *__memcpy_chk(void *dst, const void *src, size_t n, size_t dstlen)
{
        if (dstlen < n)
                abort();
        return memcpy(dst, src, n);
}

char *__strncpy_chk(char *dst, const char *src, size_t n, size_t dstlen)
{
        if (dstlen < n)
                abort();
        return strncpy(dst, src, n);
}
