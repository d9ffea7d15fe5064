/* util/portable.c — see portable.h. */
#include "util/portable.h"
#include "util/cleanup.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int nsb_asprintf(char **ret, const char *fmt, ...)
{
        va_list ap;
        int n;

        *ret = NULL;
        va_start(ap, fmt);
        n = vsnprintf(NULL, 0, fmt, ap);
        va_end(ap);
        if (n < 0 || !(*ret = malloc((size_t) n + 1)))
                return -1;
        va_start(ap, fmt);
        n = vsnprintf(*ret, (size_t) n + 1, fmt, ap);
        va_end(ap);
        if (n < 0) {
                free(*ret);
                *ret = NULL;
        }
        return n;
}

void nsb_appendf(char *buf, size_t size, const char *fmt, ...)
{
        size_t used = strnlen(buf, size);
        va_list ap;

        if (used + 1 >= size)
                return;
        va_start(ap, fmt);
        vsnprintf(buf + used, size - used, fmt, ap);
        va_end(ap);
}

void *nsb_memmem(const void *hay, size_t hlen, const void *needle, size_t nlen)
{
        const unsigned char *h = hay, *end;

        if (nlen == 0)
                return (void *) hay;
        if (hlen < nlen)
                return NULL;
        end = h + (hlen - nlen);
        for (const unsigned char *p = h; p <= end; p++) {
                p = memchr(p, *(const unsigned char *) needle, (size_t) (end - p) + 1);
                if (!p)
                        return NULL;
                if (memcmp(p, needle, nlen) == 0)
                        return (void *) p;
        }
        return NULL;
}

/* The names glibc's sigabbrev_np gives (tests/unit/test_portable.c checks
 * every number against it on glibc); the signals POSIX does not define are
 * named only where the platform has them. */
static const struct {
        int sig;
        const char *name;
} signames[] = {
        { SIGHUP, "HUP" },   { SIGINT, "INT" },     { SIGQUIT, "QUIT" },     { SIGILL, "ILL" },
        { SIGTRAP, "TRAP" }, { SIGABRT, "ABRT" },   { SIGBUS, "BUS" },       { SIGFPE, "FPE" },
        { SIGKILL, "KILL" }, { SIGUSR1, "USR1" },   { SIGSEGV, "SEGV" },     { SIGUSR2, "USR2" },
        { SIGPIPE, "PIPE" }, { SIGALRM, "ALRM" },   { SIGTERM, "TERM" },     { SIGCHLD, "CHLD" },
        { SIGCONT, "CONT" }, { SIGSTOP, "STOP" },   { SIGTSTP, "TSTP" },     { SIGTTIN, "TTIN" },
        { SIGTTOU, "TTOU" }, { SIGURG, "URG" },     { SIGXCPU, "XCPU" },     { SIGXFSZ, "XFSZ" },
        { SIGVTALRM, "VTALRM" }, { SIGPROF, "PROF" }, { SIGSYS, "SYS" },
#ifdef SIGSTKFLT
        { SIGSTKFLT, "STKFLT" },
#endif
#ifdef SIGWINCH
        { SIGWINCH, "WINCH" },
#endif
#if defined(SIGPOLL)
        { SIGPOLL, "POLL" },
#elif defined(SIGIO)
        { SIGIO, "IO" },
#endif
#ifdef SIGPWR
        { SIGPWR, "PWR" },
#endif
#ifdef SIGEMT
        { SIGEMT, "EMT" },
#endif
#ifdef SIGINFO
        { SIGINFO, "INFO" },
#endif
};

const char *nsb_signame(int sig)
{
        for (size_t i = 0; i < ARRAY_SIZE(signames); i++)
                if (signames[i].sig == sig)
                        return signames[i].name;
        return NULL;
}
