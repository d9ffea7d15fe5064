/* image/image.h — an OCI or docker-archive image as a sandbox root (docs/images.md).
 *
 * Owns: reading an image reference (the transports skopeo and podman name:
 * oci:DIR[:TAG], oci-archive:FILE[:TAG], docker-archive:FILE[:NAME:TAG], each
 * with an optional @sha256:HEX pin), its index, manifest and config; checking
 * every blob against its digest; unpacking the layers, rootless, into a
 * per-user cache keyed by the manifest digest; and telling the sandbox what
 * the root holds (its top-level entries, its interpreter, its Env).
 *
 * Never: a registry. nsbox reads files the caller names, nothing else.
 *
 * Invariants:
 *   - the pin is checked before anything runs: a mismatch is -EPERM (exit 125
 *     like every refusal of the configuration);
 *   - no blob is used before its sha256 matched the digest naming it;
 *   - every write of the unpacker is made relative to the root being built
 *     with openat2(RESOLVE_IN_ROOT): no entry, symlink or whiteout of any layer
 *     reaches a file outside it (image_unpack.c says how);
 *   - the cache holds finished roots only: a root is built in a temporary
 *     directory and renamed into place, under an exclusive flock, so
 *     concurrent nsbox processes unpack once and never see half a tree.
 *
 * Split: image_ref.c and image_json.c are pure (strings and JSON text in,
 * structs out; tests/unit/test_image.c); image_blob.c, image_unpack.c,
 * image_cache.c and image_root.c make the syscalls.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profile/profile.h"
#include "util/error.h"

enum img_transport { IMG_OCI, IMG_OCI_ARCHIVE, IMG_DOCKER_ARCHIVE };

struct img_ref {
        enum img_transport transport;
        char *path;             /* the layout directory or the archive file, as written */
        char *tag;              /* oci: the ref.name; docker-archive: "NAME:TAG"; NULL = the only one */
        char pin[65];           /* lowercase hex of @sha256:HEX, or "" */
};

/* Pure. -EINVAL (stage usage) naming what is wrong. */
int img_ref_parse(const char *s, struct img_ref *ret, struct nsb_error *e);
void img_ref_free(struct img_ref *r);

/* A content descriptor of the OCI image spec. */
struct img_desc {
        char *media_type;
        char digest[65];        /* hex of "sha256:HEX"; other algorithms are refused */
        int64_t size;
};

struct img_manifest {
        struct img_desc config;
        struct img_desc *layers;
        size_t n_layers;
};

struct img_config {
        char **env;             /* "NAME=VALUE", the image's Env */
        size_t n_env;
        char **diff_ids;        /* hex of the uncompressed layers (rootfs.diff_ids) */
        size_t n_diff_ids;
        char *os, *arch;
};

/* Pure JSON readers (image_json.c); every refusal names the file (@what).
 * index: the descriptor tagged @tag (org.opencontainers.image.ref.name), or
 * the only one when @tag is NULL; for a nested image index (several
 * platforms), img_index_platform picks this machine's (@arch as GOARCH
 * spells it: amd64, arm64). */
int img_index_pick(const char *json, size_t len, const char *tag, const char *what, struct img_desc *ret,
                   struct nsb_error *e);
int img_index_platform(const char *json, size_t len, const char *arch, const char *what, struct img_desc *ret,
                       struct nsb_error *e);
bool img_desc_is_index(const struct img_desc *d);
int img_manifest_parse(const char *json, size_t len, const char *what, struct img_manifest *ret,
                       struct nsb_error *e);
int img_config_parse(const char *json, size_t len, const char *what, struct img_config *ret, struct nsb_error *e);
/* docker save's manifest.json: the entry with RepoTags holding @tag (NULL:
 * the only entry); its Config and Layers are paths inside the archive. */
int img_docker_pick(const char *json, size_t len, const char *tag, char **ret_config, char ***ret_layers,
                    size_t *ret_n, struct nsb_error *e);
void img_desc_free(struct img_desc *d);
void img_manifest_free(struct img_manifest *m);
void img_config_free(struct img_config *c);
/* GOARCH of this build (amd64, arm64, ...). */
const char *img_this_arch(void);

/* Unpacking bounds (a layer bomb is refused). */
struct img_limits {
        uint64_t max_bytes;     /* file contents written, all layers together */
        uint64_t max_entries;   /* archive entries, all layers together */
        uint64_t skip_files_over;  /* 0, or regular files larger than this are skipped (reading an
                                      archive's index and manifests only) */
};
#define IMG_DEFAULT_MAX_BYTES (8ULL << 30)
#define IMG_DEFAULT_MAX_ENTRIES 1000000ULL

/* An image ready to run: its root in the cache, what its config says. */
struct img_root {
        char *ref;              /* as given */
        char digest[72];        /* "sha256:HEX": the manifest's (docker-archive: the config's) */
        char *dir;              /* the cache entry: DIR/rootfs is the root */
        char *rootfs;
        char **env;             /* the config's Env */
        size_t n_env;
        int lock_fd;            /* a shared flock held while the root is in use (image rm waits) */
        double unpack_s;        /* seconds spent unpacking (0: the cache had it) */
};

/* Open @ref: read and verify the image, check the pin, unpack it into the
 * cache unless it is there (image_cache.c). Stage config for a refusal. */
int img_open(const char *ref, const struct img_limits *lim, struct img_root *ret, struct nsb_error *e);
void img_root_free(struct img_root *r);

/* The cache directory: $XDG_CACHE_HOME/nsbox/images, else for root
 * /var/cache/nsbox/images, else $HOME/.cache/nsbox/images. */
int img_cache_dir(char **ret, struct nsb_error *e);

/* nsbox image ls|rm|prune: print to stdout; 0 or -errno. */
int img_cmd(char *const *argv, size_t argc, struct nsb_error *e);

/* The root's entries as a host_set mounted over the sandbox's tmpfs root:
 * each top-level entry of @r's rootfs (but the places the sandbox owns:
 * /proc, /dev, /tmp, /sys, /workspace, ...) at /NAME, and /etc entry by entry
 * (the sandbox writes its own passwd, group and localtime there). */
int img_host_set(const struct img_root *r, struct host_set *set, struct nsb_error *e);

/* @name (a bare name searched on @search_path, or an absolute path) resolved
 * inside the image as the image's own root would resolve it; *ret is the
 * path inside the image of an executable regular file. -ENOENT. */
int img_which(const struct img_root *r, const char *name, const char *search_path, char **ret,
              struct nsb_error *e);

/* The PATH of the image's Env, or NULL. */
const char *img_env_path(const struct img_root *r);
