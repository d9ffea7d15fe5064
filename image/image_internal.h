/* image/image_internal.h — what the image module's files share. */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "image/image.h"

struct img_la;   /* image/image_la.h */

void img_strs_free(char **v, size_t n);

/* image_cache.c: *@dir, an existing cache directory, resolved (realpath),
 * every directory from / to it the caller's or root's and not writable by
 * others (sticky excepted). -EPERM otherwise. */
int img_cache_resolve(char **dir, struct nsb_error *e);

/* image_blob.c: the files of an image source (a layout directory, or an
 * archive extracted into a private directory), opened beneath it. */
struct img_src {
        int dir_fd;             /* the layout's (or the extraction's) root */
        char *tmp_dir;          /* the extraction directory to remove, or NULL */
};

/* Open @ref's files: a directory as it is, an archive read once with
 * libarchive into @scratch (a directory of the caller's, removed with it);
 * @small_only: only members of at most IMG_META_MAX bytes (the index and
 * manifests; enough to learn the digest and find the cache entry). */
#define IMG_META_MAX (4u << 20)
int img_src_open(const struct img_la *la, const struct img_ref *ref, const char *scratch, bool small_only, struct img_src *ret,
                 struct nsb_error *e);
void img_src_close(struct img_src *s);

/* Read @path (beneath the source, symlinks resolved inside it) whole, at
 * most @max bytes; when @hex is non-NULL its sha256 must be @hex. */
int img_read_blob(const struct img_src *s, const char *path, size_t max, const char *hex, char **ret,
                  size_t *ret_len, struct nsb_error *e);
/* Open @path for reading (beneath the source). */
int img_open_blob(const struct img_src *s, const char *path, struct nsb_error *e);

/* image_unpack.c: apply the layer read from @fd (a tar, uncompressed or in
 * a compression libarchive has built in) onto the root @root_fd; with @hex, the sha256 of every byte read
 * from @fd (to its end) must be @hex, hashed as libarchive reads them (what
 * is checked is what is unpacked): a mismatch is -EBADMSG, and the caller
 * throws the root away. @size: the blob's size as the manifest says (-1:
 * unknown); a blob of another size, or larger than the limits allow a layer
 * to be, is refused before it is read. @used counts against @lim across
 * layers. */
struct img_usage {
        uint64_t bytes, entries;
};
int img_apply_layer(const struct img_la *la, int root_fd, int fd, const char *what, const char *hex,
                    int64_t size, const struct img_limits *lim, struct img_usage *used, struct nsb_error *e);

/* Remove the tree @name under @dir_fd (never following a symlink). */
int img_rm_tree(int dir_fd, const char *name);
/* Write @len bytes at @path under @root_fd, resolved in the root, making
 * missing parents (0755); the final component replaced, never followed. */
int img_root_write(int root_fd, const char *path, int src_fd, const char *data, size_t len, mode_t mode);

