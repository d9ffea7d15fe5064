/* landlock/landlock_plan.c — which rights to handle and grant, by ABI. Pure. */
#include "landlock/landlock_internal.h"

#include <errno.h>
#include <string.h>

uint64_t ll_fs_rights(int abi)
{
        uint64_t r = 0;

        if (abi >= 1)
                r |= (LL_FS_MAKE_SYM << 1) - 1;         /* bits 0-12 */
        if (abi >= 2)
                r |= LL_FS_REFER;
        if (abi >= 3)
                r |= LL_FS_TRUNCATE;
        if (abi >= 5)
                r |= LL_FS_IOCTL_DEV;
        return r;
}

int ll_plan_build(const struct ll_spec *spec, int abi, struct ll_plan *ret, struct nsb_error *e)
{
        *ret = (struct ll_plan) { 0 };
        if (abi < 1)
                return nsb_fail(e, NSB_STAGE_LANDLOCK, EINVAL, "Landlock ABI %d", abi);
        if (spec->n_rules > 0 && !spec->rules)
                return nsb_fail(e, NSB_STAGE_LANDLOCK, EINVAL, "%zu rules but no rule array", spec->n_rules);
        for (size_t i = 0; i < spec->n_rules; i++) {
                const char *p = spec->rules[i].path;
                if (!p || p[0] != '/')
                        return nsb_fail(e, NSB_STAGE_LANDLOCK, EINVAL, "rule %zu: path '%s' is not absolute", i,
                                        p ? p : "(null)");
        }
        if (abi > LL_ABI_KNOWN)
                abi = LL_ABI_KNOWN;
        ret->abi = abi;
        /* Handle every filesystem right this ABI knows: Landlock allows what a
         * ruleset does not handle, so an unhandled right is an open door. */
        ret->attr.handled_access_fs = ll_fs_rights(abi);
        /* TCP: with no network namespace route out, this is defence in depth
         * against the loopback services of the sandbox itself; in loopback mode
         * the program may use TCP on lo, so leave it unhandled. UDP and raw
         * sockets are not Landlock's: the seccomp socket rule covers them. */
        if (abi >= 4 && !spec->allow_tcp)
                ret->attr.handled_access_net = LL_NET_BIND_TCP | LL_NET_CONNECT_TCP;
        /* Scopes: abstract unix sockets live outside the filesystem, so no
         * path rule covers them; the network namespace already hides the
         * host's, and the scope also refuses any created outside this domain
         * (before restriction, or by a process that shares our netns).
         * Signals: none to processes outside the domain (the supervisor). */
        if (abi >= 6)
                ret->attr.scoped = LL_SCOPE_ABSTRACT_UNIX_SOCKET | LL_SCOPE_SIGNAL;
        return 0;
}

uint64_t ll_rule_access(const struct ll_plan *plan, bool writable, bool is_dir)
{
        uint64_t a = writable ? plan->attr.handled_access_fs : LL_FS_READ_ONLY;

        if (!is_dir)
                a &= LL_FS_FILE_RIGHTS;
        return a & plan->attr.handled_access_fs;
}
