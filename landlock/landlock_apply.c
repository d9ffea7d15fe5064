/* landlock/landlock_apply.c — build the ruleset and restrict ourselves.
 *
 * Raw syscalls: glibc 2.36 has no wrappers, and the headers of the build host
 * may predate the ABI the kernel offers (see landlock_internal.h).
 */
#include "landlock/landlock_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/landlock.h>

#include "util/cleanup.h"

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#endif
#ifndef SYS_landlock_add_rule
#define SYS_landlock_add_rule 445
#endif
#ifndef SYS_landlock_restrict_self
#define SYS_landlock_restrict_self 446
#endif

_Static_assert(sizeof(struct ll_path_beneath_attr) == 12, "packed like landlock_path_beneath_attr");
_Static_assert(LL_FS_REFER == LANDLOCK_ACCESS_FS_REFER, "our constants are the kernel's");

int ll_abi_version(void)
{
        long r = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);

        return r < 0 ? -errno : (int) r;
}

static int add_path_rule(int ruleset_fd, const struct ll_plan *plan, const struct ll_path_rule *rule,
                         struct nsb_error *e)
{
        struct ll_path_beneath_attr attr;
        struct stat st;
        /* O_PATH: a rule needs only a reference to the inode, no read access.
         * Symlinks are followed on purpose: the paths come from our own
         * configuration, not from the program, and a rule on a symlink inode
         * (/lib -> usr/lib on merged-/usr systems) would grant nothing. */
        AUTOCLOSE int fd = open(rule->path, O_PATH | O_CLOEXEC);

        if (fd < 0)
                return nsb_fail(e, NSB_STAGE_LANDLOCK, errno, "open '%s'", rule->path);
        if (fstat(fd, &st) < 0)
                return nsb_fail(e, NSB_STAGE_LANDLOCK, errno, "fstat '%s'", rule->path);
        attr.allowed_access = ll_rule_access(plan, rule->writable, S_ISDIR(st.st_mode));
        attr.parent_fd = fd;
        if (syscall(SYS_landlock_add_rule, ruleset_fd, LL_RULE_PATH_BENEATH, &attr, 0) < 0)
                return nsb_fail(e, NSB_STAGE_LANDLOCK, errno, "landlock_add_rule('%s', %s, access 0x%llx)",
                                rule->path, rule->writable ? "writable" : "read-only",
                                (unsigned long long) attr.allowed_access);
        return 0;
}

int ll_apply(const struct ll_spec *spec, struct nsb_ledger *ledger, struct nsb_error *e)
{
        AUTOCLOSE int ruleset_fd = -1;
        struct ll_plan plan;
        int abi, r;

        abi = ll_abi_version();
        if (abi < 0)
                return nsb_fail(e, NSB_STAGE_LANDLOCK, -abi,
                                "landlock_create_ruleset(VERSION): Landlock is unavailable");
        r = ll_plan_build(spec, abi, &plan, e);
        if (r < 0)
                return r;

        ruleset_fd = (int) syscall(SYS_landlock_create_ruleset, &plan.attr, sizeof plan.attr, 0);
        if (ruleset_fd < 0)
                return nsb_fail(e, NSB_STAGE_LANDLOCK, errno,
                                "landlock_create_ruleset(fs 0x%llx, net 0x%llx, scoped 0x%llx, ABI %d)",
                                (unsigned long long) plan.attr.handled_access_fs,
                                (unsigned long long) plan.attr.handled_access_net,
                                (unsigned long long) plan.attr.scoped, abi);
        for (size_t i = 0; i < spec->n_rules; i++) {
                r = add_path_rule(ruleset_fd, &plan, &spec->rules[i], e);
                if (r < 0)
                        return nsb_error_prefix(e, "Landlock rule %zu", i);
        }
        /* No TCP port rules: with TCP handled, every bind and connect is denied. */

        /* The kernel refuses an unprivileged task without no_new_privs (EPERM),
         * so a set-uid program cannot be started inside a domain its caller
         * chose. Flags 0 keep Landlock's default audit logging. */
        if (syscall(SYS_landlock_restrict_self, ruleset_fd, 0) < 0)
                return nsb_fail(e, NSB_STAGE_LANDLOCK, errno, "landlock_restrict_self (ABI %d)", abi);
        ledger_set(ledger, PROT_LANDLOCK, "landlock");
        return 0;
}
