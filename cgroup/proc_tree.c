/* cgroup/proc_tree.c — see proc_tree.h. Reads /proc only. */
#include "cgroup/proc_tree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static ssize_t read_at(int dirfd, const char *path, char *buf, size_t size)
{
        int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
        ssize_t n;

        if (fd < 0)
                return -errno;
        do
                n = read(fd, buf, size - 1);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                n = -errno;
        else
                buf[n] = '\0';
        close(fd);
        return n;
}

/* The whole of a file whose size is not bounded (a thread's children: a
 * pid each, past a page at ~700 children), into *buf (grown as needed).
 * One read() returns at most a page of it: read on to the end. The length,
 * or -errno. */
static ssize_t read_whole(int dirfd, const char *path, struct proc_buf *b)
{
        int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
        size_t len = 0;

        if (fd < 0)
                return -errno;
        for (;;) {
                ssize_t n;

                if (b->cap - len < 4096) {
                        size_t cap = b->cap ? b->cap * 2 : 16384;
                        char *p = realloc(b->data, cap);
                        if (!p) {
                                close(fd);
                                return -ENOMEM;
                        }
                        b->data = p;
                        b->cap = cap;
                }
                n = read(fd, b->data + len, b->cap - len - 1);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        int err = errno;
                        close(fd);
                        return -err;
                }
                if (n == 0)
                        break;
                len += (size_t) n;
        }
        b->data[len] = '\0';
        close(fd);
        return (ssize_t) len;
}

/* The walk's growing lists: pids[] to read (breadth first), procs[]
 * (with PROC_TREE_PROCS) what was read of each. */
struct walk {
        pid_t *pids;
        struct tree_cpu_proc *procs;
        size_t n, cap;
        bool want_procs;
        struct proc_buf kids;
};

/* Room for @more pids (and procs). A tree is never cut short silently:
 * false only when memory runs out, and the look then says it is incomplete. */
static bool walk_reserve(struct walk *w, size_t more)
{
        size_t cap = w->cap;
        void *p;

        if (w->n + more <= w->cap)
                return true;
        while (cap < w->n + more)
                cap *= 2;
        if (!(p = realloc(w->pids, cap * sizeof *w->pids)))
                return false;
        w->pids = p;
        if (w->want_procs) {
                if (!(p = realloc(w->procs, cap * sizeof *w->procs)))
                        return false;
                w->procs = p;
        }
        w->cap = cap;
        return true;
}

/* Appends the children of every thread of @pid to w->pids. false when the
 * list could not grow (some were left out). */
static bool add_children(int proc_fd, pid_t pid, struct walk *w)
{
        char path[64];
        struct dirent *d;
        bool complete = true;
        DIR *dir;
        int fd;

        snprintf(path, sizeof path, "%d/task", (int) pid);
        fd = openat(proc_fd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0 || !(dir = fdopendir(fd))) {
                if (fd >= 0)
                        close(fd);
                return true;    /* gone meanwhile */
        }
        while ((d = readdir(dir))) {
                ssize_t k;
                int got;
                if (d->d_name[0] == '.')
                        continue;
                snprintf(path, sizeof path, "%d/task/%.20s/children", (int) pid, d->d_name);
                k = read_whole(proc_fd, path, &w->kids);
                if (k == -ENOMEM)
                        complete = false;
                if (k <= 0)
                        continue;
                /* every pid takes at least two bytes ("1 ") */
                if (!walk_reserve(w, (size_t) k / 2 + 1)) {
                        complete = false;
                        continue;
                }
                got = proc_parse_children(w->kids.data, (size_t) k, w->pids + w->n, w->cap - w->n);
                if (got > 0)
                        w->n += (size_t) got;
        }
        closedir(dir);
        return complete;
}

/* Pss_Anon + Pss_Shmem of @pid, in bytes; 0 when gone; *private: its
 * Private_Dirty (pages only it maps: a page is private to one process at a
 * time, so the sum over a tree does not grow when sharers exit, as the PSS
 * sum may; 0 when unknown). smaps_rollup
 * needs ptrace read access: a process that made itself not dumpable (under
 * reduced isolation, where it has the supervisor's uid and no namespace of
 * its own) refuses it. Its resident size from statm, which any reader may
 * see, stands in: it counts the shared pages whole (and file pages), so it
 * says more than the PSS would — towards the limit, never under it. */
static uint64_t pss_of(int proc_fd, pid_t pid, char *buf, size_t size, unsigned *estimated, uint64_t *private)
{
        char path[64];
        uint64_t anon = 0, shmem = 0, dirty = 0;
        unsigned long vsize, resident;
        ssize_t k;

        snprintf(path, sizeof path, "%d/smaps_rollup", (int) pid);
        k = read_at(proc_fd, path, buf, size);
        if (k > 0 && proc_parse_status_kb(buf, (size_t) k, "Pss_Anon", &anon) == 0) {
                (void) proc_parse_status_kb(buf, (size_t) k, "Pss_Shmem", &shmem);
                if (proc_parse_status_kb(buf, (size_t) k, "Private_Dirty", &dirty) == 0)
                        *private += dirty * 1024;
                return (anon + shmem) * 1024;
        }
        if (k != -EACCES && k != -EPERM)
                return 0;       /* gone, or a zombie */
        snprintf(path, sizeof path, "%d/statm", (int) pid);
        k = read_at(proc_fd, path, buf, size);
        if (k <= 0 || sscanf(buf, "%lu %lu", &vsize, &resident) != 2)
                return 0;
        (*estimated)++;
        return (uint64_t) resident * (uint64_t) sysconf(_SC_PAGESIZE);
}

/* Is @pid running the executable @self_exe names (nsbox's own)? Unknown
 * (unreadable) counts as yes: the program before its execve is a fork of
 * the init, not dumpable, its memory still the host user namespace's (an
 * mm takes the namespace of the execve that made it), so the supervisor may
 * not read its exe; after its execve it may (the sandbox's namespace, in
 * which it holds every capability). Reduced isolation has no namespace: a
 * program there that makes itself not dumpable is left out (it cannot be
 * told from one before its execve; its descendants are counted, at their
 * statm size: pss_of; docs/cgroups.md). */
static bool runs_exe(int proc_fd, pid_t pid, const struct stat *self_exe)
{
        struct stat a;
        char path[64];

        if (!self_exe)
                return false;
        snprintf(path, sizeof path, "%d/exe", (int) pid);
        if (fstatat(proc_fd, path, &a, 0) < 0)
                return true;
        return a.st_dev == self_exe->st_dev && a.st_ino == self_exe->st_ino;
}

/* VmHWM and (with PROC_TREE_PSS) the memory sum of pids[i]; @root_child:
 * its parent is the root, so it may still be the program before execve. */
static void add_memory(int proc_fd, pid_t pid, bool is_root, bool root_child, const struct proc_stat *st,
                       const struct stat *self_exe, unsigned flags, struct proc_tree_usage *ret)
{
        char path[64], buf[4096];
        uint64_t kb;
        ssize_t k;

        snprintf(path, sizeof path, "%d/status", (int) pid);
        k = read_at(proc_fd, path, buf, sizeof buf);
        if (k <= 0 || proc_parse_status_kb(buf, (size_t) k, "VmHWM", &kb) < 0)
                kb = 0;
        if (is_root) {
                ret->root_hwm_bytes = kb * 1024;
                return;         /* nsbox's init: a copy of the supervisor */
        }
        if (root_child && runs_exe(proc_fd, pid, self_exe))
                return;         /* the program before its execve: the same */
        /* ... or in the middle of it: its exe is the new one, its memory a
         * few new pages (8 KiB to 200 KiB were reported as the peak of
         * /bin/true), until execve has laid out the arguments */
        if (root_child && self_exe && st->arg_start == 0)
                return;
        if (kb * 1024 > ret->peak_rss_bytes)
                ret->peak_rss_bytes = kb * 1024;
        if (flags & PROC_TREE_PSS)
                ret->pss_bytes += pss_of(proc_fd, pid, buf, sizeof buf, &ret->n_estimated, &ret->private_bytes);
}

int proc_tree_usage(int proc_fd, pid_t root, const struct stat *self_exe, unsigned flags, struct proc_tree_usage *ret)
{
        struct walk w = { .cap = 256, .want_procs = (flags & PROC_TREE_PROCS) != 0 };
        char path[64], buf[4096];
        size_t n_root_children = 0;

        memset(ret, 0, sizeof *ret);
        w.pids = malloc(w.cap * sizeof *w.pids);
        if (w.want_procs)
                w.procs = malloc(w.cap * sizeof *w.procs);
        if (!w.pids || (w.want_procs && !w.procs)) {
                free(w.pids);
                free(w.procs);
                return -ENOMEM;
        }
        w.pids[0] = root;
        w.n = 1;
        /* Breadth first: pids[] grows as each process's children are found.
         * A parent is read before its children: a child reaped in between
         * is in neither figure for this look (tree_cpu_look waits a look). */
        for (size_t i = 0; i < w.n; i++) {
                struct proc_stat st;
                ssize_t k;

                snprintf(path, sizeof path, "%d/stat", (int) w.pids[i]);
                k = read_at(proc_fd, path, buf, sizeof buf);
                if (k < 0 || proc_parse_stat(buf, (size_t) k, &st) < 0) {
                        if (i == 0) {
                                free(w.pids);
                                free(w.procs);
                                return k < 0 ? (int) k : -EINVAL;
                        }
                        continue;       /* gone meanwhile */
                }
                if (w.procs)
                        w.procs[ret->n_procs] = (struct tree_cpu_proc){
                                .pid = w.pids[i], .start = st.start,
                                .own = st.utime + st.stime, .kids = st.cutime + st.cstime,
                        };
                ret->cpu_ticks += st.utime + st.stime + st.cutime + st.cstime;
                ret->n_procs++;
                if ((st.flags & PROC_PF_EXITING) && st.state != 'Z' && st.state != 'X')
                        ret->n_exiting++;
                add_memory(proc_fd, w.pids[i], i == 0, i >= 1 && i <= n_root_children, &st, self_exe, flags, ret);
                if (!add_children(proc_fd, w.pids[i], &w))
                        ret->incomplete = true;
                if (i == 0)
                        n_root_children = w.n - 1;
        }
        free(w.pids);
        free(w.kids.data);
        ret->procs = w.procs;
        return 0;
}
