/* image/image_blob.c — the files of an image source, read beneath it and
 * checked against their digests. */
#include "image/image_internal.h"
#include "image/image_la.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <nettle/sha2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "util/cleanup.h"
#include "util/sha256.h"

/* open_regular: not a regular file (no errno of its own says so) */
#define EFTYPE_NOT_REG 4096

/* Beneath the source: an archive's symlink (docker save's id/layer.tar ->
 * ../HEX.tar) resolves inside it; an OCI layout's blob path holds none.
 * Looked at with O_PATH first: the layout is the image author's, and
 * opening a FIFO for reading waits for a writer forever (under the cache's
 * exclusive lock, every image run of this user with it), a device node's
 * open does what its driver does. A regular file is then opened through
 * the O_PATH fd (the same inode, whatever the name now holds). The archive
 * file the caller names is opened the same way (@resolve 0). */
static int open_regular(int dir_fd, const char *path, uint64_t resolve)
{
        struct open_how how = { .flags = O_PATH | O_CLOEXEC, .resolve = resolve };
        AUTOCLOSE int pfd = (int) syscall(SYS_openat2, dir_fd, path, &how, sizeof how);
        char proc[64];
        struct stat st;
        int fd;

        if (pfd < 0)
                return -errno;
        if (fstat(pfd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return -EFTYPE_NOT_REG;
        snprintf(proc, sizeof proc, "/proc/self/fd/%d", pfd);
        fd = open(proc, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        return fd < 0 ? -errno : fd;
}

int img_open_blob(const struct img_src *s, const char *path, struct nsb_error *e)
{
        int fd = open_regular(s->dir_fd, path, RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS);

        if (fd == -EFTYPE_NOT_REG)
                return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL, "image file '%s' is not a regular file: refused", path);
        if (fd < 0)
                return nsb_fail(e, NSB_STAGE_CONFIG, -fd, "image file '%s'", path);
        return fd;
}

int img_read_blob(const struct img_src *s, const char *path, size_t max, const char *hex, char **ret,
                  size_t *ret_len, struct nsb_error *e)
{
        AUTOCLOSE int fd = img_open_blob(s, path, e);
        struct stat st;
        char *buf;
        size_t done = 0;
        char got[65];

        if (fd < 0)
                return fd;
        if (fstat(fd, &st) < 0)
                return nsb_fail(e, NSB_STAGE_CONFIG, errno, "image file '%s'", path);
        if ((uint64_t) st.st_size > max)
                return nsb_fail(e, NSB_STAGE_CONFIG, EFBIG, "image file '%s' is larger than %zu bytes", path, max);
        if (!(buf = malloc((size_t) st.st_size + 1)))
                return nsb_fail(e, NSB_STAGE_CONFIG, ENOMEM, "out of memory");
        while (done < (size_t) st.st_size) {
                ssize_t n = read(fd, buf + done, (size_t) st.st_size - done);
                if (n <= 0) {
                        free(buf);
                        return nsb_fail(e, NSB_STAGE_CONFIG, n < 0 ? errno : EIO, "reading image file '%s'", path);
                }
                done += (size_t) n;
        }
        buf[done] = '\0';
        if (hex) {
                sha256_hex(buf, done, got);
                if (strcmp(got, hex) != 0) {
                        free(buf);
                        return nsb_fail(e, NSB_STAGE_CONFIG, EBADMSG,
                                        "image file '%s': its sha256 is %s, expected %s (a corrupt or altered "
                                        "blob: refused)", path, got, hex);
                }
        }
        *ret = buf;
        *ret_len = done;
        return 0;
}

int img_src_open(const struct img_la *la, const struct img_ref *ref, const char *scratch, bool small_only, struct img_src *ret,
                 struct nsb_error *e)
{
        struct img_limits lim = { IMG_DEFAULT_MAX_BYTES, IMG_DEFAULT_MAX_ENTRIES, small_only ? IMG_META_MAX : 0 };
        struct img_usage used = { 0, 0 };
        AUTOCLOSE int fd = -1;
        int r;

        ret->dir_fd = -1;
        ret->tmp_dir = NULL;
        if (ref->transport == IMG_OCI) {
                ret->dir_fd = open(ref->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                return ret->dir_fd < 0 ? nsb_fail(e, NSB_STAGE_CONFIG, errno, "--image: OCI layout '%s'", ref->path)
                                       : 0;
        }
        /* An archive: its members written into @scratch by the same
         * unpacker as a layer (nothing outside it), then read as a layout. */
        if ((fd = open_regular(AT_FDCWD, ref->path, 0)) == -EFTYPE_NOT_REG)
                return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL, "--image: archive '%s' is not a regular file: refused",
                                ref->path);
        if (fd < 0)
                return nsb_fail(e, NSB_STAGE_CONFIG, -fd, "--image: archive '%s'", ref->path);
        if (mkdir(scratch, 0700) < 0 && errno != EEXIST)
                return nsb_fail(e, NSB_STAGE_CONFIG, errno, "mkdir '%s'", scratch);
        if ((ret->dir_fd = open(scratch, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
                return nsb_fail(e, NSB_STAGE_CONFIG, errno, "open '%s'", scratch);
        if ((r = img_apply_layer(la, ret->dir_fd, fd, ref->path, NULL, -1, &lim, &used, e)) < 0) {
                close_fd(&ret->dir_fd);
                return r;
        }
        return 0;
}

void img_src_close(struct img_src *s)
{
        close_fd(&s->dir_fd);
        free(s->tmp_dir);
        s->tmp_dir = NULL;
}
