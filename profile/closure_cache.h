/* profile/closure_cache.h — a per-user cache of resolved closures (host_set).
 *
 * Owns: remembering what profile_resolve.c found for an interpreter (about 90
 * lstat/readlink/ELF-parse steps over its libraries and ~50 extension
 * modules, ~7 ms a run) and proving, cheaply, that the host still looks the
 * same before reusing it.
 *
 * Invariants:
 *   - A cached closure is reused only if every watched path still has the same
 *     lstat identity: dev, ino, mode, size, mtime and ctime (ns), or is still
 *     absent. Watched: every entry of the set, every entry's parent directory
 *     (a library added next to one changes it), and the caller's extra paths
 *     (the library search directories). Any difference is a miss, never an
 *     error: the caller resolves afresh and stores the new result.
 *   - The cache decides which host files are mounted into the sandbox, so it
 *     is trusted only when it is the caller's own: the directory is
 *     $XDG_CACHE_HOME/nsbox or $HOME/.cache/nsbox (absolute paths only), owned
 *     by the effective uid with no group/other access (0700), and every
 *     directory from / down to it root's or the euid's and not group/other-
 *     writable unless sticky (util/safedir.h: no one else can rename it away);
 *     each file is a regular file owned by the euid, writable by no one else.
 *     Otherwise nothing is read or written (no cache, same result, slower).
 *   - Files are written whole to a temporary name and renamed into place, so a
 *     reader sees the old or the new file, never a mix; a truncated or foreign
 *     file fails to parse and is a miss.
 *
 * Split: closure_cache_fmt.c is pure (format and parse the file text);
 * closure_cache.c opens the directory, stats, reads and writes.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "profile/profile.h"

/* The identity of one watched path; present=false records its absence. */
struct cc_stamp {
        char *path;
        bool present;
        uint64_t dev, ino, size;
        uint32_t mode;
        int64_t mtime_s, mtime_ns, ctime_s, ctime_ns;
};

struct cc_entry {
        struct host_set set;
        struct cc_stamp *stamps;
        size_t n_stamps;
};

/* Pure: the file text for @key. -EINVAL if a path cannot be written (tab or
 * newline in it); -ENOMEM. *ret is malloc'd, NUL-terminated. */
int cc_format(const char *key, const struct cc_entry *in, char **ret, size_t *ret_len);
/* Pure: parse @buf; -EBADMSG if it is not a complete cache file for @key. */
int cc_parse(const char *buf, size_t len, const char *key, struct cc_entry *ret);
void cc_entry_free(struct cc_entry *c);
/* Pure: the key of the closure of the package list @packages[0..n): each
 * path with its length, so that no two lists share a key (a path may hold
 * any separator) and any change to the list (a package added, removed,
 * renamed or reordered) is another key. *ret malloc'd; -ENOMEM. */
int cc_packages_key(char *const *packages, size_t n, char **ret);

/* Open (creating, 0700) the caller's cache directory from @xdg_cache_home or
 * @home (either may be NULL); -1 in *ret_fd, and a negative errno, when no
 * safe place exists (-EPERM: under a directory others can rename in). */
int cc_open_dir(const char *xdg_cache_home, const char *home, int *ret_fd);
/* 1 and *ret filled (it must be empty) when @key is cached and still valid;
 * 0 on any miss (absent, stale, untrusted, unreadable). */
int cc_load(int dirfd, const char *key, struct host_set *ret);
/* Best effort: store @set under @key, watching its entries, their parent
 * directories and @watch[0..n_watch). @started is CLOCK_REALTIME when the
 * walk that produced @set began: if a watched path changed since (or within
 * a second before), nothing is stored (-EAGAIN), since the walk may have seen
 * half of the change. 0 or a negative errno. */
int cc_store(int dirfd, const char *key, const struct host_set *set, const char *const *watch, size_t n_watch,
             const struct timespec *started);
