/* mount/mnt_plan.c — build the mount plan. Pure: allocates, never touches
 * the host. See mnt.h for the order and why. */
#include "mount/mnt.h"

#include <errno.h>
#include <linux/mount.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/cleanup.h"

#define ROOT_TMPFS_SLACK (1ULL << 20)   /* directories, symlinks, small files */

struct builder {
        struct mnt_plan *plan;
        size_t cap;
        char **dirs;          /* directories already planned (dedupe) */
        size_t n_dirs;
        struct nsb_error *e;
};

static struct mnt_op *push(struct builder *b, enum mnt_kind kind, const char *dst)
{
        struct mnt_plan *p = b->plan;
        struct mnt_op *op;

        if (p->n_ops == b->cap) {
                size_t ncap = b->cap ? b->cap * 2 : 64;
                struct mnt_op *nv = realloc(p->ops, ncap * sizeof *nv);
                if (!nv)
                        return NULL;
                p->ops = nv;
                b->cap = ncap;
        }
        op = &p->ops[p->n_ops];
        memset(op, 0, sizeof *op);
        op->kind = kind;
        op->slot = -1;
        if (dst && !(op->dst = strdup(dst)))
                return NULL;
        p->n_ops++;
        return op;
}

#define PUSH_OR_FAIL(op, b, kind, dst)                                                          \
        do {                                                                                    \
                if (!((op) = push((b), (kind), (dst))))                                         \
                        return nsb_fail((b)->e, NSB_STAGE_CONFIG, ENOMEM, "out of memory");   \
        } while (0)

static int new_slot(struct builder *b, const char *src, bool preopened)
{
        struct mnt_plan *p = b->plan;
        bool *nv = realloc(p->slot_preopened, (p->n_slots + 1) * sizeof *nv);
        struct mnt_op *op;

        if (!nv)
                return nsb_fail(b->e, NSB_STAGE_CONFIG, ENOMEM, "out of memory");
        p->slot_preopened = nv;
        nv[p->n_slots] = preopened;
        PUSH_OR_FAIL(op, b, MNT_OPEN_TREE, NULL);
        if (!(op->src = strdup(src)))
                return nsb_fail(b->e, NSB_STAGE_CONFIG, ENOMEM, "out of memory");
        op->slot = (int) p->n_slots;
        return (int) p->n_slots++;
}

/* mkdir -p for the parents of @path (and @path itself when @self). */
static int mkdirs(struct builder *b, const char *path, bool self, mode_t mode)
{
        char buf[4096];
        size_t len = strlen(path);

        if (len >= sizeof buf)
                return nsb_fail(b->e, NSB_STAGE_CONFIG, ENAMETOOLONG, "path too long: '%s'", path);
        memcpy(buf, path, len + 1);
        for (size_t i = 1; i <= len; i++) {
                struct mnt_op *op;
                bool dup = false;
                char saved = buf[i];

                if (buf[i] != '/' && buf[i] != '\0')
                        continue;
                if (buf[i] == '\0' && !self)
                        break;
                buf[i] = '\0';
                for (size_t k = 0; k < b->n_dirs && !dup; k++)
                        dup = strcmp(b->dirs[k], buf) == 0;
                if (!dup) {
                        char **nv = realloc(b->dirs, (b->n_dirs + 1) * sizeof *nv);
                        if (!nv || !(nv[b->n_dirs] = strdup(buf))) {
                                if (nv)
                                        b->dirs = nv;
                                return nsb_fail(b->e, NSB_STAGE_CONFIG, ENOMEM, "out of memory");
                        }
                        b->dirs = nv;
                        b->n_dirs++;
                        PUSH_OR_FAIL(op, b, MNT_MKDIR, buf);
                        op->mode = buf[i + 0] == '\0' && saved == '\0' ? mode : 0755;
                }
                buf[i] = saved;
        }
        return 0;
}

/* Is @path covered by a directory entry of the host set (other than itself)? */
static bool covered_by_host_dir(const struct host_set *h, const char *path)
{
        for (size_t i = 0; h && i < h->n; i++)
                if (h->v[i].kind == HOST_DIR && strcmp(h->v[i].path, path) != 0 && mnt_path_under(path, h->v[i].path))
                        return true;
        return false;
}

/* A bind must not replace, hide or reach inside what the profile provides
 * (the interpreter, its libraries and standard library, the packages): the
 * program would start without them and fail as if its own code were wrong
 * (a bind over the stdlib's encodings/ made python3 exit 1 with "exited").
 * A host path bound onto itself shows the very same files, so it may sit
 * above or inside them; a profile symlink (/lib -> usr/lib) may be passed
 * through, the bind then lands where it points. */
static int check_profile_paths(const struct host_set *h, const char *src, const char *dst, const char *what,
                               struct nsb_error *e)
{
        struct nsb_error ignored;
        AUTOFREE char *src_norm = NULL;
        bool identity;

        nsb_error_clear(&ignored);
        identity = mnt_dst_normalize(src, what, &src_norm, &ignored) == 0 && strcmp(src_norm, dst) == 0;
        for (size_t k = 0; h && k < h->n; k++) {
                const char *path = h->v[k].path;

                if (strcmp(path, dst) == 0)
                        return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL, "%s: destination '%s' is provided by the profile",
                                        what, dst);
                if (identity)
                        continue;
                if (mnt_path_under(path, dst))
                        return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL,
                                        "%s: destination '%s' would hide '%s', which the profile provides", what, dst,
                                        path);
                if (h->v[k].kind != HOST_SYMLINK && mnt_path_under(dst, path))
                        return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL,
                                        "%s: destination '%s' lies inside '%s', which the profile provides", what,
                                        dst, path);
        }
        return 0;
}

struct user_mount {
        const char *src;
        char *dst;
        bool ro;
        int slot;
        const char *what;
};

static size_t depth(const char *path)
{
        size_t n = 0;
        for (; *path; path++)
                n += *path == '/';
        return n;
}

/* Binds inside binds: the enclosing one must be attached first, or it hides
 * the inner one and the program silently sees the wrong tree. Within a phase
 * that is an order (stable: parents before children); across phases it is
 * not, since read-write binds go on after everything is made read-only, so a
 * read-only bind inside a read-write one is refused. */
static int order_nested(struct builder *b, struct user_mount *um, size_t n)
{
        for (size_t i = 1; i < n; i++) {
                struct user_mount m = um[i];
                size_t k = i;

                for (; k > 0 && depth(um[k - 1].dst) > depth(m.dst); k--)
                        um[k] = um[k - 1];
                um[k] = m;
        }
        for (size_t i = 0; i < n; i++)
                for (size_t k = 0; k < n; k++)
                        if (k != i && um[i].ro && !um[k].ro && mnt_path_under(um[i].dst, um[k].dst))
                                return nsb_fail(b->e, NSB_STAGE_CONFIG, EINVAL,
                                                "%s: destination '%s' lies inside the read-write bind at '%s', "
                                                "which goes on top of it (read-write binds are mounted last)",
                                                um[i].what, um[i].dst, um[k].dst);
        return 0;
}

static int plan_user_mounts(struct builder *b, const struct mnt_input *in, struct user_mount *um, size_t *n_um)
{
        const struct nsb_config *cfg = in->cfg;
        size_t n = 0;
        int r;

        if (cfg->workspace)
                um[n++] = (struct user_mount){ cfg->workspace, strdup("/workspace"), false, -1, "--workspace" };
        if (cfg->harness)
                um[n++] = (struct user_mount){ cfg->harness, strdup("/harness"), true, -1, "--harness" };
        if (in->runner_dir)
                um[n++] = (struct user_mount){ in->runner_dir, strdup("/nsbox"), true, -1, "runner" };
        for (size_t i = 0; i < n; i++)
                if (!um[i].dst)
                        return nsb_fail(b->e, NSB_STAGE_CONFIG, ENOMEM, "out of memory");
        for (size_t i = 0; i < cfg->n_binds; i++) {
                const struct nsb_bind *bd = &cfg->binds[i];
                const char *what = bd->read_only ? "--ro-bind" : "--bind";
                char *dst = NULL;

                if (!bd->src || bd->src[0] != '/') {
                        *n_um = n;
                        return nsb_fail(b->e, NSB_STAGE_CONFIG, EINVAL, "%s: source '%s' is not absolute",
                                        what, bd->src ? bd->src : "");
                }
                r = mnt_dst_normalize(bd->dst, what, &dst, b->e);
                if (r < 0) {
                        *n_um = n;
                        return r;
                }
                um[n++] = (struct user_mount){ bd->src, dst, bd->read_only, -1, what };
                if (mnt_path_is_reserved(dst)) {
                        *n_um = n;
                        return nsb_fail(b->e, NSB_STAGE_CONFIG, EINVAL,
                                        "%s: destination '%s' is a path the sandbox owns", what, dst);
                }
                for (size_t k = 0; k < n - 1; k++)
                        if (strcmp(um[k].dst, dst) == 0) {
                                *n_um = n;
                                return nsb_fail(b->e, NSB_STAGE_CONFIG, EINVAL,
                                                "%s: destination '%s' is mounted twice", what, dst);
                        }
                if ((r = check_profile_paths(in->host, bd->src, dst, what, b->e)) < 0) {
                        *n_um = n;
                        return r;
                }
        }
        *n_um = n;
        if ((r = order_nested(b, um, n)) < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                r = new_slot(b, um[i].src, in->preopen_user_sources);
                if (r < 0)
                        return r;
                um[i].slot = r;
        }
        return 0;
}

#define MAX_TMPFS 16

/* The extra tmpfs mounts: normalised destinations into @ret. Each must be
 * its own place: not the sandbox's, not another mount's, and neither inside
 * nor above a bind or a profile path (one would hide the other, or the tmpfs
 * would need a mount point inside a read-only tree). */
static int plan_tmpfs_dsts(struct builder *b, const struct mnt_input *in, const struct user_mount *um, size_t n_um,
                           char **ret)
{
        const struct nsb_config *cfg = in->cfg;
        const struct host_set *h = in->host;

        if (cfg->n_tmpfs > MAX_TMPFS)
                return nsb_fail(b->e, NSB_STAGE_CONFIG, E2BIG, "too many tmpfs mounts (at most %d)", MAX_TMPFS);
        for (size_t i = 0; i < cfg->n_tmpfs; i++) {
                const char *why = NULL;
                char *dst;
                int r = mnt_dst_normalize(cfg->tmpfs[i].dst, "--tmpfs", &ret[i], b->e);

                if (r < 0)
                        return r;
                dst = ret[i];
                if (mnt_path_is_reserved(dst))
                        why = "is a path the sandbox owns";
                for (size_t k = 0; !why && k < i; k++)
                        if (mnt_path_under(dst, ret[k]) || mnt_path_under(ret[k], dst))
                                why = "overlaps another tmpfs";
                for (size_t k = 0; !why && k < n_um; k++)
                        if (mnt_path_under(dst, um[k].dst) || mnt_path_under(um[k].dst, dst))
                                why = "overlaps a bind mount";
                for (size_t k = 0; !why && h && k < h->n; k++)
                        if (mnt_path_under(dst, h->v[k].path) || mnt_path_under(h->v[k].path, dst))
                                why = "overlaps a path the profile provides";
                if (why)
                        return nsb_fail(b->e, NSB_STAGE_CONFIG, EINVAL, "--tmpfs: destination '%s' %s", dst, why);
        }
        return 0;
}

int mnt_plan_build(const struct mnt_input *in, struct mnt_plan *ret, struct nsb_error *e)
{
        char *tmpfs_dst[MAX_TMPFS] = { 0 };
        static const char *const dev_nodes[] = { "null", "zero", "full", "random", "urandom" };
        static const struct { const char *name, *target; } dev_links[] = {
                { "fd", "/proc/self/fd" }, { "stdin", "/proc/self/fd/0" },
                { "stdout", "/proc/self/fd/1" }, { "stderr", "/proc/self/fd/2" },
        };
        const struct host_set *h = in->host;
        struct builder b = { .plan = ret, .e = e };
        struct user_mount um[3 + 64];
        size_t n_um = 0;
        int dev_slot[5];
        int host_slot_base = 0;
        struct mnt_op *op;
        int r = 0;

        memset(ret, 0, sizeof *ret);
        if (in->cfg->n_binds > 64)
                return nsb_fail(e, NSB_STAGE_CONFIG, E2BIG, "too many bind mounts (at most 64)");

        ret->sandbox_uid = in->sandbox_uid;
        ret->sandbox_gid = in->sandbox_gid;

        /* 1. private propagation */
        if (!push(&b, MNT_MAKE_PRIVATE, NULL))
                goto oom;

        /* 2. open every source while the host tree is whole */
        host_slot_base = 0;
        for (size_t i = 0; h && i < h->n; i++) {
                if (h->v[i].kind == HOST_SYMLINK || covered_by_host_dir(h, h->v[i].path))
                        continue;
                if ((r = new_slot(&b, h->v[i].path, false)) < 0)
                        goto fail;
        }
        for (size_t i = 0; i < sizeof dev_nodes / sizeof dev_nodes[0]; i++) {
                char src[32];
                snprintf(src, sizeof src, "/dev/%s", dev_nodes[i]);
                if ((r = new_slot(&b, src, false)) < 0)
                        goto fail;
                dev_slot[i] = r;
        }
        if ((r = plan_user_mounts(&b, in, um, &n_um)) < 0)
                goto fail;
        if ((r = plan_tmpfs_dsts(&b, in, um, n_um, tmpfs_dst)) < 0)
                goto fail;

        /* 3. the root and its skeleton */
        if (!(op = push(&b, MNT_ROOT_TMPFS, "/")))
                goto oom;
        op->size = ROOT_TMPFS_SLACK + in->program_len;
        op->mode = 0755;
        for (size_t i = 0; i < MNT_N_RESERVED; i++) {
                const char *const *reserved = mnt_reserved;
                if ((strcmp(reserved[i], "/program") == 0 && !in->program_name) ||
                    (strcmp(reserved[i], "/harness") == 0 && !in->cfg->harness) ||
                    (strcmp(reserved[i], "/nsbox") == 0 && !in->runner_dir))
                        continue;
                if ((r = mkdirs(&b, reserved[i], true, strcmp(reserved[i], "/tmp") == 0 ? 01777 : 0755)) < 0)
                        goto fail;
        }
        for (size_t i = 0; h && i < h->n; i++) {
                const struct host_entry *he = &h->v[i];
                if (covered_by_host_dir(h, he->path))
                        continue;
                if ((r = mkdirs(&b, he->path, he->kind == HOST_DIR, 0755)) < 0)
                        goto fail;
                if (he->kind == HOST_FILE) {
                        if (!push(&b, MNT_MKFILE, he->path))
                                goto oom;
                } else if (he->kind == HOST_SYMLINK) {
                        if (!(op = push(&b, MNT_SYMLINK, he->path)) || !(op->src = strdup(he->target)))
                                goto oom;
                }
        }
        for (size_t i = 0; i < sizeof dev_nodes / sizeof dev_nodes[0]; i++) {
                char dst[32];
                snprintf(dst, sizeof dst, "/dev/%s", dev_nodes[i]);
                if (!push(&b, MNT_MKFILE, dst))
                        goto oom;
        }
        for (size_t i = 0; i < sizeof dev_links / sizeof dev_links[0]; i++) {
                char dst[32];
                snprintf(dst, sizeof dst, "/dev/%s", dev_links[i].name);
                if (!(op = push(&b, MNT_SYMLINK, dst)) || !(op->src = strdup(dev_links[i].target)))
                        goto oom;
        }
        for (size_t i = 0; i < n_um; i++) {
                if (strcmp(um[i].dst, "/workspace") == 0 || strcmp(um[i].dst, "/harness") == 0 ||
                    strcmp(um[i].dst, "/nsbox") == 0)
                        continue;
                /* The mount point is a file or a directory like its source;
                 * only the apply step can see which, through the slot. */
                if ((r = mkdirs(&b, um[i].dst, false, 0755)) < 0)
                        goto fail;
                if (!(op = push(&b, MNT_MOUNTPOINT, um[i].dst)))
                        goto oom;
                op->slot = um[i].slot;
        }
        for (size_t i = 0; i < in->cfg->n_tmpfs; i++)
                if ((r = mkdirs(&b, tmpfs_dst[i], true, 0755)) < 0)
                        goto fail;
        if (in->program_name) {
                char dst[4096];
                if (!in->program_name[0] || strchr(in->program_name, '/') || strcmp(in->program_name, ".") == 0 ||
                    strcmp(in->program_name, "..") == 0) {
                        r = nsb_fail(e, NSB_STAGE_CONFIG, EINVAL, "program name '%s' is not a plain file name",
                                     in->program_name);
                        goto fail;
                }
                snprintf(dst, sizeof dst, "/program/%s", in->program_name);
                if (!(op = push(&b, MNT_WRITE_FILE, dst)))
                        goto oom;
                op->data = in->program_data;
                op->data_len = in->program_len;
                op->mode = 0444;
        }

        /* 4. read-only sources, then /proc */
        for (size_t i = 0, slot = (size_t) host_slot_base; h && i < h->n; i++) {
                if (h->v[i].kind == HOST_SYMLINK || covered_by_host_dir(h, h->v[i].path))
                        continue;
                if (!(op = push(&b, MNT_ATTACH, h->v[i].path)))
                        goto oom;
                op->slot = (int) slot++;
        }
        for (size_t i = 0; i < n_um; i++) {
                if (!um[i].ro)
                        continue;
                if (!(op = push(&b, MNT_ATTACH, um[i].dst)))
                        goto oom;
                op->slot = um[i].slot;
        }
        if (!push(&b, MNT_PROC, "/proc"))
                goto oom;

        /* 5. pivot, 6. read-only everywhere */
        if (!push(&b, MNT_PIVOT, NULL) || !push(&b, MNT_DETACH_OLD, NULL) || !push(&b, MNT_READONLY_ALL, "/"))
                goto oom;

        /* 7. writable mounts and device nodes on top */
        if (!(op = push(&b, MNT_TMPFS, "/tmp")))
                goto oom;
        op->size = in->cfg->tmp_size_bytes;
        op->mode = 01777;
        if (!in->cfg->workspace) {
                if (!(op = push(&b, MNT_TMPFS, "/workspace")))
                        goto oom;
                op->size = in->cfg->tmp_size_bytes;
                op->mode = 0755;
        }
        for (size_t i = 0; i < n_um; i++) {
                if (um[i].ro)
                        continue;
                if (!(op = push(&b, MNT_ATTACH, um[i].dst)))
                        goto oom;
                op->slot = um[i].slot;
                op->attr = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
        }
        for (size_t i = 0; i < in->cfg->n_tmpfs; i++) {
                if (!(op = push(&b, MNT_TMPFS, tmpfs_dst[i])))
                        goto oom;
                op->size = in->cfg->tmpfs[i].size_bytes ? in->cfg->tmpfs[i].size_bytes : in->cfg->tmp_size_bytes;
                op->mode = 0755;
        }
        for (size_t i = 0; i < sizeof dev_nodes / sizeof dev_nodes[0]; i++) {
                char dst[32];
                snprintf(dst, sizeof dst, "/dev/%s", dev_nodes[i]);
                if (!(op = push(&b, MNT_ATTACH, dst)))
                        goto oom;
                op->slot = dev_slot[i];
                op->attr = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC | MOUNT_ATTR_RDONLY;
        }

        /* 8. */
        if (!push(&b, MNT_CHDIR, "/workspace"))
                goto oom;
        r = 0;
        goto out;
oom:
        r = nsb_fail(e, NSB_STAGE_CONFIG, ENOMEM, "out of memory");
fail:
        mnt_plan_free(ret);
out:
        for (size_t i = 0; i < n_um; i++)
                free(um[i].dst);
        for (size_t i = 0; i < MAX_TMPFS; i++)
                free(tmpfs_dst[i]);
        for (size_t i = 0; i < b.n_dirs; i++)
                free(b.dirs[i]);
        free(b.dirs);
        return r;
}

void mnt_plan_free(struct mnt_plan *plan)
{
        for (size_t i = 0; plan->ops && i < plan->n_ops; i++) {
                free(plan->ops[i].src);
                free(plan->ops[i].dst);
        }
        free(plan->ops);
        free(plan->slot_preopened);
        memset(plan, 0, sizeof *plan);
}
