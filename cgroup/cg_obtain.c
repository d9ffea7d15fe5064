/* cgroup/cg_obtain.c — get this process a cgroup to make run cgroups in:
 * detect, plan (cg_obtain_plan.c, pure), ask systemd for a delegated scope
 * when the plan says so (cg_systemd.c), detect again. */
#include "cgroup/cg_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static bool is_socket(const char *path)
{
        struct stat st;

        return path && stat(path, &st) == 0 && S_ISSOCK(st.st_mode);
}

static void manager_facts(struct cg_manager_facts *m, char *bus_path, size_t size)
{
        memset(m, 0, sizeof *m);
        m->root = geteuid() == 0;
        m->session_bus = getenv("DBUS_SESSION_BUS_ADDRESS");
        m->runtime_dir = getenv("XDG_RUNTIME_DIR");
        m->system_bus = getenv("DBUS_SYSTEM_BUS_ADDRESS");
        if (m->runtime_dir && m->runtime_dir[0] == '/') {
                int n = snprintf(bus_path, size, "%s/bus", m->runtime_dir);
                m->runtime_bus_exists = n > 0 && (size_t) n < size && is_socket(bus_path);
        }
        m->system_bus_exists = is_socket("/run/dbus/system_bus_socket");
        m->have_sd_bus = cg_have_sd_bus;
        m->self = getpid();
}

static void describe(struct cg_obtained *o, const char *how)
{
        snprintf(o->detail, sizeof o->detail, "%s (%s)%s%s", cg_origin_name(o->origin), how,
                 o->scope[0] ? ": " : "", o->scope);
}

/* v2: our leaf and the controllers, once, before anything forks. */
static int prepare_v2(const struct cg_env *env, struct cg_facts *f, const struct cg_obtained *o, struct nsb_error *e)
{
        int r;

        if (o->backend != CG_BACKEND_V2 || !cg_v2_missing_subtree(f))
                return 0;
        r = cg_v2_prepare(env, f, e);
        if (r < 0)
                return r;
        return cg_detect(env, f, e);
}

int cg_obtain(const struct cg_env *env, bool prepare, struct cg_facts *ret_facts, struct cg_obtained *ret,
              struct nsb_error *e)
{
        struct cg_manager_facts m;
        struct cg_obtain_plan plan;
        char bus_path[CG_PATH_MAX + 8];
        struct timespec ts;
        const char *leaf;
        int r;

        memset(ret, 0, sizeof *ret);
        r = cg_detect(env, ret_facts, e);
        if (r < 0)
                return r;
        manager_facts(&m, bus_path, sizeof bus_path);
        cg_obtain_plan(ret_facts, &m, &plan);
        ret->origin = plan.origin;
        snprintf(ret->fix, sizeof ret->fix, "%s", plan.fix);
        switch (plan.action) {
        case CG_OBTAIN_REFUSE:
                return nsb_fail(e, NSB_STAGE_CGROUP, EINVAL, "--cgroup-parent %s: %s", env->parent_path, plan.reason);
        case CG_OBTAIN_USE:
                ret->backend = cg_choose(ret_facts, NULL);
                if (plan.origin == CG_ORIGIN_SCOPE) {
                        leaf = strrchr(ret_facts->v2_base_rel, '/');
                        snprintf(ret->scope, sizeof ret->scope, "%s", leaf ? leaf + 1 : ret_facts->v2_base_rel);
                }
                describe(ret, plan.reason);
                return prepare ? prepare_v2(env, ret_facts, ret, e) : 0;
        case CG_OBTAIN_ASK_SYSTEMD:
                break;
        }

        /* The nonce keeps names unique across pid namespaces that share one
         * manager; systemd refuses a name that is still in use. */
        clock_gettime(CLOCK_MONOTONIC, &ts);
        (void) cg_format_scope_name(m.self, (unsigned long long) ts.tv_sec * 1000000000ull + (unsigned long long) ts.tv_nsec,
                                    ret->scope, sizeof ret->scope);
        ret->asked_systemd = true;
        {
                struct nsb_error se;

                nsb_error_clear(&se);
                r = cg_systemd_scope(&plan, ret->scope, &se);
                if (r < 0) {
                        char buf[NSB_ERROR_MSG_MAX + 64];
                        /* Not an error: the labelled rlimit fallback, with why. */
                        ret->origin = CG_ORIGIN_NONE;
                        ret->backend = cg_choose(ret_facts, NULL);
                        snprintf(ret->detail, sizeof ret->detail, "none (no usable cgroup; asked the systemd %s "
                                 "manager for a delegated scope and it failed: %s)",
                                 plan.user_manager ? "user" : "system", nsb_error_describe(&se, buf, sizeof buf));
                        ret->scope[0] = '\0';
                        return 0;
                }
        }
        r = cg_detect(env, ret_facts, e);
        if (r < 0)
                return r;
        ret->backend = cg_choose(ret_facts, NULL);
        if (ret->backend != CG_BACKEND_V2) {
                ret->origin = CG_ORIGIN_NONE;
                snprintf(ret->detail, sizeof ret->detail, "none (in the systemd scope %s, but %s)", ret->scope,
                         cg_v2_unusable(ret_facts));
                return 0;
        }
        describe(ret, plan.user_manager ? "asked the systemd user manager, Delegate=yes"
                                                   : "asked the systemd system manager, Delegate=yes");
        return prepare ? prepare_v2(env, ret_facts, ret, e) : 0;
}
