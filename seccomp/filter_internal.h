/* seccomp/filter_internal.h — the rule table and the pure plan, visible to tests.
 *
 * The policy is a static table of struct filter_rule (filter_plan.c). A pure
 * function expands it, for one filter_spec, into a flat plan: one libseccomp
 * rule per entry, each with at most one argument comparison. The flat shape is
 * forced by libseccomp 2.5.4, which rejects two comparisons on the same
 * argument within one rule (EINVAL) and rejects ALLOW rules when the default
 * action is ALLOW (EACCES); "deny unless the argument is one of {...}" must
 * therefore become a union of single-comparison deny rules.
 *
 * filter_apply.c turns the plan into BPF with libseccomp and prepends
 * filter_prologue(), a short hand-written check that does not depend on how a
 * given libseccomp version lays out its architecture checks.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/filter.h>

#include "seccomp/filter.h"

/* The newest syscall number this policy was reviewed against: removexattrat
 * (466, Linux 6.13). Numbers at or above 424 are shared by every architecture
 * but alpha, so one constant serves them all. Anything newer (467
 * open_tree_attr, a mount door libseccomp 2.5.4 cannot even name; 468/469
 * file_getattr/file_setattr, ...) gets ENOSYS from the prologue, so libc falls
 * back as it does on an older kernel. */
#define FILTER_NEWEST_REVIEWED_NR 466u

/* The sandbox's init: PID 1 of the program's pid namespace, cold and warm
 * (a warm job's init is PID 1 of the job's own namespace; the zygote and its
 * init are in none a job can see). It reaps the program and reports its
 * status: no syscall may name it (see the "the init" rules, filter_plan.c). */
#define FILTER_INIT_PID 1u

enum filter_action {
        FILTER_EPERM,           /* "not allowed": the door exists, you may not use it */
        FILTER_ENOSYS,          /* "not implemented": callers fall back (clone3, io_uring) */
        FILTER_EAFNOSUPPORT,    /* socket families: what libc expects from a kernel without them */
        FILTER_KILL,            /* SECCOMP_RET_KILL_PROCESS */
};

enum filter_when {
        FILTER_ALWAYS,
        FILTER_NO_INET,         /* only when !spec->allow_inet */
        FILTER_INET,            /* only when spec->allow_inet */
        FILTER_REDUCED,         /* only when spec->reduced: no namespaces stand behind the filter */
        FILTER_RLIMIT_MEMORY,   /* only when spec->rlimit_memory: no cgroup charges what is not mapped */
};

enum filter_cond_kind {
        FILTER_COND_NONE,       /* every call */
        FILTER_COND_FLAG,       /* (arg & value) == value on the low 32 bits (clone flags) */
        FILTER_COND_EQ32,       /* (arg & 0xffffffff) == value (ioctl requests are unsigned int) */
        FILTER_COND_NOT_IN32,   /* arg > 0xffffffff, or arg is none of set[] (sorted, unique) */
        FILTER_COND_GT,         /* arg > value, all 64 bits (prlimit64 on another pid) */
        FILTER_COND_EQ32_GT,    /* (arg & 0xffffffff) == value and arg2 > value2, all 64 bits
                                   (fcntl's command, then its size) */
        FILTER_COND_OTHERS_CLOCK, /* arg is a clockid_t (low 32 bits) naming the CPU clock of a
                                     process other than the caller (see FILTER_CLOCK_* below) */
};

/* A CPU clock id, as the kernel encodes it (clockid_t is a 32-bit int):
 * ((~pid) << 3) | kind, negative for every pid. Bits 0-1 are the kind
 * (PROF, VIRT, SCHED; 3 is a clock device opened by fd, whose fd sits where
 * the pid would), bit 2 marks a thread's clock (the kernel limits those to
 * the caller's own thread group), and pid 0 means the caller: its bits 3-31
 * are all set. FILTER_COND_OTHERS_CLOCK refuses a negative id with bit 2
 * clear and any of bits 3-30 clear: a process (or device) clock of any pid
 * but 0. */
#define FILTER_CLOCK_NEGATIVE   0x80000000u
#define FILTER_CLOCK_PERTHREAD  0x4u
#define FILTER_CLOCK_PID_SHIFT  3u

/* The default size of a pipe: PIPE_DEF_BUFFERS (16) pages of 4 KiB. Growing
 * one past it (F_SETPIPE_SZ) takes pages from the uid's host-wide budget
 * (fs.pipe-user-pages-soft). */
#define FILTER_PIPE_DEFAULT_BYTES 65536u

struct filter_cond {
        enum filter_cond_kind kind;
        unsigned arg;                   /* 0-based syscall argument */
        uint32_t value;                 /* FLAG, EQ32 */
        const uint32_t *set;            /* NOT_IN32 */
        size_t n_set;
        unsigned arg2;                  /* EQ32_GT: the second argument, another one */
        uint32_t value2;                /* EQ32_GT */
};

struct filter_rule {
        const char *syscall;            /* libseccomp name; unknown = compile error */
        enum filter_action action;
        enum filter_when when;
        struct filter_cond cond;
        const char *threat;             /* the door this rule closes */
};

enum filter_cmp_op {
        FILTER_CMP_MASKED_EQ,           /* (arg & mask) == datum */
        FILTER_CMP_GT,                  /* arg > datum, all 64 bits */
};

struct filter_cmp {
        unsigned arg;
        enum filter_cmp_op op;
        uint64_t mask;
        uint64_t datum;
};

struct filter_entry {
        const char *syscall;
        enum filter_action action;
        bool has_cmp;
        struct filter_cmp cmp;
        bool has_cmp2;                  /* a second comparison, on another argument: both must hold */
        struct filter_cmp cmp2;
};

struct filter_plan {
        struct filter_entry *entries;   /* malloc'd */
        size_t n_entries;
};

/* The built-in policy table. */
const struct filter_rule *filter_rules(size_t *ret_n);

/* Pure: the rules that apply to @spec, expanded to single-comparison entries. */
int filter_plan_build(const struct filter_rule *rules, size_t n_rules, const struct filter_spec *spec,
                      struct filter_plan *ret, struct nsb_error *e);
void filter_plan_free(struct filter_plan *p);

/* Pure: the comparisons whose union is "arg is not one of set[]" (sorted,
 * unique). Writes up to @cap entries to @out and returns how many are needed. */
size_t filter_not_in32(unsigned arg, const uint32_t *set, size_t n_set, struct filter_cmp *out, size_t cap);

/* Pure: the errno an action returns, or 0 for FILTER_KILL. */
int filter_action_errno(enum filter_action a);

/* Pure: the hand-written BPF that runs before libseccomp's program:
 * a foreign architecture or (x86_64) an x32 syscall kills the process; a
 * syscall number above FILTER_NEWEST_REVIEWED_NR returns ENOSYS; everything
 * else falls through to the instruction after the prologue. Returns the
 * number of instructions (at most FILTER_PROLOGUE_MAX); writes them if
 * @cap is large enough. */
#define FILTER_PROLOGUE_MAX 8
size_t filter_prologue(uint32_t native_audit_arch, struct sock_filter *out, size_t cap);

/* A rule's syscall number: a libseccomp name, or "name:NR" for a syscall
 * newer than libseccomp (NR >= 424, the unified numbering); __NR_SCMP_ERROR
 * when unknown or when libseccomp knows the name with another number. */
int filter_syscall_nr(const char *name);

/* The compiler behind filter_compile(), on any rule table (tests feed it bad ones). */
int filter_compile_rules(const struct filter_rule *rules, size_t n_rules, const struct filter_spec *spec,
                         struct filter_prog *ret, struct nsb_error *e);
/* The same with the layout of the syscall-number comparisons chosen:
 * filter_compile_rules() uses the tree; the chain (libseccomp's default) is
 * kept for test_filter, which checks that both give the same verdicts. */
enum filter_layout { FILTER_LAYOUT_TREE, FILTER_LAYOUT_CHAIN };
int filter_compile_rules_layout(const struct filter_rule *rules, size_t n_rules, const struct filter_spec *spec,
                                enum filter_layout layout, struct filter_prog *ret, struct nsb_error *e);

/* Programs of the built-in table compiled at build time (filter_gen.c writes
 * filter_precompiled.c), one per variant (filter_variant_spec). The symbol is
 * weak: an executable built without the generated file (the generator itself,
 * a cross build) has none, and filter_compile() then runs libseccomp; so do
 * specs that are no variant (a profile's seccomp_deny additions). */
#define FILTER_VARIANTS 6       /* strict, strict + inet, reduced; then the same three
                                   with rlimit_memory */
struct filter_precompiled {
        const struct sock_filter *insns[FILTER_VARIANTS];
        unsigned short len[FILTER_VARIANTS];
};

/* Pure: the spec of variant @v, and the variant of @spec (-1: none). */
struct filter_spec filter_variant_spec(int v);
int filter_variant_of(const struct filter_spec *spec);
extern const struct filter_precompiled filter_precompiled_programs __attribute__((weak));

/* filter_compile() without the precompiled programs: libseccomp, every time. */
int filter_compile_libseccomp(const struct filter_spec *spec, struct filter_prog *ret, struct nsb_error *e);
