/* profile/closure_cache.c — the closure cache's directory, stamps and files.
 * See closure_cache.h for what is trusted and when. Runs in the supervisor
 * before clone, with the caller's own credentials. */
#include "profile/closure_cache.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/cleanup.h"
#include "util/readfile.h"
#include "util/safedir.h"
#include "util/sha256.h"

#define CC_MAX_FILE (1u << 20)

int cc_open_dir(const char *xdg_cache_home, const char *home, int *ret_fd)
{
        char base[PATH_MAX];
        AUTOCLOSE int bfd = -1;
        AUTOCLOSE int fd = -1;
        struct nsb_error err = { 0 };
        struct stat st;

        *ret_fd = -1;
        /* XDG Base Directory: a relative $XDG_CACHE_HOME is invalid, ignore it. */
        if (xdg_cache_home && xdg_cache_home[0] == '/')
                snprintf(base, sizeof base, "%s", xdg_cache_home);
        else if (home && home[0] == '/' && home[1])
                snprintf(base, sizeof base, "%s/.cache", home);
        else
                return -ENOENT;
        if (mkdir(base, 0700) < 0 && errno != EEXIST)
                return -errno;
        /* The base and every directory above it: root's or the caller's, not
         * writable by others unless sticky. Otherwise another user could
         * rename the cache away and put a tree of their own in its place. The
         * walk's fd is used from here on, so the checked directory is the
         * one used. A refusal is no cache, as any other unsafe place is. */
        if (nsb_dir_check_path("closure cache", base, NULL, &bfd, &err) < 0)
                return -EPERM;
        if (mkdirat(bfd, "nsbox", 0700) < 0 && errno != EEXIST)
                return -errno;
        /* O_NOFOLLOW: a symlink planted as "nsbox" is refused, not followed. */
        fd = openat(bfd, "nsbox", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        /* Only a directory that no one else can write or swap files in. */
        if (st.st_uid != geteuid() || (st.st_mode & 077))
                return -EPERM;
        *ret_fd = move_fd(&fd);
        return 0;
}

static void file_name(const char *key, char out[48])
{
        char hex[65];

        sha256_hex(key, strlen(key), hex);
        snprintf(out, 48, "closure-%.32s", hex);
}

static int take_stamp(const char *path, struct cc_stamp *ret)
{
        struct stat st;

        memset(ret, 0, sizeof *ret);
        if (lstat(path, &st) < 0) {
                if (errno != ENOENT && errno != ENOTDIR)
                        return -errno;
                return 0;               /* absent: present = false */
        }
        ret->present = true;
        ret->dev = st.st_dev;
        ret->ino = st.st_ino;
        ret->mode = st.st_mode;
        ret->size = (uint64_t) st.st_size;
        ret->mtime_s = st.st_mtim.tv_sec;
        ret->mtime_ns = st.st_mtim.tv_nsec;
        ret->ctime_s = st.st_ctim.tv_sec;
        ret->ctime_ns = st.st_ctim.tv_nsec;
        return 0;
}

static bool stamp_holds(const struct cc_stamp *want)
{
        struct cc_stamp now;

        if (take_stamp(want->path, &now) < 0)
                return false;
        if (now.present != want->present)
                return false;
        return !now.present ||
               (now.dev == want->dev && now.ino == want->ino && now.mode == want->mode && now.size == want->size &&
                now.mtime_s == want->mtime_s && now.mtime_ns == want->mtime_ns && now.ctime_s == want->ctime_s &&
                now.ctime_ns == want->ctime_ns);
}

int cc_load(int dirfd, const char *key, struct host_set *ret)
{
        char name[48], *buf;
        AUTOCLOSE int fd = -1;
        struct cc_entry c = { 0 };
        struct stat st;
        size_t len = 0;
        bool valid;

        if (dirfd < 0 || ret->n != 0)
                return 0;
        file_name(key, name);
        fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0 || fstat(fd, &st) < 0)
                return 0;
        /* The caller's own regular file, writable by no one else. */
        if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022) || st.st_size <= 0 ||
            st.st_size > CC_MAX_FILE)
                return 0;
        buf = malloc((size_t) st.st_size);
        if (!buf)
                return 0;
        while (len < (size_t) st.st_size) {
                ssize_t n = read(fd, buf + len, (size_t) st.st_size - len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break;
                len += (size_t) n;
        }
        valid = len == (size_t) st.st_size && cc_parse(buf, len, key, &c) == 0;
        free(buf);
        for (size_t i = 0; valid && i < c.n_stamps; i++)
                valid = stamp_holds(&c.stamps[i]);
        if (!valid) {
                cc_entry_free(&c);
                return 0;
        }
        *ret = c.set;
        c.set = (struct host_set){ 0 };
        cc_entry_free(&c);
        return 1;
}

static int add_stamp(struct cc_entry *c, const char *path)
{
        struct cc_stamp *nv;
        int r;

        for (size_t i = 0; i < c->n_stamps; i++)
                if (strcmp(c->stamps[i].path, path) == 0)
                        return 0;
        nv = realloc(c->stamps, (c->n_stamps + 1) * sizeof *nv);
        if (!nv)
                return -ENOMEM;
        c->stamps = nv;
        r = take_stamp(path, &nv[c->n_stamps]);
        if (r < 0)
                return r;
        if (!(nv[c->n_stamps].path = strdup(path)))
                return -ENOMEM;
        c->n_stamps++;
        return 0;
}

int cc_store(int dirfd, const char *key, const struct host_set *set, const char *const *watch, size_t n_watch,
             const struct timespec *started)
{
        struct cc_entry c = { .set = *set };
        char name[48], tmp[80], *text = NULL;
        size_t len;
        int r = 0;

        if (dirfd < 0)
                return -EBADF;
        for (size_t i = 0; i < set->n && r == 0; i++) {
                char parent[PATH_MAX], *slash;
                r = add_stamp(&c, set->v[i].path);
                snprintf(parent, sizeof parent, "%s", set->v[i].path);
                slash = strrchr(parent, '/');
                if (r == 0 && slash && slash != parent) {
                        *slash = '\0';
                        r = add_stamp(&c, parent);
                }
        }
        for (size_t i = 0; i < n_watch && r == 0; i++)
                r = add_stamp(&c, watch[i]);
        /* Anything changed since the walk began may have changed under it:
         * the closure could mix old and new. Don't cache it (ctime has a
         * coarse clock, hence the one-second margin). */
        for (size_t i = 0; i < c.n_stamps && r == 0; i++)
                if (c.stamps[i].present && (c.stamps[i].ctime_s >= started->tv_sec - 1 ||
                                            c.stamps[i].mtime_s >= started->tv_sec - 1))
                        r = -EAGAIN;
        if (r == 0)
                r = cc_format(key, &c, &text, &len);
        c.set = (struct host_set){ 0 };  /* borrowed, not ours to free */
        cc_entry_free(&c);
        if (r < 0)
                return r;
        file_name(key, name);
        snprintf(tmp, sizeof tmp, ".%s.%ld.tmp", name, (long) getpid());
        {
                AUTOCLOSE int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
                if (fd < 0)
                        r = -errno;
                if (r == 0)
                        r = write_all(fd, text, len);
        }
        free(text);
        /* rename: readers see the old file or the new one, never part of one. */
        if (r == 0 && renameat(dirfd, tmp, dirfd, name) < 0)
                r = -errno;
        if (r < 0)
                (void) unlinkat(dirfd, tmp, 0);
        return r;
}
