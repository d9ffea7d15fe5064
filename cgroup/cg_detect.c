/* cgroup/cg_detect.c — gather the facts cg_choose() decides from. Reads only:
 * /proc/self/cgroup and /proc/self/mountinfo (via env->proc_fd), then the own
 * cgroup's control files (via env->sys_cgroup_fd). Changes nothing, so
 * `nsbox doctor` can call it. */
#include "cgroup/cg_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "util/cleanup.h"

#define CG_DEFAULT_SYS_PATH "/sys/fs/cgroup"

/* Effective-id access check (root passes unless the mount is read-only). */
static bool can_write(int dirfd, const char *rel, int mode)
{
        return faccessat(dirfd, rel, mode, AT_EACCESS) == 0;
}

/* --cgroup-parent: it becomes the base. Are we in it (or in its sup leaf),
 * or outside, starting runs in it from elsewhere? @f->v2_base_rel holds our
 * own base on entry. */
static bool use_parent(const struct cg_env *env, const struct cg_mounts *m, struct cg_facts *f, const char *sys_path)
{
        char prel[CG_PATH_MAX], own[CG_PATH_MAX], anc[CG_PATH_MAX + 16];
        size_t mlen = strlen(m->v2.rel);

        f->parent_error = cg_parent_rel(env->parent_path, sys_path, prel, sizeof prel);
        if (f->parent_error)
                return false;
        if (mlen && !(strncmp(prel, m->v2.rel, mlen) == 0 && (prel[mlen] == '\0' || prel[mlen] == '/'))) {
                f->parent_error = "not on the cgroup2 hierarchy (a cgroup v1 directory, or not a cgroup)";
                return false;
        }
        snprintf(own, sizeof own, "%s", f->v2_base_rel);
        f->v2_self_outside = !own[0] || strcmp(own, prel) != 0;
        if (f->v2_self_outside) {
                f->v2_in_sup_leaf = false;      /* a leaf elsewhere is not the parent's */
                /* Our own cgroup itself (not the base), or the top of the
                 * mount when it is not visible from here. */
                if (cg_own_rel(&m->v2, f->v2_own_path, own, sizeof own) < 0)
                        snprintf(own, sizeof own, "%s", m->v2.rel[0] ? m->v2.rel : ".");
                cg_common_ancestor(own, prel, anc, CG_PATH_MAX);
                strcat(anc, "/cgroup.procs");
                f->v2_ancestor_writable = can_write(env->sys_cgroup_fd, anc, W_OK);
        }
        snprintf(f->v2_base_rel, sizeof f->v2_base_rel, "%s", prel);
        return true;
}

static void detect_v2(const struct cg_env *env, const struct cg_mounts *m, const struct cg_self *self,
                      struct cg_facts *f, const char *sys_path)
{
        char base[CG_PATH_MAX], buf[4096];
        const char *leaf;
        AUTOCLOSE int bfd = -1;
        pid_t pid;
        ssize_t n;

        f->v2_mounted = m->v2.found;
        f->v2_member = self->has_v2;
        f->parent_given = env->parent_path != NULL;
        if (!f->v2_mounted || !f->v2_member)
                return;
        strcpy(f->v2_own_path, self->v2_path);

        /* Could any cgroup of this hierarchy (a systemd scope) have memory
         * and pids? Not on a hybrid host, where they are bound to v1. */
        {
                char root[CG_PATH_MAX + 32];
                snprintf(root, sizeof root, "%s%scgroup.controllers", m->v2.rel, m->v2.rel[0] ? "/" : "");
                n = cg_read_at(env->sys_cgroup_fd, root, buf, sizeof buf);
                f->v2_root_has_controllers =
                        n >= 0 && (cg_parse_controllers(buf, (size_t) n) & (CG_CTRL_MEMORY | CG_CTRL_PIDS)) ==
                                          (CG_CTRL_MEMORY | CG_CTRL_PIDS);
        }

        /* Inside our own nsbox-sup-<pid> leaf (an earlier create moved us
         * there), run cgroups go next to it, in its parent. */
        strcpy(base, self->v2_path);
        leaf = strrchr(base, '/');
        if (leaf && cg_parse_name(leaf + 1, &pid) == CG_NAME_SUP) {
                f->v2_in_sup_leaf = true;
                if (leaf == base)
                        base[1] = '\0';
                else
                        base[leaf - base] = '\0';
        }
        if (cg_own_rel(&m->v2, base, f->v2_base_rel, sizeof f->v2_base_rel) < 0) {
                if (!f->parent_given)
                        return;
                f->v2_base_rel[0] = '\0';     /* our cgroup is not visible: outside, surely */
        }
        if (f->parent_given && !use_parent(env, m, f, sys_path))
                return;
        bfd = openat(env->sys_cgroup_fd, f->v2_base_rel, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (bfd < 0)
                return;
        f->v2_base_found = true;
        /* The real root has no cgroup.type (CFTYPE_NOT_ON_ROOT); a cgroup
         * namespace root does, and obeys the no-internal-processes rule. */
        f->v2_base_is_root = !cg_exists_at(bfd, "cgroup.type");

        n = cg_read_at(bfd, "cgroup.controllers", buf, sizeof buf);
        if (n >= 0)
                f->v2_controllers = cg_parse_controllers(buf, (size_t) n);
        n = cg_read_at(bfd, "cgroup.subtree_control", buf, sizeof buf);
        if (n >= 0)
                f->v2_subtree = cg_parse_controllers(buf, (size_t) n);

        if (cg_v2_missing_subtree(f) && !f->v2_base_is_root) {
                AUTOFREE char *procs = NULL;
                size_t len = 0, total = 0, others = 0;

                if (cg_read_alloc_at(bfd, "cgroup.procs", &procs, &len) == 0 &&
                    cg_parse_procs(procs, len, getpid(), NULL, 0, &total, &others) == 0)
                        f->v2_other_procs = (unsigned) others;
        }

        /* mkdir needs the directory; CLONE_INTO_CGROUP and moving ourselves
         * need cgroup.procs of the common ancestor (cgroup-v2.rst, "Delegation
         * Containment"); enabling controllers needs cgroup.subtree_control. */
        f->v2_writable = can_write(bfd, ".", W_OK | X_OK) && can_write(bfd, "cgroup.procs", W_OK) &&
                         (!cg_v2_missing_subtree(f) || can_write(bfd, "cgroup.subtree_control", W_OK));
}

static void detect_v1(const struct cg_env *env, const struct cg_mounts *m, const struct cg_self *self,
                      struct cg_facts *f)
{
        for (int c = 0; c < CG_V1__MAX; c++) {
                struct cg_v1_facts *v = &f->v1[c];
                AUTOCLOSE int dfd = -1;

                v->mounted = m->v1[c].found && self->v1[c].found;
                if (!v->mounted)
                        continue;
                v->hierarchy_id = self->v1[c].hierarchy_id;
                if (cg_own_rel(&m->v1[c], self->v1[c].path, v->own_rel, sizeof v->own_rel) < 0)
                        continue;
                dfd = openat(env->sys_cgroup_fd, v->own_rel, O_PATH | O_DIRECTORY | O_CLOEXEC);
                if (dfd < 0)
                        continue;
                v->found = true;
                v->writable = can_write(dfd, ".", W_OK | X_OK);
        }
}

int cg_detect(const struct cg_env *env, struct cg_facts *ret, struct nsb_error *e)
{
        const char *sys_path = env->sys_cgroup_path ? env->sys_cgroup_path : CG_DEFAULT_SYS_PATH;
        AUTOFREE char *cgbuf = NULL, *mibuf = NULL;
        AUTOFREE struct cg_self *self = NULL;
        AUTOFREE struct cg_mounts *mounts = NULL;
        size_t cglen, milen;
        int r;

        memset(ret, 0, sizeof *ret);
        self = calloc(1, sizeof *self);
        mounts = calloc(1, sizeof *mounts);
        if (!self || !mounts)
                return nsb_fail(e, NSB_STAGE_CGROUP, ENOMEM, "cgroup detection");

        r = cg_read_alloc_at(env->proc_fd, "self/cgroup", &cgbuf, &cglen);
        if (r < 0)
                return nsb_fail(e, NSB_STAGE_CGROUP, -r, "read /proc/self/cgroup");
        r = cg_parse_proc_cgroup(cgbuf, cglen, self);
        if (r < 0)
                return nsb_fail(e, NSB_STAGE_CGROUP, -r, "parse /proc/self/cgroup");
        r = cg_read_alloc_at(env->proc_fd, "self/mountinfo", &mibuf, &milen);
        if (r < 0)
                return nsb_fail(e, NSB_STAGE_CGROUP, -r, "read /proc/self/mountinfo");
        r = cg_parse_mountinfo(mibuf, milen, sys_path, mounts);
        if (r < 0)
                return nsb_fail(e, NSB_STAGE_CGROUP, -r, "parse /proc/self/mountinfo");

        detect_v2(env, mounts, self, ret, sys_path);
        detect_v1(env, mounts, self, ret);
        cg_facts_explain(ret);
        return 0;
}
