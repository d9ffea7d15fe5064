/* mount/mnt.h — the sandbox's file tree: planned as data, then executed.
 *
 * Owns: the ordered list of mount operations that turns the host's mount
 * namespace (a private copy, inside the new user and mount namespaces) into a
 * tmpfs root that holds only what the profile needs, the program, the harness
 * and the workspace. mnt_plan_build() is pure and validates everything the
 * kernel need not be asked about; mnt_plan_apply() runs in the sandbox init
 * and only executes.
 *
 * Order (each step depends on the one before):
 *   1. make every mount private, so nothing we do propagates to the host;
 *   2. open every bind source as a detached mount (open_tree) while the host
 *      tree is still whole — mounting the new root may hide a source;
 *   3. tmpfs root; directories, files and symlinks of the skeleton; the
 *      program file;
 *   4. attach the read-only sources; cover each hidden directory of the
 *      profile (host_set.hidden) with an empty tmpfs and attach the profile's
 *      entries inside it on top; mount /proc (the kernel only allows a new
 *      proc while a full one is visible, so before the pivot);
 *   5. pivot_root into the new root and detach the old one;
 *   6. make the whole tree read-only, nosuid and nodev in one recursive step;
 *   7. mount what must stay writable (/tmp, /workspace, --bind, /dev/shm, a
 *      new devpts at /dev/pts) and the device nodes (which must not be
 *      nodev) on top; a fresh tmpfs carries over, read-only, the profile's
 *      entries it would hide (a venv in /tmp);
 *   8. chdir to /workspace.
 * Besides the profile's files, the root holds what ordinary programs expect
 * of a Linux system (docs/security.md, "What the root holds"): /dev/shm, ptys,
 * a synthesized /etc/passwd and /etc/group (never the host's), UTC as the
 * local time zone, /sys/devices/system/cpu/online and possible naming the
 * CPUs os.cpu_count() reports (mnt_input.cpus), and, when the host has them, the time-zone database and
 * the C.UTF-8 locale, read-only.
 * The plan test checks these invariants (tests/unit/test_mount.c).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "landlock/landlock.h"
#include "path/path.h"
#include "profile/profile.h"
#include "util/error.h"
#include "util/ledger.h"

enum mnt_kind {
        MNT_MAKE_PRIVATE,   /* "/" recursively private */
        MNT_OPEN_TREE,      /* src (host path) -> detached mount in slot */
        MNT_ROOT_TMPFS,     /* tmpfs at the staging directory */
        MNT_MKDIR,          /* dst, mode */
        MNT_MKFILE,         /* empty file dst (a mount point for a file bind) */
        MNT_SYMLINK,        /* dst -> src (link text) */
        MNT_MOUNTPOINT,     /* dst as a file or a directory, like the mount in slot */
        MNT_WRITE_FILE,     /* dst with data, mode */
        MNT_ATTACH,         /* slot -> dst; flags: extra MOUNT_ATTR_* set before attaching */
        MNT_PROC,           /* proc of the new pid namespace at dst */
        MNT_PIVOT,          /* pivot_root into the staging dir */
        MNT_DETACH_OLD,     /* lazy-unmount the old root stacked under "/" */
        MNT_READONLY_ALL,   /* recursive read-only + nosuid + nodev on "/" */
        MNT_TMPFS,          /* tmpfs at dst: size, mode, owner = sandbox ids; data: names
                               (each NUL-terminated, at most MNT_MAX_CARRIED) of entries
                               directly under dst carried over, read-only, onto the new
                               tmpfs (the profile's host paths under /tmp) */
        MNT_CHDIR,          /* working directory */
        MNT_DEVPTS,         /* a new devpts instance at dst (ptys of this sandbox only) */
        MNT_READONLY,       /* recursive read-only + nosuid + nodev on dst (a warm job's /program);
                               stays last: the warm spec's decoder bounds the kinds by it */
};

/* The sandbox's own pty budget: devpts instances all draw on the host's
 * kernel.pty.max (4096, 1024 of it reserved for the host's initial
 * instance), so each sandbox may hold at most this many at once. */
#define MNT_PTY_MAX 16u

/* At most this many entries carried over a fresh tmpfs (MNT_TMPFS). */
#define MNT_MAX_CARRIED 16u

struct mnt_op {
        enum mnt_kind kind;
        char *src;          /* host path (OPEN_TREE) or link text (SYMLINK) */
        char *dst;          /* sandbox path, absolute, normalised */
        int slot;           /* OPEN_TREE / ATTACH: index into the slot table */
        uint64_t attr;      /* ATTACH: MOUNT_ATTR_* to set on the detached mount */
        mode_t mode;
        uint64_t size;      /* TMPFS / ROOT_TMPFS: bytes */
        const char *data;   /* WRITE_FILE: borrowed from the input, or owned_data */
        size_t data_len;
        char *owned_data;   /* WRITE_FILE: text the plan made itself (/etc/passwd), freed with it */
        bool writable;      /* the program may write here: a Landlock rule grants it */
        bool optional;      /* OPEN_TREE / ATTACH: a host directory the root may lack
                               (/usr/share/zoneinfo): absent, it is skipped, not an error */
};

/* A file the caller places in the fresh /workspace before the program
 * starts (a batch job's "files"): @name relative to /workspace. */
struct mnt_file {
        const char *name;
        const char *data;
        size_t len;
};

/* At most this many files placed, or fetched back (mnt_input.files, .fetch). */
#define MNT_MAX_JOB_FILES 64u

struct mnt_plan {
        struct mnt_op *ops;
        size_t n_ops;
        unsigned n_slots;
        bool *slot_preopened;  /* slot filled by the supervisor before clone (root callers) */
        unsigned sandbox_uid, sandbox_gid;   /* owner of the writable tmpfs mounts */
        bool starts_pivoted;   /* paths are final from the first op (a warm job's plan) */
        int plain_slot;        /* a preopened slot opened without an idmap (runner_dst's), or -1 */
        /* Files the init reads back from /workspace once the program and
         * everything it started are gone (names relative to /workspace,
         * checked as path_job_file_name does; owned). Not mounts: they ride
         * with the plan so a warm job's init gets them in its spec. */
        char **fetch;
        size_t n_fetch;
};

/* What the planner needs; everything is borrowed. */
struct mnt_input {
        struct path_mounts user;        /* workspace, harness, binds, tmpfs, tmp size (cfg_mounts) */
        const struct host_set *host;    /* profile: files, dirs and symlinks to mirror read-only */
        const char *program_name;       /* basename for /program, or NULL */
        const char *program_data;
        size_t program_len;
        const char *runner_dir;         /* host dir bound read-only at /nsbox (test runner), or NULL */
        const char *runner_dst;         /* where instead of /nsbox: a path under /program (a warm
                                           zygote's code, which each job's own /program covers) */
        unsigned sandbox_uid, sandbox_gid;   /* owner of /workspace and /tmp inside */
        bool preopen_user_sources;      /* the supervisor opens workspace/harness/binds itself */
        const char *workdir;            /* the program's working directory, below /workspace (a
                                           workspace script's, program/program.h), or NULL:
                                           /workspace */
        const struct mnt_file *files;   /* placed in the fresh /workspace (owned by the sandbox
                                           user, 0644, parents 0755) after it is mounted; none
                                           with a host --workspace */
        size_t n_files;
        const char *const *fetch;       /* read back after the run (mnt_plan.fetch) */
        size_t n_fetch;
        unsigned cpus;                  /* what os.cpu_count() says inside (cg_cpu_count): written,
                                           read-only, to /sys/devices/system/cpu/{online,possible};
                                           0 = no such files */
};

/* Pure. Validates destinations with path/'s rules (absolute, no "..", not
 * over a path the sandbox owns, no conflict with another mount) and sources
 * (absolute, not hiding what the profile provides). Built in phases, one per
 * step of the order above (mnt_plan.c). */
int mnt_plan_build(const struct mnt_input *in, struct mnt_plan *ret, struct nsb_error *e);
void mnt_plan_free(struct mnt_plan *plan);

/* Pure. A warm job's own mounts, made by its init in a copy of its zygote's
 * finished (read-only, pivoted) tree: a fresh /proc of the job's pid
 * namespace, fresh /tmp, /workspace (unless it is a host directory, which the
 * zygote's tree holds already, as a cold run's does) and --tmpfs mounts, the
 * program alone in a fresh read-only /program, the job's own CPU count in a
 * fresh read-only /sys/devices/system/cpu (a batch's jobs may have different
 * pids limits), and the working directory.
 * Everything else (the read-only tree, binds, device nodes) is the zygote's:
 * the same host files a cold run mounts. */
int mnt_plan_build_warm_job(const struct mnt_input *in, struct mnt_plan *ret, struct nsb_error *e);

/* Syscalls, in the sandbox init. @slot_fds has plan->n_slots entries: -1, or
 * a detached mount the supervisor opened; every fd is closed on return. */
int mnt_plan_apply(const struct mnt_plan *plan, int *slot_fds, struct nsb_ledger *ledger, struct nsb_error *e);

/* Pure. The Landlock rules that mirror @plan: everything readable, writable
 * exactly where the plan mounts something the program may write (op.writable),
 * so Landlock holds even if a mount step went wrong. One rule per such op and
 * "/" — never fewer: *ret is allocated to fit. Paths are borrowed from @plan. */
int mnt_plan_landlock(const struct mnt_plan *plan, struct ll_path_rule **ret, size_t *n_ret, struct nsb_error *e);

/* Pure. nr_inodes of a tmpfs @op (MNT_ROOT_TMPFS or MNT_TMPFS): each inode
 * and its dentry cost the host kernel slab memory no limit counts under the
 * rlimit backend (docs/security.md), so a writable tmpfs gets one per page
 * of its size (at least MNT_MIN_INODES). */
#define MNT_MIN_INODES 1024u
uint64_t mnt_tmpfs_inodes(const struct mnt_op *op);
