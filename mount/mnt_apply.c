/* mount/mnt_apply.c — execute a mount plan in the sandbox init.
 *
 * Runs after clone3(CLONE_NEWUSER|CLONE_NEWNS|...) with the uid/gid maps
 * written, so the init holds CAP_SYS_ADMIN over its own mount namespace and
 * nothing else. It only executes the plan; every decision was made by
 * mnt_plan_build(). Paths before the pivot are below STAGING_DIR. */
#include "mount/mnt.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/cleanup.h"
#include "util/readfile.h"
#include "util/sys.h"

/* The new root is built on a tmpfs mounted over this directory in our private
 * mount namespace; the host's own directory is untouched. Every bind source
 * is opened before, so hiding the host's /tmp hides nothing we need. */
#define STAGING_DIR "/tmp"

static int full_path(char *buf, size_t len, const char *dst, bool pivoted)
{
        int n;

        if (pivoted)
                n = snprintf(buf, len, "%s", dst ? dst : "/");
        else
                n = snprintf(buf, len, "%s%s", STAGING_DIR, dst && strcmp(dst, "/") != 0 ? dst : "");
        return n < 0 || (size_t) n >= len ? -ENAMETOOLONG : 0;
}

static int make_file(const char *path, mode_t mode)
{
        AUTOCLOSE int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
        return fd < 0 ? -errno : 0;
}

/* A file or a directory, like the source in the op's slot. */
static int apply_mountpoint(const struct mnt_op *op, const char *path, int *slot_fds, struct nsb_error *e)
{
        struct stat st;
        int r;

        if (fstat(slot_fds[op->slot], &st) < 0)
                return nsb_fail(e, NSB_STAGE_MOUNT, errno, "stat source of '%s'", op->dst);
        if (S_ISDIR(st.st_mode))
                r = mkdir(path, 0755) < 0 && errno != EEXIST ? -errno : 0;
        else
                r = make_file(path, 0444);
        if (r < 0 && r != -EEXIST)
                return nsb_fail(e, NSB_STAGE_MOUNT, -r, "mount point '%s'", op->dst);
        return 0;
}

static int apply_write_file(const struct mnt_op *op, const char *path, struct nsb_error *e)
{
        AUTOCLOSE int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        int r;

        if (fd < 0)
                return nsb_fail(e, NSB_STAGE_MOUNT, errno, "create '%s'", op->dst);
        r = write_all(fd, op->data, op->data_len);
        if (r < 0)
                return nsb_fail(e, NSB_STAGE_MOUNT, -r, "write '%s'", op->dst);
        if (fchmod(fd, op->mode) < 0)
                return nsb_fail(e, NSB_STAGE_MOUNT, errno, "chmod '%s'", op->dst);
        return 0;
}

/* The detached mount in the op's slot, its attributes set first, at @path. */
static int apply_attach(const struct mnt_op *op, const char *path, int *slot_fds, struct nsb_error *e)
{
        struct mount_attr attr = { 0 };
        int fd = slot_fds[op->slot];

        if (fd < 0 && op->optional)
                return 0;       /* a system directory this host lacks */
        if (fd < 0)
                return nsb_fail(e, NSB_STAGE_MOUNT, EBADF, "no source opened for '%s'", op->dst);
        if (op->attr) {
                attr.attr_set = op->attr;
                if (sys_mount_setattr(fd, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr) < 0)
                        return nsb_fail(e, NSB_STAGE_MOUNT, errno, "set attributes of '%s'", op->dst);
        }
        if (sys_move_mount(fd, "", AT_FDCWD, path, MOVE_MOUNT_F_EMPTY_PATH) < 0)
                return nsb_fail(e, NSB_STAGE_MOUNT, errno, "attach '%s'", op->dst);
        close_fd(&slot_fds[op->slot]);
        return 0;
}

/* What a fresh tmpfs carries over: a copy of the mount tree at one name
 * (opened before the tmpfs hides it), or the symlink it was. */
struct carried {
        const char *name;
        int fd;
        char target[4096];
};

static void close_carried(struct carried *c, size_t n)
{
        for (size_t i = 0; i < n; i++)
                close_fd(&c[i].fd);
}

/* Before the tmpfs: each carried name under @path as a detached copy of
 * its mount tree (AT_RECURSIVE: with its binds; a locked tree may only be
 * copied whole), or its link text. */
static int save_carried(const struct mnt_op *op, const char *path, struct carried *c, size_t *n, struct nsb_error *e)
{
        for (size_t off = 0; off < op->data_len; off += strlen(op->data + off) + 1) {
                struct carried *it = &c[*n];
                char sub[4096];
                ssize_t len;

                if (*n == MNT_MAX_CARRIED || !memchr(op->data + off, '\0', op->data_len - off))
                        return nsb_fail(e, NSB_STAGE_MOUNT, E2BIG, "what '%s' carries over", op->dst);
                it->name = op->data + off;
                it->fd = -1;
                it->target[0] = '\0';
                (*n)++;
                if ((size_t) snprintf(sub, sizeof sub, "%s/%s", path, it->name) >= sizeof sub)
                        return nsb_fail(e, NSB_STAGE_MOUNT, ENAMETOOLONG, "'%s/%s'", op->dst, it->name);
                len = readlink(sub, it->target, sizeof it->target - 1);
                if (len >= 0) {
                        it->target[len] = '\0';
                        continue;
                }
                it->fd = sys_open_tree(AT_FDCWD, sub, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE |
                                                              AT_SYMLINK_NOFOLLOW);
                if (it->fd < 0)
                        return nsb_fail(e, NSB_STAGE_MOUNT, errno, "open '%s/%s' to carry it over", op->dst, it->name);
        }
        return 0;
}

/* After the tmpfs: each carried entry back at its name, read-only (the
 * program may write the tmpfs around it, never into it: a read-only mount
 * refuses writes whatever Landlock allows). */
static int restore_carried(const struct mnt_op *op, const char *path, struct carried *c, size_t n,
                           struct nsb_error *e)
{
        struct mount_attr attr = { .attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV };

        for (size_t i = 0; i < n; i++) {
                char sub[4096];
                struct stat st;
                int r;

                snprintf(sub, sizeof sub, "%s/%s", path, c[i].name);
                if (c[i].fd < 0) {
                        if (symlink(c[i].target, sub) < 0)
                                return nsb_fail(e, NSB_STAGE_MOUNT, errno, "symlink '%s/%s'", op->dst, c[i].name);
                        continue;
                }
                if (fstat(c[i].fd, &st) < 0)
                        return nsb_fail(e, NSB_STAGE_MOUNT, errno, "stat '%s/%s'", op->dst, c[i].name);
                r = S_ISDIR(st.st_mode) ? (mkdir(sub, 0755) < 0 ? -errno : 0) : make_file(sub, 0444);
                if (r < 0)
                        return nsb_fail(e, NSB_STAGE_MOUNT, -r, "mount point '%s/%s'", op->dst, c[i].name);
                if (sys_mount_setattr(c[i].fd, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr) < 0)
                        return nsb_fail(e, NSB_STAGE_MOUNT, errno, "make '%s/%s' read-only", op->dst, c[i].name);
                if (sys_move_mount(c[i].fd, "", AT_FDCWD, sub, MOVE_MOUNT_F_EMPTY_PATH) < 0)
                        return nsb_fail(e, NSB_STAGE_MOUNT, errno, "attach '%s/%s'", op->dst, c[i].name);
                close_fd(&c[i].fd);
        }
        return 0;
}

static int apply_tmpfs(const struct mnt_op *op, const char *path, const struct mnt_plan *plan, struct nsb_error *e)
{
        struct carried carried[MNT_MAX_CARRIED];
        size_t n = 0;
        char opts[160];
        int r = op->kind == MNT_TMPFS ? save_carried(op, path, carried, &n, e) : 0;

        snprintf(opts, sizeof opts, "mode=%04o,size=%llu,nr_inodes=%llu,uid=%u,gid=%u", (unsigned) op->mode,
                 (unsigned long long) op->size, (unsigned long long) mnt_tmpfs_inodes(op),
                 plan->sandbox_uid, plan->sandbox_gid);
        /* noexec where the plan asks (/dev/shm: shared memory, not a place
         * to run a dropped binary from; a cover) */
        if (r == 0 && mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV | ((op->attr & MOUNT_ATTR_NOEXEC) ? MS_NOEXEC : 0),
                            opts) < 0)
                r = nsb_fail(e, NSB_STAGE_MOUNT, errno, "tmpfs at '%s'", op->dst);
        if (r == 0)
                r = restore_carried(op, path, carried, n, e);
        close_carried(carried, n);
        return r;
}

static int apply_one(const struct mnt_op *op, int *slot_fds, const struct mnt_plan *plan, bool *pivoted,
                     struct nsb_error *e)
{
        char path[4096], opts[160];
        struct mount_attr attr = { 0 };
        int r;

        if (full_path(path, sizeof path, op->dst, *pivoted) < 0)
                return nsb_fail(e, NSB_STAGE_MOUNT, ENAMETOOLONG, "path too long");

        switch (op->kind) {
        case MNT_MAKE_PRIVATE:
                /* Without this, mounts made here could propagate back to the
                 * host's peer group (shared subtrees, mount_namespaces(7)). */
                if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
                        return nsb_fail(e, NSB_STAGE_MOUNT, errno, "make / private");
                return 0;
        case MNT_OPEN_TREE:
                if (slot_fds[op->slot] >= 0)
                        return 0;   /* opened by the supervisor with the caller's rights */
                /* AT_RECURSIVE: the kernel refuses to clone a subtree without
                 * its locked submounts, which would reveal what they cover. */
                r = sys_open_tree(AT_FDCWD, op->src, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
                if (r < 0 && op->optional && errno == ENOENT)
                        return 0;       /* absent on this host: its ATTACH is skipped */
                if (r < 0)
                        return nsb_fail(e, NSB_STAGE_MOUNT, errno, "open '%s'", op->src);
                slot_fds[op->slot] = r;
                return 0;
        case MNT_ROOT_TMPFS:
        case MNT_TMPFS:
                return apply_tmpfs(op, path, plan, e);
        case MNT_MKDIR:
                if (mkdir(path, op->mode) < 0 && errno != EEXIST)
                        return nsb_fail(e, NSB_STAGE_MOUNT, errno, "mkdir '%s'", op->dst);
                if (chmod(path, op->mode) < 0)
                        return nsb_fail(e, NSB_STAGE_MOUNT, errno, "chmod '%s'", op->dst);
                return 0;
        case MNT_MKFILE:
                r = make_file(path, 0444);
                if (r < 0 && r != -EEXIST)
                        return nsb_fail(e, NSB_STAGE_MOUNT, -r, "create '%s'", op->dst);
                return 0;
        case MNT_SYMLINK:
                if (symlink(op->src, path) < 0)
                        return nsb_fail(e, NSB_STAGE_MOUNT, errno, "symlink '%s' -> '%s'", op->dst, op->src);
                return 0;
        case MNT_MOUNTPOINT:
                return apply_mountpoint(op, path, slot_fds, e);
        case MNT_WRITE_FILE:
                return apply_write_file(op, path, e);
        case MNT_ATTACH:
                return apply_attach(op, path, slot_fds, e);
        case MNT_PROC:
                /* subset=pid: only the process directories, not /proc/sys,
                 * /proc/sysrq-trigger, kcore and the rest of the kernel's
                 * global files. A new proc needs a fully visible one in this
                 * mount namespace (mount_too_revealing), hence before pivot. */
                if (mount("proc", path, "proc",
                          MS_NOSUID | MS_NODEV | MS_NOEXEC | ((op->attr & MOUNT_ATTR_RDONLY) ? MS_RDONLY : 0),
                          "subset=pid") < 0)
                        return nsb_fail(e, NSB_STAGE_MOUNT, errno, "proc at '%s'", op->dst);
                return 0;
        case MNT_DEVPTS:
                /* A new instance (newinstance is implied since Linux 4.7, and
                 * what a user namespace may mount): the host's ptys and other
                 * sandboxes' are not in it. ptmxmode=0666 so the sandbox's
                 * user opens /dev/ptmx -> pts/ptmx; the ptys belong to the
                 * sandbox's group (mapped in this user namespace); max bounds
                 * this sandbox's share of the host's kernel.pty.max. Device
                 * nodes must work here, so no nodev; nosuid and noexec. */
                snprintf(opts, sizeof opts, "newinstance,ptmxmode=0666,mode=0620,gid=%u,max=%u", plan->sandbox_gid,
                         MNT_PTY_MAX);
                if (mount("devpts", path, "devpts", MS_NOSUID | MS_NOEXEC, opts) < 0)
                        return nsb_fail(e, NSB_STAGE_MOUNT, errno, "devpts at '%s'", op->dst);
                return 0;
        case MNT_PIVOT:
                /* pivot_root(".", "."): the old root ends up stacked on the
                 * new one, and is detached next (pivot_root(2), NOTES). */
                if (chdir(STAGING_DIR) < 0)
                        return nsb_fail(e, NSB_STAGE_MOUNT, errno, "chdir to the new root");
                if (sys_pivot_root(".", ".") < 0)
                        return nsb_fail(e, NSB_STAGE_MOUNT, errno, "pivot_root");
                *pivoted = true;
                return 0;
        case MNT_DETACH_OLD:
                if (umount2(".", MNT_DETACH) < 0)
                        return nsb_fail(e, NSB_STAGE_MOUNT, errno, "detach the old root");
                if (chdir("/") < 0)
                        return nsb_fail(e, NSB_STAGE_MOUNT, errno, "chdir /");
                return 0;
        case MNT_READONLY_ALL:
                attr.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
                if (sys_mount_setattr(AT_FDCWD, "/", AT_RECURSIVE, &attr) < 0)
                        return nsb_fail(e, NSB_STAGE_MOUNT, errno, "make the root read-only");
                return 0;
        case MNT_READONLY:
                attr.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
                if (sys_mount_setattr(AT_FDCWD, path, AT_RECURSIVE, &attr) < 0)
                        return nsb_fail(e, NSB_STAGE_MOUNT, errno, "make '%s' read-only", op->dst);
                return 0;
        case MNT_CHDIR:
                if (chdir(path) < 0)
                        return nsb_fail(e, NSB_STAGE_MOUNT, errno, "chdir '%s'", op->dst);
                return 0;
        }
        return nsb_fail(e, NSB_STAGE_MOUNT, EINVAL, "unknown mount operation %d", (int) op->kind);
}

int mnt_plan_apply(const struct mnt_plan *plan, int *slot_fds, struct nsb_ledger *ledger, struct nsb_error *e)
{
        bool pivoted = plan->starts_pivoted;
        int r = 0;

        for (size_t i = 0; i < plan->n_ops; i++) {
                r = apply_one(&plan->ops[i], slot_fds, plan, &pivoted, e);
                if (r < 0) {
                        nsb_error_prefix(e, "mount step %zu", i);
                        break;
                }
                if (plan->ops[i].kind == MNT_READONLY_ALL)
                        ledger_set(ledger, PROT_ROOTFS, "tmpfs-readonly");
                else if (plan->ops[i].kind == MNT_TMPFS && strcmp(plan->ops[i].dst, "/tmp") == 0)
                        ledger_set(ledger, PROT_TMP_SIZE, "tmpfs");
        }
        for (unsigned s = 0; s < plan->n_slots; s++)
                close_fd(&slot_fds[s]);
        return r;
}
