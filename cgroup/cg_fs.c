/* cgroup/cg_fs.c — fd-relative file helpers shared by the backends, the ops
 * lookup and stale-cgroup reaping. Every path is relative to an injected or
 * previously opened directory fd; nothing here names /sys or /proc. */
#include "cgroup/cg_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util/cleanup.h"

ssize_t cg_pread_all(int fd, char *buf, size_t size)
{
        size_t got = 0;

        if (size == 0)
                return -EINVAL;
        /* cgroupfs files are seq_files: reading again from offset 0 regenerates
         * them, so one pre-opened fd serves every poll. */
        while (got < size - 1) {
                ssize_t n = pread(fd, buf + got, size - 1 - got, (off_t) got);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (n == 0)
                        break;
                got += (size_t) n;
        }
        buf[got] = '\0';
        return (ssize_t) got;
}

int cg_read_usage_slot(const struct cg_run *run, enum cg_usage_file slot, char *buf, size_t size,
                       struct nsb_error *e)
{
        ssize_t n = cg_pread_all(run->usage_fds[slot], buf, size);

        if (n < 0)
                return nsb_fail(e, NSB_STAGE_CGROUP, (int) -n, "read usage of %s", run->name);
        return (int) n;
}

int cg_read_pids_and_peak(const struct cg_run *run, struct cg_usage *ret, char *buf, size_t size,
                          struct nsb_error *e)
{
        uint64_t v;
        int n;

        if (run->usage_fds[CG_U_PIDS_EVENTS] >= 0) {
                n = cg_read_usage_slot(run, CG_U_PIDS_EVENTS, buf, size, e);
                if (n < 0)
                        return n;
                ret->pids_limit_hit = cg_parse_kv(buf, (size_t) n, "max", &v) == 0 && v > 0;
        }
        if (run->usage_fds[CG_U_MEM_PEAK] >= 0) {
                n = cg_read_usage_slot(run, CG_U_MEM_PEAK, buf, size, e);
                if (n < 0)
                        return n;
                ret->peak_known = cg_parse_u64(buf, (size_t) n, &ret->peak_memory_bytes) == 0;
        }
        return 0;
}

ssize_t cg_read_at(int dirfd, const char *file, char *buf, size_t size)
{
        AUTOCLOSE int fd = openat(dirfd, file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

        if (fd < 0)
                return -errno;
        return cg_pread_all(fd, buf, size);
}

int cg_read_alloc_at(int dirfd, const char *file, char **ret_buf, size_t *ret_len)
{
        AUTOCLOSE int fd = openat(dirfd, file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        AUTOFREE char *buf = NULL;
        size_t cap = 0, len = 0;

        if (fd < 0)
                return -errno;
        /* procfs reports size 0: grow until read() says EOF. */
        for (;;) {
                ssize_t n;
                if (cap - len < 2048) {
                        size_t ncap = cap ? cap * 2 : 8192;
                        char *nb;
                        if (ncap > (64u << 20))
                                return -EFBIG;
                        nb = realloc(buf, ncap);
                        if (!nb)
                                return -ENOMEM;
                        buf = nb;
                        cap = ncap;
                }
                n = read(fd, buf + len, cap - len - 1);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (n == 0)
                        break;
                len += (size_t) n;
        }
        buf[len] = '\0';
        *ret_len = len;
        *ret_buf = move_ptr(&buf);
        return 0;
}

int cg_write_at(int dirfd, const char *file, const char *value)
{
        /* Never O_CREAT: a missing control file means the controller is not
         * there, and must not be papered over by a regular file. */
        AUTOCLOSE int fd = openat(dirfd, file, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
        size_t len = strlen(value);
        ssize_t n;

        if (fd < 0)
                return -errno;
        /* One write(): cgroupfs parses each write() as a whole value. */
        do
                n = write(fd, value, len);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return -errno;
        return (size_t) n == len ? 0 : -EIO;
}

bool cg_exists_at(int dirfd, const char *file)
{
        return faccessat(dirfd, file, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
}

static void fake_unlink(int dirfd, const char *name, const char *const *fake_files)
{
        AUTOCLOSE int dfd = -1;

        if (!fake_files)
                return;
        dfd = openat(dirfd, name, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (dfd < 0)
                return;
        for (size_t i = 0; fake_files[i]; i++)
                (void) unlinkat(dfd, fake_files[i], 0);
}

int cg_mkdir_at(int dirfd, const char *name, const char *const *fake_files)
{
        AUTOCLOSE int dfd = -1;

        if (mkdirat(dirfd, name, 0755) < 0)
                return -errno;
        if (!fake_files)
                return 0;
        /* Test trees only: stand in for the control files cgroupfs makes. */
        dfd = openat(dirfd, name, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (dfd < 0)
                return -errno;
        for (size_t i = 0; fake_files[i]; i++) {
                AUTOCLOSE int fd = openat(dfd, fake_files[i], O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
                if (fd < 0)
                        return -errno;
        }
        return 0;
}

/* Child cgroups the run may have made (it would need its own cgroupfs mount
 * and write access): removed depth-first, bounded, before the run's own rmdir. */
static void rmdir_children(int pfd, const char *name, int depth, const char *const *fake_files)
{
        AUTOCLOSE int fd = -1;
        AUTO(closedir) DIR *d = NULL;
        struct dirent *de;

        if (depth <= 0)
                return;
        fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return;
        d = fdopendir(fd);
        if (!d)
                return;
        fd = -1;        /* owned by d now */
        while ((de = readdir(d))) {
                if (de->d_type != DT_DIR || !strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
                        continue;
                AUTOCLOSE int sub = openat(dirfd(d), de->d_name,
                                           O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
                rmdir_children(dirfd(d), de->d_name, depth - 1, fake_files);
                if (sub >= 0)
                        (void) cg_kill_procs(sub);
                fake_unlink(dirfd(d), de->d_name, fake_files);
                (void) unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR);
        }
}

int cg_rmdir_at(int dirfd, const char *name, const char *const *fake_files, bool wait)
{
        /* Backoff 0, 50, 100, ... 1600 us: about 3 ms in all. A cgroup stays
         * busy for a moment after its last task was killed (exit is
         * asynchronous); the caller kills the tree before destroy, so a longer
         * wait would only hide a bug. */
        long delay_ns = 50 * 1000;

        fake_unlink(dirfd, name, fake_files);
        for (int attempt = 0;; attempt++) {
                struct timespec ts;

                if (unlinkat(dirfd, name, AT_REMOVEDIR) == 0 || errno == ENOENT)
                        return 0;
                if (errno != EBUSY || !wait || attempt >= 6)
                        return -errno;
                if (attempt == 0)
                        rmdir_children(dirfd, name, 8, fake_files);
                ts.tv_sec = 0;
                ts.tv_nsec = delay_ns;
                (void) nanosleep(&ts, NULL);
                delay_ns *= 2;
        }
}

int cg_kill_procs(int dirfd)
{
        pid_t self = getpid();

        if (dirfd < 0)
                return 0;
        /* Freeze forking first where we can (pids.max = 0 refuses every new
         * task), so a fork bomb cannot outrun the loop below. */
        if (cg_exists_at(dirfd, "pids.max"))
                (void) cg_write_at(dirfd, "pids.max", "0");
        for (int round = 0; round < 2000; round++) {
                char buf[8192];
                pid_t pids[1024];
                size_t n = 0, others = 0, keep;
                ssize_t len = cg_read_at(dirfd, "cgroup.procs", buf, sizeof buf);
                char *nl;
                int r;

                if (len < 0)
                        return (int) len;
                /* A full buffer may end mid-number: keep whole lines only; the
                 * next round reads the rest. */
                nl = memrchr(buf, '\n', (size_t) len);
                keep = (size_t) len == sizeof buf - 1 ? (nl ? (size_t) (nl - buf) : 0) : (size_t) len;
                r = cg_parse_procs(buf, keep, self, pids, ARRAY_SIZE(pids), &n, &others);
                if (r < 0)
                        return r;
                if (n == 0)
                        return 0;
                if (others == 0)
                        return -EDEADLK;        /* only we are in it: never kill ourselves */
                for (size_t i = 0; i < n && i < ARRAY_SIZE(pids); i++)
                        if (pids[i] != self)
                                (void) kill(pids[i], SIGKILL);
                if (round < 8) {
                        sched_yield();
                } else {
                        struct timespec ts = { 0, 100 * 1000 };
                        (void) nanosleep(&ts, NULL);
                }
        }
        return -EBUSY;
}

void cg_close_run_fds(struct cg_run *run)
{
        close_fd(&run->clone_fd);
        for (size_t i = 0; i < CG_RUN_DIRS; i++) {
                close_fd(&run->join_fds[i]);
                close_fd(&run->dir_fds[i]);
                close_fd(&run->parent_fds[i]);
        }
        for (size_t i = 0; i < CG_U__MAX; i++) {
                close_fd(&run->usage_fds[i]);
        }
}

const struct cg_ops *cg_ops_for(enum cg_backend b)
{
        switch (b) {
        case CG_BACKEND_V2:
                return &cg_v2_ops;
        case CG_BACKEND_V1:
                return &cg_v1_ops;
        case CG_BACKEND_RLIMIT:
                return &cg_rlimit_ops;
        case CG_BACKEND_NONE:
        default:
                return NULL;
        }
}

static bool pid_alive(const struct cg_env *env, pid_t pid)
{
        char s[16];

        if (pid == getpid())
                return true;
        snprintf(s, sizeof s, "%d", (int) pid);
        /* Anything but a clear ENOENT counts as alive: reaping a live
         * supervisor's cgroup would kill its sandbox. */
        return faccessat(env->proc_fd, s, F_OK, 0) == 0 || errno != ENOENT;
}

/* A dead supervisor's run cgroup that was a warm generation's parent
 * (cg_ops.make_parent) holds child cgroups: its leaf, and the cgroups of
 * jobs whose supervisors died too. One rmdir each, one level, never a
 * kill: a populated one stays (the kernel refuses). */
static void reap_children(int pfd, const char *name, const char *const *fake_files)
{
        AUTOCLOSE int fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        AUTO(closedir) DIR *d = NULL;
        struct dirent *de;

        if (fd < 0 || !(d = fdopendir(fd)))
                return;
        fd = -1;        /* owned by d now */
        while ((de = readdir(d)))
                if (de->d_type == DT_DIR && strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
                        (void) cg_rmdir_at(dirfd(d), de->d_name, fake_files, false);
}

static int reap_dir(const struct cg_env *env, const char *rel)
{
        AUTOCLOSE int fd = openat(env->sys_cgroup_fd, rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        AUTO(closedir) DIR *d = NULL;
        struct dirent *de;
        int removed = 0;

        if (fd < 0)
                return -errno;
        d = fdopendir(fd);
        if (!d)
                return -errno;
        fd = -1;        /* owned by d now */
        while ((de = readdir(d))) {
                pid_t pid;

                if (de->d_type != DT_DIR || cg_parse_name(de->d_name, &pid) == CG_NAME_OTHER)
                        continue;
                if (pid_alive(env, pid))
                        continue;
                /* Remove only, never kill, and try once: the kernel refuses
                 * (EBUSY) while a task is still inside, and a hierarchy shared
                 * with another pid namespace may hold a live nsbox whose pid we
                 * cannot see. A dead supervisor's sandbox should die with its
                 * pid namespace init (the supervisor's PDEATHSIG), emptying it. */
                int r = cg_rmdir_at(dirfd(d), de->d_name, env->fake_files, false);

                if (r == -EBUSY || r == -ENOTEMPTY) {     /* child cgroups (ENOTEMPTY: a test tree) */
                        reap_children(dirfd(d), de->d_name, env->fake_files);
                        r = cg_rmdir_at(dirfd(d), de->d_name, env->fake_files, false);
                }
                if (r == 0)
                        removed++;
        }
        return removed;
}

int cg_reap_stale(const struct cg_env *env, const struct cg_facts *f)
{
        int total = 0, r;

        if (!cg_v2_unusable(f)) {
                r = reap_dir(env, f->v2_base_rel);
                if (r < 0)
                        return r;
                total += r;
        }
        for (int c = 0; c < CG_V1__MAX; c++) {
                bool seen = false;

                if (!f->v1[c].found || !f->v1[c].writable)
                        continue;
                for (int j = 0; j < c; j++)
                        if (f->v1[j].found && f->v1[j].writable &&
                            f->v1[j].hierarchy_id == f->v1[c].hierarchy_id)
                                seen = true;
                if (seen)
                        continue;       /* co-mounted with one already scanned */
                r = reap_dir(env, f->v1[c].own_rel);
                if (r < 0)
                        return r;
                total += r;
        }
        return total;
}

int cg_join_by_fds(struct cg_run *run, struct nsb_error *e)
{
        int r = 0;

        /* "0" means the writer itself; the kernel checks the opener's rights. */
        for (size_t i = 0; i < CG_RUN_DIRS && r == 0; i++) {
                ssize_t n;
                if (run->join_fds[i] < 0)
                        continue;
                do
                        n = write(run->join_fds[i], "0", 1);
                while (n < 0 && errno == EINTR);
                if (n != 1)
                        r = nsb_fail(e, NSB_STAGE_CGROUP, n < 0 ? errno : EIO, "join %s (hierarchy %zu)",
                                     run->name, i);
        }
        cg_close_run_fds(run);
        return r;
}
