/* seccomp/filter_apply.c — compile the plan with libseccomp; load the program.
 *
 * filter_compile*() run in the supervisor before clone(); filter_load() runs
 * in the child and makes exactly one seccomp() call (after checking that
 * no_new_privs is set). See filter.h for the ordering rules.
 */
#include "seccomp/filter_internal.h"

#include <errno.h>
#include <seccomp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/seccomp.h>

#include "util/cleanup.h"

/* scmp_filter_ctx is a void *. */
DEFINE_AUTO_CLEANUP(void, seccomp_release)

static inline void cleanup_plan(struct filter_plan *p)
{
        filter_plan_free(p);
}

static uint32_t scmp_action(enum filter_action a)
{
        if (a == FILTER_KILL)
                return SCMP_ACT_KILL_PROCESS;
        return SCMP_ACT_ERRNO((uint32_t) filter_action_errno(a));
}

static struct scmp_arg_cmp scmp_cmp(const struct filter_cmp *c)
{
        return (struct scmp_arg_cmp) {
                .arg = c->arg,
                .op = c->op == FILTER_CMP_GT ? SCMP_CMP_GT : SCMP_CMP_MASKED_EQ,
                .datum_a = c->op == FILTER_CMP_GT ? c->datum : c->mask,
                .datum_b = c->op == FILTER_CMP_GT ? 0 : c->datum,
        };
}

static int add_entry(scmp_filter_ctx ctx, const struct filter_entry *en, struct nsb_error *e)
{
        struct scmp_arg_cmp cmp[2];
        unsigned n_cmp = 0;
        int nr, r;

        /* Resolve for the native architecture only: a name libseccomp does not
         * know is a policy error, never a rule silently skipped, and a
         * negative "pseudo-syscall" means the call does not exist natively. */
        nr = filter_syscall_nr(en->syscall);
        if (nr == __NR_SCMP_ERROR)
                return nsb_fail(e, NSB_STAGE_SECCOMP, EINVAL, "unknown syscall '%s' (not a system call name "
                                "libseccomp knows for this architecture)", en->syscall);
        if (nr < 0)
                return nsb_fail(e, NSB_STAGE_SECCOMP, EINVAL, "'%s' is not a native syscall", en->syscall);

        if (en->has_cmp)
                cmp[n_cmp++] = scmp_cmp(&en->cmp);
        if (en->has_cmp2)
                cmp[n_cmp++] = scmp_cmp(&en->cmp2);     /* another argument: libseccomp ANDs them */
        /* _exact: fail rather than let libseccomp rewrite the rule. */
        r = seccomp_rule_add_exact_array(ctx, scmp_action(en->action), nr, n_cmp, n_cmp ? cmp : NULL);
        if (r < 0)
                return nsb_fail(e, NSB_STAGE_SECCOMP, -r, "seccomp_rule_add(%s)", en->syscall);
        return 0;
}

/* libseccomp 2.5.4 has no seccomp_export_bpf_mem(): export to a memfd and read it back. */
static int export_bpf(scmp_filter_ctx ctx, struct sock_filter **ret_insns, size_t *ret_len, struct nsb_error *e)
{
        AUTOCLOSE int fd = memfd_create("nsbox-seccomp-bpf", MFD_CLOEXEC);
        AUTOFREE struct sock_filter *insns = NULL;
        struct stat st;
        size_t size;
        ssize_t got;
        int r;

        if (fd < 0)
                return nsb_fail(e, NSB_STAGE_SECCOMP, errno, "memfd_create for the BPF export");
        r = seccomp_export_bpf(ctx, fd);
        if (r < 0)
                return nsb_fail(e, NSB_STAGE_SECCOMP, -r, "seccomp_export_bpf");
        if (fstat(fd, &st) < 0)
                return nsb_fail(e, NSB_STAGE_SECCOMP, errno, "fstat of the BPF export");
        size = (size_t) st.st_size;
        if (size == 0 || size % sizeof(struct sock_filter) != 0)
                return nsb_fail(e, NSB_STAGE_SECCOMP, EINVAL, "BPF export of %zu bytes is not a program", size);
        insns = malloc(size);
        if (!insns)
                return nsb_fail(e, NSB_STAGE_SECCOMP, ENOMEM, "BPF program of %zu bytes", size);
        got = pread(fd, insns, size, 0);
        if (got < 0)
                return nsb_fail(e, NSB_STAGE_SECCOMP, errno, "read back the BPF export");
        if ((size_t) got != size)
                return nsb_fail(e, NSB_STAGE_SECCOMP, EIO, "short read of the BPF export (%zd of %zu bytes)",
                                got, size);
        *ret_insns = move_ptr(&insns);
        *ret_len = size / sizeof(struct sock_filter);
        return 0;
}

int filter_syscall_nr(const char *name)
{
        /* Syscalls newer than this libseccomp (2.5.4 on Debian 12) are named
         * "name:NR" in the table, NR from the unified table every architecture
         * shares since Linux 5.1 (asm-generic/unistd.h). */
        const char *colon = strchr(name, ':');
        if (colon && colon[1] >= '0' && colon[1] <= '9') {
                char *end;
                long nr = strtol(colon + 1, &end, 10);
                int known;
                char base[64];
                if (*end || nr < 424 || (size_t) (colon - name) >= sizeof base)
                        return __NR_SCMP_ERROR;
                memcpy(base, name, (size_t) (colon - name));
                base[colon - name] = '\0';
                /* If libseccomp knows the name after all, it must agree. */
                known = seccomp_syscall_resolve_name_arch(SCMP_ARCH_NATIVE, base);
                return known == __NR_SCMP_ERROR || known == nr ? (int) nr : __NR_SCMP_ERROR;
        }
        return seccomp_syscall_resolve_name_arch(SCMP_ARCH_NATIVE, name);
}

int filter_compile_rules(const struct filter_rule *rules, size_t n_rules, const struct filter_spec *spec,
                         struct filter_prog *ret, struct nsb_error *e)
{
        return filter_compile_rules_layout(rules, n_rules, spec, FILTER_LAYOUT_TREE, ret, e);
}

int filter_compile_rules_layout(const struct filter_rule *rules, size_t n_rules, const struct filter_spec *spec,
                                enum filter_layout layout, struct filter_prog *ret, struct nsb_error *e)
{
        __attribute__((cleanup(cleanup_plan))) struct filter_plan plan = { 0 };
        AUTO(seccomp_release) scmp_filter_ctx ctx = NULL;
        AUTOFREE struct sock_filter *body = NULL, *prog = NULL;
        size_t n_body = 0, n_pro;
        uint32_t native;
        int r;

        *ret = (struct filter_prog) { 0 };
        r = filter_plan_build(rules, n_rules, spec, &plan, e);
        if (r < 0)
                return r;

        /* Default allow: this is a deny list (see filter_plan.c). */
        ctx = seccomp_init(SCMP_ACT_ALLOW);
        if (!ctx)
                return nsb_fail(e, NSB_STAGE_SECCOMP, ENOMEM, "seccomp_init");
        /* Architectures, explicitly: seccomp_init() adds only the native one and
         * we add no other. A syscall from any other ABI is then "bad arch",
         * whose default action (kill the thread) would leave the rest of the
         * process running: kill the whole process instead. */
        if (seccomp_arch_exist(ctx, SCMP_ARCH_NATIVE) != 0)
                return nsb_fail(e, NSB_STAGE_SECCOMP, EINVAL, "native architecture missing from the filter");
        r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
        if (r < 0)
                return nsb_fail(e, NSB_STAGE_SECCOMP, -r, "seccomp_attr_set(ACT_BADARCH, KILL_PROCESS)");
        /* The syscall numbers as a binary tree (libseccomp's optimize level 2),
         * not a chain of ~250 comparisons: the same verdicts (test_filter
         * compares both layouts on every syscall number and the rules'
         * argument values), but the kernel's seccomp() of it costs half
         * (its action cache emulates the program for every syscall number;
         * 0.24 -> 0.11 ms a job, docs/performance.md) and an uncached
         * syscall walks ~10 comparisons, not up to 250. */
        if (layout == FILTER_LAYOUT_TREE) {
                r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
                if (r < 0)
                        return nsb_fail(e, NSB_STAGE_SECCOMP, -r, "seccomp_attr_set(CTL_OPTIMIZE, 2)");
        }

        for (size_t i = 0; i < plan.n_entries; i++) {
                r = add_entry(ctx, &plan.entries[i], e);
                if (r < 0)
                        return nsb_error_prefix(e, "seccomp plan entry %zu", i);
        }
        /* The profile's additions: unconditional EPERM. An unknown name is an
         * error, never skipped: a deny the user asked for must exist. */
        for (size_t i = 0; i < spec->n_extra_deny; i++) {
                struct filter_entry extra = { .syscall = spec->extra_deny[i], .action = FILTER_EPERM };
                r = add_entry(ctx, &extra, e);
                if (r < 0) {
                        if (e->errnum == EINVAL)
                                e->stage = NSB_STAGE_CONFIG;    /* the user's value, not the filter */
                        return nsb_error_prefix(e, "seccomp_deny");
                }
        }

        r = export_bpf(ctx, &body, &n_body, e);
        if (r < 0)
                return r;

        /* libseccomp's arch tokens are the AUDIT_ARCH_* values the kernel
         * puts in seccomp_data.arch. */
        native = seccomp_arch_native();
        n_pro = filter_prologue(native, NULL, 0);
        if (n_body + n_pro > BPF_MAXINSNS)
                return nsb_fail(e, NSB_STAGE_SECCOMP, E2BIG, "filter of %zu instructions exceeds BPF_MAXINSNS",
                                n_body + n_pro);
        prog = calloc(n_body + n_pro, sizeof *prog);
        if (!prog)
                return nsb_fail(e, NSB_STAGE_SECCOMP, ENOMEM, "filter of %zu instructions", n_body + n_pro);
        filter_prologue(native, prog, n_pro);
        /* Classic BPF jumps are relative and forward-only, so libseccomp's
         * program runs unchanged after the prologue; it reloads what it needs. */
        memcpy(prog + n_pro, body, n_body * sizeof *body);

        ret->insns = move_ptr(&prog);
        ret->len = (unsigned short) (n_body + n_pro);
        return 0;
}

int filter_compile_libseccomp(const struct filter_spec *spec, struct filter_prog *ret, struct nsb_error *e)
{
        size_t n;
        const struct filter_rule *rules = filter_rules(&n);

        return filter_compile_rules(rules, n, spec, ret, e);
}

int filter_compile(const struct filter_spec *spec, struct filter_prog *ret, struct nsb_error *e)
{
        const struct filter_precompiled *pre = &filter_precompiled_programs;
        int v = filter_variant_of(spec);

        /* The same table, compiled by the same libseccomp at build time
         * (test_filter proves them identical): a copy instead of ~0.5 ms of
         * libseccomp in every run. */
        if (pre && v >= 0 && pre->insns[v] && pre->len[v] > 0) {
                ret->insns = malloc(pre->len[v] * sizeof *ret->insns);
                if (!ret->insns)
                        return nsb_fail(e, NSB_STAGE_SECCOMP, ENOMEM, "filter of %u instructions",
                                        (unsigned) pre->len[v]);
                memcpy(ret->insns, pre->insns[v], pre->len[v] * sizeof *ret->insns);
                ret->len = pre->len[v];
                return 0;
        }
        return filter_compile_libseccomp(spec, ret, e);
}

int filter_load(const struct filter_prog *prog, struct nsb_ledger *ledger, struct nsb_error *e)
{
        struct sock_fprog fprog;
        int nnp;

        if (!prog || !prog->insns || prog->len == 0)
                return nsb_fail(e, NSB_STAGE_SECCOMP, EINVAL, "no compiled filter to load");

        /* The kernel requires NNP for an unprivileged filter, so that a setuid
         * exec cannot run under a filter its caller chose. Holding
         * CAP_SYS_ADMIN in our user namespace would waive that; an NNP step
         * that was skipped must fail here, not pass unnoticed. */
        nnp = prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0);
        if (nnp < 0)
                return nsb_fail(e, NSB_STAGE_SECCOMP, errno, "prctl(PR_GET_NO_NEW_PRIVS)");
        if (nnp != 1)
                return nsb_fail(e, NSB_STAGE_SECCOMP, EACCES,
                                "no_new_privs is not set; it must precede the seccomp filter");

        fprog = (struct sock_fprog) { .len = prog->len, .filter = prog->insns };
        /* Flags 0: no TSYNC (the child is single-threaded), no SPEC_ALLOW (keep
         * the kernel's speculative-store-bypass mitigation for filtered tasks),
         * no LOG. */
        if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fprog) < 0)
                return nsb_fail(e, NSB_STAGE_SECCOMP, errno, "seccomp(SECCOMP_SET_MODE_FILTER, %u instructions)",
                                (unsigned) prog->len);
        if (ledger)
                ledger_set(ledger, PROT_SECCOMP, "seccomp");
        return 0;
}

void filter_prog_free(struct filter_prog *p)
{
        if (!p)
                return;
        free(p->insns);
        p->insns = NULL;
        p->len = 0;
}
