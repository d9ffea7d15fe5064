/* Unit tests for ns/ucount_plan.c: each sandbox's share of the per-user
 * budgets the kernel counts across user-namespace levels (issue #27). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "ns/ucount.h"

static struct ucount_budget budget(uint64_t sig, uint64_t mq, uint64_t memlock)
{
        struct ucount_budget b = { .rlimit = { [UCOUNT_RL_SIGPENDING] = sig, [UCOUNT_RL_MSGQUEUE] = mq,
                                               [UCOUNT_RL_MEMLOCK] = memlock } };
        return b;
}

/* A single run on a default host: the caps (1024 signals) or a quarter of
 * the caller's budget, whichever is smaller; every namespace maximum 0. */
static void test_single_run(void **state)
{
        struct ucount_budget b = budget(96367, 819200, 8u << 20);
        struct ucount_share s;

        (void) state;
        ucount_plan_sandbox(&b, 1, 64, &s);
        assert_int_equal(s.rlimit[UCOUNT_RL_SIGPENDING], 1024);
        assert_int_equal(s.rlimit[UCOUNT_RL_MSGQUEUE], 819200 / 4);
        assert_int_equal(s.rlimit[UCOUNT_RL_MEMLOCK], (8u << 20) / 4);
        assert_true(s.set_max);
        for (unsigned i = 0; i < UCOUNT_MAX_N; i++)
                assert_int_equal(s.max[i], 0);
}

/* N slots: together never more than a quarter of the budget, so no
 * sandbox's use can reach a level it shares with another or the caller. */
static void test_split_bounds_the_sum(void **state)
{
        struct ucount_budget b = budget(3000, 819200, 8u << 20);

        (void) state;
        for (unsigned slots = 1; slots <= 64; slots++) {
                struct ucount_share s;
                ucount_plan_sandbox(&b, slots, 1, &s);
                for (unsigned i = 0; i < UCOUNT_RL_N; i++) {
                        assert_true(s.rlimit[i] * slots <= b.rlimit[i] / UCOUNT_CALLER_SHARE);
                        assert_true(s.rlimit[i] != UCOUNT_KEEP);
                }
        }
}

/* Unlimited budgets (RLIM_INFINITY) still give the caps, never "keep". */
static void test_unlimited_budget_capped(void **state)
{
        struct ucount_budget b = budget(UINT64_MAX, UINT64_MAX, UINT64_MAX);
        struct ucount_share s;

        (void) state;
        ucount_plan_sandbox(&b, 0, 4194304, &s);   /* 0 slots is read as 1 */
        assert_int_equal(s.rlimit[UCOUNT_RL_SIGPENDING], UCOUNT_CAP_SIGPENDING);
        assert_int_equal(s.rlimit[UCOUNT_RL_MSGQUEUE], UCOUNT_CAP_MSGQUEUE);
        assert_int_equal(s.rlimit[UCOUNT_RL_MEMLOCK], UCOUNT_CAP_MEMLOCK);
}

/* A tiny budget splits to 0 rather than to more than the budget. */
static void test_tiny_budget(void **state)
{
        struct ucount_budget b = budget(3, 0, 4096);
        struct ucount_share s;

        (void) state;
        ucount_plan_sandbox(&b, 2, 1, &s);
        assert_int_equal(s.rlimit[UCOUNT_RL_SIGPENDING], 0);
        assert_int_equal(s.rlimit[UCOUNT_RL_MSGQUEUE], 0);
        assert_int_equal(s.rlimit[UCOUNT_RL_MEMLOCK], 512);
}

/* The zygote keeps the caller's rlimits (each job's parent-level maximum)
 * and writes no maxima: it must still create every job's namespaces. */
static void test_zygote_keeps(void **state)
{
        struct ucount_share s;

        (void) state;
        memset(&s, 0x55, sizeof s);
        ucount_plan_zygote(&s);
        for (unsigned i = 0; i < UCOUNT_RL_N; i++)
                assert_true(s.rlimit[i] == UCOUNT_KEEP);
        assert_false(s.set_max);
}

/* Standard signals skip RLIMIT_SIGPENDING (si_code >= 0) but are charged
 * at every level, up to 64 a task: a sandbox's worst case above its own
 * level is its share + 64 x (pids + 1), and the plan keeps slots x that
 * within a quarter of the budget whenever it can; else the share is 0. */
/* Whatever every task queues, the sandboxes of one invocation never fill a
 * shared level between them: slots x worst case <= the whole budget, and the
 * share itself stays within the quarter and the cap. */
static void test_standard_signals_fit_the_budget(void **state)
{
        static const uint64_t budgets[] = { 0, 1, 100, 2048, 4096, 65536, 96367, 1000000, UINT64_MAX };
        static const uint64_t pidss[] = { 1, 2, 3, 7, 40, 64, 2100, 4194304 };

        (void) state;
        for (size_t bi = 0; bi < sizeof budgets / sizeof budgets[0]; bi++)
                for (unsigned slots = 1; slots <= 16; slots++)
                        for (size_t pi = 0; pi < sizeof pidss / sizeof pidss[0]; pi++) {
                                struct ucount_budget b = budget(budgets[bi], 819200, 8u << 20);
                                const uint64_t pids = pidss[pi], quarter = b.rlimit[0] / (4ull * slots);
                                const uint64_t per_slot = b.rlimit[0] / slots, over = 64 * (pids + 1);
                                const uint64_t room = per_slot > over ? per_slot - over : 0;
                                uint64_t want = quarter < UCOUNT_CAP_SIGPENDING ? quarter : UCOUNT_CAP_SIGPENDING;
                                struct ucount_share s;

                                if (room < want)
                                        want = room;
                                ucount_plan_sandbox(&b, slots, pids, &s);
                                assert_int_equal(s.rlimit[UCOUNT_RL_SIGPENDING], want);
                                assert_int_equal(ucount_sig_worst(&s, pids), s.rlimit[UCOUNT_RL_SIGPENDING] + over);
                                if (per_slot >= over)   /* the bound holds: together within the budget */
                                        assert_true(ucount_sig_worst(&s, pids) <= per_slot);
                                /* the other budgets are not touched by the task count */
                                assert_int_equal(s.rlimit[UCOUNT_RL_MSGQUEUE], 819200 / (4ull * slots));
                        }
}

/* The reviewer's case: a caller limit of 2048, batch -j 2, --pids 64: 1024
 * per slot is below 64 x 65, so no queued signal at all (before: 256, and a
 * job of 41 processes held 256 + 41 x 58 at the caller's level, past 2048:
 * the other job got 0 of its 256). A default root host (96367): -j 2 and
 * -j 16 at --pids 64 keep the cap (16 x (1024 + 4160) <= 96367); -j 20
 * leaves 4818 - 4160. */
static void test_reviewer_figures(void **state)
{
        struct ucount_budget small = budget(2048, 819200, 8u << 20), host = budget(96367, 819200, 8u << 20);
        struct ucount_share s;

        (void) state;
        ucount_plan_sandbox(&small, 2, 64, &s);
        assert_int_equal(s.rlimit[UCOUNT_RL_SIGPENDING], 0);
        ucount_plan_sandbox(&small, 2, 2, &s);
        assert_int_equal(s.rlimit[UCOUNT_RL_SIGPENDING], 256);   /* the quarter: 1024 - 192 is more */
        assert_true(2 * ucount_sig_worst(&s, 2) <= 2048);
        ucount_plan_sandbox(&host, 2, 64, &s);
        assert_int_equal(s.rlimit[UCOUNT_RL_SIGPENDING], UCOUNT_CAP_SIGPENDING);
        ucount_plan_sandbox(&host, 16, 64, &s);
        assert_int_equal(s.rlimit[UCOUNT_RL_SIGPENDING], UCOUNT_CAP_SIGPENDING);
        ucount_plan_sandbox(&host, 20, 64, &s);
        assert_int_equal(s.rlimit[UCOUNT_RL_SIGPENDING], 96367 / 20 - 64 * 65);
        ucount_plan_sandbox(&host, 2, 2100, &s);
        assert_int_equal(s.rlimit[UCOUNT_RL_SIGPENDING], 0);   /* 48183 per slot < 64 x 2101 */
}

static void test_names(void **state)
{
        (void) state;
        assert_string_equal(ucount_max_name(UCOUNT_MAX_USER_NS), "max_user_namespaces");
        assert_string_equal(ucount_max_name(UCOUNT_MAX_INOTIFY_INSTANCES), "max_inotify_instances");
        assert_string_equal(ucount_max_name(UCOUNT_MAX_FANOTIFY_MARKS), "max_fanotify_marks");
        for (unsigned i = 0; i < UCOUNT_MAX_N; i++)
                assert_true(strncmp(ucount_max_name(i), "max_", 4) == 0);
        assert_string_equal(ucount_rl_name(UCOUNT_RL_SIGPENDING), "RLIMIT_SIGPENDING");
        assert_string_equal(ucount_max_name(UCOUNT_MAX_N), "?");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_single_run),
                cmocka_unit_test(test_split_bounds_the_sum),
                cmocka_unit_test(test_unlimited_budget_capped),
                cmocka_unit_test(test_tiny_budget),
                cmocka_unit_test(test_standard_signals_fit_the_budget),
                cmocka_unit_test(test_reviewer_figures),
                cmocka_unit_test(test_zygote_keeps),
                cmocka_unit_test(test_names),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
