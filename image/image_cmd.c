/* image/image_cmd.c — nsbox image ls|rm|prune: the cache, listed and
 * trimmed. A root in use (its entry lock held shared by a run) is never
 * removed: rm says so, prune leaves it. */
#include "image/image_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "util/cleanup.h"

static int open_cache(char **dir, int *dfd, int *lock, struct nsb_error *e)
{
        int r = img_cache_dir(dir, e);

        *dfd = *lock = -1;
        if (r < 0)
                return r;
        if (access(*dir, F_OK) < 0 && errno == ENOENT)
                return 1;
        if ((r = img_cache_resolve(dir, e)) < 0)
                return r;
        if ((*dfd = open(*dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
                return nsb_fail(e, NSB_STAGE_CONFIG, errno, "image cache '%s'", *dir);
        *lock = openat(*dfd, ".lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (*lock < 0 || flock(*lock, LOCK_EX) < 0)
                return nsb_fail(e, NSB_STAGE_CONFIG, errno, "image cache lock");
        return 0;
}

/* Remove entry @name unless a run holds it: 1 removed, 0 in use. */
static int remove_entry(int dfd, const char *name)
{
        char lock_path[256];
        int fd, r;

        snprintf(lock_path, sizeof lock_path, "%s/lock", name);
        fd = openat(dfd, lock_path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
        if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) < 0) {
                close(fd);
                return 0;
        }
        /* Out of sight first: a removal that fails halfway (an fd limit, a
         * full disk) must leave an unfinished .tmp- (prune's), never a
         * half-removed sha256-HEX a run would take for a finished root. */
        if (strncmp(name, "sha256-", 7) == 0) {
                char gone[160];
                snprintf(gone, sizeof gone, ".tmp-rm-%d-%s", (int) getpid(), name + 7);
                r = renameat(dfd, name, dfd, gone) < 0 ? -errno : img_rm_tree(dfd, gone);
        } else
                r = img_rm_tree(dfd, name);
        if (fd >= 0)
                close(fd);
        return r < 0 ? r : 1;
}

/* meta.json's line, whole (a ref can be longer than any fixed buffer:
 * a cut line is no JSON), at most META_MAX bytes. */
#define META_MAX (1u << 20)

static void print_entry(int dfd, const char *name)
{
        char path[300];
        AUTOFREE char *buf = calloc(1, META_MAX + 1);
        AUTOCLOSE int fd = -1;
        size_t n = 0;
        ssize_t k = 0;

        snprintf(path, sizeof path, "%s/meta.json", name);
        if (buf && (fd = openat(dfd, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) >= 0)
                while (n < META_MAX && (k = read(fd, buf + n, META_MAX - n)) > 0)
                        n += (size_t) k;
        if (buf)
                buf[strcspn(buf, "\n")] = '\0';
        printf("%s\n", buf && buf[0] ? buf : name);
}

/* image rm sha256:HEX: the entry of that digest, an OCI image's
 * (sha256-HEX) and a docker-archive's (sha256-HEX-docker, image_cache.c
 * says why apart), whichever the cache has. */
static int rm_digest(int dfd, const char *dir, const char *hex, struct nsb_error *e)
{
        static const char *const suffix[] = { "", "-docker" };
        int found = 0, r;

        for (size_t k = 0; k < 2; k++) {
                char name[128];
                snprintf(name, sizeof name, "sha256-%s%s", hex, suffix[k]);
                if (faccessat(dfd, name, F_OK, AT_SYMLINK_NOFOLLOW) < 0)
                        continue;
                found++;
                if ((r = remove_entry(dfd, name)) < 0)
                        return nsb_fail(e, NSB_STAGE_CONFIG, -r, "image rm sha256:%s ('%s/%s')", hex, dir, name);
                if (r == 0)
                        return nsb_fail(e, NSB_STAGE_CONFIG, EBUSY, "image rm sha256:%s: in use by a run", hex);
        }
        return found ? 0 : nsb_fail(e, NSB_STAGE_CONFIG, ENOENT, "image rm sha256:%s: not in the cache '%s'", hex, dir);
}

int img_cmd(char *const *argv, size_t argc, struct nsb_error *e)
{
        AUTOFREE char *dir = NULL;
        AUTOCLOSE int dfd = -1, lock = -1;
        const char *verb = argc ? argv[0] : "";
        struct dirent *de;
        DIR *d;
        int r, removed = 0;

        if (strcmp(verb, "ls") != 0 && strcmp(verb, "prune") != 0 && strcmp(verb, "rm") != 0)
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "nsbox image ls | rm sha256:HEX... | prune");
        if (strcmp(verb, "rm") == 0 && argc < 2)
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "nsbox image rm sha256:HEX...");
        if ((r = open_cache(&dir, &dfd, &lock, e)) != 0)
                return r > 0 ? 0 : r;   /* no cache: nothing to list or remove */
        if (strcmp(verb, "rm") == 0) {
                for (size_t i = 1; i < argc; i++) {
                        const char *hex = strncmp(argv[i], "sha256:", 7) == 0 ? argv[i] + 7 : argv[i];
                        if (strlen(hex) != 64 || strspn(hex, "0123456789abcdef") != 64)
                                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "image rm: '%s' is not sha256:HEX", argv[i]);
                        if ((r = rm_digest(dfd, dir, hex, e)) < 0)
                                return r;
                        printf("removed sha256:%s\n", hex);
                }
                return 0;
        }
        if (!(d = opendir(dir)))
                return nsb_fail(e, NSB_STAGE_CONFIG, errno, "image cache '%s'", dir);
        while ((de = readdir(d))) {
                bool entry = strncmp(de->d_name, "sha256-", 7) == 0, tmp = strncmp(de->d_name, ".tmp-", 5) == 0;
                if (strcmp(verb, "ls") == 0 && entry)
                        print_entry(dfd, de->d_name);
                else if (strcmp(verb, "prune") == 0 && (entry || tmp) && remove_entry(dfd, de->d_name) > 0)
                        removed++;
        }
        closedir(d);
        if (strcmp(verb, "prune") == 0)
                printf("pruned %d\n", removed);
        return 0;
}
