/* cgroup/cg_obtain_plan.c — which way this process gets a cgroup: the one it
 * is in, the one given with --cgroup-parent, a transient systemd scope it
 * asks for, or none (the rlimit fallback), and, for the last, what would help
 * on this host. Pure: decides from facts, touches nothing. */
#include "cgroup/cg_internal.h"

#include <stdio.h>
#include <string.h>

#define ALT "systemd-run %s--scope -p Delegate=yes nsbox …, or --cgroup-parent DIR (a delegated cgroup v2 subtree)"

/* The last component of the base: our own scope once we asked for it (we may
 * sit in it, or in its nsbox-sup-<pid> leaf). */
static bool in_own_scope(const struct cg_facts *f, pid_t self)
{
        const char *leaf = strrchr(f->v2_base_rel, '/');

        leaf = leaf ? leaf + 1 : f->v2_base_rel;
        return self > 0 && cg_parse_scope_name(leaf) == self;
}

static void none(struct cg_obtain_plan *p, const char *why, const char *fix)
{
        p->action = CG_OBTAIN_USE;
        p->origin = CG_ORIGIN_NONE;
        snprintf(p->reason, sizeof p->reason, "%s", why);
        snprintf(p->fix, sizeof p->fix, "%s", fix);
}

/* The bus of the manager to ask, or why there is none. */
static bool pick_bus(const struct cg_manager_facts *m, struct cg_obtain_plan *p)
{
        const char *u = m->root ? "" : "--user ";
        char alt[CG_REASON_MAX];

        snprintf(alt, sizeof alt, ALT, u);
        p->user_manager = !m->root;
        if (m->root) {
                if (m->system_bus && m->system_bus[0])
                        snprintf(p->bus_address, sizeof p->bus_address, "%s", m->system_bus);
                else if (m->system_bus_exists)
                        snprintf(p->bus_address, sizeof p->bus_address, "unix:path=/run/dbus/system_bus_socket");
                else {
                        snprintf(p->reason, sizeof p->reason,
                                 "no usable cgroup, and no systemd system manager to ask for one: no D-Bus system "
                                 "bus (/run/dbus/system_bus_socket, $DBUS_SYSTEM_BUS_ADDRESS)");
                        snprintf(p->fix, sizeof p->fix, "boot with systemd as PID 1 and dbus running, or %s", alt);
                        return false;
                }
                return true;
        }
        if (m->session_bus && m->session_bus[0]) {
                snprintf(p->bus_address, sizeof p->bus_address, "%s", m->session_bus);
                return true;
        }
        if (m->runtime_dir && m->runtime_dir[0] == '/' && m->runtime_bus_exists) {
                int n = snprintf(p->bus_address, sizeof p->bus_address, "unix:path=%s/bus", m->runtime_dir);
                if (n > 0 && (size_t) n < sizeof p->bus_address)
                        return true;
        }
        snprintf(p->reason, sizeof p->reason,
                 "no usable cgroup, and no systemd user manager to ask for one: $DBUS_SESSION_BUS_ADDRESS is "
                 "unset and %s",
                 !m->runtime_dir || m->runtime_dir[0] != '/' ? "so is $XDG_RUNTIME_DIR (not a login session)"
                                                            : "$XDG_RUNTIME_DIR/bus does not exist");
        snprintf(p->fix, sizeof p->fix,
                 "start nsbox from a login session (pam_systemd starts the user manager; "
                 "`loginctl enable-linger USER` keeps it running without one) with dbus-user-session installed "
                 "(the user bus), or %s", alt);
        return false;
}

void cg_obtain_plan(const struct cg_facts *f, const struct cg_manager_facts *m, struct cg_obtain_plan *ret)
{
        const char *why;
        char alt[CG_REASON_MAX];

        memset(ret, 0, sizeof *ret);
        snprintf(alt, sizeof alt, ALT, m->root ? "" : "--user ");
        if (f->parent_given) {
                /* A cgroup we were given is used or refused, never replaced
                 * by a fallback the caller did not ask for. */
                why = cg_v2_unusable(f);
                ret->action = why ? CG_OBTAIN_REFUSE : CG_OBTAIN_USE;
                ret->origin = CG_ORIGIN_PARENT;
                snprintf(ret->reason, sizeof ret->reason, "%s", why ? why : "memory and pids usable in it");
                return;
        }
        if (!cg_v2_unusable(f)) {
                ret->origin = in_own_scope(f, m->self) ? CG_ORIGIN_SCOPE : CG_ORIGIN_DELEGATED;
                snprintf(ret->reason, sizeof ret->reason, "%s",
                         ret->origin == CG_ORIGIN_SCOPE ? "in the systemd scope this nsbox asked for"
                                                        : "own cgroup v2 usable as it is");
                return;
        }
        if (!cg_v1_unusable(f)) {
                ret->origin = CG_ORIGIN_DELEGATED;
                snprintf(ret->reason, sizeof ret->reason, "own cgroup v1 directories writable");
                return;
        }
        /* No usable cgroup. A scope helps only where memory and pids live on
         * the v2 hierarchy systemd manages. */
        if (!f->v2_mounted || !f->v2_member)
                return none(ret, "no usable cgroup, and no cgroup2 hierarchy a systemd scope could be made in",
                            "mount a writable cgroup2 at /sys/fs/cgroup (containers: a private, delegated cgroup "
                            "namespace, e.g. docker run --cgroupns=private), or run nsbox as root where cgroup v1 "
                            "holds memory and pids");
        if (!f->v2_root_has_controllers)
                return none(ret, "no usable cgroup, and memory and pids are not on the cgroup2 hierarchy (a hybrid "
                                 "host binds them to cgroup v1), so a systemd scope could not carry them",
                            m->root ? "make the v1 memory and pids hierarchies writable, or boot in pure cgroup v2 "
                                      "(systemd.unified_cgroup_hierarchy=1)"
                                    : "run nsbox as root (cgroup v1 directories belong to root), or boot in pure "
                                      "cgroup v2 (systemd.unified_cgroup_hierarchy=1) where nsbox asks systemd for "
                                      "a delegated scope");
        if (!m->have_sd_bus)
                return none(ret, "no usable cgroup, and this nsbox was built without libsystemd, so it cannot ask "
                                 "systemd for a delegated scope", alt);
        if (!pick_bus(m, ret)) {
                ret->action = CG_OBTAIN_USE;
                ret->origin = CG_ORIGIN_NONE;
                return;
        }
        ret->action = CG_OBTAIN_ASK_SYSTEMD;
        ret->origin = CG_ORIGIN_SCOPE;
        snprintf(ret->reason, sizeof ret->reason, "own cgroup unusable (%s): asking the systemd %s manager for a "
                 "delegated scope", cg_v2_unusable(f), m->root ? "system" : "user");
        snprintf(ret->fix, sizeof ret->fix, "%s", alt);
}
