/* ns/ns_apply.c — write id maps; build idmapped mounts. */
#include "ns/ns.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/cleanup.h"
#include "util/sys.h"

static int write_file_at(int dirfd, const char *name, const char *text, struct nsb_error *e)
{
        AUTOCLOSE int fd = openat(dirfd, name, O_WRONLY | O_CLOEXEC);
        size_t len = strlen(text);

        if (fd < 0)
                return nsb_fail(e, NSB_STAGE_USERNS, errno, "open %s", name);
        if (write(fd, text, len) != (ssize_t) len)
                return nsb_fail(e, NSB_STAGE_USERNS, errno ? errno : EIO, "write '%.*s' to %s",
                                (int) strcspn(text, "\n"), text, name);
        return 0;
}

/* @dir: "/proc/PID", or "/proc/self" */
static int write_maps_at(const char *dir, const char *uid_map, const char *gid_map, struct nsb_error *e)
{
        AUTOCLOSE int dfd = -1;
        int r;

        dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return nsb_fail(e, NSB_STAGE_USERNS, errno, "open %s", dir);
        /* setgroups must be denied before an unprivileged gid_map write, and
         * we deny it for root callers too: the sandbox has one group only. */
        r = write_file_at(dfd, "setgroups", "deny", e);
        if (r < 0)
                return r;
        r = write_file_at(dfd, "uid_map", uid_map, e);
        if (r < 0)
                return r;
        return write_file_at(dfd, "gid_map", gid_map, e);
}

static int write_maps(pid_t pid, const char *uid_map, const char *gid_map, struct nsb_error *e)
{
        char dir[64];

        snprintf(dir, sizeof dir, "/proc/%d", (int) pid);
        return write_maps_at(dir, uid_map, gid_map, e);
}

int ns_idmap_apply(pid_t pid, const struct ns_idmap *map, struct nsb_error *e)
{
        return write_maps(pid, map->uid_map, map->gid_map, e);
}

int ns_idmap_apply_self(const struct ns_idmap *map, struct nsb_error *e)
{
        return write_maps_at("/proc/self", map->uid_map, map->gid_map, e);
}

/* A user namespace whose only purpose is to carry a mapping for
 * MOUNT_ATTR_IDMAP: a child unshares, we write its maps, open its ns file and
 * let it go. */
static int make_mapping_userns(uid_t from_uid, gid_t from_gid, const struct ns_idmap *map, int *ret_fd,
                               struct nsb_error *e)
{
        char uid_map[64], gid_map[64], path[64];
        int sync[2], r, status;
        pid_t pid;
        char c;

        if (pipe2(sync, O_CLOEXEC) < 0)
                return nsb_fail(e, NSB_STAGE_USERNS, errno, "pipe");
        pid = fork();
        if (pid < 0) {
                r = -errno;
                close(sync[0]);
                close(sync[1]);
                return nsb_fail(e, NSB_STAGE_USERNS, -r, "fork");
        }
        if (pid == 0) {
                close(sync[1]);
                if (unshare(CLONE_NEWUSER) < 0)
                        _exit(1);
                /* wait until the parent has opened our namespace */
                (void) !read(sync[0], &c, 1);
                _exit(0);
        }
        close(sync[0]);
        /* On-disk owner from_uid appears as the sandbox's host uid. */
        snprintf(uid_map, sizeof uid_map, "%u %u 1\n", (unsigned) from_uid, (unsigned) map->host_uid);
        snprintf(gid_map, sizeof gid_map, "%u %u 1\n", (unsigned) from_gid, (unsigned) map->host_gid);
        r = 0;
        for (int tries = 0; tries < 1000; tries++) {
                /* the child may not have unshared yet: compare ns inodes */
                struct stat a, b;
                char p1[64];
                snprintf(p1, sizeof p1, "/proc/%d/ns/user", (int) pid);
                if (stat(p1, &a) == 0 && stat("/proc/self/ns/user", &b) == 0 && a.st_ino != b.st_ino)
                        break;
                usleep(50);
        }
        r = write_maps(pid, uid_map, gid_map, e);
        if (r == 0) {
                snprintf(path, sizeof path, "/proc/%d/ns/user", (int) pid);
                *ret_fd = open(path, O_RDONLY | O_CLOEXEC);
                if (*ret_fd < 0)
                        r = nsb_fail(e, NSB_STAGE_USERNS, errno, "open %s", path);
        }
        close(sync[1]);   /* releases the child */
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                ;
        return r;
}

int ns_open_idmapped(const char *path, const struct ns_idmap *map, bool recursive, int *ret_fd, struct nsb_error *e)
{
        AUTOCLOSE int tree = -1, userns = -1;
        struct mount_attr attr = { 0 };
        struct stat st;
        int r;

        tree = sys_open_tree(AT_FDCWD, path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | (recursive ? AT_RECURSIVE : 0));
        if (tree < 0)
                return nsb_fail(e, NSB_STAGE_MOUNT, errno, "open '%s'", path);
        if (fstat(tree, &st) < 0)
                return nsb_fail(e, NSB_STAGE_MOUNT, errno, "stat '%s'", path);
        r = make_mapping_userns(st.st_uid, st.st_gid, map, &userns, e);
        if (r < 0)
                return nsb_error_prefix(e, "idmap for '%s'", path);
        attr.attr_set = MOUNT_ATTR_IDMAP;
        attr.userns_fd = (uint64_t) userns;
        if (sys_mount_setattr(tree, "", AT_EMPTY_PATH | (recursive ? AT_RECURSIVE : 0), &attr) < 0)
                return nsb_fail(e, NSB_STAGE_MOUNT, errno,
                                "idmapped mount of '%s' (the filesystem must support idmapped mounts)", path);
        *ret_fd = move_fd(&tree);
        return 0;
}
