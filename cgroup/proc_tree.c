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

#define PROC_TREE_MAX 4096

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

/* Appends the children of every thread of @pid to @pids (up to @cap). */
static size_t add_children(int proc_fd, pid_t pid, pid_t *pids, size_t n, size_t cap)
{
        char path[64], buf[4096];
        struct dirent *d;
        DIR *dir;
        int fd;

        snprintf(path, sizeof path, "%d/task", (int) pid);
        fd = openat(proc_fd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0 || !(dir = fdopendir(fd))) {
                if (fd >= 0)
                        close(fd);
                return n;
        }
        while ((d = readdir(dir)) && n < cap) {
                ssize_t k;
                int got;
                if (d->d_name[0] == '.')
                        continue;
                snprintf(path, sizeof path, "%d/task/%.20s/children", (int) pid, d->d_name);
                k = read_at(proc_fd, path, buf, sizeof buf);
                if (k <= 0)
                        continue;
                got = proc_parse_children(buf, (size_t) k, pids + n, cap - n);
                if (got > 0)
                        n += (size_t) got;
        }
        closedir(dir);
        return n;
}

/* Pss_Anon + Pss_Shmem of @pid, in bytes; 0 when unreadable. */
static uint64_t pss_of(int proc_fd, pid_t pid, char *buf, size_t size)
{
        char path[64];
        uint64_t anon = 0, shmem = 0;
        ssize_t k;

        snprintf(path, sizeof path, "%d/smaps_rollup", (int) pid);
        k = read_at(proc_fd, path, buf, size);
        if (k <= 0 || proc_parse_status_kb(buf, (size_t) k, "Pss_Anon", &anon) < 0)
                return 0;
        (void) proc_parse_status_kb(buf, (size_t) k, "Pss_Shmem", &shmem);
        return (anon + shmem) * 1024;
}

/* Is @pid running the executable @self_exe names (nsbox's own)? Unknown
 * (unreadable) counts as yes: the program before its execve is a fork of
 * the init, not dumpable, its memory still the host user namespace's (an
 * mm takes the namespace of the execve that made it), so the supervisor may
 * not read its exe; after its execve it may (the sandbox's namespace, in
 * which it holds every capability). Reduced isolation has no namespace: a
 * program there that makes itself not dumpable is left out (as its
 * smaps_rollup already is; docs/cgroups.md). */
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
static void add_memory(int proc_fd, pid_t pid, bool is_root, bool root_child, const struct stat *self_exe, unsigned flags,
                       struct proc_tree_usage *ret)
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
        if (kb * 1024 > ret->peak_rss_bytes)
                ret->peak_rss_bytes = kb * 1024;
        if (flags & PROC_TREE_PSS)
                ret->pss_bytes += pss_of(proc_fd, pid, buf, sizeof buf);
}

int proc_tree_usage(int proc_fd, pid_t root, const struct stat *self_exe, unsigned flags, struct proc_tree_usage *ret)
{
        pid_t *pids = malloc(PROC_TREE_MAX * sizeof *pids);
        struct tree_cpu_proc *procs = NULL;
        char path[64], buf[4096];
        size_t n = 1, n_root_children = 0;

        memset(ret, 0, sizeof *ret);
        if (pids && (flags & PROC_TREE_PROCS))
                procs = malloc(PROC_TREE_MAX * sizeof *procs);
        if (!pids || ((flags & PROC_TREE_PROCS) && !procs)) {
                free(pids);
                free(procs);
                return -ENOMEM;
        }
        pids[0] = root;
        /* Breadth first: pids[] grows as each process's children are found.
         * A parent is read before its children: a child reaped in between
         * is in neither figure for this look (tree_cpu_look waits a look). */
        for (size_t i = 0; i < n; i++) {
                struct proc_stat st;
                ssize_t k;

                snprintf(path, sizeof path, "%d/stat", (int) pids[i]);
                k = read_at(proc_fd, path, buf, sizeof buf);
                if (k < 0 || proc_parse_stat(buf, (size_t) k, &st) < 0) {
                        if (i == 0) {
                                free(pids);
                                free(procs);
                                return k < 0 ? (int) k : -EINVAL;
                        }
                        continue;       /* gone meanwhile */
                }
                if (procs)
                        procs[ret->n_procs] = (struct tree_cpu_proc){
                                .pid = pids[i], .start = st.start,
                                .own = st.utime + st.stime, .kids = st.cutime + st.cstime,
                        };
                ret->cpu_ticks += st.utime + st.stime + st.cutime + st.cstime;
                ret->n_procs++;
                add_memory(proc_fd, pids[i], i == 0, i >= 1 && i <= n_root_children, self_exe, flags, ret);
                n = add_children(proc_fd, pids[i], pids, n, PROC_TREE_MAX);
                if (i == 0)
                        n_root_children = n - 1;
        }
        free(pids);
        ret->procs = procs;
        return 0;
}
