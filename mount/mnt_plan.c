/* mount/mnt_plan.c — build the mount plan. Pure: allocates, never touches
 * the host. See mnt.h for the order and why. */
#include "mount/mnt.h"

#include <errno.h>
#include <linux/mount.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/cleanup.h"
#include "util/strv.h"

#define ROOT_TMPFS_SLACK (1ULL << 20)   /* directories, symlinks, small files */

/* A cover over a hidden directory holds only mount points. */
#define COVER_SIZE (64u << 10)

#define MAX_BINDS 64
#define MAX_TMPFS 16

/* The user's mounts (workspace, harness, runner, binds), normalised. */
struct user_mount {
        const char *src;
        char *dst;
        bool ro;
        int slot;
        const char *what;
};

static const char *const dev_nodes[] = { "null", "zero", "full", "random", "urandom" };
#define N_DEV_NODES ARRAY_SIZE(dev_nodes)
#define N_DEV_WRITABLE 3        /* null, zero, full: writing to them is harmless */

/* Host directories ordinary programs read, bound read-only when the host has
 * them (a host without them gives a root without them: the op is optional).
 * Data only, nothing to execute; the same files for every sandbox. */
static const char *const system_dirs[] = {
        "/usr/share/zoneinfo",          /* zoneinfo.ZoneInfo("Europe/Paris"); /etc/localtime's target */
        "/usr/lib/locale/C.utf8",       /* the C.UTF-8 locale nsbox's LANG/LC_ALL name: glibc looks for
                                           it in /usr/lib/locale/locale-archive, then here (the codeset
                                           normalised to "utf8"); without it setlocale(LC_ALL, "")
                                           fails and Python forces utf8_mode=1 */
};
#define N_SYSTEM_DIRS ARRAY_SIZE(system_dirs)

/* Files the sandbox makes itself, never the host's: a profile may not
 * provide them (or a directory holding them). */
static const char *const synth_files[] = { "/etc/passwd", "/etc/group", "/etc/localtime" };

/* UTC as the local time zone, on every host: the same answer under one
 * policy_sha256 (glibc reads /etc/localtime when TZ is unset; a host
 * without the database gives UTC too, glibc's fallback). */
#define LOCALTIME_TARGET "/usr/share/zoneinfo/Etc/UTC"
/* The HOME nsbox's environment names (supervisor/env_plan.c): the
 * sandbox's private /tmp, so pwd and $HOME agree. */
#define SANDBOX_HOME "/tmp"

/* What one phase hands the next. */
struct builder {
        struct mnt_plan *plan;
        size_t cap;
        char **dirs;          /* directories already planned (dedupe) */
        size_t n_dirs;
        struct nsb_error *e;
        const struct mnt_input *in;
        struct user_mount um[3 + MAX_BINDS];
        size_t n_um;
        char *tmpfs_dst[MAX_TMPFS];     /* normalised --tmpfs destinations */
        int dev_slot[N_DEV_NODES];
        int sys_slot[N_SYSTEM_DIRS];    /* -1: the profile provides it already */
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

/* Record @dir as made (1), or 0 when it was already; -ENOMEM. */
static int remember_dir(struct builder *b, const char *dir)
{
        int r = strv_add(&b->dirs, &b->n_dirs, dir, true);

        return r < 0 ? nsb_fail(b->e, NSB_STAGE_CONFIG, ENOMEM, "out of memory") : r;
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
                char saved = buf[i];
                int r;

                if (buf[i] != '/' && buf[i] != '\0')
                        continue;
                if (buf[i] == '\0' && !self)
                        break;
                buf[i] = '\0';
                if ((r = remember_dir(b, buf)) < 0)
                        return r;
                if (r == 1) {
                        PUSH_OR_FAIL(op, b, MNT_MKDIR, buf);
                        op->mode = buf[i + 0] == '\0' && saved == '\0' ? mode : 0755;
                }
                buf[i] = saved;
        }
        return 0;
}

/* The hidden directory (host_set.hidden) @path lies in, at or below @dir,
 * or NULL. */
static const char *hidden_between(const struct host_set *h, const char *path, const char *dir)
{
        for (size_t i = 0; h && i < h->n_hidden; i++)
                if (path_under(path, h->hidden[i]) && path_under(h->hidden[i], dir))
                        return h->hidden[i];
        return NULL;
}

/* Is @path covered by a directory entry of the host set (other than itself)
 * that shows it? Not when a hidden directory lies between: the cover over it
 * hides @path, which then needs a mount of its own on top (a named package
 * inside the stdlib's dist-packages). */
static bool covered_by_host_dir(const struct host_set *h, const char *path)
{
        for (size_t i = 0; h && i < h->n; i++)
                if (h->v[i].kind == HOST_DIR && strcmp(h->v[i].path, path) != 0 && path_under(path, h->v[i].path) &&
                    !hidden_between(h, path, h->v[i].path))
                        return true;
        return false;
}

/* Is hidden directory @k of the host set inside a directory the set mounts
 * (else there is nothing to cover)? */
static bool hidden_mounted(const struct host_set *h, size_t k)
{
        for (size_t i = 0; i < h->n; i++)
                if (h->v[i].kind == HOST_DIR && strcmp(h->v[i].path, h->hidden[k]) != 0 &&
                    path_under(h->hidden[k], h->v[i].path))
                        return true;
        return false;
}

/* Does entry @i of the host set lie in a covered hidden directory (its mount
 * point is made in the cover, not in the skeleton)? */
static bool host_in_cover(const struct host_set *h, size_t i)
{
        for (size_t k = 0; k < h->n_hidden; k++)
                if (path_under(h->v[i].path, h->hidden[k]) && hidden_mounted(h, k))
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
        identity = path_normalize(src, what, &src_norm, &ignored) == 0 && strcmp(src_norm, dst) == 0;
        for (size_t k = 0; h && k < h->n; k++) {
                const char *path = h->v[k].path;

                if (strcmp(path, dst) == 0)
                        return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL, "%s: destination '%s' is provided by the profile",
                                        what, dst);
                if (identity)
                        continue;
                if (path_under(path, dst))
                        return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL,
                                        "%s: destination '%s' would hide '%s', which the profile provides", what, dst,
                                        path);
                if (h->v[k].kind != HOST_SYMLINK && path_under(dst, path))
                        return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL,
                                        "%s: destination '%s' lies inside '%s', which the profile provides", what,
                                        dst, path);
        }
        return 0;
}

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
 * not (path_nesting_refused). */
static int order_nested(struct builder *b)
{
        struct user_mount *um = b->um;
        size_t n = b->n_um;

        for (size_t i = 1; i < n; i++) {
                struct user_mount m = um[i];
                size_t k = i;

                for (; k > 0 && depth(um[k - 1].dst) > depth(m.dst); k--)
                        um[k] = um[k - 1];
                um[k] = m;
        }
        for (size_t i = 0; i < n; i++)
                for (size_t k = 0; k < n; k++)
                        if (k != i && path_nesting_refused(um[i].dst, um[i].ro, um[k].dst, um[k].ro))
                                return nsb_fail(b->e, NSB_STAGE_CONFIG, EINVAL,
                                                "%s: destination '%s' lies inside the read-write bind at '%s', "
                                                "which goes on top of it (read-write binds are mounted last)",
                                                um[i].what, um[i].dst, um[k].dst);
        return 0;
}

static int add_user_mount(struct builder *b, const char *src, const char *dst, bool ro, const char *what)
{
        char *d = strdup(dst);

        if (!d)
                return nsb_fail(b->e, NSB_STAGE_CONFIG, ENOMEM, "out of memory");
        b->um[b->n_um++] = (struct user_mount){ src, d, ro, -1, what };
        return 0;
}

/* One --bind/--ro-bind: a normalised destination that conflicts with no
 * other mount (path_conflict) and hides nothing of the profile's. */
static int add_bind(struct builder *b, const struct nsb_bind *bd)
{
        const char *what = bd->read_only ? "--ro-bind" : "--bind";
        char *dst = NULL;
        int r;

        if (!bd->src || bd->src[0] != '/')
                return nsb_fail(b->e, NSB_STAGE_CONFIG, EINVAL, "%s: source '%s' is not absolute", what,
                                bd->src ? bd->src : "");
        if ((r = path_normalize(bd->dst, what, &dst, b->e)) < 0)
                return r;
        b->um[b->n_um++] = (struct user_mount){ bd->src, dst, bd->read_only, -1, what };
        if (path_is_reserved(dst))
                return nsb_fail(b->e, NSB_STAGE_CONFIG, EINVAL, "%s: destination '%s' is a path the sandbox owns",
                                what, dst);
        for (size_t k = 0; k + 1 < b->n_um; k++) {
                const char *why = path_conflict(dst, false, b->um[k].dst, false);
                if (why)
                        return nsb_fail(b->e, NSB_STAGE_CONFIG, EINVAL, "%s: destination '%s' %s", what, dst, why);
        }
        return check_profile_paths(b->in->host, bd->src, dst, what, b->e);
}

static int plan_user_mounts(struct builder *b)
{
        const struct mnt_input *in = b->in;
        int r = 0;

        if (in->user.workspace)
                r = add_user_mount(b, in->user.workspace, "/workspace", false, "--workspace");
        if (r == 0 && in->user.harness)
                r = add_user_mount(b, in->user.harness, "/harness", true, "--harness");
        if (r == 0 && in->runner_dir)
                r = add_user_mount(b, in->runner_dir, in->runner_dst ? in->runner_dst : "/nsbox", true, "runner");
        for (size_t i = 0; r == 0 && i < in->user.n_binds; i++)
                r = add_bind(b, &in->user.binds[i]);
        if (r == 0)
                r = order_nested(b);
        b->plan->plain_slot = -1;
        for (size_t i = 0; r == 0 && i < b->n_um; i++)
                if ((r = new_slot(b, b->um[i].src, in->preopen_user_sources)) >= 0) {
                        b->um[i].slot = r;
                        /* a zygote's code: read-only, world-readable; opened by
                         * the supervisor without an idmap (any filesystem) */
                        if (in->runner_dst && strcmp(b->um[i].dst, in->runner_dst) == 0)
                                b->plan->plain_slot = r;
                        r = 0;
                }
        return r;
}

/* The extra tmpfs mounts: normalised destinations in b->tmpfs_dst. Each must
 * be its own place: not the sandbox's, and in no conflict with another
 * tmpfs, a bind or a profile path (path_conflict: one would hide the other,
 * or the tmpfs would need a mount point inside a read-only tree). */
static int plan_tmpfs_dsts(struct builder *b)
{
        const struct path_mounts *u = &b->in->user;
        const struct host_set *h = b->in->host;

        for (size_t i = 0; i < u->n_tmpfs; i++) {
                const char *why = NULL;
                char *dst;
                int r = path_normalize(u->tmpfs[i].dst, "--tmpfs", &b->tmpfs_dst[i], b->e);

                if (r < 0)
                        return r;
                dst = b->tmpfs_dst[i];
                if (path_is_reserved(dst))
                        why = "is a path the sandbox owns";
                for (size_t k = 0; !why && k < i; k++)
                        if (path_conflict(dst, true, b->tmpfs_dst[k], true))
                                why = "overlaps another tmpfs";
                for (size_t k = 0; !why && k < b->n_um; k++)
                        if (path_conflict(dst, true, b->um[k].dst, false))
                                why = "overlaps a bind mount";
                for (size_t k = 0; !why && h && k < h->n; k++)
                        if (path_conflict(dst, true, h->v[k].path, false))
                                why = "overlaps a path the profile provides";
                if (why)
                        return nsb_fail(b->e, NSB_STAGE_CONFIG, EINVAL, "--tmpfs: destination '%s' %s", dst, why);
        }
        return 0;
}

/* A mount of the profile's host set: not a symlink (made in the skeleton),
 * not inside a directory that is mounted whole. */
static bool host_mounted(const struct host_set *h, size_t i)
{
        return h->v[i].kind != HOST_SYMLINK && !covered_by_host_dir(h, h->v[i].path);
}

/* Does a profile entry lie at, above or inside @path? */
static bool host_overlaps(const struct host_set *h, const char *path)
{
        for (size_t i = 0; h && i < h->n; i++)
                if (path_under(h->v[i].path, path) || path_under(path, h->v[i].path))
                        return true;
        return false;
}

/* The synthesized files must be the sandbox's: a profile entry at one of
 * them, or a directory or symlink holding one (/etc), would show the host's
 * users instead. The system directories are opened like the profile's,
 * unless the profile has them already (its own choice of those files). */
static int plan_system_sources(struct builder *b)
{
        const struct host_set *h = b->in->host;
        int r;

        for (size_t i = 0; i < ARRAY_SIZE(synth_files); i++)
                for (size_t k = 0; h && k < h->n; k++)
                        if (path_under(synth_files[i], h->v[k].path))
                                return nsb_fail(b->e, NSB_STAGE_CONFIG, EINVAL,
                                                "the profile provides '%s', which would replace the sandbox's "
                                                "own %s (nsbox writes it; the host's is never shown)",
                                                h->v[k].path, synth_files[i]);
        for (size_t i = 0; i < N_SYSTEM_DIRS; i++) {
                b->sys_slot[i] = -1;
                if (host_overlaps(h, system_dirs[i]))
                        continue;
                if ((r = new_slot(b, system_dirs[i], false)) < 0)
                        return r;
                b->plan->ops[b->plan->n_ops - 1].optional = true;
                b->sys_slot[i] = r;
        }
        return 0;
}

/* The slot of a profile entry: its host path, or in image-root mode
 * (host_set.root) the same path under the image's unpacked root. */
static int host_slot(struct builder *b, const char *path)
{
        const char *root = b->in->host->root;
        AUTOFREE char *src = NULL;

        if (!root)
                return new_slot(b, path, false);
        if (asprintf(&src, "%s%s", root, path) < 0)
                return nsb_fail(b->e, NSB_STAGE_CONFIG, ENOMEM, "out of memory");
        return new_slot(b, src, false);
}

/* Steps 1 and 2: private propagation; every source opened while the host
 * tree is whole; the user's mounts validated. */
static int phase_sources(struct builder *b)
{
        const struct host_set *h = b->in->host;
        struct mnt_op *op;
        int r;

        if (b->in->user.n_binds > MAX_BINDS)
                return nsb_fail(b->e, NSB_STAGE_CONFIG, E2BIG, "too many bind mounts (at most %d)", MAX_BINDS);
        if (b->in->user.n_tmpfs > MAX_TMPFS)
                return nsb_fail(b->e, NSB_STAGE_CONFIG, E2BIG, "too many tmpfs mounts (at most %d)", MAX_TMPFS);
        PUSH_OR_FAIL(op, b, MNT_MAKE_PRIVATE, NULL);
        for (size_t i = 0; h && i < h->n; i++)
                if (host_mounted(h, i) && (r = host_slot(b, h->v[i].path)) < 0)
                        return r;
        for (size_t i = 0; i < N_DEV_NODES; i++) {
                char src[32];
                snprintf(src, sizeof src, "/dev/%s", dev_nodes[i]);
                if ((r = new_slot(b, src, false)) < 0)
                        return r;
                b->dev_slot[i] = r;
        }
        if ((r = plan_system_sources(b)) < 0 || (r = plan_user_mounts(b)) < 0)
                return r;
        return plan_tmpfs_dsts(b);
}

/* The mount point of a profile entry (with its parents), or the symlink
 * it is. */
static int host_mount_point(struct builder *b, const struct host_entry *he)
{
        struct mnt_op *op;
        int r;

        if ((r = mkdirs(b, he->path, he->kind == HOST_DIR, 0755)) < 0)
                return r;
        if (he->kind == HOST_FILE) {
                PUSH_OR_FAIL(op, b, MNT_MKFILE, he->path);
        } else if (he->kind == HOST_SYMLINK) {
                PUSH_OR_FAIL(op, b, MNT_SYMLINK, he->path);
                if (!(op->src = strdup(he->target)))
                        return nsb_fail(b->e, NSB_STAGE_CONFIG, ENOMEM, "out of memory");
        }
        return 0;
}

static int skeleton_host(struct builder *b)
{
        const struct host_set *h = b->in->host;
        int r;

        for (size_t i = 0; h && i < h->n; i++)
                if (!covered_by_host_dir(h, h->v[i].path) && !host_in_cover(h, i) &&
                    (r = host_mount_point(b, &h->v[i])) < 0)
                        return r;
        return 0;
}

static int skeleton_dev(struct builder *b)
{
        static const struct { const char *name, *target; } dev_links[] = {
                { "fd", "/proc/self/fd" }, { "stdin", "/proc/self/fd/0" },
                { "stdout", "/proc/self/fd/1" }, { "stderr", "/proc/self/fd/2" },
                { "ptmx", "pts/ptmx" },         /* the multiplexer of this sandbox's own devpts */
        };
        struct mnt_op *op;
        char dst[32];
        int r;

        for (size_t i = 0; i < N_DEV_NODES; i++) {
                snprintf(dst, sizeof dst, "/dev/%s", dev_nodes[i]);
                PUSH_OR_FAIL(op, b, MNT_MKFILE, dst);
        }
        for (size_t i = 0; i < ARRAY_SIZE(dev_links); i++) {
                snprintf(dst, sizeof dst, "/dev/%s", dev_links[i].name);
                PUSH_OR_FAIL(op, b, MNT_SYMLINK, dst);
                if (!(op->src = strdup(dev_links[i].target)))
                        return nsb_fail(b->e, NSB_STAGE_CONFIG, ENOMEM, "out of memory");
        }
        if ((r = mkdirs(b, "/dev/shm", true, 01777)) < 0 || (r = mkdirs(b, "/dev/pts", true, 0755)) < 0)
                return r;
        return 0;
}

/* The account database: root (tools expect uid 0 to have a name), the
 * sandbox's user and group with the HOME nsbox sets, and nobody/nogroup
 * (what files of unmapped owners show as). No password, no host entry. */
static char *account_text(bool group, unsigned uid, unsigned gid)
{
        char *s = malloc(512);

        if (!s)
                return NULL;
        if (group)
                snprintf(s, 512, "root:x:0:\nsandbox:x:%u:\nnogroup:x:65534:\n", gid);
        else
                snprintf(s, 512,
                         "root:x:0:0:root:/root:/usr/sbin/nologin\n"
                         "sandbox:x:%u:%u:nsbox sandbox:" SANDBOX_HOME ":/bin/sh\n"
                         "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
                         uid, gid);
        return s;
}

/* Where glibc's get_nprocs() and get_nprocs_conf() look first (os.cpu_count()
 * is sysconf(_SC_NPROCESSORS_ONLN); _SC_NPROCESSORS_CONF reads possible). */
#define CPU_DIR "/sys/devices/system/cpu"
static const char *const cpu_files[] = { CPU_DIR "/online", CPU_DIR "/possible" };

/* The kernel's list format: "0", or the range "0-(cpus-1)". */
static char *cpu_list_text(unsigned cpus)
{
        char *s = malloc(32);

        if (s && cpus <= 1)
                snprintf(s, 32, "0\n");
        else if (s)
                snprintf(s, 32, "0-%u\n", cpus - 1);
        return s;
}

/* A read-only file at @dst holding @text (malloc'd, owned by the op; NULL:
 * out of memory). */
static int push_text_file(struct builder *b, const char *dst, char *text)
{
        struct mnt_op *op = push(b, MNT_WRITE_FILE, dst);

        if (!op || !text) {
                free(text);
                return nsb_fail(b->e, NSB_STAGE_CONFIG, ENOMEM, "out of memory");
        }
        op->owned_data = text;
        op->data = text;
        op->data_len = strlen(text);
        op->mode = 0444;
        return 0;
}

/* The files that make os.cpu_count() say in->cpus (cgroup.h cg_cpu_count);
 * their directory is made by the caller (a cold root's mkdirs, a warm job's
 * own tmpfs). */
static int write_cpu_files(struct builder *b)
{
        int r;

        for (size_t i = 0; i < ARRAY_SIZE(cpu_files); i++)
                if ((r = push_text_file(b, cpu_files[i], cpu_list_text(b->in->cpus))) < 0)
                        return r;
        return 0;
}

/* /etc/passwd, /etc/group, /etc/localtime, the CPU count, and the mount points of the
 * system directories (mnt.h). */
static int skeleton_system(struct builder *b)
{
        struct mnt_op *op;
        int r;

        for (size_t i = 0; i < N_SYSTEM_DIRS; i++)
                if (b->sys_slot[i] >= 0 && (r = mkdirs(b, system_dirs[i], true, 0755)) < 0)
                        return r;
        if ((r = mkdirs(b, "/etc", true, 0755)) < 0)
                return r;
        for (int group = 0; group <= 1; group++)
                if ((r = push_text_file(b, group ? "/etc/group" : "/etc/passwd",
                                        account_text(group, b->in->sandbox_uid, b->in->sandbox_gid))) < 0)
                        return r;
        PUSH_OR_FAIL(op, b, MNT_SYMLINK, "/etc/localtime");
        if (!(op->src = strdup(LOCALTIME_TARGET)))
                return nsb_fail(b->e, NSB_STAGE_CONFIG, ENOMEM, "out of memory");
        if (!b->in->cpus)
                return 0;
        if ((r = mkdirs(b, CPU_DIR, true, 0755)) < 0)
                return r;
        return write_cpu_files(b);
}

static int skeleton_program(struct builder *b)
{
        const struct mnt_input *in = b->in;
        struct mnt_op *op;
        char dst[4096];

        if (!in->program_name)
                return 0;
        if (!in->program_name[0] || strchr(in->program_name, '/') || strcmp(in->program_name, ".") == 0 ||
            strcmp(in->program_name, "..") == 0)
                return nsb_fail(b->e, NSB_STAGE_CONFIG, EINVAL, "program name '%s' is not a plain file name",
                                in->program_name);
        snprintf(dst, sizeof dst, "/program/%s", in->program_name);
        PUSH_OR_FAIL(op, b, MNT_WRITE_FILE, dst);
        op->data = in->program_data;
        op->data_len = in->program_len;
        op->mode = 0444;
        return 0;
}

/* Step 3: the tmpfs root, the reserved directories, the profile's tree, the
 * device nodes' files, the user mounts' mount points, the program. */
static int phase_skeleton(struct builder *b)
{
        const struct mnt_input *in = b->in;
        struct mnt_op *op;
        int r;

        PUSH_OR_FAIL(op, b, MNT_ROOT_TMPFS, "/");
        op->size = ROOT_TMPFS_SLACK + in->program_len;
        op->mode = 0755;
        for (size_t i = 0; i < PATH_N_RESERVED; i++) {
                const char *dir = path_reserved[i];
                if ((strcmp(dir, "/program") == 0 && !in->program_name) ||
                    (strcmp(dir, "/harness") == 0 && !in->user.harness) ||
                    (strcmp(dir, "/nsbox") == 0 && (!in->runner_dir || in->runner_dst)))
                        continue;
                if ((r = mkdirs(b, dir, true, strcmp(dir, "/tmp") == 0 ? 01777 : 0755)) < 0)
                        return r;
        }
        if ((r = skeleton_host(b)) < 0 || (r = skeleton_dev(b)) < 0 || (r = skeleton_system(b)) < 0)
                return r;
        for (size_t i = 0; i < b->n_um; i++) {
                if (path_is_reserved(b->um[i].dst) &&
                    !(in->runner_dst && strcmp(b->um[i].dst, in->runner_dst) == 0))
                        continue;       /* /workspace, /harness, /nsbox: made above */
                /* The mount point is a file or a directory like its source;
                 * only the apply step can see which, through the slot. */
                if ((r = mkdirs(b, b->um[i].dst, false, 0755)) < 0)
                        return r;
                PUSH_OR_FAIL(op, b, MNT_MOUNTPOINT, b->um[i].dst);
                op->slot = b->um[i].slot;
        }
        for (size_t i = 0; i < in->user.n_tmpfs; i++)
                if ((r = mkdirs(b, b->tmpfs_dst[i], true, 0755)) < 0)
                        return r;
        return skeleton_program(b);
}

/* The profile's mounts (slots in the order phase_sources opened them):
 * those outside the covers, or (@in_cover) those inside, with their mount
 * points made in the cover first. */
static int attach_host(struct builder *b, bool in_cover)
{
        const struct host_set *h = b->in->host;
        struct mnt_op *op;
        int slot = 0, r;

        for (size_t i = 0; h && i < h->n; i++) {
                bool mounted = host_mounted(h, i);
                int this_slot = mounted ? slot++ : -1;

                if (host_in_cover(h, i) != in_cover || covered_by_host_dir(h, h->v[i].path))
                        continue;
                if (in_cover && (r = host_mount_point(b, &h->v[i])) < 0)
                        return r;
                if (!mounted)
                        continue;
                PUSH_OR_FAIL(op, b, MNT_ATTACH, h->v[i].path);
                op->slot = this_slot;
        }
        return 0;
}

/* An empty tmpfs over each hidden directory (host_set.hidden), once the
 * directory holding it is attached: one mount instead of the holder's
 * entries one by one. Nothing to execute, nothing writable: the program
 * never gets a Landlock rule for it and MNT_READONLY_ALL seals it with the
 * rest (until then this init makes the mount points of named packages in
 * it). Its root is remembered as made, so no MNT_MKDIR re-modes it. */
static int push_covers(struct builder *b)
{
        const struct host_set *h = b->in->host;
        struct mnt_op *op;
        int r;

        for (size_t k = 0; h && k < h->n_hidden; k++) {
                if (!hidden_mounted(h, k))
                        continue;
                PUSH_OR_FAIL(op, b, MNT_TMPFS, h->hidden[k]);
                op->size = COVER_SIZE;
                op->mode = 0555;
                op->attr = MOUNT_ATTR_NOEXEC;
                if ((r = remember_dir(b, h->hidden[k])) < 0)
                        return r;
        }
        return 0;
}

/* Step 4: the read-only sources: the profile's, the covers over its hidden
 * directories and the profile's entries inside them on top, the system
 * directories, the user's read-only binds; then /proc. */
static int phase_read_only(struct builder *b)
{
        struct mnt_op *op;
        int r;

        if ((r = attach_host(b, false)) < 0 || (r = push_covers(b)) < 0 || (r = attach_host(b, true)) < 0)
                return r;
        /* before the user's binds: one of theirs at the same place is their
         * choice, and goes on top */
        for (size_t i = 0; i < N_SYSTEM_DIRS; i++) {
                if (b->sys_slot[i] < 0)
                        continue;
                PUSH_OR_FAIL(op, b, MNT_ATTACH, system_dirs[i]);
                op->slot = b->sys_slot[i];
                op->optional = true;
        }
        for (size_t i = 0; i < b->n_um; i++) {
                if (!b->um[i].ro)
                        continue;
                PUSH_OR_FAIL(op, b, MNT_ATTACH, b->um[i].dst);
                op->slot = b->um[i].slot;
        }
        PUSH_OR_FAIL(op, b, MNT_PROC, "/proc");
        return 0;
}

/* Steps 5 and 6: pivot, detach the old root, read-only everywhere. */
static int phase_pivot(struct builder *b)
{
        struct mnt_op *op;

        PUSH_OR_FAIL(op, b, MNT_PIVOT, NULL);
        PUSH_OR_FAIL(op, b, MNT_DETACH_OLD, NULL);
        PUSH_OR_FAIL(op, b, MNT_READONLY_ALL, "/");
        return 0;
}

/* The names directly under @dir that hold the profile's entries inside it
 * ("v" for /tmp/v/pyvenv.cfg and /tmp/v/bin/python3 under /tmp), each
 * NUL-terminated, in @op's owned data; none: no data. */
static int carried_names(struct builder *b, struct mnt_op *op, const char *dir)
{
        const struct host_set *h = b->in->host;
        size_t dlen = strlen(dir), len = 0, count = 0;
        char *names = NULL;

        for (size_t i = 0; h && i < h->n; i++) {
                const char *rest = h->v[i].path + dlen;
                size_t n;
                bool dup = false;
                char *nv;

                if (!path_under(h->v[i].path, dir) || strcmp(h->v[i].path, dir) == 0)
                        continue;
                rest += strcmp(dir, "/") != 0;        /* past the '/' after @dir */
                n = strcspn(rest, "/");
                for (size_t off = 0; off < len && !dup; off += strlen(names + off) + 1)
                        dup = strlen(names + off) == n && memcmp(names + off, rest, n) == 0;
                if (dup)
                        continue;
                if (++count > MNT_MAX_CARRIED) {
                        free(names);
                        return nsb_fail(b->e, NSB_STAGE_CONFIG, E2BIG,
                                        "the profile has more than %u entries directly under '%s', which the "
                                        "sandbox mounts a fresh tmpfs over", MNT_MAX_CARRIED, dir);
                }
                if (!(nv = realloc(names, len + n + 1))) {
                        free(names);
                        return nsb_fail(b->e, NSB_STAGE_CONFIG, ENOMEM, "out of memory");
                }
                names = nv;
                memcpy(names + len, rest, n);
                names[len + n] = '\0';
                len += n + 1;
        }
        op->owned_data = names;
        op->data = names;
        op->data_len = len;
        return 0;
}

/* A fresh writable tmpfs at @dst. What the profile has below @dst (a venv
 * or an interpreter under /tmp) was made in the tree it covers: the op
 * carries those entries over (mnt.h, MNT_TMPFS), read-only, so the fresh
 * tmpfs hides nothing the program needs. */
static int push_tmpfs(struct builder *b, const char *dst, uint64_t size, mode_t mode)
{
        struct mnt_op *op;

        PUSH_OR_FAIL(op, b, MNT_TMPFS, dst);
        op->size = size;
        op->mode = mode;
        op->writable = true;
        return carried_names(b, op, dst);
}

/* /dev/shm and /dev/pts, fresh for every sandbox (a warm job's cover its
 * zygote's, so no two jobs share a semaphore or a pty):
 *  - /dev/shm: POSIX shared memory and semaphores (multiprocessing's
 *    SemLock, Queue, Pool, shared_memory), bounded like /tmp and noexec, so
 *    it is no place to run code from;
 *  - /dev/pts: a new devpts instance (os.openpty, pty), at most MNT_PTY_MAX
 *    ptys; its ptmx is /dev/ptmx's target. */
static int push_shm_pts(struct builder *b)
{
        struct mnt_op *op;
        int r = push_tmpfs(b, "/dev/shm", b->in->user.tmp_size_bytes, 01777);

        if (r < 0)
                return r;
        b->plan->ops[b->plan->n_ops - 1].attr = MOUNT_ATTR_NOEXEC;
        PUSH_OR_FAIL(op, b, MNT_DEVPTS, "/dev/pts");
        op->writable = true;
        return 0;
}

/* Step 8: the working directory, /workspace or (in->workdir) a directory
 * below it, checked as a destination is: nothing but a path inside the
 * workspace mount can become the program's cwd. */
static int push_chdir(struct builder *b)
{
        struct mnt_op *op;
        char *dir = NULL;
        int r;

        if (!b->in->workdir) {
                PUSH_OR_FAIL(op, b, MNT_CHDIR, "/workspace");
                return 0;
        }
        if ((r = path_normalize(b->in->workdir, "working directory", &dir, b->e)) < 0)
                return r;
        if (!path_under(dir, "/workspace"))
                r = nsb_fail(b->e, NSB_STAGE_CONFIG, EINVAL, "working directory '%s' is not in /workspace", dir);
        else if (!(op = push(b, MNT_CHDIR, dir)))
                r = nsb_fail(b->e, NSB_STAGE_CONFIG, ENOMEM, "out of memory");
        free(dir);
        return r;
}

/* The caller's files in the fresh /workspace (mounted just before), each
 * with its parent directories; a name that is another's directory is
 * refused (it could be neither). */
static int push_job_files(struct builder *b)
{
        const struct mnt_input *in = b->in;
        struct mnt_op *op;
        char dst[1100];
        int r;

        if (in->n_files && in->user.workspace)
                return nsb_fail(b->e, NSB_STAGE_CONFIG, EINVAL,
                                "files: placing files needs the fresh workspace, and this job has --workspace '%s'",
                                in->user.workspace);
        if (in->n_files > MNT_MAX_JOB_FILES)
                return nsb_fail(b->e, NSB_STAGE_CONFIG, E2BIG, "files: %zu files, more than %u", in->n_files,
                                MNT_MAX_JOB_FILES);
        for (size_t i = 0; i < in->n_files; i++) {
                const struct mnt_file *f = &in->files[i];
                size_t n = strlen(f->name);

                if ((r = path_job_file_name("files", f->name, n, b->e)) < 0)
                        return r;
                for (size_t j = 0; j < in->n_files; j++)
                        if (j != i && strncmp(in->files[j].name, f->name, n) == 0 && in->files[j].name[n] == '/')
                                return nsb_fail(b->e, NSB_STAGE_CONFIG, EINVAL,
                                                "files: \"%.64s\" is a file and the directory of \"%.64s\"", f->name,
                                                in->files[j].name);
                snprintf(dst, sizeof dst, "/workspace/%s", f->name);
                if ((r = mkdirs(b, dst, false, 0755)) < 0)
                        return r;
                PUSH_OR_FAIL(op, b, MNT_WRITE_FILE, dst);
                op->data = f->data;
                op->data_len = f->len;
                op->mode = 0644;   /* the sandbox user's (the init's ids): the program may change it */
        }
        return 0;
}

/* The names the init reads back after the run, copied into the plan. */
static int plan_fetch(struct builder *b)
{
        const struct mnt_input *in = b->in;
        struct mnt_plan *p = b->plan;
        int r;

        if (in->n_fetch > MNT_MAX_JOB_FILES)
                return nsb_fail(b->e, NSB_STAGE_CONFIG, E2BIG, "fetch_files: %zu names, more than %u", in->n_fetch,
                                MNT_MAX_JOB_FILES);
        if (in->n_fetch && !(p->fetch = calloc(in->n_fetch, sizeof *p->fetch)))
                return nsb_fail(b->e, NSB_STAGE_CONFIG, ENOMEM, "out of memory");
        for (size_t i = 0; i < in->n_fetch; i++) {
                if ((r = path_job_file_name("fetch_files", in->fetch[i], strlen(in->fetch[i]), b->e)) < 0)
                        return r;
                if (!(p->fetch[i] = strdup(in->fetch[i])))
                        return nsb_fail(b->e, NSB_STAGE_CONFIG, ENOMEM, "out of memory");
                p->n_fetch = i + 1;
        }
        return 0;
}

/* Steps 7 and 8: what stays writable, and the device nodes, on top of the
 * read-only tree; then the working directory. */
static int phase_writable(struct builder *b)
{
        const struct path_mounts *u = &b->in->user;
        struct mnt_op *op;
        int r;

        if ((r = push_tmpfs(b, "/tmp", u->tmp_size_bytes, 01777)) < 0)
                return r;
        if (!u->workspace && (r = push_tmpfs(b, "/workspace", u->tmp_size_bytes, 0755)) < 0)
                return r;
        if ((r = push_job_files(b)) < 0 || (r = plan_fetch(b)) < 0)
                return r;
        for (size_t i = 0; i < b->n_um; i++) {
                if (b->um[i].ro)
                        continue;
                PUSH_OR_FAIL(op, b, MNT_ATTACH, b->um[i].dst);
                op->slot = b->um[i].slot;
                op->attr = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
                op->writable = true;
        }
        for (size_t i = 0; i < u->n_tmpfs; i++)
                if ((r = push_tmpfs(b, b->tmpfs_dst[i], u->tmpfs[i].size_bytes ? u->tmpfs[i].size_bytes
                                                                               : u->tmp_size_bytes, 0755)) < 0)
                        return r;
        if ((r = push_shm_pts(b)) < 0)
                return r;
        for (size_t i = 0; i < N_DEV_NODES; i++) {
                char dst[32];
                snprintf(dst, sizeof dst, "/dev/%s", dev_nodes[i]);
                PUSH_OR_FAIL(op, b, MNT_ATTACH, dst);
                op->slot = b->dev_slot[i];
                /* The mount is read-only; a device node stays writable on one:
                 * Landlock decides, and grants writing only to the harmless ones. */
                op->attr = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC | MOUNT_ATTR_RDONLY;
                op->writable = i < N_DEV_WRITABLE;
        }
        return push_chdir(b);
}

int mnt_plan_build(const struct mnt_input *in, struct mnt_plan *ret, struct nsb_error *e)
{
        static int (*const phases[])(struct builder *) = {
                phase_sources, phase_skeleton, phase_read_only, phase_pivot, phase_writable,
        };
        struct builder b = { .plan = ret, .e = e, .in = in };
        int r = 0;

        memset(ret, 0, sizeof *ret);
        ret->plain_slot = -1;
        ret->sandbox_uid = in->sandbox_uid;
        ret->sandbox_gid = in->sandbox_gid;
        for (size_t i = 0; r == 0 && i < ARRAY_SIZE(phases); i++)
                r = phases[i](&b);
        if (r < 0)
                mnt_plan_free(ret);
        for (size_t i = 0; i < b.n_um; i++)
                free(b.um[i].dst);
        for (size_t i = 0; i < MAX_TMPFS; i++)
                free(b.tmpfs_dst[i]);
        for (size_t i = 0; i < b.n_dirs; i++)
                free(b.dirs[i]);
        free(b.dirs);
        return r;
}

int mnt_plan_landlock(const struct mnt_plan *plan, struct ll_path_rule **ret, size_t *n_ret, struct nsb_error *e)
{
        size_t n = 1;
        struct ll_path_rule *v;

        for (size_t i = 0; i < plan->n_ops; i++)
                n += plan->ops[i].writable;
        if (!(v = calloc(n, sizeof *v)))
                return nsb_fail(e, NSB_STAGE_PREPARE, ENOMEM, "out of memory");
        n = 0;
        v[n++] = (struct ll_path_rule){ "/", false };
        for (size_t i = 0; i < plan->n_ops; i++)
                if (plan->ops[i].writable)
                        v[n++] = (struct ll_path_rule){ plan->ops[i].dst, true };
        *ret = v;
        *n_ret = n;
        return 0;
}

/* The program's own tmpfs: its file plus room for the directory entry. */
#define WARM_PROGRAM_SLACK (64u << 10)

/* Does a --bind/--tmpfs of the caller's reach the CPU count's directory
 * (at, above or inside it)? Then, cold, that mount is what the program sees
 * there; a warm job's cover would hide it (or, under a fresh tmpfs, have no
 * directory to go on), so the job keeps what its zygote's tree shows. */
static bool user_mount_meets_cpu_dir(const struct path_mounts *u)
{
        for (size_t i = 0; i < u->n_binds + u->n_tmpfs; i++) {
                const char *dst = i < u->n_binds ? u->binds[i].dst : u->tmpfs[i - u->n_binds].dst;
                AUTOFREE char *norm = NULL;
                struct nsb_error ignored;

                if (path_normalize(dst, "mount", &norm, &ignored) < 0 || path_under(CPU_DIR, norm) ||
                    path_under(norm, CPU_DIR))
                        return true;
        }
        return false;
}

int mnt_plan_build_warm_job(const struct mnt_input *in, struct mnt_plan *ret, struct nsb_error *e)
{
        struct builder b = { .plan = ret, .e = e, .in = in };
        const struct path_mounts *u = &in->user;
        struct mnt_op *op;
        int r = 0;

        memset(ret, 0, sizeof *ret);
        ret->plain_slot = -1;
        ret->sandbox_uid = in->sandbox_uid;
        ret->sandbox_gid = in->sandbox_gid;
        ret->starts_pivoted = true;
        if (u->n_tmpfs > MAX_TMPFS)
                return nsb_fail(e, NSB_STAGE_CONFIG, E2BIG, "too many tmpfs mounts (at most %d)", MAX_TMPFS);
        /* The zygote's /proc shows its own pid namespace: the job gets one of
         * its own, read-only as the tree it sits in (a read-only mount locked
         * by the job's user namespace may only be covered by a read-only one). */
        if (!(op = push(&b, MNT_PROC, "/proc")))
                goto oom;
        op->attr = MOUNT_ATTR_RDONLY;
        if ((r = push_tmpfs(&b, "/tmp", u->tmp_size_bytes, 01777)) < 0)
                goto fail;
        if (!u->workspace && (r = push_tmpfs(&b, "/workspace", u->tmp_size_bytes, 0755)) < 0)
                goto fail;
        if ((r = push_job_files(&b)) < 0 || (r = plan_fetch(&b)) < 0)
                goto fail;
        for (size_t i = 0; i < u->n_tmpfs; i++) {
                char *dst = NULL;
                if ((r = path_normalize(u->tmpfs[i].dst, "--tmpfs", &dst, e)) < 0)
                        goto fail;
                r = push_tmpfs(&b, dst, u->tmpfs[i].size_bytes ? u->tmpfs[i].size_bytes : u->tmp_size_bytes, 0755);
                free(dst);
                if (r < 0)
                        goto fail;
        }
        if ((r = push_shm_pts(&b)) < 0)
                goto fail;
        /* The zygote's tree names the batch's count; the job's limits may
         * differ, so the job sees its own, sealed as its /program. */
        if (in->cpus && !user_mount_meets_cpu_dir(u)) {
                if ((r = push_tmpfs(&b, CPU_DIR, WARM_PROGRAM_SLACK, 0755)) < 0)
                        goto fail;
                ret->ops[ret->n_ops - 1].writable = false;
                if ((r = write_cpu_files(&b)) < 0)
                        goto fail;
                if (!(op = push(&b, MNT_READONLY, CPU_DIR)))
                        goto oom;
        }
        if (in->program_name) {
                if ((r = push_tmpfs(&b, "/program", in->program_len + WARM_PROGRAM_SLACK, 0755)) < 0)
                        goto fail;
                ret->ops[ret->n_ops - 1].writable = false;   /* only this init writes it, then seals it */
                if ((r = skeleton_program(&b)) < 0)
                        goto fail;
                if (!(op = push(&b, MNT_READONLY, "/program")))
                        goto oom;
        }
        if ((r = push_chdir(&b)) < 0)
                goto fail;
        goto done;
oom:
        r = nsb_fail(e, NSB_STAGE_CONFIG, ENOMEM, "out of memory");
fail:
        mnt_plan_free(ret);
done:
        for (size_t i = 0; i < b.n_dirs; i++)   /* the job files' directories (push_job_files) */
                free(b.dirs[i]);
        free(b.dirs);
        return r;
}

void mnt_plan_free(struct mnt_plan *plan)
{
        for (size_t i = 0; plan->ops && i < plan->n_ops; i++) {
                free(plan->ops[i].src);
                free(plan->ops[i].dst);
                free(plan->ops[i].owned_data);
        }
        free(plan->ops);
        free(plan->slot_preopened);
        for (size_t i = 0; plan->fetch && i < plan->n_fetch; i++)
                free(plan->fetch[i]);
        free(plan->fetch);
        memset(plan, 0, sizeof *plan);
}

uint64_t mnt_tmpfs_inodes(const struct mnt_op *op)
{
        /* The root is read-only once built: the program makes no inode
         * there, and the profile's mount points may be many. */
        uint64_t n = op->size / (op->kind == MNT_ROOT_TMPFS ? 1024u : 4096u);

        return n < MNT_MIN_INODES ? MNT_MIN_INODES : n;
}
