/* cgroup/cg_internal.h — the module's test-visible internals.
 *
 * Pure part (cg_parse.c, cg_plan.c): parsers that take a buffer, never a path,
 * and match whole tokens; backend usability and choice; the list of limit
 * writes. Sys part (cg_fs.c): small fd-relative file helpers the backends
 * share. Nothing here is for use outside cgroup/ and tests/unit/test_cgroup.c.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cgroup/cgroup.h"

/* ---- parsers (pure) ---- */

/* /proc/self/cgroup: "ID:CONTROLLERS:PATH" lines. */
struct cg_self {
        bool has_v2;                    /* a "0::PATH" line */
        char v2_path[CG_PATH_MAX];
        struct {
                bool found;
                int hierarchy_id;
                char path[CG_PATH_MAX];
        } v1[CG_V1__MAX];
};
int cg_parse_proc_cgroup(const char *buf, size_t len, struct cg_self *ret);

/* mountinfo: the cgroup2 mount and the v1 mount of each controller, whose
 * mount point lies at or below @sys_path. rel = mount point relative to
 * @sys_path ("" for @sys_path itself); root = the mount's root in its hierarchy. */
struct cg_mount {
        bool found;
        char rel[CG_PATH_MAX];
        char root[CG_PATH_MAX];
};
struct cg_mounts {
        struct cg_mount v2;
        struct cg_mount v1[CG_V1__MAX];
};
int cg_parse_mountinfo(const char *buf, size_t len, const char *sys_path, struct cg_mounts *ret);

/* Own cgroup directory relative to the sys root: mount rel + (own path minus
 * the mount root). "." for the sys root itself. -ENOENT when the own path is
 * not inside the mount, -EINVAL on a ".." component, -ENAMETOOLONG. */
int cg_own_rel(const struct cg_mount *m, const char *own_path, char *buf, size_t size);

/* Whitespace-separated controller names -> CG_CTRL_* mask. Whole tokens only. */
unsigned cg_parse_controllers(const char *buf, size_t len);

/* Is @word one of the @sep-separated tokens of buf[0..len)? */
bool cg_has_token(const char *buf, size_t len, char sep, const char *word);

/* "key value" lines: the value of @key (whole first token). 0, -ENOENT, -EINVAL. */
int cg_parse_kv(const char *buf, size_t len, const char *key, uint64_t *ret);

/* A file holding one number (trailing newline allowed); "max" -> UINT64_MAX. */
int cg_parse_u64(const char *buf, size_t len, uint64_t *ret);

/* cgroup.procs: up to @cap pids into @pids (may be NULL), the total count, and
 * how many differ from @self. */
int cg_parse_procs(const char *buf, size_t len, pid_t self, pid_t *pids, size_t cap,
                   size_t *ret_n, size_t *ret_others);

enum cg_name_kind { CG_NAME_OTHER = 0, CG_NAME_RUN, CG_NAME_SUP };
/* "nsbox-<pid>-<serial>" -> RUN, "nsbox-sup-<pid>" -> SUP (pid in *ret_pid); else OTHER. */
enum cg_name_kind cg_parse_name(const char *name, pid_t *ret_pid);
int cg_format_sup_name(pid_t pid, char *buf, size_t size);

/* Our own transient scope: "nsbox-scope-<pid>-<nonce>.scope" (never a run or
 * sup name). Parse: the pid, or 0 when the name is no such scope. */
int cg_format_scope_name(pid_t pid, unsigned long long nonce, char *buf, size_t size);
pid_t cg_parse_scope_name(const char *name);

/* --cgroup-parent: an absolute path under @sys_path -> relative to it ("." for
 * @sys_path itself), normalised (no "//", no trailing "/"). NULL on success,
 * else a static reason. Pure. */
const char *cg_parent_rel(const char *path, const char *sys_path, char *buf, size_t size);

/* The longest common leading path of two relative cgroup paths ("." when none). */
void cg_common_ancestor(const char *a, const char *b, char *buf, size_t size);

/* v2: move this process into nsbox-sup-<pid> (unless it is outside a
 * --cgroup-parent) and enable memory and pids in the base's subtree_control.
 * Done once, by cg_obtain or by the first create. */
int cg_v2_prepare(const struct cg_env *env, const struct cg_facts *f, struct nsb_error *e);

/* ---- asking systemd (cg_systemd.c; a stub without libsystemd) ---- */

/* StartTransientUnit @unit (a scope with Delegate=yes holding this process)
 * on @plan's bus; returns once its job is removed (done), or -errno with @e. */
int cg_systemd_scope(const struct cg_obtain_plan *plan, const char *unit, struct nsb_error *e);
extern const bool cg_have_sd_bus;

/* ---- backend choice (pure) ---- */

/* NULL when usable, else a static reason. */
const char *cg_v2_unusable(const struct cg_facts *f);
const char *cg_v1_unusable(const struct cg_facts *f);
/* Fill f->reason from the two above. */
void cg_facts_explain(struct cg_facts *f);
/* v2: must the supervisor move into nsbox-sup-<pid> and enable controllers? */
unsigned cg_v2_missing_subtree(const struct cg_facts *f);

/* ---- the limit writes (pure) ---- */

struct cg_write {
        int ctrl;                       /* v1: enum cg_v1_ctrl of the dir; v2: 0 */
        const char *file;
        char value[24];
        bool optional;                  /* skipped when the file does not exist */
};
#define CG_PLAN_MAX 6
struct cg_plan {
        struct cg_write w[CG_PLAN_MAX];
        size_t n;
};
int cg_plan_limits(enum cg_backend b, const struct cg_spec *spec, struct cg_plan *ret, struct nsb_error *e);

/* RLIMIT_AS under the rlimit backend: the memory limit plus the address
 * space of the thread stacks the pids limit allows, at most
 * CG_AS_STACK_THREADS (ThreadPoolExecutor's own ceiling) of
 * CG_AS_STACK_BYTES (glibc's default stack under the default 8 MiB
 * RLIMIT_STACK, with its guard), and never more than the memory limit
 * again, so one process alone stays under twice it. A thread stack is reserved whole and
 * touched a few pages deep, so counting it as memory made 16 threads fail
 * under 256M; what the tree really holds is bounded by the supervisor's sum
 * (rl_watch), not by this. 0/UINT64_MAX (no limit) stay as they are. */
#define CG_AS_STACK_BYTES ((8ULL << 20) + (64ULL << 10))
#define CG_AS_STACK_THREADS 32u
uint64_t cg_rlimit_as_bytes(const struct cg_spec *spec);

/* ---- fd-relative helpers (sys, cg_fs.c) ---- */

/* Read up to size-1 bytes from the start of @fd (pread) and NUL-terminate. */
ssize_t cg_pread_all(int fd, char *buf, size_t size);

/* One pre-opened usage file of @run into @buf; its length, or -errno with @e. */
int cg_read_usage_slot(const struct cg_run *run, enum cg_usage_file slot, char *buf, size_t size,
                       struct nsb_error *e);
/* What v1 and v2 read alike, when their files are open: pids.events "max"
 * (a refused fork) and the memory peak (v1 max_usage_in_bytes, v2 memory.peak). */
int cg_read_pids_and_peak(const struct cg_run *run, struct cg_usage *ret, char *buf, size_t size,
                          struct nsb_error *e);
/* openat(dirfd, file) and read; returns length or -errno. */
ssize_t cg_read_at(int dirfd, const char *file, char *buf, size_t size);
/* Read a whole file of unknown size (mountinfo) into a malloc'd buffer. */
int cg_read_alloc_at(int dirfd, const char *file, char **ret_buf, size_t *ret_len);
/* openat(dirfd, file, O_WRONLY) (never O_CREAT) and write the value in one write(). */
int cg_write_at(int dirfd, const char *file, const char *value);
bool cg_exists_at(int dirfd, const char *file);
/* mkdirat + fake files; 0 or -errno. */
int cg_mkdir_at(int dirfd, const char *name, const char *const *fake_files);
/* unlinkat(AT_REMOVEDIR); with @wait, retried with backoff (about 3 ms in
 * all) on EBUSY, removing child cgroups after the first EBUSY. ENOENT is success. */
int cg_rmdir_at(int dirfd, const char *name, const char *const *fake_files, bool wait);
/* SIGKILL every pid in dir/cgroup.procs until it is empty (bounded). */
int cg_kill_procs(int dirfd);
void cg_close_run_fds(struct cg_run *run);
/* Write "0" (the writer itself) to every join fd the parent opened, then
 * close the run's fds: v1's "tasks", a warm v2 job's cgroup.procs. */
int cg_join_by_fds(struct cg_run *run, struct nsb_error *e);

extern const struct cg_ops cg_v2_ops;
extern const struct cg_ops cg_v1_ops;
extern const struct cg_ops cg_rlimit_ops;
