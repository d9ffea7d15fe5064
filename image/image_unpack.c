/* image/image_unpack.c — apply a layer onto the root being built.
 *
 * libarchive reads (any tar; gzip, zstd, bzip2 or xz when built in, never
 * an external decompressor); every write is
 * nsbox's own, relative to the root's directory fd:
 *   - a name is split into its parent and its last component; the parent is
 *     opened with openat2(RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS), so an
 *     absolute symlink planted by an earlier entry or layer (bin -> /usr/bin,
 *     or a hostile /etc -> /) resolves as the image's own root would resolve
 *     it: inside. A relative symlink climbing out ("../../../..") stops at the
 *     root, as ".." at "/" does;
 *   - the last component is a plain name, made with the *at call on that
 *     parent fd and never followed: whatever is there is removed first
 *     (unlinkat, or a tree removed without following symlinks) and the new
 *     entry made with O_CREAT|O_EXCL|O_NOFOLLOW, mkdirat or symlinkat;
 *   - a name holding a ".." component is refused (the layer, and so the
 *     image): no image builder writes one; a leading "/" or "./" is dropped,
 *     as tar does;
 *   - hard links name an earlier entry, opened the same way (O_PATH, in the
 *     root) and linked through /proc/self/fd (no CAP_DAC_READ_SEARCH needed);
 *   - OCI whiteouts: ".wh.NAME" removes NAME from the parent (NAME must be a
 *     plain name: ".wh..." would name ".." and is refused); ".wh..wh..opq"
 *     removes from the parent what the layers below made (struct
 *     layer_seen), wherever it comes in its layer;
 *   - device nodes, FIFOs and sockets are skipped (rootless cannot make
 *     them; the sandbox has its own /dev); set-id bits are dropped; the owner
 *     is the caller (the files are created by it: no chown); directories
 *     get u+rwx and files u+r so the caller can read and later remove them;
 *   - bounded: entries (and the directories a name makes for its missing
 *     parents) and bytes of file contents, all layers together (struct
 *     img_limits); a sparse entry counts its full size.
 */
#include "image/image_internal.h"
#include "image/image_la.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <nettle/sha2.h>

#include "util/cleanup.h"

#define WH_PREFIX ".wh."
#define WH_OPAQUE ".wh..wh..opq"
#define NAME_MAX_LEN 4095

static int openat2_in_root(int root_fd, const char *path, int flags)
{
        struct open_how how = {
                .flags = (uint64_t) flags | O_CLOEXEC,
                .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
        };
        long r = syscall(SYS_openat2, root_fd, path[0] ? path : ".", &how, sizeof how);

        return r < 0 ? -errno : (int) r;
}

/* Removing a tree: one fd per level held while its directory is read, so
 * at most RM_DEPTH levels at once; a directory deeper than that is moved up
 * to the tree's parent under a fresh name and removed from there after.
 * (A few entries of a layer make a chain of any depth: a symlink to the
 * bottom so far, then 1000 more levels below it. Recursing all the way
 * needed one fd per level, and `nsbox image rm` failed at the fd limit.) */
#define RM_DEPTH 64
#define RM_MOVED ".nsbox-rm-"

struct rm_ctx {
        int top_fd;             /* where deep directories are moved to */
        unsigned long next;     /* the next name to try: RM_MOVED<pid>-<next> */
        unsigned long *moved;   /* the numbers of the names moved there, to remove */
        size_t n_moved, cap;
};

static int rm_move_up(struct rm_ctx *c, int pfd, const char *name)
{
        char to[64];

        if (c->n_moved == c->cap) {
                size_t ncap = c->cap ? c->cap * 2 : 16;
                unsigned long *nv = realloc(c->moved, ncap * sizeof *nv);
                if (!nv)
                        return -ENOMEM;
                c->moved = nv;
                c->cap = ncap;
        }
        for (;; c->next++) {
                snprintf(to, sizeof to, RM_MOVED "%d-%lu", (int) getpid(), c->next);
                /* RENAME_NOREPLACE: a name the tree itself holds is skipped */
                if (renameat2(pfd, name, c->top_fd, to, RENAME_NOREPLACE) == 0)
                        break;
                if (errno != EEXIST)
                        return -errno;
        }
        c->moved[c->n_moved++] = c->next++;
        return 0;
}

static int rm_at(struct rm_ctx *c, int dir_fd, const char *name, unsigned depth)
{
        struct stat st;
        int fd, r = 0;
        DIR *d;
        struct dirent *de;

        if (fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return errno == ENOENT ? 0 : -errno;
        if (!S_ISDIR(st.st_mode))
                return unlinkat(dir_fd, name, 0) < 0 ? -errno : 0;
        if (depth >= RM_DEPTH)
                return rm_move_up(c, dir_fd, name);
        fd = openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        (void) fchmod(fd, st.st_mode | S_IRWXU);
        if (!(d = fdopendir(fd))) {
                close(fd);
                return -errno;
        }
        while (r == 0 && (de = readdir(d)))
                if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
                        r = rm_at(c, dirfd(d), de->d_name, depth + 1);
        closedir(d);
        if (r == 0 && unlinkat(dir_fd, name, AT_REMOVEDIR) < 0)
                r = -errno;
        return r;
}

int img_rm_tree(int dir_fd, const char *name)
{
        struct rm_ctx c = { .top_fd = dir_fd };
        int r = rm_at(&c, dir_fd, name, 0);

        /* what was moved up, each a tree of its own (which may move more) */
        for (size_t i = 0; r == 0 && i < c.n_moved; i++) {
                char moved[64];
                snprintf(moved, sizeof moved, RM_MOVED "%d-%lu", (int) getpid(), c.moved[i]);
                r = rm_at(&c, dir_fd, moved, 0);
        }
        free(c.moved);
        return r;
}

/* The paths this layer has made so far, as 64-bit FNV-1a hashes (8 bytes an
 * entry, whatever the names): an opaque whiteout hides what the layers
 * below put in its directory, not what its own layer put there before it. */
struct layer_seen {
        uint64_t *v;
        size_t n, cap, n_sorted;
};

static uint64_t path_hash(const char *dir, const char *name)
{
        uint64_t h = 14695981039346656037ULL;

        for (const char *s = dir; *s; s++)
                h = (h ^ (unsigned char) *s) * 1099511628211ULL;
        if (dir[0])
                h = (h ^ '/') * 1099511628211ULL;
        for (const char *s = name; *s; s++)
                h = (h ^ (unsigned char) *s) * 1099511628211ULL;
        return h;
}

static int seen_add(struct layer_seen *s, uint64_t h)
{
        if (s->n == s->cap) {
                size_t ncap = s->cap ? s->cap * 2 : 1024;
                uint64_t *nv = realloc(s->v, ncap * sizeof *nv);
                if (!nv)
                        return -ENOMEM;
                s->v = nv;
                s->cap = ncap;
        }
        s->v[s->n++] = h;
        return 0;
}

static int cmp_u64(const void *a, const void *b)
{
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
        return x < y ? -1 : x > y;
}

static bool seen_has(struct layer_seen *s, uint64_t h)
{
        if (s->n == 0)
                return false;   /* nothing seen yet: v may be NULL, which bsearch must not get */
        if (s->n_sorted != s->n) {
                qsort(s->v, s->n, sizeof *s->v, cmp_u64);
                s->n_sorted = s->n;
        }
        return bsearch(&h, s->v, s->n, sizeof *s->v, cmp_u64) != NULL;
}

/* Every entry of the directory @fd (at @dir in the root) that this layer
 * did not make, removed (an opaque whiteout). */
static int empty_dir(int fd, const char *dir, struct layer_seen *seen)
{
        int dup_fd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC), r = 0;
        DIR *d = dup_fd < 0 ? NULL : fdopendir(dup_fd);
        struct dirent *de;

        if (!d) {
                if (dup_fd >= 0)
                        close(dup_fd);
                return -errno;
        }
        while (r == 0 && (de = readdir(d)))
                if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0 &&
                    !seen_has(seen, path_hash(dir, de->d_name)))
                        r = img_rm_tree(fd, de->d_name);
        closedir(d);
        return r;
}

/* @name (from a tar entry) as a clean relative path in @buf: leading "/" and
 * "./" dropped, "." components and repeated slashes skipped; -EINVAL for a
 * ".." component; 1 for the root itself ("./", "/", ""). */
static int clean_name(const char *name, char *buf, size_t size)
{
        size_t n = 0;

        if (strlen(name) > NAME_MAX_LEN)
                return -ENAMETOOLONG;
        while (*name) {
                size_t len;
                while (*name == '/')
                        name++;
                len = strcspn(name, "/");
                if (len == 0)
                        break;
                if (len == 2 && name[0] == '.' && name[1] == '.')
                        return -EINVAL;
                if (!(len == 1 && name[0] == '.')) {
                        if (n + len + 2 > size)
                                return -ENAMETOOLONG;
                        if (n)
                                buf[n++] = '/';
                        memcpy(buf + n, name, len);
                        n += len;
                }
                name += len;
        }
        buf[n] = '\0';
        return n ? 0 : 1;
}

/* The parent directory of the clean path @path, opened in the root (missing
 * directories made, 0755, each with mkdirat on its resolved parent); *base
 * points at the last component. Each directory made counts as an entry of
 * @used (when given): one name a/a/.../a makes 2000 of them, and a symlink
 * to the bottom lets the next name make 2000 more; -EDQUOT past the bound.
 * Each is recorded in @seen (when given): this layer made it, and an opaque
 * marker later in the layer keeps it (it removed d/sub of a layer's "d/sub/f"
 * when "d/.wh..wh..opq" came after). */
static int open_parent(int root_fd, char *path, const char **base, const struct img_limits *lim,
                       struct img_usage *used, struct layer_seen *seen)
{
        char *slash = strrchr(path, '/');
        int fd, cur;

        if (!slash) {
                *base = path;
                return openat2_in_root(root_fd, "", O_PATH | O_DIRECTORY);
        }
        *base = slash + 1;
        *slash = '\0';
        fd = openat2_in_root(root_fd, path, O_PATH | O_DIRECTORY);
        if (fd != -ENOENT) {
                *slash = '/';
                return fd;
        }
        /* Make what is missing, one component at a time, each resolved in
         * the root before the next is made in it. */
        cur = openat2_in_root(root_fd, "", O_PATH | O_DIRECTORY);
        for (char *p = path; cur >= 0 && p;) {
                char *next = strchr(p, '/');
                if (next)
                        *next = '\0';
                fd = openat2_in_root(root_fd, path, O_PATH | O_DIRECTORY);
                if (fd == -ENOENT && used && ++used->entries > lim->max_entries)
                        fd = -EDQUOT;
                else if (fd == -ENOENT && mkdirat(cur, p, 0755) == 0) {
                        fd = openat2_in_root(root_fd, path, O_PATH | O_DIRECTORY);
                        if (fd >= 0 && seen && seen_add(seen, path_hash("", path)) < 0) {
                                close(fd);
                                fd = -ENOMEM;
                        }
                } else if (fd == -ENOENT)
                        fd = -errno;
                close(cur);
                cur = fd;
                if (next)
                        *next = '/';
                p = next ? next + 1 : NULL;
        }
        *slash = '/';
        return cur;
}

static int write_data(const struct img_la *la, struct archive *a, int fd, int64_t size, const struct img_limits *lim, struct img_usage *used)
{
        const void *buf;
        size_t len;
        la_int64_t off;
        int r;

        if (size < 0 || (uint64_t) size > lim->max_bytes - used->bytes)
                return -EFBIG;
        used->bytes += (uint64_t) size;
        while ((r = la->data_block(a, &buf, &len, &off)) == ARCHIVE_OK) {
                if (off < 0 || (uint64_t) off + len > (uint64_t) size)
                        return -EFBIG;        /* more than the header said: a bomb in disguise */
                for (size_t done = 0; done < len;) {
                        ssize_t w = pwrite(fd, (const char *) buf + done, len - done, off + (off_t) done);
                        if (w < 0)
                                return -errno;
                        done += (size_t) w;
                }
        }
        if (r != ARCHIVE_EOF)
                return -EIO;
        return ftruncate(fd, size) < 0 ? -errno : 0;
}

static int make_file(const struct img_la *la, struct archive *a, struct archive_entry *ent, int pfd, const char *base,
                     const struct img_limits *lim, struct img_usage *used)
{
        mode_t mode = (la->entry_perm(ent) & 01777) | S_IRUSR;
        AUTOCLOSE int fd = openat(pfd, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
        int r;

        if (fd < 0)
                return -errno;
        if ((r = write_data(la, a, fd, la->entry_size(ent), lim, used)) < 0)
                return r;
        (void) fchmod(fd, mode);        /* the umask took bits the image asked for */
        if (la->entry_mtime_is_set(ent)) {
                /* CPython checks a .pyc against its source's mtime */
                struct timespec ts[2] = { { 0, UTIME_OMIT },
                                          { la->entry_mtime(ent), la->entry_mtime_nsec(ent) } };
                (void) futimens(fd, ts);
        }
        return 0;
}

static int make_hardlink(int root_fd, const char *target, int pfd, const char *base)
{
        char clean[NAME_MAX_LEN + 2], proc[64];
        AUTOCLOSE int fd = -1;
        struct stat st;
        int r = clean_name(target, clean, sizeof clean);

        if (r != 0)
                return -EINVAL;
        if ((fd = openat2_in_root(root_fd, clean, O_PATH | O_NOFOLLOW)) < 0)
                return fd;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (S_ISDIR(st.st_mode))
                return -EISDIR;
        snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
        return linkat(AT_FDCWD, proc, pfd, base, AT_SYMLINK_FOLLOW) < 0 ? -errno : 0;
}

static int make_dir(int pfd, const char *base, mode_t perm)
{
        mode_t mode = (perm & 01777) | S_IRWXU;
        struct stat st;

        /* fchmodat: the umask took bits the image asked for; @base is the
         * directory just made (this process is the root's only writer) */
        if (mkdirat(pfd, base, mode) == 0)
                return fchmodat(pfd, base, mode, 0) < 0 ? -errno : 0;
        if (errno != EEXIST)
                return -errno;
        if (fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return -errno;
        if (S_ISDIR(st.st_mode)) {
                AUTOCLOSE int fd = openat(pfd, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                return fd < 0 || fchmod(fd, mode) < 0 ? -errno : 0;
        }
        if (unlinkat(pfd, base, 0) < 0 || mkdirat(pfd, base, mode) < 0)
                return -errno;
        return 0;
}

/* A whiteout (@base starts with .wh.): 1 when handled. */
static int whiteout(int pfd, const char *dir, const char *base, struct layer_seen *seen)
{
        const char *name = base + strlen(WH_PREFIX);
        AUTOCLOSE int dfd = -1;

        if (strcmp(base, WH_OPAQUE) == 0) {
                dfd = openat(pfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                return dfd < 0 ? -errno : empty_dir(dfd, dir, seen);
        }
        if (!name[0] || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
                return -EINVAL;
        return img_rm_tree(pfd, name);
}

/* One entry; -errno. @path: its clean name, @pfd/@base: its parent, opened
 * in the root, and its last component. */
static int make_entry(const struct img_la *la, int root_fd, struct archive *a, struct archive_entry *ent,
                      int pfd, const char *base, const struct img_limits *lim, struct img_usage *used)
{
        mode_t type = la->entry_filetype(ent);
        int r;

        if (la->entry_hardlink(ent)) {
                if ((r = img_rm_tree(pfd, base)) < 0)
                        return r;
                return make_hardlink(root_fd, la->entry_hardlink(ent), pfd, base);
        }
        if (type == AE_IFDIR)
                return make_dir(pfd, base, la->entry_perm(ent));
        if (type != AE_IFREG && type != AE_IFLNK)
                return 0;       /* device, FIFO, socket: skipped */
        if ((r = img_rm_tree(pfd, base)) < 0)
                return r;
        if (type == AE_IFLNK)
                return symlinkat(la->entry_symlink(ent) ? la->entry_symlink(ent) : "", pfd, base) < 0
                               ? -errno : 0;
        return make_file(la, a, ent, pfd, base, lim, used);
}

/* One entry, recorded in @seen once made; -errno. */
static int apply_entry(const struct img_la *la, int root_fd, struct archive *a, struct archive_entry *ent, const struct img_limits *lim,
                       struct img_usage *used, struct layer_seen *seen)
{
        char path[NAME_MAX_LEN + 2];
        const char *base;
        AUTOCLOSE int pfd = -1;
        mode_t type = la->entry_filetype(ent);
        int r = clean_name(la->entry_pathname(ent) ? la->entry_pathname(ent) : "", path, sizeof path);

        if (r != 0)
                return r < 0 ? r : 0;   /* 1: "./", the root itself, made already */
        if (lim->skip_files_over && type == AE_IFREG && la->entry_size(ent) > (int64_t) lim->skip_files_over)
                return 0;
        if ((pfd = open_parent(root_fd, path, &base, lim, used, seen)) < 0)
                return pfd;
        if (strncmp(base, WH_PREFIX, strlen(WH_PREFIX)) == 0) {
                char dir[NAME_MAX_LEN + 2];
                size_t dl = base == path ? 0 : (size_t) (base - path - 1);

                memcpy(dir, path, dl);
                dir[dl] = '\0';
                return whiteout(pfd, dir, base, seen);
        }
        if ((r = make_entry(la, root_fd, a, ent, pfd, base, lim, used)) < 0)
                return r;
        return seen_add(seen, path_hash("", path));
}

/* What is left of the entry's data after it was made (a FIFO, a directory,
 * a link or a whiteout with a pax "size", a file skipped for its size),
 * read and counted against the bytes bound. libarchive skipped it unasked
 * inside next_header, counted nowhere: a 73 KB zstd layer held a FIFO of
 * 2 GiB (1.4 s under an 8 MiB bound), so a 2 GB one was hours of inflation
 * under the cache's exclusive lock. */
static int drain_entry(const struct img_la *la, struct archive *a, const struct img_limits *lim,
                       struct img_usage *used)
{
        const void *buf;
        size_t len;
        la_int64_t off;
        int r;

        while ((r = la->data_block(a, &buf, &len, &off)) == ARCHIVE_OK) {
                if (len > lim->max_bytes - used->bytes)
                        return -EFBIG;
                used->bytes += len;
        }
        return r == ARCHIVE_EOF ? 0 : -EIO;
}

/* The layer's bytes, hashed as libarchive reads them. Verifying the file
 * first and reading it again let whoever can write the layout's blob (it is
 * the image author's directory) swap its contents in between. */
struct hashed_reader {
        int fd;
        bool hash;
        bool too_big;           /* more than @left bytes: the blob grew while read */
        uint64_t bound, left;   /* blob_bound, and what of it is left to read */
        struct sha256_ctx ctx;
        uint8_t buf[64 << 10];
};

/* One read of the blob, hashed; -1 past the blob's bound. */
static ssize_t bounded_read(struct hashed_reader *h)
{
        ssize_t n;

        do
                n = read(h->fd, h->buf, sizeof h->buf);
        while (n < 0 && errno == EINTR);
        if (n > 0 && (uint64_t) n > h->left) {
                h->too_big = true;
                errno = EFBIG;
                return -1;
        }
        if (n > 0) {
                h->left -= (uint64_t) n;
                if (h->hash)
                        sha256_update(&h->ctx, (size_t) n, h->buf);
        }
        return n;
}

static la_ssize_t hashed_read(struct archive *a, void *client, const void **buf)
{
        (void) a;
        *buf = ((struct hashed_reader *) client)->buf;
        return bounded_read(client);
}

/* The most bytes a layer's blob within @lim can hold: every byte of file
 * contents once, and per entry a header, a pax header and padding (2 KiB
 * is more than tar writes), compressed or not (gzip, zstd and xz add less
 * than that to what does not compress). A blob past it is refused before
 * it is read: without a bound, a sparse 1 TB blob (no disk) was read and
 * hashed to its end, about an hour, under the cache's exclusive lock. */
static uint64_t blob_bound(const struct img_limits *lim)
{
        uint64_t per_entries = lim->max_entries > (UINT64_MAX >> 12) ? UINT64_MAX >> 1 : lim->max_entries << 11;
        uint64_t b = lim->max_bytes + per_entries + (1u << 20);

        return b < lim->max_bytes ? UINT64_MAX : b;
}

/* @fd's size against what the manifest says (@want_size, -1: nothing, a
 * docker-archive) and against blob_bound; 0 or -EFBIG (message set). */
static int blob_size_check(int fd, int64_t want_size, const char *what, const struct img_limits *lim,
                           struct nsb_error *e)
{
        struct stat st;

        if (fstat(fd, &st) < 0)
                return nsb_fail(e, NSB_STAGE_CONFIG, errno, "%s: fstat", what);
        if (want_size >= 0 && st.st_size != want_size)
                return nsb_fail(e, NSB_STAGE_CONFIG, EBADMSG,
                                "%s: the blob is %lld bytes, the manifest says %lld (a corrupt or altered blob: "
                                "refused)", what, (long long) st.st_size, (long long) want_size);
        if ((uint64_t) st.st_size > blob_bound(lim))
                return nsb_fail(e, NSB_STAGE_CONFIG, EFBIG,
                                "%s: the blob is %lld bytes, more than a layer within the unpack limits may be "
                                "(%llu): refused", what, (long long) st.st_size,
                                (unsigned long long) blob_bound(lim));
        return 0;
}

/* What libarchive left unread (the tar's padding, a trailer) hashed too;
 * 0 when the whole file's sha256 is @hex, -EBADMSG (message set) if not. */
static int hashed_check(struct hashed_reader *h, const char *hex, const char *what, struct nsb_error *e)
{
        uint8_t d[SHA256_DIGEST_SIZE];
        char got[65];
        ssize_t n;

        while ((n = bounded_read(h)) > 0)
                ;
        if (h->too_big)
                return nsb_fail(e, NSB_STAGE_CONFIG, EFBIG, "%s: the blob grew past %llu bytes while read: refused",
                                what, (unsigned long long) h->bound);
        if (n < 0)
                return nsb_fail(e, NSB_STAGE_CONFIG, errno, "%s: reading", what);
        sha256_digest(&h->ctx, sizeof d, d);
        for (size_t i = 0; i < sizeof d; i++)
                snprintf(got + 2 * i, 3, "%02x", d[i]);
        if (strcmp(got, hex) == 0)
                return 0;
        return nsb_fail(e, NSB_STAGE_CONFIG, EBADMSG,
                        "%s: its sha256 is %s, the manifest says %s (a corrupt or altered blob: refused)", what, got,
                        hex);
}

/* The refusal of entry @ent (-@r), with its layer (@what), its name and,
 * for a hard link, its target. */
static int entry_error(const struct img_la *la, struct archive *a, struct archive_entry *ent, int r,
                       const char *what, const struct img_limits *lim, struct nsb_error *e)
{
        const char *name = la->entry_pathname(ent) ? la->entry_pathname(ent) : "";
        const char *link = la->entry_hardlink(ent);

        if (r == -EDQUOT)
                return nsb_fail(e, NSB_STAGE_CONFIG, EFBIG,
                                "%s: more than %llu entries (the directories a name makes count): refused at '%s'",
                                what, (unsigned long long) lim->max_entries, name);
        if (r == -EFBIG)
                return nsb_fail(e, NSB_STAGE_CONFIG, EFBIG,
                                "%s: '%s' inflates past the limit of %llu bytes of files: refused", what, name,
                                (unsigned long long) lim->max_bytes);
        if (r == -EIO && la->error_string(a))
                return nsb_fail(e, NSB_STAGE_CONFIG, EIO, "%s: entry '%s': %s", what, name, la->error_string(a));
        return nsb_fail(e, NSB_STAGE_CONFIG, -r, "%s: entry '%s'%s%s%s%s", what, name,
                        link ? " (a hard link to '" : "", link ? link : "", link ? "')" : "",
                        r == -EINVAL ? " names a place outside the root ('..') or no name: refused" : "");
}

static int apply_entries(const struct img_la *la, struct archive *a, int root_fd, const char *what,
                         const struct img_limits *lim, struct img_usage *used, struct nsb_error *e)
{
        struct archive_entry *ent;
        struct layer_seen seen = { 0 };
        int r = 0, ar;

        while ((ar = la->next_header(a, &ent)) == ARCHIVE_OK || ar == ARCHIVE_WARN) {
                if (++used->entries > lim->max_entries) {
                        r = nsb_fail(e, NSB_STAGE_CONFIG, EFBIG, "%s: more than %llu entries: refused", what,
                                     (unsigned long long) lim->max_entries);
                        goto out;
                }
                if ((r = apply_entry(la, root_fd, a, ent, lim, used, &seen)) == 0)
                        r = drain_entry(la, a, lim, used);
                if (r < 0) {
                        r = entry_error(la, a, ent, r, what, lim, e);
                        goto out;
                }
        }
        if (ar != ARCHIVE_EOF)
                r = nsb_fail(e, NSB_STAGE_CONFIG, EINVAL, "%s: %s", what, la->error_string(a));
out:
        free(seen.v);
        return r;
}

int img_apply_layer(const struct img_la *la, int root_fd, int fd, const char *what, const char *hex,
                    int64_t size, const struct img_limits *lim, struct img_usage *used, struct nsb_error *e)
{
        struct archive *a = NULL;
        struct hashed_reader *h = NULL;
        int r = blob_size_check(fd, size, what, lim, e);

        if (r < 0)
                return r;
        a = la->read_new();
        h = malloc(sizeof *h);
        if (!a || !h) {
                r = nsb_fail(e, NSB_STAGE_CONFIG, ENOMEM, "out of memory");
                goto out;
        }
        h->fd = fd;
        h->hash = hex != NULL;
        h->too_big = false;
        h->bound = h->left = blob_bound(lim);
        sha256_init(&h->ctx);
        img_la_filters(la, a);
        la->support_format_tar(a);
        if (la->read_open(a, h, NULL, hashed_read, NULL) != ARCHIVE_OK)
                r = nsb_fail(e, NSB_STAGE_CONFIG, EINVAL, "%s: %s", what, la->error_string(a));
        else
                r = apply_entries(la, a, root_fd, what, lim, used, e);
        /* a blob that is not what the manifest names says so, whatever
         * libarchive made of it (a corrupt gzip stream fails there first) */
        if (hex) {
                struct nsb_error he;
                nsb_error_clear(&he);
                if (hashed_check(h, hex, what, &he) < 0) {
                        if (e)
                                *e = he;
                        r = -EBADMSG;
                }
        }
out:
        if (a)
                la->read_free(a);
        free(h);
        return r;
}

int img_root_write(int root_fd, const char *path, int src_fd, const char *data, size_t len, mode_t mode)
{
        char clean[NAME_MAX_LEN + 2];
        const char *base;
        AUTOCLOSE int pfd = -1, fd = -1;
        int r = clean_name(path, clean, sizeof clean);

        (void) src_fd;
        if (r != 0)
                return -EINVAL;
        if ((pfd = open_parent(root_fd, clean, &base, NULL, NULL, NULL)) < 0)
                return pfd;
        if ((r = img_rm_tree(pfd, base)) < 0)
                return r;
        fd = openat(pfd, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
        if (fd < 0)
                return -errno;
        for (size_t done = 0; done < len;) {
                ssize_t w = write(fd, data + done, len - done);
                if (w < 0)
                        return -errno;
                done += (size_t) w;
        }
        return 0;
}
