/* path/path.h — sandbox paths: their one spelling and the rules between them.
 *
 * Owns: the normal form of a sandbox destination, the destinations nsbox
 * itself owns (the root's skeleton), and the rules between two mounts —
 * which is the same place, which lies inside which, which may not overlap.
 * Also the mount requests a run carries (struct nsb_bind, struct nsb_tmpfs,
 * struct path_mounts), so that config/ (which fills them) and mount/ (which
 * plans them) both depend on this layer and neither on the other.
 *
 * Invariants:
 *   - a normalised path is absolute, has no "", "." or ".." component and no
 *     trailing slash, and is never the root: "//tmp", "/./tmp" and "/tmp/"
 *     are all "/tmp", so a spelling cannot slip past a check;
 *   - every predicate below takes normalised paths and compares whole
 *     components ("/tmpx" is not under "/tmp");
 *   - the profile's reading (config/) and the mount plan (mount/) apply the
 *     same rules through path_conflict(), so a destination the profile
 *     accepts is one the plan accepts.
 * Pure and portable (POSIX): no syscalls, no platform headers.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

struct nsb_bind {
        char *src;      /* host path, absolute after parsing */
        char *dst;      /* sandbox path, absolute, no ".." */
        bool read_only;
};

struct nsb_tmpfs {
        char *dst;              /* sandbox path, absolute, no ".." */
        uint64_t size_bytes;    /* 0 = the tmp size */
};

/* What a run asks to see besides the profile: borrowed from the config. */
struct path_mounts {
        const char *workspace;          /* host dir at /workspace, or NULL (a private tmpfs) */
        const char *harness;            /* host dir at /harness, or NULL */
        const struct nsb_bind *binds;
        size_t n_binds;
        const struct nsb_tmpfs *tmpfs;
        size_t n_tmpfs;
        uint64_t tmp_size_bytes;        /* /tmp, /workspace and a tmpfs without a size */
};

/* The sandbox paths nsbox itself owns; a user mount may not cover them. */
#define PATH_N_RESERVED 7
extern const char *const path_reserved[PATH_N_RESERVED];
#define PATH_RESERVED_LIST "/tmp, /workspace, /program, /harness, /proc, /dev, /nsbox"

/* Validate and normalise a sandbox destination: absolute, no "..", not the
 * root. *ret is a malloc'd copy. Errors (stage config) start with @what. */
int path_normalize(const char *dst, const char *what, char **ret, struct nsb_error *e);

/* Has @p a ".." component? (path_normalize refuses one; this says which
 * refusal it was, for a message.) */
bool path_has_dotdot(const char *p);

/* Is @name a plain relative path inside /workspace (a job's files): not
 * empty, not absolute, no "." or ".." component, no empty one (no "//", no
 * trailing "/"), no NUL (@len bytes), at most 1024 bytes and 255 a
 * component? Else -EINVAL naming @key ("files" or "fetch_files") and why. */
int path_job_file_name(const char *key, const char *name, size_t len, struct nsb_error *e);

/* Is @path @dir itself or inside it? */
bool path_under(const char *path, const char *dir);

/* Is @dst (normalised) a path the sandbox owns, or inside one? */
bool path_is_reserved(const char *dst);

/* The rule between two user mounts at normalised @a and @b: NULL when they
 * may coexist, else why not ("is mounted twice", "overlaps"). Two binds may
 * nest (the outer is attached first); a tmpfs may neither hold nor sit in
 * another mount, which it would hide or need a mount point inside. */
const char *path_conflict(const char *a, bool a_is_tmpfs, const char *b, bool b_is_tmpfs);

/* A read-only bind at @inner inside a read-write bind at @outer cannot be
 * ordered (read-write binds go on after the tree is made read-only, and
 * would hide it): true when that is the case. */
bool path_nesting_refused(const char *inner, bool inner_ro, const char *outer, bool outer_ro);
