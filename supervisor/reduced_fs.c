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

static int make_dir(const char *path, uid_t uid, gid_t gid, bool chown_it, struct nsb_error *e)
{
        if (mkdir(path, 0700) < 0 && errno != EEXIST)
                return nsb_fail(e, NSB_STAGE_PREPARE, errno, "mkdir '%s'", path);
        if (chown_it && chown(path, uid, gid) < 0)
                return nsb_fail(e, NSB_STAGE_PREPARE, errno, "chown '%s' to %u:%u", path, uid, gid);
        return 0;
}

static int write_program(const char *dir, const char *name, const char *data, size_t len, struct nsb_error *e)
{
        AUTOFREE char *path = join(dir, name);
        AUTOCLOSE int fd = -1;
        size_t off = 0;

        if (!path)
                return nsb_fail(e, NSB_STAGE_PREPARE, ENOMEM, "out of memory");
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0444);
        if (fd < 0)
                return nsb_fail(e, NSB_STAGE_PREPARE, errno, "create '%s'", path);
        while (off < len) {
                ssize_t n = write(fd, data + off, len - off);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return nsb_fail(e, NSB_STAGE_PREPARE, errno, "write '%s'", path);
                off += (size_t) n;
        }
        return 0;
}

static void remove_below(int dfd, dev_t dev, int depth);

static void remove_tree(int parent_fd, const char *name)
{
        int fd = openat(parent_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;

        if (fd >= 0 && fstat(fd, &st) == 0)
                remove_below(fd, st.st_dev, 0);
        else if (fd >= 0)
                close(fd);
        (void) unlinkat(parent_fd, name, AT_REMOVEDIR);
}

/* Directories left by an nsbox that was killed (SIGKILL gives it no chance to
 * clean up): named after their creator's pid, removed once that pid is gone
 * and only when they belong to us. A reused pid merely postpones it. */
static void reap_stale(const char *base)
{
        AUTO(closedir) DIR *d = opendir(base);
        struct dirent *de;

        while (d && (de = readdir(d))) {
                struct stat st;
                unsigned long pid;
                char tail[16];

                if (sscanf(de->d_name, "nsbox-reduced-%lu-%15s", &pid, tail) != 2 || pid == 0 || pid > INT32_MAX)
                        continue;
                if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
                        continue;
                if (st.st_uid != geteuid() && !(geteuid() == 0 && st.st_uid == REDUCED_NOBODY_UID))
                        continue;
                if (kill((pid_t) pid, 0) == 0 || errno != ESRCH)
                        continue;
                remove_tree(dirfd(d), de->d_name);
        }
}

int reduced_prepare(struct reduced_plan *p, const struct nsb_config *cfg, const char *program_name,
                    const char *program_data, size_t program_len, struct nsb_error *e)
{
        const char *base = getenv("TMPDIR");
        const bool root = geteuid() == 0;
        const uid_t uid = root ? REDUCED_NOBODY_UID : geteuid();
        const gid_t gid = root ? REDUCED_NOBODY_GID : getegid();
        char tmpl[4096];
        int r;

        p->drop_to_nobody = root;
        if (!base || base[0] != '/')
                base = "/tmp";
        reap_stale(base);
        if ((size_t) snprintf(tmpl, sizeof tmpl, "%s/nsbox-reduced-%ld-XXXXXX", base, (long) getpid()) >= sizeof tmpl)
                return nsb_fail(e, NSB_STAGE_PREPARE, ENAMETOOLONG, "TMPDIR '%s' is too long", base);
        if (!mkdtemp(tmpl))
                return nsb_fail(e, NSB_STAGE_PREPARE, errno, "mkdtemp '%s'", tmpl);
        if (!(p->dir = strdup(tmpl)))
                return nsb_fail(e, NSB_STAGE_PREPARE, ENOMEM, "out of memory");
        if (root && chown(p->dir, uid, gid) < 0)
                return nsb_fail(e, NSB_STAGE_PREPARE, errno, "chown '%s' to %u:%u", p->dir, uid, gid);
        p->tmpdir = join(p->dir, "tmp");
        p->workdir = cfg->workspace ? strdup(cfg->workspace) : join(p->dir, "workspace");
        if (!p->tmpdir || !p->workdir)
                return nsb_fail(e, NSB_STAGE_PREPARE, ENOMEM, "out of memory");
        r = make_dir(p->tmpdir, uid, gid, root, e);
        if (r == 0 && !cfg->workspace)
                r = make_dir(p->workdir, uid, gid, root, e);
        if (r < 0 || !program_name)
                return r;
        if (!(p->program_dir = join(p->dir, "program")))
                return nsb_fail(e, NSB_STAGE_PREPARE, ENOMEM, "out of memory");
        /* Owned by nsbox's user, read-only to the program: 0555 / 0444. */
        if (mkdir(p->program_dir, 0755) < 0)
                return nsb_fail(e, NSB_STAGE_PREPARE, errno, "mkdir '%s'", p->program_dir);
        r = write_program(p->program_dir, program_name, program_data, program_len, e);
        if (r == 0 && chmod(p->program_dir, 0555) < 0)
                r = nsb_fail(e, NSB_STAGE_PREPARE, errno, "chmod '%s'", p->program_dir);
        return r;
}

unsigned long reduced_count_tasks(uid_t uid)
{
        AUTO(closedir) DIR *proc = opendir("/proc");
        struct dirent *de;
        unsigned long n = 0;

        while (proc && (de = readdir(proc))) {
                char path[64], line[256];
                unsigned long real = ~0UL, threads = 0;
                FILE *f;

                if (de->d_name[0] < '1' || de->d_name[0] > '9')
                        continue;
                snprintf(path, sizeof path, "/proc/%s/status", de->d_name);
                if (!(f = fopen(path, "re")))
                        continue;
                while (fgets(line, sizeof line, f)) {
                        if (sscanf(line, "Uid: %lu", &real) == 1)
                                continue;
                        if (sscanf(line, "Threads: %lu", &threads) == 1)
                                break;
                }
                fclose(f);
                if (real == (unsigned long) uid)
                        n += threads;
        }
        return n;
}

/* Remove everything under @dfd, then nothing else: no symlink is followed
 * (AT_SYMLINK_NOFOLLOW, O_NOFOLLOW) and no other filesystem entered. A
 * directory the program made unreadable is given back its rights first. */
static void remove_below(int dfd, dev_t dev, int depth)
{
        DIR *d;
        struct dirent *de;

        if (depth > 256)
                return;
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
                if (S_ISDIR(st.st_mode) && st.st_dev == dev) {
                        int sub = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (sub < 0 && fchmodat(dirfd(d), de->d_name, 0700, 0) == 0)
                                sub = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (sub >= 0)
                                remove_below(sub, dev, depth + 1);
                        (void) unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR);
                } else if (!S_ISDIR(st.st_mode)) {
                        (void) unlinkat(dirfd(d), de->d_name, 0);
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
