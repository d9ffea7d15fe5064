/* Unit tests for seccomp/: the rule table, its expansion, and the loaded filter probed.
 *
 * The probes are the fixture's own attempts (fixtures/try_syscall.c, included
 * below), each run twice in a forked child: once unconfined (the control) and
 * once after PR_SET_NO_NEW_PRIVS + filter_load(). A denied call must return
 * the rule's errno (or die of SIGSYS); an allowed call must behave exactly as
 * in the control. Needs no root and no namespaces; every attempt is harmless
 * unconfined, even as root.
 */
#define TRY_SYSCALL_NO_MAIN
#include "fixtures/try_syscall.c"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>
#include <seccomp.h>
#include <linux/seccomp.h>

#include "seccomp/filter_internal.h"
#include "util/cleanup.h"

/* What each attempt must do under the filter: SAME = as in the control,
 * a positive errno = that errno, KILLED = SIGSYS, FOREIGN = a foreign ABI:
 * SIGSYS where the unfiltered control shows the door exists on this host,
 * shut either way where it does not (foreign_abi_verdict). */
#define SAME 0
#define KILLED (-SIGSYS)
#define FOREIGN (-1000)

static const struct expectation {
        const char *name;
        int no_inet;    /* filter_spec.allow_inet = false */
        int inet;       /* filter_spec.allow_inet = true */
        int reduced;    /* filter_spec.reduced = true (allow_inet false) */
} expectations[] = {
        { "ptrace", EPERM, EPERM, EPERM },
        { "process_vm_readv", EPERM, EPERM, EPERM },
        { "process_vm_writev", EPERM, EPERM, EPERM },
        { "pidfd_getfd", EPERM, EPERM, EPERM },
        { "mount", EPERM, EPERM, EPERM },
        { "umount2", EPERM, EPERM, EPERM },
        { "move_mount", EPERM, EPERM, EPERM },
        { "open_tree", EPERM, EPERM, EPERM },
        { "open_tree_attr", ENOSYS, ENOSYS, ENOSYS },   /* newer than FILTER_NEWEST_REVIEWED_NR */
        { "fsopen", EPERM, EPERM, EPERM },
        { "fsconfig", EPERM, EPERM, EPERM },
        { "fsmount", EPERM, EPERM, EPERM },
        { "fspick", EPERM, EPERM, EPERM },
        { "mount_setattr", EPERM, EPERM, EPERM },
        { "pivot_root", EPERM, EPERM, EPERM },
        { "chroot", EPERM, EPERM, EPERM },
        { "unshare_user", EPERM, EPERM, EPERM },
        { "unshare_net", EPERM, EPERM, EPERM },
        { "setns", EPERM, EPERM, EPERM },
        { "clone_newuser", EPERM, EPERM, EPERM },
        { "clone_newnet_highbits", EPERM, EPERM, EPERM },
        { "clone3", ENOSYS, ENOSYS, ENOSYS },
        { "fork", SAME, SAME, SAME },
        { "keyctl", EPERM, EPERM, EPERM },
        { "add_key", EPERM, EPERM, EPERM },
        { "request_key", EPERM, EPERM, EPERM },
        { "bpf", ENOSYS, ENOSYS, ENOSYS },
        { "perf_event_open", ENOSYS, ENOSYS, ENOSYS },
        { "userfaultfd", ENOSYS, ENOSYS, ENOSYS },
        { "io_uring_setup", ENOSYS, ENOSYS, ENOSYS },
        { "io_uring_enter", ENOSYS, ENOSYS, ENOSYS },
        { "io_uring_register", ENOSYS, ENOSYS, ENOSYS },
        /* Linux AIO: fs.aio-max-nr, one host-wide budget; io_uring's errno */
        { "io_setup", ENOSYS, ENOSYS, ENOSYS },
        { "io_destroy", ENOSYS, ENOSYS, ENOSYS },
        { "io_submit", ENOSYS, ENOSYS, ENOSYS },
        { "io_cancel", ENOSYS, ENOSYS, ENOSYS },
        { "io_getevents", ENOSYS, ENOSYS, ENOSYS },
        { "io_pgetevents", ENOSYS, ENOSYS, ENOSYS },
        /* huge pages: the host's pool, charged to no memory limit */
        { "memfd_hugetlb", EPERM, EPERM, EPERM },
        { "memfd_hugetlb_highbits", EPERM, EPERM, EPERM },   /* the kernel reads the flags as unsigned int */
        { "mmap_hugetlb", EPERM, EPERM, EPERM },
        { "mmap_plain", SAME, SAME, SAME },
        { "shmget_hugetlb", EPERM, EPERM, EPERM },
        { "modify_ldt", ENOSYS, ENOSYS, ENOSYS },
        { "kexec_load", EPERM, EPERM, EPERM },
        { "kexec_file_load", EPERM, EPERM, EPERM },
        { "init_module", EPERM, EPERM, EPERM },
        { "finit_module", EPERM, EPERM, EPERM },
        { "delete_module", EPERM, EPERM, EPERM },
        { "reboot", EPERM, EPERM, EPERM },
        { "swapon", EPERM, EPERM, EPERM },
        { "swapoff", EPERM, EPERM, EPERM },
        { "acct", EPERM, EPERM, EPERM },
        { "quotactl", EPERM, EPERM, EPERM },
        { "quotactl_fd", EPERM, EPERM, EPERM },
        { "syslog", EPERM, EPERM, EPERM },
        { "open_by_handle_at", EPERM, EPERM, EPERM },
        { "name_to_handle_at", EPERM, EPERM, EPERM },
        { "personality", EPERM, EPERM, EPERM },
        { "personality_query", SAME, SAME, SAME },
        { "personality_linux", SAME, SAME, SAME },
        { "personality_highbits", EPERM, EPERM, EPERM },
        { "settimeofday", EPERM, EPERM, EPERM },
        { "clock_settime", EPERM, EPERM, EPERM },
        { "clock_adjtime", EPERM, EPERM, EPERM },
        { "adjtimex", EPERM, EPERM, EPERM },
        { "tiocsti", EPERM, EPERM, EPERM },
        { "tiocsti_highbits", EPERM, EPERM, EPERM },
        { "tioclinux", EPERM, EPERM, EPERM },
        { "tiocsetd", EPERM, EPERM, EPERM },
        { "tioccons", EPERM, EPERM, EPERM },
        { "tiocgptpeer", SAME, SAME, SAME },
        { "ioctl_tcgets", SAME, SAME, SAME },
        { "socket_inet", EAFNOSUPPORT, SAME, EAFNOSUPPORT },
        { "socket_inet6", EAFNOSUPPORT, SAME, EAFNOSUPPORT },
        { "socket_netlink", EAFNOSUPPORT, EAFNOSUPPORT, EAFNOSUPPORT },
        { "socket_packet", EAFNOSUPPORT, EAFNOSUPPORT, EAFNOSUPPORT },
        { "socket_unix", SAME, SAME, EAFNOSUPPORT },
        { "socket_highbits", EAFNOSUPPORT, EAFNOSUPPORT, EAFNOSUPPORT },
        { "socketpair_unix", SAME, SAME, SAME },
        { "socketpair_inet", EAFNOSUPPORT, EAFNOSUPPORT, EAFNOSUPPORT },
        { "chmod_setuid", EPERM, EPERM, EPERM },
        { "chmod_plain", SAME, SAME, EPERM },
        { "chown_plain", SAME, SAME, EPERM },
        { "utimensat_path", SAME, SAME, EPERM },
        { "utimensat_fd", SAME, SAME, SAME },
        { "setxattr_path", SAME, SAME, EPERM },
        { "setxattrat", SAME, SAME, EPERM },
        { "inotify_init1", ENOSYS, ENOSYS, ENOSYS },
        { "fanotify_init", ENOSYS, ENOSYS, ENOSYS },
        { "inotify_add_watch", SAME, SAME, EPERM },
        { "fanotify_mark", SAME, SAME, EPERM },
        { "sched_setaffinity_other", SAME, SAME, EPERM },
        { "setpriority_other", SAME, SAME, EPERM },
        { "ioprio_set_user", EPERM, EPERM, EPERM },     /* a whole user: the init's uid too */
        /* the init (PID 1): named by pid, group or user, refused in every mode */
        { "prlimit_init", EPERM, EPERM, EPERM },
        { "prlimit_init_highbits", EPERM, EPERM, EPERM },
        { "prlimit_init_read", EPERM, EPERM, EPERM },
        { "setpriority_init", EPERM, EPERM, EPERM },
        { "setpriority_user", EPERM, EPERM, EPERM },
        { "getpriority_init", EPERM, EPERM, EPERM },
        { "ioprio_set_init", EPERM, EPERM, EPERM },
        { "sched_setaffinity_init", EPERM, EPERM, EPERM },
        { "sched_getaffinity_init", EPERM, EPERM, EPERM },
        { "sched_setscheduler_init", EPERM, EPERM, EPERM },
        { "sched_setparam_init", EPERM, EPERM, EPERM },
        { "sched_setattr_init", EPERM, EPERM, EPERM },
        { "migrate_pages_init", EPERM, EPERM, EPERM },
        { "move_pages_init", EPERM, EPERM, EPERM },
        { "kcmp_init", EPERM, EPERM, EPERM },
        { "pidfd_open_init", EPERM, EPERM, EPERM },
        { "kill_init", EPERM, EPERM, EPERM },
        { "tgkill_init", EPERM, EPERM, EPERM },
        { "rt_sigqueueinfo_init", EPERM, EPERM, EPERM },
        { "getsid_init", EPERM, EPERM, EPERM },
        { "prctl_sched_core_init", EPERM, EPERM, EPERM },
        /* a CPU clock names a process too: the init's (any pid's but 0) refused, thread clocks kept */
        { "clock_gettime_init", EPERM, EPERM, EPERM },
        { "clock_gettime_init_highbits", EPERM, EPERM, EPERM },
        { "clock_getres_init", EPERM, EPERM, EPERM },
        { "clock_nanosleep_init", EPERM, EPERM, EPERM },
        { "timer_create_init", EPERM, EPERM, EPERM },
        { "clock_gettime_self", SAME, SAME, SAME },
        { "clock_gettime_thread_init", SAME, SAME, SAME },
        /* pipes past the default 16 pages: the uid's host-wide budget */
        { "setpipe_sz_grow", EPERM, EPERM, EPERM },
        { "setpipe_sz_default", SAME, SAME, SAME },
        { "setpipe_sz_highbits", EPERM, EPERM, EPERM },
        { "move_pages_other", SAME, SAME, EPERM },
        { "kcmp_other", SAME, SAME, EPERM },
        { "process_madvise", SAME, SAME, EPERM },
        { "fchmod_setgid", EPERM, EPERM, EPERM },
        { "fchmodat_setuid", EPERM, EPERM, EPERM },
        { "fchmodat2_setuid", EPERM, EPERM, EPERM },
        { "open_setuid", EPERM, EPERM, EPERM },
        { "open_plain", SAME, SAME, SAME },
        { "openat_setgid", EPERM, EPERM, EPERM },
        { "creat_setuid", EPERM, EPERM, EPERM },
        { "mknodat_setuid", EPERM, EPERM, EPERM },
        { "mknodat_whiteout", EPERM, EPERM, EPERM },
        { "renameat2_whiteout", EPERM, EPERM, EPERM },
        { "renameat2_plain", SAME, SAME, SAME },
        { "openat2", ENOSYS, ENOSYS, ENOSYS },
        { "setuid0", SAME, SAME, SAME },
        { "read_badfd", SAME, SAME, SAME },
        { "getpid", SAME, SAME, SAME },
        { "syscall_minus1", SAME, SAME, SAME },
        { "x32", FOREIGN, FOREIGN, FOREIGN },
        { "i386", FOREIGN, FOREIGN, FOREIGN },
        { "setsid", SAME, SAME, EPERM },
        { "setpgid", SAME, SAME, EPERM },
        { "prlimit_other", SAME, SAME, EPERM },
        { "prlimit_self", SAME, SAME, SAME },
        { "shmget", SAME, SAME, EPERM },
        { "memfd_create", SAME, SAME, SAME },     /* refused with rlimit_memory only */
        { "semget", SAME, SAME, EPERM },
        { "msgget", SAME, SAME, EPERM },
        { "mq_open", SAME, SAME, EPERM },
};

/* Run in the probe child before the attempt: the real sequence's last two steps. */
static int setup_load_filter(void *arg)
{
        const struct filter_prog *prog = arg;
        struct nsb_ledger ledger;
        struct nsb_error e;

        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                return errno;
        ledger_init(&ledger);
        if (filter_load(prog, &ledger, &e) < 0)
                return e.errnum ? e.errnum : EINVAL;
        if (strcmp(ledger_get(&ledger, PROT_SECCOMP), "seccomp") != 0)
                return EPROTO;
        return 0;
}

static void describe(const struct outcome *o, char *buf, size_t len)
{
        switch (o->kind) {
        case OUTCOME_RETURNED:
                if (o->ret >= 0)
                        snprintf(buf, len, "success");
                else
                        snprintf(buf, len, "%s", strerrorname_np(o->err) ? strerrorname_np(o->err) : "errno?");
                return;
        case OUTCOME_SIGNALED:
                snprintf(buf, len, "signal %d", o->sig);
                return;
        case OUTCOME_SETUP_FAILED:
                snprintf(buf, len, "filter setup failed: %s", strerror(o->err));
                return;
        case OUTCOME_LOST:
                break;
        }
        snprintf(buf, len, "no report");
}

static bool same_behaviour(const struct outcome *a, const struct outcome *b)
{
        if (a->kind != b->kind)
                return false;
        if (a->kind == OUTCOME_SIGNALED)
                return a->sig == b->sig;
        if ((a->ret >= 0) != (b->ret >= 0))
                return false;
        return a->ret >= 0 || a->err == b->err;
}

enum probe_mode { PROBE_NO_INET, PROBE_INET, PROBE_REDUCED };

static void probe_spec(enum probe_mode mode)
{
        const bool allow_inet = mode == PROBE_INET;
        const struct filter_spec spec = { .allow_inet = allow_inet, .reduced = mode == PROBE_REDUCED };
        struct filter_prog prog = { 0 };
        struct nsb_error e;
        char failures[4096] = "";
        size_t used = 0;

        if (filter_compile(&spec, &prog, &e) < 0)
                fail_msg("filter_compile: %s", e.msg);
        for (size_t i = 0; i < ARRAY_SIZE(expectations); i++) {
                const struct expectation *x = &expectations[i];
                const struct attempt *a = find_attempt(x->name);
                const int want = mode == PROBE_INET ? x->inet : mode == PROBE_REDUCED ? x->reduced : x->no_inet;
                struct outcome control = { .kind = OUTCOME_LOST }, got = { .kind = OUTCOME_LOST };
                char c_desc[80], g_desc[80];
                bool ok;

                assert_non_null(a);
                assert_int_equal(run_attempt(a, NULL, NULL, &control), 0);
                assert_int_equal(run_attempt(a, setup_load_filter, &prog, &got), 0);
                describe(&control, c_desc, sizeof c_desc);
                describe(&got, g_desc, sizeof g_desc);
                if (want == FOREIGN) {
                        bool present;
                        const char *why = foreign_abi_verdict(&control, &got, &present);

                        ok = !why;
                        if (!present)
                                print_message("note: this host has no %s door (unfiltered control: %s); "
                                              "checked that it stays shut (got %s)\n", x->name, c_desc, g_desc);
                        if (why)
                                used += (size_t) snprintf(failures + used,
                                                          used < sizeof failures ? sizeof failures - used : 0,
                                                          "\n  %s: got %s, control %s: %s", x->name, g_desc, c_desc, why);
                        if (used >= sizeof failures)
                                break;
                        continue;
                }
                if (want == SAME)
                        ok = same_behaviour(&control, &got);
                else if (want < 0)
                        ok = got.kind == OUTCOME_SIGNALED && got.sig == -want;
                else
                        ok = got.kind == OUTCOME_RETURNED && got.ret == -1 && got.err == want;
                if (!ok)
                        used += (size_t) snprintf(failures + used, used < sizeof failures ? sizeof failures - used : 0,
                                                  "\n  %s: got %s, control %s, want %s", x->name, g_desc, c_desc,
                                                  want == SAME ? "same as control"
                                                  : want < 0 ? "SIGSYS" : strerrorname_np(want));
                else if (want > 0 && control.kind == OUTCOME_RETURNED && control.ret == -1 && control.err == want)
                        /* Unprivileged, the kernel may refuse with the same errno
                         * (EPERM for mount, ...): the probe passes but does not
                         * show that the filter was the one refusing. */
                        print_message("note: %s: the kernel alone also answers %s here\n", x->name, g_desc);
                if (used >= sizeof failures)
                        break;
        }
        filter_prog_free(&prog);
        if (used > 0)
                fail_msg("mode %d (0 no inet, 1 inet, 2 reduced):%s", (int) mode, failures);
}

static void test_probe_no_inet(void **state)
{
        (void) state;
        probe_spec(PROBE_NO_INET);
}

static void test_probe_inet(void **state)
{
        (void) state;
        probe_spec(PROBE_INET);
}

static void test_probe_reduced(void **state)
{
        (void) state;
        probe_spec(PROBE_REDUCED);
}

/* The rule itself, on outcomes from both kinds of host: one with the door
 * (the control's call went through) and one without (i386: SIGSEGV, the
 * CPU faults on the missing gate; x32: ENOSYS). */
static void test_foreign_abi_verdict_table(void **state)
{
        static const struct outcome ok_call = { .kind = OUTCOME_RETURNED, .ret = 42 };
        static const struct outcome segv = { .kind = OUTCOME_SIGNALED, .sig = SIGSEGV };
        static const struct outcome sigsys = { .kind = OUTCOME_SIGNALED, .sig = SIGSYS };
        static const struct outcome enosys = { .kind = OUTCOME_RETURNED, .ret = -1, .err = ENOSYS };
        static const struct outcome eperm = { .kind = OUTCOME_RETURNED, .ret = -1, .err = EPERM };
        static const struct outcome lost = { .kind = OUTCOME_LOST };
        static const struct row { const struct outcome *control, *got; bool ok, present; } *r, rows[] = {
                { &ok_call, &sigsys, true, true },       /* door open, filter kills: right */
                { &ok_call, &ok_call, false, true },     /* door open, filter lets it through */
                { &ok_call, &segv, false, true },        /* open door, some other death: not the filter's kill */
                { &ok_call, &enosys, false, true },
                { &segv, &segv, true, false },           /* no i386 entry: shut with or without the filter */
                { &segv, &sigsys, true, false },
                { &segv, &ok_call, false, false },       /* cannot be: it went through only under the filter */
                { &segv, &eperm, false, false },
                { &enosys, &enosys, true, false },       /* no x32: the kernel's ENOSYS, or the filter's kill */
                { &enosys, &sigsys, true, false },
                { &enosys, &ok_call, false, false },
                { &lost, &sigsys, false, false },        /* a control that said nothing proves nothing */
        };

        (void) state;
        for (r = rows; r < rows + ARRAY_SIZE(rows); r++) {
                bool present = !r->present;
                const char *why = foreign_abi_verdict(r->control, r->got, &present);

                if ((why == NULL) != r->ok || present != r->present)
                        fail_msg("row %zu: verdict %s, present %d", (size_t) (r - rows), why ? why : "ok", present);
        }
}

/* The probe on this host, both branches: the i386 door as this kernel has
 * it, then as a kernel without the entry has it (NSBOX_FAKE_NO_I386: the
 * same CPU fault on a missing gate, fixtures/try_syscall.c). With the door
 * open, an unfiltered run must fail the check: it is what catches a filter
 * that lets a reachable foreign ABI through. */
static void test_probe_foreign_abi_both_branches(void **state)
{
        const struct filter_spec spec = { .allow_inet = false };
        const struct attempt *a = find_attempt("i386");
        struct filter_prog prog = { 0 };
        struct nsb_error e;

        (void) state;
        if (filter_compile(&spec, &prog, &e) < 0)
                fail_msg("filter_compile: %s", e.msg);
        for (int fake = 0; fake <= 1; fake++) {
                struct outcome control = { .kind = OUTCOME_LOST }, got = { .kind = OUTCOME_LOST };
                const char *why;
                bool present;
                char c_desc[80], g_desc[80];

                if (fake)
                        setenv("NSBOX_FAKE_NO_I386", "1", 1);
                assert_int_equal(run_attempt(a, NULL, NULL, &control), 0);
                assert_int_equal(run_attempt(a, setup_load_filter, &prog, &got), 0);
                unsetenv("NSBOX_FAKE_NO_I386");
                describe(&control, c_desc, sizeof c_desc);
                describe(&got, g_desc, sizeof g_desc);
                why = foreign_abi_verdict(&control, &got, &present);
                print_message("note: i386%s: %s door (control: %s, filtered: %s)\n", fake ? " (faked absent)" : "",
                              present ? "this host has the" : "no", c_desc, g_desc);
                if (why)
                        fail_msg("i386%s: %s", fake ? " (faked absent)" : "", why);
                if (fake) {
                        /* the fake must really be the absent branch: a fault, not a syscall */
                        assert_false(present);
                        assert_int_equal(control.kind, OUTCOME_SIGNALED);
                        assert_int_equal(control.sig, SIGSEGV);
                } else if (present) {
                        /* no filter at all on an open door: the check must fail */
                        assert_non_null(foreign_abi_verdict(&control, &control, &present));
                }
        }
        filter_prog_free(&prog);
}

/* The rlimit backend: memory that outlives every mapping is refused, in
 * strict and reduced isolation alike; everything else is as without it. */
static void test_probe_rlimit_memory(void **state)
{
        static const char *const refused[] = { "memfd_create", "shmget" };

        (void) state;
        for (int v = 3; v < FILTER_VARIANTS; v++) {
                const struct filter_spec spec = filter_variant_spec(v);
                struct filter_prog prog = { 0 };
                struct nsb_error e;
                struct outcome got;

                assert_true(spec.rlimit_memory);
                if (filter_compile(&spec, &prog, &e) < 0)
                        fail_msg("filter_compile: %s", e.msg);
                for (size_t i = 0; i < ARRAY_SIZE(refused); i++) {
                        got = (struct outcome){ .kind = OUTCOME_LOST };
                        assert_int_equal(run_attempt(find_attempt(refused[i]), setup_load_filter, &prog, &got), 0);
                        if (got.kind != OUTCOME_RETURNED || got.ret != -1 || got.err != EPERM)
                                fail_msg("variant %d: %s not refused with EPERM", v, refused[i]);
                }
                got = (struct outcome){ .kind = OUTCOME_LOST };
                assert_int_equal(run_attempt(find_attempt("getpid"), setup_load_filter, &prog, &got), 0);
                assert_true(got.kind == OUTCOME_RETURNED && got.ret >= 0);
                filter_prog_free(&prog);
        }
}

/* Every fixture attempt has an expectation here, so a new door cannot be
 * added to the fixture without saying what the filter does to it. */
static void test_expectations_cover_fixture(void **state)
{
        (void) state;
        for (size_t i = 0; i < ARRAY_SIZE(attempts); i++) {
                bool found = false;
                for (size_t j = 0; j < ARRAY_SIZE(expectations); j++)
                        found = found || strcmp(attempts[i].name, expectations[j].name) == 0;
                if (!found)
                        fail_msg("fixture attempt '%s' has no expectation", attempts[i].name);
        }
}

static void test_table_invariants(void **state)
{
        static const char *const required[] = {
                "ptrace", "process_vm_readv", "process_vm_writev", "mount", "umount2", "move_mount",
                "open_tree", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr", "pivot_root",
                "chroot", "unshare", "setns", "clone", "clone3", "keyctl", "add_key", "request_key", "bpf",
                "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register",
                "io_setup", "io_destroy", "io_submit", "io_cancel", "io_getevents", "io_pgetevents",
                "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module", "reboot",
                "swapon", "swapoff", "acct", "quotactl", "syslog", "open_by_handle_at", "name_to_handle_at",
                "personality", "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "ioctl",
                "socket", "socketpair", "chmod", "fchmod", "fchmodat", "fchmodat2", "open", "openat", "creat",
                "mknod", "mknodat", "openat2",
        };
        size_t n;
        const struct filter_rule *rules = filter_rules(&n);

        (void) state;
        assert_true(n > 0);
        for (size_t i = 0; i < n; i++) {
                if (filter_syscall_nr(rules[i].syscall) == __NR_SCMP_ERROR)
                        fail_msg("rule %zu: libseccomp does not know '%s'", i, rules[i].syscall);
                if (filter_syscall_nr(rules[i].syscall) < 0)
                        fail_msg("rule %zu: '%s' is not a native syscall", i, rules[i].syscall);
                if (!rules[i].threat || strlen(rules[i].threat) < 10)
                        fail_msg("rule %zu (%s): no threat comment", i, rules[i].syscall);
        }
        for (size_t r = 0; r < ARRAY_SIZE(required); r++) {
                bool found = false;
                for (size_t i = 0; i < n; i++)
                        found = found || strcmp(rules[i].syscall, required[r]) == 0;
                if (!found)
                        fail_msg("no rule for '%s'", required[r]);
        }
}

/* How the kernel-side filter would judge @v against the expanded comparisons. */
static bool denied_by(const struct filter_cmp *c, size_t n, uint64_t v)
{
        for (size_t i = 0; i < n; i++) {
                if (c[i].op == FILTER_CMP_GT && v > c[i].datum)
                        return true;
                if (c[i].op == FILTER_CMP_MASKED_EQ && (v & c[i].mask) == c[i].datum)
                        return true;
        }
        return false;
}

static void check_not_in(const uint32_t *set, size_t n_set)
{
        struct filter_cmp cmps[128];
        size_t n = filter_not_in32(0, set, n_set, cmps, ARRAY_SIZE(cmps));
        uint64_t probes[64 * 4 + 4096 + 16];
        size_t np = 0;

        assert_true(n <= ARRAY_SIZE(cmps));
        for (uint64_t v = 0; v < 4096; v++)
                probes[np++] = v;
        for (unsigned b = 0; b < 64; b++) {
                probes[np++] = 1ull << b;
                probes[np++] = (1ull << b) - 1;
                probes[np++] = (1ull << b) + 1;
                probes[np++] = (1ull << b) | 2;         /* AF_INET with a high bit */
        }
        probes[np++] = 0xffffffffu;
        probes[np++] = 0xfffffffeu;
        probes[np++] = 0x100000000ull;
        probes[np++] = UINT64_MAX;
        for (size_t i = 0; i < n_set; i++) {
                probes[np++] = set[i];
                probes[np++] = (1ull << 32) | set[i];
        }
        for (size_t i = 0; i < np; i++) {
                uint64_t v = probes[i];
                bool allowed = false;
                for (size_t j = 0; j < n_set; j++)
                        allowed = allowed || v == set[j];
                if (denied_by(cmps, n, v) == allowed)
                        fail_msg("value 0x%llx: denied=%d, allowed set says %d", (unsigned long long) v,
                                 denied_by(cmps, n, v), allowed);
        }
}

static void test_not_in32_expansion(void **state)
{
        static const uint32_t s1[] = { AF_UNIX };
        static const uint32_t s2[] = { AF_UNIX, AF_INET, AF_INET6 };
        static const uint32_t s3[] = { 0, 0xffffffffu };
        static const uint32_t s4[] = { 0 };
        static const uint32_t s5[] = { 7, 1000, 0x80000000u };

        (void) state;
        check_not_in(s1, ARRAY_SIZE(s1));
        check_not_in(s2, ARRAY_SIZE(s2));
        check_not_in(s3, ARRAY_SIZE(s3));
        check_not_in(s4, ARRAY_SIZE(s4));
        check_not_in(s5, ARRAY_SIZE(s5));
}

/* Pure: what the plan for @spec answers to @name with arguments @args: the
 * action of a matching entry, or -1 when the call is allowed. */
static int plan_verdict(const struct filter_plan *plan, const char *name, const uint64_t args[6])
{
        for (size_t i = 0; i < plan->n_entries; i++) {
                const struct filter_entry *en = &plan->entries[i];

                if (strcmp(en->syscall, name) != 0)
                        continue;
                if ((!en->has_cmp || denied_by(&en->cmp, 1, args[en->cmp.arg])) &&
                    (!en->has_cmp2 || denied_by(&en->cmp2, 1, args[en->cmp2.arg])))
                        return (int) en->action;
        }
        return -1;
}

/* The init's class rule, on the plan of every variant: each argument by
 * which a syscall names a process, a process group or a user is refused
 * (EPERM) when it can name the init — pid 1 (also with high bits set, which
 * the kernel drops), group 1, any user — and nothing else is: the caller
 * (0), its children (2, 4242), "every process but the init" (-1) stay open,
 * except where reduced isolation refuses every other pid. The list is every
 * native syscall with a pid_t or id_t "who" argument (Linux 6.13); those
 * refused outright (ptrace, process_vm_*, pidfd_getfd, perf_event_open)
 * and those that only reach the caller's children (wait4, waitid) are
 * not in it. */
static void test_init_is_named_by_nothing(void **state)
{
        static const struct { const char *name; unsigned arg; } pid_args[] = {
                { "prlimit64", 0 }, { "setpriority", 1 }, { "getpriority", 1 }, { "ioprio_set", 1 },
                { "ioprio_get", 1 }, { "sched_setaffinity", 0 }, { "sched_getaffinity", 0 },
                { "sched_setscheduler", 0 }, { "sched_getscheduler", 0 }, { "sched_setparam", 0 },
                { "sched_getparam", 0 }, { "sched_setattr", 0 }, { "sched_getattr", 0 },
                { "sched_rr_get_interval", 0 }, { "migrate_pages", 0 }, { "move_pages", 0 },
                { "get_robust_list", 0 }, { "kcmp", 0 }, { "kcmp", 1 }, { "pidfd_open", 0 }, { "kill", 0 },
                { "tkill", 0 }, { "tgkill", 0 }, { "tgkill", 1 }, { "rt_sigqueueinfo", 0 },
                { "rt_tgsigqueueinfo", 0 }, { "rt_tgsigqueueinfo", 1 }, { "setpgid", 0 }, { "setpgid", 1 },
                { "getpgid", 0 }, { "getsid", 0 },
        };
        /* which = PRIO_USER / IOPRIO_WHO_USER: every process of a uid */
        static const struct { const char *name; uint64_t user; } user_forms[] = {
                { "setpriority", PRIO_USER }, { "getpriority", PRIO_USER }, { "ioprio_set", 3 }, { "ioprio_get", 3 },
        };
        size_t n_rules;
        const struct filter_rule *rules = filter_rules(&n_rules);

        (void) state;
        for (int v = 0; v < FILTER_VARIANTS; v++) {
                const struct filter_spec spec = filter_variant_spec(v);
                struct filter_plan plan;
                struct nsb_error e;

                if (filter_plan_build(rules, n_rules, &spec, &plan, &e) < 0)
                        fail_msg("variant %d: %s", v, e.msg);
                for (size_t i = 0; i < ARRAY_SIZE(pid_args); i++) {
                        static const uint64_t init[] = { FILTER_INIT_PID, (1ull << 32) | FILTER_INIT_PID,
                                                         0xffffffff00000001ull };
                        static const uint64_t others[] = { 0, 2, 4242, UINT64_MAX /* -1 */ };
                        const char *name = pid_args[i].name;
                        uint64_t args[6] = { 0 };

                        for (size_t k = 0; k < ARRAY_SIZE(init); k++) {
                                args[pid_args[i].arg] = init[k];
                                if (plan_verdict(&plan, name, args) != FILTER_EPERM)
                                        fail_msg("variant %d: %s(arg%u = 0x%llx) names the init and is allowed", v,
                                                 name, pid_args[i].arg, (unsigned long long) init[k]);
                        }
                        for (size_t k = 0; k < ARRAY_SIZE(others) && !spec.reduced; k++) {
                                args[pid_args[i].arg] = others[k];
                                if (plan_verdict(&plan, name, args) != -1)
                                        fail_msg("variant %d: %s(arg%u = 0x%llx) is refused: not the init", v, name,
                                                 pid_args[i].arg, (unsigned long long) others[k]);
                        }
                }
                for (size_t i = 0; i < ARRAY_SIZE(user_forms); i++) {
                        for (uint64_t who = 0; who < 3; who++) {
                                const uint64_t args[6] = { user_forms[i].user, who };
                                if (plan_verdict(&plan, user_forms[i].name, args) != FILTER_EPERM)
                                        fail_msg("variant %d: %s for a whole user (who %llu) is allowed", v,
                                                 user_forms[i].name, (unsigned long long) who);
                        }
                        /* the caller itself (which 0 = PRIO_PROCESS; 1 = IOPRIO_WHO_PROCESS) */
                        const uint64_t self[6] = { user_forms[i].user == PRIO_USER ? PRIO_PROCESS : 1, 0 };
                        if (plan_verdict(&plan, user_forms[i].name, self) != -1)
                                fail_msg("variant %d: %s of the caller itself is refused", v, user_forms[i].name);
                }
                /* prctl names a pid in one option only, refused whole */
                const uint64_t sched_core[6] = { 62 /* PR_SCHED_CORE */, 2 /* SHARE_TO */, FILTER_INIT_PID };
                const uint64_t set_name[6] = { 15 /* PR_SET_NAME */ };
                if (plan_verdict(&plan, "prctl", sched_core) != FILTER_EPERM ||
                    plan_verdict(&plan, "prctl", set_name) != -1)
                        fail_msg("variant %d: prctl: PR_SCHED_CORE must be refused, PR_SET_NAME allowed", v);
                filter_plan_free(&plan);
        }
}

/* A CPU clock id, ((~pid) << 3) | kind with bit 2 for a thread: the
 * process clocks of any pid but 0 are refused on the low 32 bits, in every
 * variant; the caller's own (pid 0, CLOCK_PROCESS_CPUTIME_ID 2 and the
 * other fixed clocks) and every thread clock stay. */
static void test_others_cpu_clocks_refused(void **state)
{
        static const char *const calls[] = { "clock_gettime", "clock_getres", "clock_nanosleep", "timer_create" };
        static const uint32_t pids[] = { 1, 2, 3, 4242, 65535, 0x3fffff, 0x400000, 0x0ffffffe, 0x0fffffff }; /* 29 bits */
        size_t n_rules;
        const struct filter_rule *rules = filter_rules(&n_rules);

        (void) state;
        for (int v = 0; v < FILTER_VARIANTS; v++) {
                const struct filter_spec spec = filter_variant_spec(v);
                struct filter_plan plan;
                struct nsb_error e;

                if (filter_plan_build(rules, n_rules, &spec, &plan, &e) < 0)
                        fail_msg("variant %d: %s", v, e.msg);
                for (size_t c = 0; c < ARRAY_SIZE(calls); c++) {
                        for (uint32_t kind = 0; kind < 8; kind++) {
                                const bool thread = kind & FILTER_CLOCK_PERTHREAD;
                                for (size_t p = 0; p < ARRAY_SIZE(pids); p++) {
                                        const uint32_t id = (~pids[p] << 3) | kind;
                                        /* zero- and sign-extended, and with junk above: the kernel reads int */
                                        const uint64_t forms[] = { id, (uint64_t) (int64_t) (int32_t) id,
                                                                   (0xdeadull << 32) | id };
                                        for (size_t f = 0; f < ARRAY_SIZE(forms); f++) {
                                                const uint64_t args[6] = { forms[f] };
                                                int got = plan_verdict(&plan, calls[c], args);
                                                if (got != (thread ? -1 : FILTER_EPERM))
                                                        fail_msg("variant %d: %s(pid %u kind %u = 0x%llx): %s", v,
                                                                 calls[c], pids[p], kind,
                                                                 (unsigned long long) forms[f],
                                                                 thread ? "a thread clock is refused"
                                                                        : "another process's clock is allowed");
                                        }
                                }
                                /* pid 0: the caller's own clock, both kinds */
                                const uint64_t self[6] = { (uint64_t) (int64_t) (int32_t) (0xfffffff8u | kind) };
                                if (plan_verdict(&plan, calls[c], self) != -1)
                                        fail_msg("variant %d: %s of the caller's own clock (kind %u) is refused", v,
                                                 calls[c], kind);
                        }
                        for (uint64_t fixed = 0; fixed < 16; fixed++) {     /* CLOCK_REALTIME ... CLOCK_TAI */
                                const uint64_t args[6] = { fixed };
                                if (plan_verdict(&plan, calls[c], args) != -1)
                                        fail_msg("variant %d: %s(clock %llu) is refused", v, calls[c],
                                                 (unsigned long long) fixed);
                        }
                }
                filter_plan_free(&plan);
        }
}

/* F_SETPIPE_SZ past the default 16 pages is refused on every variant (the
 * size over all 64 bits: a small size with high bits set is refused too);
 * shrinking, the default and every other fcntl command stay. */
static void test_pipe_growth_refused(void **state)
{
        static const struct { uint64_t cmd, size; int want; } cases[] = {
                { 1031, 65537, FILTER_EPERM }, { 1031, 1 << 20, FILTER_EPERM }, { 1031, 131072, FILTER_EPERM },
                { 1031, UINT32_MAX, FILTER_EPERM }, { 1031, (1ull << 32) | 4096, FILTER_EPERM },
                { (1ull << 32) | 1031, 1 << 20, FILTER_EPERM },
                { 1031, 65536, -1 }, { 1031, 4096, -1 }, { 1031, 0, -1 },
                { 1032 /* F_GETPIPE_SZ */, 1 << 20, -1 }, { 4 /* F_SETFL */, 1 << 20, -1 },
                { 1024 /* F_SETLEASE */, 1 << 20, -1 },
        };
        size_t n_rules;
        const struct filter_rule *rules = filter_rules(&n_rules);

        (void) state;
        for (int v = 0; v < FILTER_VARIANTS; v++) {
                const struct filter_spec spec = filter_variant_spec(v);
                struct filter_plan plan;
                struct nsb_error e;

                if (filter_plan_build(rules, n_rules, &spec, &plan, &e) < 0)
                        fail_msg("variant %d: %s", v, e.msg);
                for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
                        const uint64_t args[6] = { 3, cases[i].cmd, cases[i].size };
                        if (plan_verdict(&plan, "fcntl", args) != cases[i].want)
                                fail_msg("variant %d: fcntl(3, 0x%llx, 0x%llx): want %s", v,
                                         (unsigned long long) cases[i].cmd, (unsigned long long) cases[i].size,
                                         cases[i].want == -1 ? "allowed" : "EPERM");
                }
                filter_plan_free(&plan);
        }
}

static void test_compile_both_specs(void **state)
{
        for (int inet = 0; inet <= 1; inet++) {
                const struct filter_spec spec = { .allow_inet = inet };
                struct filter_prog prog = { 0 };
                struct nsb_error e;

                (void) state;
                if (filter_compile(&spec, &prog, &e) < 0)
                        fail_msg("filter_compile(allow_inet=%d): %s", inet, e.msg);
                assert_non_null(prog.insns);
                assert_true(prog.len > FILTER_PROLOGUE_MAX && prog.len <= BPF_MAXINSNS);
                /* The prologue opens the program: first the arch check. */
                assert_int_equal(prog.insns[0].code, BPF_LD | BPF_W | BPF_ABS);
                assert_int_equal(prog.insns[0].k, offsetof(struct seccomp_data, arch));
                assert_int_equal(prog.insns[1].k, seccomp_arch_native());
                filter_prog_free(&prog);
                assert_null(prog.insns);
                filter_prog_free(&prog);        /* twice is harmless */
        }
}

static void test_bad_tables(void **state)
{
        static const uint32_t unsorted[] = { 2, 1 };
        const struct filter_rule unknown[] = {
                { "no_such_syscall_xyz", FILTER_EPERM, FILTER_ALWAYS, { FILTER_COND_NONE, 0, 0, NULL, 0, 0, 0 },
                  "a test of the unknown-name check" },
        };
        const struct filter_rule no_threat[] = {
                { "getpid", FILTER_EPERM, FILTER_ALWAYS, { FILTER_COND_NONE, 0, 0, NULL, 0, 0, 0 }, "" },
        };
        const struct filter_rule bad_set[] = {
                { "socket", FILTER_EPERM, FILTER_ALWAYS, { FILTER_COND_NOT_IN32, 0, 0, unsorted, 2, 0, 0 },
                  "a test of the sorted-set check" },
        };
        const struct filter_spec spec = { 0 };
        struct filter_prog prog = { 0 };
        struct nsb_error e;

        (void) state;
        nsb_error_clear(&e);
        assert_int_equal(filter_compile_rules(unknown, 1, &spec, &prog, &e), -EINVAL);
        assert_int_equal(e.stage, NSB_STAGE_SECCOMP);
        assert_non_null(strstr(e.msg, "no_such_syscall_xyz"));
        assert_null(prog.insns);
        assert_true(filter_compile_rules(no_threat, 1, &spec, &prog, &e) < 0);
        assert_non_null(strstr(e.msg, "threat"));
        assert_true(filter_compile_rules(bad_set, 1, &spec, &prog, &e) < 0);
        assert_non_null(strstr(e.msg, "sorted"));
}

/* Without NNP, filter_load refuses (even where the kernel would accept, as
 * root or with CAP_SYS_ADMIN in a user namespace) and claims nothing. */
static int setup_load_without_nnp(void *arg)
{
        struct nsb_ledger ledger;
        struct nsb_error e;

        ledger_init(&ledger);
        if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 0)
                return EPROTO;
        if (filter_load(arg, &ledger, &e) != -EACCES)
                return EPROTO;
        if (e.stage != NSB_STAGE_SECCOMP || !strstr(e.msg, "no_new_privs"))
                return EPROTO;
        if (strcmp(ledger_get(&ledger, PROT_SECCOMP), "unavailable") != 0)
                return EPROTO;
        return 0;
}

static void test_load_requires_nnp(void **state)
{
        const struct filter_spec spec = { 0 };
        struct filter_prog prog = { 0 };
        struct outcome o = { .kind = OUTCOME_LOST };
        struct nsb_error e;

        (void) state;
        assert_int_equal(filter_compile(&spec, &prog, &e), 0);
        assert_int_equal(run_attempt(find_attempt("ptrace"), setup_load_without_nnp, &prog, &o), 0);
        filter_prog_free(&prog);
        if (o.kind != OUTCOME_RETURNED)
                fail_msg("filter_load without NNP did not fail cleanly (outcome %d, err %d)", o.kind, o.err);
        /* No filter was loaded: ptrace(-1) reaches the kernel. */
        assert_int_equal(o.err, ESRCH);
}

/* The programs compiled at build time are exactly what libseccomp compiles
 * from the rule table now: a rule added, removed or changed without the
 * generator rerunning would fail here. */
static void test_precompiled_matches_table(void **state)
{
        (void) state;
        assert_non_null(&filter_precompiled_programs);
        for (int v = 0; v < FILTER_VARIANTS; v++) {
                const struct filter_spec spec = filter_variant_spec(v);
                struct filter_prog fresh = { 0 }, used = { 0 };
                struct nsb_error e;

                if (filter_compile_libseccomp(&spec, &fresh, &e) < 0)
                        fail_msg("libseccomp: %s", e.msg);
                if (filter_compile(&spec, &used, &e) < 0)
                        fail_msg("filter_compile: %s", e.msg);
                assert_int_equal(filter_precompiled_programs.len[v], fresh.len);
                assert_int_equal(used.len, fresh.len);
                assert_memory_equal(filter_precompiled_programs.insns[v], fresh.insns,
                                    fresh.len * sizeof *fresh.insns);
                assert_memory_equal(used.insns, fresh.insns, fresh.len * sizeof *fresh.insns);
                filter_prog_free(&fresh);
                filter_prog_free(&used);
        }
        /* the variants differ from each other (inet rules, reduced rules) */
        for (int a = 0; a < FILTER_VARIANTS; a++)
                for (int b = a + 1; b < FILTER_VARIANTS; b++)
                        assert_true(filter_precompiled_programs.len[a] != filter_precompiled_programs.len[b] ||
                                    memcmp(filter_precompiled_programs.insns[a], filter_precompiled_programs.insns[b],
                                           filter_precompiled_programs.len[a] * sizeof(struct sock_filter)) != 0);
        /* a profile's additions are no variant: compiled at run time */
        {
                char *const deny[] = { "uname" };
                const struct filter_spec extra = { .extra_deny = deny, .n_extra_deny = 1 };
                assert_int_equal(filter_variant_of(&extra), -1);
        }
}

/* "name:NR" names a syscall newer than libseccomp, and must not contradict it. */
/* ---- the tree layout against libseccomp's chain ---------------------------- */

/* A classic BPF interpreter for what libseccomp emits; any other opcode fails
 * the test (never guessed). Returns the program's seccomp return value. */
static uint32_t run_cbpf(const struct filter_prog *p, const struct seccomp_data *d)
{
        uint32_t a = 0, x = 0, mem[BPF_MEMWORDS] = { 0 };
        const uint8_t *data = (const uint8_t *) d;

        for (unsigned pc = 0; pc < p->len; pc++) {
                const struct sock_filter *i = &p->insns[pc];
                uint32_t k = i->k;

                switch (i->code) {
                case BPF_LD | BPF_W | BPF_ABS:
                        assert_true(k % 4 == 0 && k + 4 <= sizeof *d);
                        memcpy(&a, data + k, 4);
                        break;
                case BPF_LD | BPF_IMM: a = k; break;
                case BPF_LDX | BPF_IMM: x = k; break;
                case BPF_LD | BPF_MEM: assert_true(k < BPF_MEMWORDS); a = mem[k]; break;
                case BPF_LDX | BPF_MEM: assert_true(k < BPF_MEMWORDS); x = mem[k]; break;
                case BPF_ST: assert_true(k < BPF_MEMWORDS); mem[k] = a; break;
                case BPF_STX: assert_true(k < BPF_MEMWORDS); mem[k] = x; break;
                case BPF_ALU | BPF_AND | BPF_K: a &= k; break;
                case BPF_ALU | BPF_OR | BPF_K: a |= k; break;
                case BPF_MISC | BPF_TAX: x = a; break;
                case BPF_MISC | BPF_TXA: a = x; break;
                case BPF_JMP | BPF_JA: pc += k; break;
                case BPF_JMP | BPF_JEQ | BPF_K: pc += a == k ? i->jt : i->jf; break;
                case BPF_JMP | BPF_JGT | BPF_K: pc += a > k ? i->jt : i->jf; break;
                case BPF_JMP | BPF_JGE | BPF_K: pc += a >= k ? i->jt : i->jf; break;
                case BPF_JMP | BPF_JSET | BPF_K: pc += (a & k) ? i->jt : i->jf; break;
                case BPF_JMP | BPF_JEQ | BPF_X: pc += a == x ? i->jt : i->jf; break;
                case BPF_JMP | BPF_JGT | BPF_X: pc += a > x ? i->jt : i->jf; break;
                case BPF_JMP | BPF_JGE | BPF_X: pc += a >= x ? i->jt : i->jf; break;
                case BPF_RET | BPF_K: return k;
                case BPF_RET | BPF_A: return a;
                default:
                        fail_msg("opcode 0x%04x at %u not modelled", i->code, pc);
                }
        }
        fail_msg("program fell off its end");
        return 0;
}

/* Argument values around every comparison of the plan: each datum, one off,
 * with the bits outside its mask flipped, the high word set; and the edges. */
static size_t interesting_values(const struct filter_plan *plan, uint64_t *out, size_t cap)
{
        size_t n = 0;
        const uint64_t edges[] = { 0, 1, ~0ULL, 0xffffffffULL, 1ULL << 32, 0x80000000ULL };

        for (size_t i = 0; i < sizeof edges / sizeof edges[0] && n < cap; i++)
                out[n++] = edges[i];
        for (size_t i = 0; i < plan->n_entries; i++) {
                const struct filter_cmp *c[2] = { plan->entries[i].has_cmp ? &plan->entries[i].cmp : NULL,
                                                  plan->entries[i].has_cmp2 ? &plan->entries[i].cmp2 : NULL };
                for (int j = 0; j < 2; j++) {
                        uint64_t d;
                        if (!c[j] || n + 6 > cap)
                                continue;
                        d = c[j]->datum;
                        out[n++] = d;
                        out[n++] = d + 1;
                        out[n++] = d - 1;
                        out[n++] = d | ~c[j]->mask;
                        out[n++] = d ^ (c[j]->mask & (0 - c[j]->mask));        /* its lowest mask bit flipped */
                        out[n++] = d | (1ULL << 32);
                }
        }
        return n;
}

/* Every syscall number (and the x32 bit, and a foreign arch) with argument
 * values from the rules, deterministic and random: the tree layout must give
 * the chain's verdict on each. */
static void test_tree_layout_same_verdicts(void **state)
{
        size_t n_rules;
        const struct filter_rule *rules = filter_rules(&n_rules);
        static uint64_t vals[8192];

        (void) state;
        srandom(28);
        for (int v = 0; v < FILTER_VARIANTS; v++) {
                const struct filter_spec spec = filter_variant_spec(v);
                struct filter_prog tree = { 0 }, chain = { 0 };
                struct filter_plan plan = { 0 };
                struct nsb_error e;
                size_t n_vals;
                unsigned long checked = 0;
                const uint32_t arches[] = { seccomp_arch_native(), AUDIT_ARCH_I386 };

                if (filter_compile_rules_layout(rules, n_rules, &spec, FILTER_LAYOUT_TREE, &tree, &e) < 0 ||
                    filter_compile_rules_layout(rules, n_rules, &spec, FILTER_LAYOUT_CHAIN, &chain, &e) < 0 ||
                    filter_plan_build(rules, n_rules, &spec, &plan, &e) < 0)
                        fail_msg("compile: %s", e.msg);
                /* the shipped program is the tree */
                assert_int_equal(filter_precompiled_programs.len[v], tree.len);
                assert_memory_equal(filter_precompiled_programs.insns[v], tree.insns, tree.len * sizeof *tree.insns);
                n_vals = interesting_values(&plan, vals, sizeof vals / sizeof vals[0]);
                for (size_t ai = 0; ai < 2; ai++) {
                        for (int64_t nr = -1; nr < 1100; nr++) {
                                for (int xbit = 0; xbit < 2; xbit++) {
                                        struct seccomp_data d = { .arch = arches[ai],
                                                                  .nr = (int) (nr | (xbit ? 0x40000000 : 0)) };
                                        for (int round = 0; round < 48; round++) {
                                                for (int a = 0; a < 6; a++) {
                                                        long r = random();
                                                        d.args[a] = round == 0 ? 0
                                                                  : r % 4 == 0 ? ((uint64_t) random() << 33) ^ (uint64_t) random()
                                                                  : vals[(size_t) r % n_vals];
                                                }
                                                if (run_cbpf(&tree, &d) != run_cbpf(&chain, &d))
                                                        fail_msg("variant %d: nr %d arch %#x args %#llx %#llx %#llx: tree %#x, chain %#x",
                                                                 v, d.nr, d.arch, (unsigned long long) d.args[0],
                                                                 (unsigned long long) d.args[1], (unsigned long long) d.args[2],
                                                                 run_cbpf(&tree, &d), run_cbpf(&chain, &d));
                                                checked++;
                                        }
                                }
                        }
                }
                /* each comparison's own syscall, each value on its argument(s) */
                for (size_t i = 0; i < plan.n_entries; i++) {
                        const struct filter_entry *en = &plan.entries[i];
                        int nr = filter_syscall_nr(en->syscall);
                        if (!en->has_cmp || nr < 0)
                                continue;
                        for (size_t x = 0; x < n_vals; x++) {
                                for (size_t y = 0; y < (en->has_cmp2 ? n_vals : 1); y++) {
                                        struct seccomp_data d = { .arch = arches[0], .nr = nr };
                                        d.args[en->cmp.arg] = vals[x];
                                        if (en->has_cmp2)
                                                d.args[en->cmp2.arg] = vals[y];
                                        if (run_cbpf(&tree, &d) != run_cbpf(&chain, &d))
                                                fail_msg("variant %d: %s args[%u]=%#llx: tree %#x, chain %#x", v,
                                                         en->syscall, en->cmp.arg, (unsigned long long) vals[x],
                                                         run_cbpf(&tree, &d), run_cbpf(&chain, &d));
                                        checked++;
                                }
                        }
                }
                print_message("variant %d: tree %u, chain %u instructions; %lu inputs, same verdicts\n", v,
                              (unsigned) tree.len, (unsigned) chain.len, checked);
                filter_plan_free(&plan);
                filter_prog_free(&tree);
                filter_prog_free(&chain);
        }
}

static void test_syscall_numbers(void **state)
{
        (void) state;
        assert_int_equal(filter_syscall_nr("setxattrat:463"), 463);
        assert_int_equal(filter_syscall_nr("fchmodat2:452"), 452);            /* known, and agrees */
        assert_int_equal(filter_syscall_nr("fchmodat2:453"), __NR_SCMP_ERROR); /* known, disagrees */
        assert_int_equal(filter_syscall_nr("old:12"), __NR_SCMP_ERROR);       /* below the unified table */
        assert_int_equal(filter_syscall_nr("x:46z"), __NR_SCMP_ERROR);
        assert_int_equal(filter_syscall_nr("no_such_call"), __NR_SCMP_ERROR);
        assert_true(filter_syscall_nr("ptrace") >= 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_table_invariants),
                cmocka_unit_test(test_expectations_cover_fixture),
                cmocka_unit_test(test_not_in32_expansion),
                cmocka_unit_test(test_init_is_named_by_nothing),
                cmocka_unit_test(test_others_cpu_clocks_refused),
                cmocka_unit_test(test_pipe_growth_refused),
                cmocka_unit_test(test_compile_both_specs),
                cmocka_unit_test(test_precompiled_matches_table),
                cmocka_unit_test(test_tree_layout_same_verdicts),
                cmocka_unit_test(test_bad_tables),
                cmocka_unit_test(test_load_requires_nnp),
                cmocka_unit_test(test_probe_no_inet),
                cmocka_unit_test(test_probe_inet),
                cmocka_unit_test(test_probe_reduced),
                cmocka_unit_test(test_foreign_abi_verdict_table),
                cmocka_unit_test(test_probe_foreign_abi_both_branches),
                cmocka_unit_test(test_probe_rlimit_memory),
                cmocka_unit_test(test_syscall_numbers),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
