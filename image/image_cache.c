/* image/image_cache.c — the per-user cache of unpacked roots, and opening
 * an image through it.
 *
 * Layout: DIR/.lock (flock: shared to look an entry up, exclusive to build
 * or remove one), DIR/sha256-HEX/{rootfs/,meta.json,lock} (a finished
 * entry; its lock is held shared by every run using it), DIR/.tmp-XXXXXX (an
 * entry being built, or an archive's members being read; renamed into place
 * when finished, removed otherwise).
 */
#include "image/image_internal.h"
#include "image/image_la.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util/cleanup.h"
#include "util/safedir.h"
#include "util/sha256.h"

int img_cache_dir(char **ret, struct nsb_error *e)
{
        const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
        int n;

        if (xdg && xdg[0] == '/')
                n = asprintf(ret, "%s/nsbox/images", xdg);
        else if (geteuid() == 0)
                n = asprintf(ret, "/var/cache/nsbox/images");
        else if (home && home[0] == '/')
                n = asprintf(ret, "%s/.cache/nsbox/images", home);
        else
                return nsb_fail(e, NSB_STAGE_CONFIG, ENOENT,
                                "no image cache: set XDG_CACHE_HOME or HOME to an absolute directory");
        return n < 0 ? nsb_fail(e, NSB_STAGE_CONFIG, ENOMEM, "out of memory") : 0;
}

/* mkdir -p, 0700 for what is made. */
static int mkdir_p(char *path)
{
        for (char *p = path + 1;; p++) {
                char c = *p;
                if (c != '/' && c != '\0')
                        continue;
                *p = '\0';
                int r = mkdir(path, 0700) < 0 && errno != EEXIST ? -errno : 0;
                *p = c;
                if (r < 0 || c == '\0')
                        return r;
        }
}

/* *@dir (existing) resolved, every directory from / down to it checked
 * (util/safedir.h). Who can rename an entry of an ancestor can swap the cache
 * for a tree of their own after nsbox looked at it (the locks and the mount
 * plan name the cache by path), and that tree becomes the sandbox's root.
 * The resolved path replaces *@dir: a symlink's target is what was checked. */
int img_cache_resolve(char **dir, struct nsb_error *e)
{
        char *real = NULL;
        int r = nsb_dir_check_path("image cache", *dir, &real, NULL, e);

        if (r < 0)
                return r;
        free(*dir);
        *dir = real;
        return 0;
}

/* The cache directory, made and opened, and its lock taken (@how). */
static int cache_open(char **ret_dir, int *ret_lock, int how, struct nsb_error *e)
{
        int r = img_cache_dir(ret_dir, e), fd, lock;
        struct stat st;

        if (r < 0)
                return r;
        if ((r = mkdir_p(*ret_dir)) < 0)
                return nsb_fail(e, NSB_STAGE_CONFIG, -r, "image cache '%s'", *ret_dir);
        if ((r = img_cache_resolve(ret_dir, e)) < 0)
                return r;
        /* The cache decides what the sandbox's root holds: the caller's own
         * directory only (as profile/closure_cache.h trusts its cache). */
        if ((fd = open(*ret_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 || fstat(fd, &st) < 0)
                return nsb_fail(e, NSB_STAGE_CONFIG, errno, "image cache '%s'", *ret_dir);
        if (st.st_uid != geteuid() || (st.st_mode & 022)) {
                close(fd);
                return nsb_fail(e, NSB_STAGE_CONFIG, EPERM,
                                "image cache '%s' is not the caller's own (owner %u, mode %o): refused", *ret_dir,
                                (unsigned) st.st_uid, (unsigned) (st.st_mode & 07777));
        }
        lock = openat(fd, ".lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        close(fd);
        if (lock < 0 || flock(lock, how) < 0) {
                r = nsb_fail(e, NSB_STAGE_CONFIG, errno, "image cache lock '%s/.lock'", *ret_dir);
                if (lock >= 0)
                        close(lock);
                return r;
        }
        *ret_lock = lock;
        return 0;
}

/* What of an image decides its root: the digest, the layers' blob paths and
 * digests (NULL digest: docker-archive, checked against diff_ids), the Env. */
struct img_plan {
        char digest[65];
        char **layer_paths;
        char **layer_hex;
        int64_t *layer_size;    /* the manifest's sizes (-1 each for a docker-archive) */
        size_t n_layers;
        struct img_config cfg;
};

static void plan_free(struct img_plan *p)
{
        img_strs_free(p->layer_paths, p->n_layers);
        img_strs_free(p->layer_hex, p->n_layers);
        free(p->layer_size);
        img_config_free(&p->cfg);
        memset(p, 0, sizeof *p);
}

static char *blob_path(const char *hex)
{
        char *s = NULL;
        return asprintf(&s, "blobs/sha256/%s", hex) < 0 ? NULL : s;
}

static int pin_check(const struct img_ref *ref, const char *a, const char *b, struct nsb_error *e)
{
        if (!ref->pin[0] || strcmp(ref->pin, a) == 0 || (b && strcmp(ref->pin, b) == 0))
                return 0;
        return nsb_fail(e, NSB_STAGE_CONFIG, EPERM, "--image: pinned sha256:%s, but %s:%s%s is sha256:%s: refused",
                        ref->pin, ref->path, ref->tag ? ref->tag : "", ref->tag ? "" : "(its only image)", a);
}

static int plan_oci(const struct img_ref *ref, const struct img_src *src, struct img_plan *p, struct nsb_error *e)
{
        AUTOFREE char *idx = NULL, *top_path = NULL, *man = NULL, *man_path = NULL, *cfg_path = NULL, *cfg = NULL;
        struct img_desc top = { 0 }, pick = { 0 };
        struct img_manifest m = { 0 };
        size_t len;
        int r;

        if ((r = img_read_blob(src, "index.json", IMG_META_MAX, NULL, &idx, &len, e)) < 0 ||
            (r = img_index_pick(idx, len, ref->tag, "index.json", &top, e)) < 0)
                goto out;
        pick = top;
        pick.media_type = NULL;
        if (img_desc_is_index(&top)) {
                AUTOFREE char *nested = NULL;
                if (!(top_path = blob_path(top.digest)) ||
                    (r = img_read_blob(src, top_path, IMG_META_MAX, top.digest, &nested, &len, e)) < 0 ||
                    (r = img_index_platform(nested, len, img_this_arch(), top_path, &pick, e)) < 0)
                        goto out;
        }
        if ((r = pin_check(ref, pick.digest, top.digest, e)) < 0)
                goto out;
        memcpy(p->digest, pick.digest, 65);
        if (!(man_path = blob_path(pick.digest)) ||
            (r = img_read_blob(src, man_path, IMG_META_MAX, pick.digest, &man, &len, e)) < 0 ||
            (r = img_manifest_parse(man, len, man_path, &m, e)) < 0 || !(cfg_path = blob_path(m.config.digest)) ||
            (r = img_read_blob(src, cfg_path, IMG_META_MAX, m.config.digest, &cfg, &len, e)) < 0 ||
            (r = img_config_parse(cfg, len, cfg_path, &p->cfg, e)) < 0)
                goto out;
        p->layer_paths = calloc(m.n_layers + 1, sizeof(char *));
        p->layer_hex = calloc(m.n_layers + 1, sizeof(char *));
        p->layer_size = calloc(m.n_layers + 1, sizeof(int64_t));
        for (size_t i = 0; p->layer_paths && p->layer_hex && p->layer_size && i < m.n_layers; i++, p->n_layers++) {
                if (!(p->layer_paths[i] = blob_path(m.layers[i].digest)) ||
                    !(p->layer_hex[i] = strdup(m.layers[i].digest)))
                        break;
                p->layer_size[i] = m.layers[i].size;
        }
        if (p->n_layers != m.n_layers)
                r = nsb_fail(e, NSB_STAGE_CONFIG, ENOMEM, "out of memory");
out:
        if (r == 0 && !man_path)
                r = nsb_fail(e, NSB_STAGE_CONFIG, ENOMEM, "out of memory");
        img_desc_free(&top);
        img_desc_free(&pick);
        img_manifest_free(&m);
        return r;
}

/* docker save: no registry manifest; the image ID (the config's digest)
 * names it, and each layer is checked against the config's diff_ids. */
static int plan_docker(const struct img_ref *ref, const struct img_src *src, struct img_plan *p,
                       struct nsb_error *e)
{
        AUTOFREE char *man = NULL, *cfg_name = NULL, *cfg = NULL;
        size_t len;
        int r;

        if ((r = img_read_blob(src, "manifest.json", IMG_META_MAX, NULL, &man, &len, e)) < 0 ||
            (r = img_docker_pick(man, len, ref->tag, &cfg_name, &p->layer_paths, &p->n_layers, e)) < 0 ||
            (r = img_read_blob(src, cfg_name, IMG_META_MAX, NULL, &cfg, &len, e)) < 0)
                return r;
        sha256_hex(cfg, len, p->digest);
        if ((r = pin_check(ref, p->digest, NULL, e)) < 0 || (r = img_config_parse(cfg, len, cfg_name, &p->cfg, e)) < 0)
                return r;
        if (p->cfg.n_diff_ids != p->n_layers)
                return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL, "%s: %zu diff_ids for %zu layers", cfg_name,
                                p->cfg.n_diff_ids, p->n_layers);
        if (!(p->layer_hex = calloc(p->n_layers + 1, sizeof(char *))) ||
            !(p->layer_size = calloc(p->n_layers + 1, sizeof(int64_t))))
                return nsb_fail(e, NSB_STAGE_CONFIG, ENOMEM, "out of memory");
        for (size_t i = 0; i < p->n_layers; i++) {
                if (!(p->layer_hex[i] = strdup(p->cfg.diff_ids[i])))
                        return nsb_fail(e, NSB_STAGE_CONFIG, ENOMEM, "out of memory");
                p->layer_size[i] = -1;  /* docker save records no sizes */
        }
        return 0;
}

/* meta.json: one line of JSON (nsbox image ls prints it). The ref is the
 * caller's text, of any length (a tag is whatever the index names): no quote,
 * backslash or control byte is copied into the file. (It was formatted into
 * a fixed 8 KiB buffer and the formatted length written: a longer ref wrote
 * the bytes past the buffer's end too, and ls printed broken JSON.) */
static int write_meta(int entry_fd, const char *ref, const char *digest, const struct img_usage *u, double secs)
{
        AUTOFREE char *clean = strdup(ref), *buf = NULL;
        int n;

        if (!clean)
                return -ENOMEM;
        for (char *q = clean; *q; q++)
                if (*q == '"' || *q == '\\' || (unsigned char) *q < 0x20)
                        *q = '?';
        n = asprintf(&buf,
                     "{\"ref\":\"%s\",\"digest\":\"sha256:%s\",\"unpacked_at\":%lld,\"bytes\":%llu,"
                     "\"entries\":%llu,\"unpack_s\":%.3f}\n",
                     clean, digest, (long long) time(NULL), (unsigned long long) u->bytes,
                     (unsigned long long) u->entries, secs);
        if (n < 0) {
                buf = NULL;
                return -ENOMEM;
        }
        return img_root_write(entry_fd, "meta.json", -1, buf, (size_t) n, 0600);
}

static double now_s(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Build the entry for @p in a fresh DIR/.tmp-XXXXXX and rename it to @final. */
static int build_entry(const struct img_la *la, const char *dir, const char *final, const char *ref,
                       const struct img_src *src,
                       const struct img_plan *p, const struct img_limits *lim, double *secs, struct nsb_error *e)
{
        AUTOFREE char *tmp = NULL;
        AUTOCLOSE int tfd = -1, root_fd = -1;
        struct img_usage used = { 0, 0 };
        double t0 = now_s();
        int r = 0;

        if (asprintf(&tmp, "%s/.tmp-XXXXXX", dir) < 0 || !mkdtemp(tmp))
                return nsb_fail(e, NSB_STAGE_CONFIG, errno, "image cache '%s': a directory to unpack %s in", dir, ref);
        if ((tfd = open(tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 || mkdirat(tfd, "rootfs", 0755) < 0 ||
            (root_fd = openat(tfd, "rootfs", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
                r = nsb_fail(e, NSB_STAGE_CONFIG, errno, "image cache '%s'", tmp);
        for (size_t i = 0; r == 0 && i < p->n_layers; i++) {
                AUTOCLOSE int fd = img_open_blob(src, p->layer_paths[i], e);
                char what[320];

                snprintf(what, sizeof what, "layer %zu of %zu (%s)", i + 1, p->n_layers, p->layer_paths[i]);
                if (fd < 0)
                        r = fd;
                else
                        r = img_apply_layer(la, root_fd, fd, what, p->layer_hex[i], p->layer_size[i], lim, &used, e);
        }
        *secs = now_s() - t0;
        if (r == 0 && (r = write_meta(tfd, ref, p->digest, &used, *secs)) < 0)
                r = nsb_fail(e, NSB_STAGE_CONFIG, -r, "image cache '%s': meta.json", tmp);
        /* on disk before it has its name: after a crash (of the machine, not
         * of nsbox: that leaves a .tmp-) a finished-looking entry with empty
         * files would be used as it is, never re-hashed */
        if (r == 0 && syncfs(tfd) < 0)
                r = nsb_fail(e, NSB_STAGE_CONFIG, errno, "image cache: syncfs '%s'", tmp);
        if (r == 0 && rename(tmp, final) < 0)
                r = nsb_fail(e, NSB_STAGE_CONFIG, errno, "image cache: rename to '%s'", final);
        if (r < 0) {
                AUTOCLOSE int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (dfd >= 0)
                        (void) img_rm_tree(dfd, strrchr(tmp, '/') + 1);
        }
        return r;
}

/* The entry's own lock, shared: a run holds it while it uses the root. */
static int entry_lock(const char *entry, int how)
{
        AUTOFREE char *path = NULL;
        int fd;

        if (asprintf(&path, "%s/lock", entry) < 0)
                return -ENOMEM;
        if ((fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600)) < 0)
                return -errno;
        if (flock(fd, how) < 0) {
                int r = -errno;
                close(fd);
                return r;
        }
        return fd;
}

static int scratch_dir(const char *dir, char **ret, struct nsb_error *e)
{
        if (asprintf(ret, "%s/.tmp-XXXXXX", dir) < 0 || !mkdtemp(*ret))
                return nsb_fail(e, NSB_STAGE_CONFIG, errno, "image cache '%s': a directory to read the archive in", dir);
        return 0;
}

static void scratch_rm(const char *dir, char *scratch)
{
        AUTOCLOSE int dfd = scratch ? open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;

        if (dfd >= 0)
                (void) img_rm_tree(dfd, strrchr(scratch, '/') + 1);
        free(scratch);
}

static int plan_of(const struct img_ref *ref, const struct img_src *src, struct img_plan *p, struct nsb_error *e)
{
        return ref->transport == IMG_DOCKER_ARCHIVE ? plan_docker(ref, src, p, e) : plan_oci(ref, src, p, e);
}

/* Under the exclusive lock no other nsbox is building or reading an
 * archive (each holds the lock, shared or exclusive, while its .tmp- exists):
 * every .tmp- but this process's own @scratch was left by one that was
 * killed (an unpack cut short by kill -9), and is removed. */
static void sweep_stale(const char *dir, const char *scratch)
{
        const char *own = scratch ? strrchr(scratch, '/') + 1 : "";
        AUTOCLOSE int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        int lfd = dfd < 0 ? -1 : dup(dfd);
        DIR *d = lfd < 0 ? NULL : fdopendir(lfd);
        struct dirent *de;

        if (!d) {
                if (lfd >= 0)
                        close(lfd);
                return;
        }
        while ((de = readdir(d)))
                if (strncmp(de->d_name, ".tmp-", 5) == 0 && strcmp(de->d_name, own) != 0)
                        (void) img_rm_tree(dfd, de->d_name);
        closedir(d);
}

/* Under the exclusive lock: the entry, unless another process made it.
 * The image is read again here (its plan; an archive's layers): it must
 * still be @want (the digest the entry is named by, learned under the shared
 * lock). An index or archive replaced while this process waited for the
 * lock put image B's layers under image A's name, where a run pinned to A
 * later found them. */
static int ensure_entry(struct img_la *la, const char *dir, const char *entry, const char *want, const char *refstr,
                        const struct img_ref *ref, struct img_src *src, const char *scratch,
                        const struct img_limits *lim, double *secs, struct nsb_error *e)
{
        struct img_plan p = { 0 };
        struct stat st;
        int r = 0;

        if (lstat(entry, &st) == 0)
                return 0;       /* entry_check decides whether it is one */
        sweep_stale(dir, scratch);
        if ((r = img_la_load(la, e)) < 0)
                return r;
        if (ref->transport != IMG_OCI) {
                /* the members skipped for their size: the layers, now */
                img_src_close(src);
                r = img_src_open(la, ref, scratch, false, src, e);
        }
        if (r == 0 && (r = plan_of(ref, src, &p, e)) == 0 && strcmp(p.digest, want) != 0)
                r = nsb_fail(e, NSB_STAGE_CONFIG, EBUSY,
                             "--image %s changed while it was read (sha256:%s, then sha256:%s): refused", refstr,
                             want, p.digest);
        if (r == 0)
                r = build_entry(la, dir, entry, refstr, src, &p, lim, secs, e);
        plan_free(&p);
        return r;
}

/* The entry @dir (lstat'ed into @st) and its rootfs: directories of the
 * caller's, not symlinks. Only the caller can put anything in the cache,
 * but a symlinked entry (a tool's, or the caller's own mistake) would make
 * the sandbox's root a tree nsbox never built nor checked. */
static int entry_check(const char *dir, const char *rootfs, const struct stat *st, struct nsb_error *e)
{
        struct stat rs;

        if (!S_ISDIR(st->st_mode) || st->st_uid != geteuid() || lstat(rootfs, &rs) < 0 || !S_ISDIR(rs.st_mode) ||
            rs.st_uid != geteuid())
                return nsb_fail(e, NSB_STAGE_CONFIG, EPERM,
                                "image cache entry '%s' is not a directory nsbox made (a symlink, another "
                                "user's, or no rootfs): refused (nsbox image rm it)", dir);
        return 0;
}

/* The cache entry's name: the digest, and for a docker-archive a suffix.
 * An OCI image is cached by its manifest's digest, a docker-archive by its
 * config's: the same bytes read as a docker config (a victim's manifest,
 * anyone can copy it, with no layers) would otherwise make the entry the
 * victim's pinned OCI image then runs on. */
static int entry_path(const char *dir, const struct img_ref *ref, const char *digest, char **ret)
{
        return asprintf(ret, "%s/sha256-%s%s", dir, digest, ref->transport == IMG_DOCKER_ARCHIVE ? "-docker" : "");
}

int img_open(const char *refstr, const struct img_limits *lim, struct img_root *ret, struct nsb_error *e)
{
        struct img_ref ref;
        struct img_src src = { -1, NULL };
        struct img_plan p = { 0 };
        struct img_la la = { 0 };
        AUTOFREE char *dir = NULL;
        char *scratch = NULL;
        int lock = -1, r;
        struct stat st;

        memset(ret, 0, sizeof *ret);
        ret->lock_fd = -1;
        if ((r = img_ref_parse(refstr, &ref, e)) < 0)
                return r;
        if ((r = cache_open(&dir, &lock, LOCK_SH, e)) < 0)
                goto out;
        if (ref.transport != IMG_OCI && (r = scratch_dir(dir, &scratch, e)) < 0)
                goto out;
        /* an OCI layout is read without libarchive until a layer must be unpacked */
        if (ref.transport != IMG_OCI && (r = img_la_load(&la, e)) < 0)
                goto out;
        if ((r = img_src_open(&la, &ref, scratch ? scratch : "", true, &src, e)) < 0 ||
            (r = plan_of(&ref, &src, &p, e)) < 0)
                goto out;
        if (!(ret->ref = strdup(refstr)) || entry_path(dir, &ref, p.digest, &ret->dir) < 0 ||
            asprintf(&ret->rootfs, "%s/rootfs", ret->dir) < 0) {
                r = nsb_fail(e, NSB_STAGE_CONFIG, ENOMEM, "out of memory");
                goto out;
        }
        snprintf(ret->digest, sizeof ret->digest, "sha256:%s", p.digest);
        if (lstat(ret->dir, &st) < 0) {
                /* one process unpacks; the others wait here, then find it.
                 * The cache lock stays exclusive until the entry's own lock
                 * is held: a shared lock again first (flock converts by
                 * unlocking) let `nsbox image rm` remove the entry just built
                 * in between. */
                if (flock(lock, LOCK_EX) < 0) {
                        r = nsb_fail(e, NSB_STAGE_CONFIG, errno, "image cache lock");
                        goto out;
                }
                if ((r = ensure_entry(&la, dir, ret->dir, p.digest, refstr, &ref, &src, scratch, lim, &ret->unpack_s,
                                      e)) < 0)
                        goto out;
                if (lstat(ret->dir, &st) < 0) {
                        r = nsb_fail(e, NSB_STAGE_CONFIG, errno, "image cache entry '%s'", ret->dir);
                        goto out;
                }
        }
        if ((r = entry_check(ret->dir, ret->rootfs, &st, e)) < 0)
                goto out;
        if ((ret->lock_fd = entry_lock(ret->dir, LOCK_SH)) < 0) {
                r = nsb_fail(e, NSB_STAGE_CONFIG, -ret->lock_fd, "image cache entry '%s'", ret->dir);
                goto out;
        }
        ret->env = p.cfg.env;
        ret->n_env = p.cfg.n_env;
        p.cfg.env = NULL;
        p.cfg.n_env = 0;
out:
        img_src_close(&src);
        scratch_rm(dir, scratch);
        plan_free(&p);
        img_ref_free(&ref);
        img_la_unload(&la);
        if (lock >= 0)
                close(lock);
        if (r < 0)
                img_root_free(ret);
        return r;
}

void img_root_free(struct img_root *r)
{
        free(r->ref);
        free(r->dir);
        free(r->rootfs);
        img_strs_free(r->env, r->n_env);
        if (r->lock_fd >= 0)
                close(r->lock_fd);
        memset(r, 0, sizeof *r);
        r->lock_fd = -1;
}
