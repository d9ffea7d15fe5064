/* image/image_root.c — what the sandbox mounts of an unpacked root, and
 * the interpreter found in it. */
#include "image/image_internal.h"

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

#include "util/cleanup.h"

/* Top-level places the sandbox makes itself (mount/mnt.h): the image's are
 * never shown there. */
static const char *const owned_top[] = {
        "proc", "dev", "tmp", "sys", "workspace", "program", "harness", "nsbox",
};
/* Files of /etc the sandbox writes itself. */
static const char *const owned_etc[] = { "passwd", "group", "localtime" };

static bool listed(const char *name, const char *const *v, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (strcmp(name, v[i]) == 0)
                        return true;
        return false;
}

static int add_entry(struct host_set *set, int dfd, const char *name, const char *sandbox_dir)
{
        struct stat st;
        struct host_entry he = { 0 };
        char target[4096];
        struct host_entry *nv;

        if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return -errno;
        if (S_ISDIR(st.st_mode))
                he.kind = HOST_DIR;
        else if (S_ISREG(st.st_mode))
                he.kind = HOST_FILE;
        else if (S_ISLNK(st.st_mode)) {
                ssize_t n = readlinkat(dfd, name, target, sizeof target - 1);
                if (n < 0)
                        return -errno;
                target[n] = '\0';
                he.kind = HOST_SYMLINK;
                if (!(he.target = strdup(target)))
                        return -ENOMEM;
        } else
                return 0;
        if (asprintf(&he.path, "%s/%s", sandbox_dir, name) < 0 ||
            !(nv = realloc(set->v, (set->n + 1) * sizeof *nv))) {
                free(he.target);
                return -ENOMEM;
        }
        set->v = nv;
        set->v[set->n++] = he;
        return 0;
}

/* The entries of @host_dir (sorted: the plan is the same every run) but
 * those in @skip. */
static int add_dir(struct host_set *set, const char *host_dir, const char *sandbox_dir, const char *const *skip,
                   size_t n_skip, bool expand_etc)
{
        struct dirent **names = NULL;
        AUTOCLOSE int dfd = open(host_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        int n, r = 0;

        if (dfd < 0)
                return -errno;
        if ((n = scandir(host_dir, &names, NULL, alphasort)) < 0)
                return -errno;
        for (int i = 0; i < n; i++) {
                const char *name = names[i]->d_name;
                struct stat st;

                if (r < 0 || strcmp(name, ".") == 0 || strcmp(name, "..") == 0 || listed(name, skip, n_skip))
                        ;
                else if (expand_etc && strcmp(name, "etc") == 0 && fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                         S_ISDIR(st.st_mode)) {
                        AUTOFREE char *h = NULL;
                        r = asprintf(&h, "%s/etc", host_dir) < 0
                                    ? -ENOMEM
                                    : add_dir(set, h, "/etc", owned_etc, sizeof owned_etc / sizeof *owned_etc, false);
                } else
                        r = add_entry(set, dfd, name, sandbox_dir);
                free(names[i]);
        }
        free(names);
        return r;
}

int img_host_set(const struct img_root *r, struct host_set *set, struct nsb_error *e)
{
        int rc = add_dir(set, r->rootfs, "", owned_top, sizeof owned_top / sizeof *owned_top, true);

        if (rc == 0 && !(set->root = strdup(r->rootfs)))
                rc = -ENOMEM;
        return rc < 0 ? nsb_fail(e, NSB_STAGE_PREPARE, -rc, "image root '%s'", r->rootfs) : 0;
}

const char *img_env_path(const struct img_root *r)
{
        for (size_t i = 0; i < r->n_env; i++)
                if (strncmp(r->env[i], "PATH=", 5) == 0)
                        return r->env[i] + 5;
        return NULL;
}

/* Is @path (inside the image) an executable regular file, symlinks
 * resolved in the image's root? */
static bool executable_in(int root_fd, const char *path)
{
        struct open_how how = { .flags = O_PATH | O_CLOEXEC, .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS };
        long fd = syscall(SYS_openat2, root_fd, path, &how, sizeof how);
        struct stat st;
        bool ok;

        if (fd < 0)
                return false;
        ok = fstat((int) fd, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0111);
        close((int) fd);
        return ok;
}

int img_which(const struct img_root *r, const char *name, const char *search_path, char **ret,
              struct nsb_error *e)
{
        AUTOCLOSE int root_fd = open(r->rootfs, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        const char *p = search_path ? search_path : "/usr/local/bin:/usr/bin:/bin";

        *ret = NULL;
        if (root_fd < 0)
                return nsb_fail(e, NSB_STAGE_PREPARE, errno, "image root '%s'", r->rootfs);
        if (name[0] == '/') {
                if (!executable_in(root_fd, name))
                        return nsb_fail(e, NSB_STAGE_CONFIG, ENOENT, "'%s' is no executable file in the image %s",
                                        name, r->ref);
                return (*ret = strdup(name)) ? 0 : nsb_fail(e, NSB_STAGE_CONFIG, ENOMEM, "out of memory");
        }
        while (*p) {
                size_t len = strcspn(p, ":");
                AUTOFREE char *cand = NULL;

                if (len && p[0] == '/' && asprintf(&cand, "%.*s/%s", (int) len, p, name) >= 0 &&
                    executable_in(root_fd, cand)) {
                        *ret = cand;
                        cand = NULL;
                        return 0;
                }
                p += len + (p[len] == ':');
        }
        return nsb_fail(e, NSB_STAGE_CONFIG, ENOENT, "'%s' is not on the image's PATH (%s) in %s", name,
                        search_path ? search_path : "no Env PATH: /usr/local/bin:/usr/bin:/bin", r->ref);
}
