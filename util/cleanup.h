/* util/cleanup.h — scope-bound cleanup and explicit ownership moves.
 *
 * Rules: the empty value of an fd is -1 and of a pointer NULL; destructors
 * accept the empty value and do nothing; close() is never retried on EINTR
 * (Linux releases the descriptor even when close reports EINTR).
 * Ownership leaves a scope only through move_ptr()/move_fd().
 */
#pragma once

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static inline void cleanup_freep(void *p)
{
        free(*(void **) p);
}

static inline void cleanup_closep(const int *fd)
{
        if (*fd >= 0) {
                int saved = errno;
                (void) close(*fd);
                errno = saved;
        }
}

/* Close *fd now, before its scope ends, and mark it closed. */
static inline void close_fd(int *fd)
{
        cleanup_closep(fd);
        *fd = -1;
}

#define AUTOFREE __attribute__((cleanup(cleanup_freep)))
#define AUTOCLOSE __attribute__((cleanup(cleanup_closep)))

/* One macro generates the destructor for a library handle type. */
#define DEFINE_AUTO_CLEANUP(type, func)                                        \
        static inline void cleanup_##func(type **p)                           \
        {                                                                       \
                if (*p)                                                         \
                        func(*p);                                               \
        }
#define AUTO(func) __attribute__((cleanup(cleanup_##func)))

DEFINE_AUTO_CLEANUP(FILE, fclose)
DEFINE_AUTO_CLEANUP(DIR, closedir)

#define move_ptr(pp)                                                           \
        ({                                                                      \
                __typeof__(*(pp)) moved_ = *(pp);                               \
                *(pp) = NULL;                                                   \
                moved_;                                                         \
        })

static inline int move_fd(int *fd)
{
        int moved = *fd;
        *fd = -1;
        return moved;
}

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
