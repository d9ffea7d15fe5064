/* supervisor/reduced_fs.c — see reduced.h. The private directory of a reduced run. */
#include "supervisor/reduced.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/cleanup.h"

static char *join(const char *a, const char *b)
{
        size_t n = strlen(a) + 1 + strlen(b) + 1;
        char *s = malloc(n);

        if (s)
                snprintf(s, n, "%s/%s", a, b);
        return s;
}

/* A fresh directory @name in @dfd (EEXIST is an error: nothing planted is
 * reused), opened without following links, given to @uid:@gid through its fd. */
static int make_dir_at(int dfd, const char *dir, const char *name, mode_t mode, bool chown_it, uid_t uid,
                       gid_t gid, struct nsb_error *e)
{
        AUTOCLOSE int fd = -1;

        if (mkdirat(dfd, name, mode) < 0)
                return nsb_fail(e, NSB_STAGE_PREPARE, errno, "mkdir '%s/%s'", dir, name);
        fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return nsb_fail(e, NSB_STAGE_PREPARE, errno, "open '%s/%s'", dir, name);
        if (chown_it && fchown(fd, uid, gid) < 0)
                return nsb_fail(e, NSB_STAGE_PREPARE, errno, "chown '%s/%s' to %u:%u", dir, name, uid, gid);
        return 0;
}

/* program/NAME (0444) in program/ (0555), both nsbox's user's: read-only to the program. */
static int write_program(int dfd, const char *dir, const char *name, const char *data, size_t len,
                         struct nsb_error *e)
{
        AUTOCLOSE int pfd = -1, fd = -1;
        size_t off = 0;

        if (mkdirat(dfd, "program", 0755) < 0)
                return nsb_fail(e, NSB_STAGE_PREPARE, errno, "mkdir '%s/program'", dir);
        pfd = openat(dfd, "program", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (pfd < 0)
                return nsb_fail(e, NSB_STAGE_PREPARE, errno, "open '%s/program'", dir);
        fd = openat(pfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0444);
        if (fd < 0)
                return nsb_fail(e, NSB_STAGE_PREPARE, errno, "create '%s/program/%s'", dir, name);
        while (off < len) {
                ssize_t n = write(fd, data + off, len - off);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return nsb_fail(e, NSB_STAGE_PREPARE, errno, "write '%s/program/%s'", dir, name);
                off += (size_t) n;
        }
        if (fchmod(pfd, 0555) < 0)
                return nsb_fail(e, NSB_STAGE_PREPARE, errno, "chmod '%s/program'", dir);
        return 0;
}

struct remover {
        int root;               /* the tree's top: deep subtrees are moved up here */
        dev_t dev;
        unsigned long moved;    /* how many were, in all */
        bool again;             /* some were in this pass */
};

static void remove_below(struct remover *rm, int dfd, int depth);

/* Depth is unbounded (a program can nest directories as deep as it likes),
 * recursion and open fds are not: past REMOVE_DEPTH a subtree is renamed up
 * to the top, and another pass takes it. */
#define REMOVE_DEPTH 64

static void remove_tree(int parent_fd, const char *name)
{
        struct remover rm = { .root = openat(parent_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) };
        struct stat st;

        if (rm.root >= 0 && fstat(rm.root, &st) == 0) {
                rm.dev = st.st_dev;
                for (unsigned pass = 0; pass < 100000; pass++) {
                        /* a fresh open file: a dup would share the finished directory offset */
                        int fd = openat(rm.root, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                        rm.again = false;
                        if (fd < 0)
                                break;
                        remove_below(&rm, fd, 0);
                        if (!rm.again)
                                break;
                }
        }
        if (rm.root >= 0)
                close(rm.root);
        (void) unlinkat(parent_fd, name, AT_REMOVEDIR);
}

/* Directories left by an nsbox that was killed (SIGKILL gives it no chance to
 * clean up): named after their creator's pid, removed once that pid is gone
 * and only when they belong to us. A reused pid merely postpones it. */
static const char *private_base(void)
{
        const char *base = getenv("TMPDIR");

        return base && base[0] == '/' ? base : "/tmp";
}

/* Reaps the leftovers in the directory @dfd (closed here). */
static void reap_stale_in(int dfd)
{
        AUTO(closedir) DIR *d = dfd < 0 ? NULL : fdopendir(dfd);
        struct dirent *de;

        if (dfd >= 0 && !d)
                close(dfd);
        while (d && (de = readdir(d))) {
                struct stat st;
                unsigned long pid;
                char tail[16];

                if (sscanf(de->d_name, "nsbox-reduced-%lu-%15s", &pid, tail) != 2 || pid == 0 || pid > INT32_MAX)
                        continue;
                if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
                        continue;
                if (st.st_uid != geteuid())
                        continue;
                if (kill((pid_t) pid, 0) == 0 || errno != ESRCH)
                        continue;
                remove_tree(dirfd(d), de->d_name);
        }
}

/* A user's private directories live in one directory of theirs,
 * BASE/nsbox-reduced-UID, so that every run can look for a killed reduced
 * run's leftovers with one open instead of listing all of $TMPDIR (0.3-0.7
 * ms a run with 660 entries here; an evaluation host's /tmp can hold 100k).
 * Mode 0700; root's 0711, as its runs' own directories: their program runs
 * as nobody and must pass through. Used only when it is ours, a directory,
 * and no one else may write it; -1 otherwise (another user may have made
 * it first in a shared /tmp: the caller falls back to BASE itself). */
static int user_dir_open(const char *base, bool create, char *path, size_t size)
{
        const mode_t mode = geteuid() == 0 ? 0711 : 0700;
        struct stat st;
        int fd;

        if ((size_t) snprintf(path, size, "%s/nsbox-reduced-%u", base, (unsigned) geteuid()) >= size)
                return -1;
        if (create && mkdir(path, mode) < 0 && errno != EEXIST)
                return -1;
        fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -1;
        if (fstat(fd, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & 022) ||
            /* the umask may have taken root's x bits */
            (create && (st.st_mode & 07777) != mode && fchmod(fd, mode) < 0)) {
                close(fd);
                return -1;
        }
        return fd;
}

void reduced_reap_stale(void)
{
        char path[4096];

        reap_stale_in(user_dir_open(private_base(), false, path, sizeof path));
}

int reduced_prepare(struct reduced_plan *p, const struct nsb_config *cfg, const char *program_name,
                    const char *program_data, size_t program_len, struct nsb_error *e)
{
        const char *base = private_base();
        const bool root = geteuid() == 0;
        const uid_t uid = root ? REDUCED_NOBODY_UID : geteuid();
        const gid_t gid = root ? REDUCED_NOBODY_GID : getegid();
        AUTOCLOSE int dfd = -1;
        char tmpl[4096], udir[4096];
        int udfd;
        int r;

        p->drop_to_nobody = root;
        /* the flat layout's leftovers too: an older nsbox's, or ours when
         * the user's directory was not usable */
        reap_stale_in(open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
        udfd = user_dir_open(base, true, udir, sizeof udir);
        reap_stale_in(udfd);
        if ((size_t) snprintf(tmpl, sizeof tmpl, "%s/nsbox-reduced-%ld-XXXXXX", udfd >= 0 ? udir : base,
                              (long) getpid()) >= sizeof tmpl)
                return nsb_fail(e, NSB_STAGE_PREPARE, ENAMETOOLONG, "TMPDIR '%s' is too long", base);
        if (!mkdtemp(tmpl))
                return nsb_fail(e, NSB_STAGE_PREPARE, errno, "mkdtemp '%s'", tmpl);
        if (!(p->dir = strdup(tmpl)))
                return nsb_fail(e, NSB_STAGE_PREPARE, ENOMEM, "out of memory");
        /* The top stays nsbox's user's (for root: 0711, so nobody may pass
         * through but plant nothing in it); everything below is made through
         * this fd, and only tmp/ and workspace/ are handed to the program's
         * user, after they exist. */
        dfd = open(p->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dfd < 0)
                return nsb_fail(e, NSB_STAGE_PREPARE, errno, "open '%s'", p->dir);
        if (root && fchmod(dfd, 0711) < 0)
                return nsb_fail(e, NSB_STAGE_PREPARE, errno, "chmod '%s'", p->dir);
        if (program_name) {
                if (!(p->program_dir = join(p->dir, "program")))
                        return nsb_fail(e, NSB_STAGE_PREPARE, ENOMEM, "out of memory");
                r = write_program(dfd, p->dir, program_name, program_data, program_len, e);
                if (r < 0)
                        return r;
        }
        p->tmpdir = join(p->dir, "tmp");
        p->workdir = cfg->workspace ? strdup(cfg->workspace) : join(p->dir, "workspace");
        if (!p->tmpdir || !p->workdir)
                return nsb_fail(e, NSB_STAGE_PREPARE, ENOMEM, "out of memory");
        r = make_dir_at(dfd, p->dir, "tmp", 0700, root, uid, gid, e);
        if (r == 0 && !cfg->workspace)
                r = make_dir_at(dfd, p->dir, "workspace", 0700, root, uid, gid, e);
        return r;
}

int reduced_count_tasks(uid_t uid, unsigned long *ret)
{
        AUTO(closedir) DIR *proc = opendir("/proc");
        struct dirent *de;
        unsigned long n = 0;
        bool read_one = false;

        while (proc && (de = readdir(proc))) {
                char path[64], line[256];
                unsigned long real = ~0UL, threads = 0;
                bool has_uid = false;
                FILE *f;
                int fd;

                if (de->d_name[0] < '1' || de->d_name[0] > '9')
                        continue;
                snprintf(path, sizeof path, "/proc/%s/status", de->d_name);
                if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
                        continue;
                if (!(f = fdopen(fd, "r"))) {
                        close(fd);
                        continue;
                }
                while (fgets(line, sizeof line, f)) {
                        if (sscanf(line, "Uid: %lu", &real) == 1) {
                                has_uid = true;
                                continue;
                        }
                        if (sscanf(line, "Threads: %lu", &threads) == 1)
                                break;
                }
                fclose(f);
                read_one |= has_uid;
                if (real == (unsigned long) uid)
                        n += threads;
        }
        *ret = n;
        /* Our own process is always there: none read means no Linux /proc. */
        return read_one ? 0 : -ENOENT;
}

/* Remove everything under @dfd (which it closes), then nothing else: no
 * symlink is followed (AT_SYMLINK_NOFOLLOW, O_NOFOLLOW) and no other
 * filesystem entered. A directory the program made unreadable is given back
 * its rights first (through the fd, or never through a link). */
static void remove_below(struct remover *rm, int dfd, int depth)
{
        DIR *d;
        struct dirent *de;

        (void) fchmod(dfd, 0700);
        d = fdopendir(dfd);
        if (!d) {
                close(dfd);
                return;
        }
        while ((de = readdir(d))) {
                struct stat st;
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        continue;
                if (!S_ISDIR(st.st_mode)) {
                        (void) unlinkat(dirfd(d), de->d_name, 0);
                        continue;
                }
                if (st.st_dev != rm->dev)
                        continue;       /* a mount point: never entered */
                if (depth >= REMOVE_DEPTH) {
                        char up[32];
                        snprintf(up, sizeof up, ".deep-%lu", rm->moved++);
                        if (renameat(dirfd(d), de->d_name, rm->root, up) == 0)
                                rm->again = true;
                        continue;
                }
                {
                        int sub = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (sub < 0 && fchmodat(dirfd(d), de->d_name, 0700, AT_SYMLINK_NOFOLLOW) == 0)
                                sub = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (sub >= 0)
                                remove_below(rm, sub, depth + 1);
                        (void) unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR);
                }
        }
        closedir(d);
}

void reduced_cleanup(struct reduced_plan *p)
{
        if (p->dir)
                remove_tree(AT_FDCWD, p->dir);
        free(p->dir);
        free(p->workdir);
        free(p->tmpdir);
        free(p->program_dir);
        free(p->rules);
        memset(p, 0, sizeof *p);
}
