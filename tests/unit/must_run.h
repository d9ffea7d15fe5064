/* tests/unit/must_run.h — skip, or fail when skipping would hide something.
 *
 * A test whose host lacks what it needs (a user namespace, Landlock, a
 * usable cgroup) is skipped; under NSBOX_TESTS_MUST_RUN=1 (CI: a host that
 * has everything) the same skip would hide a regression, so it fails.
 * Include after <cmocka.h>.
 */
#pragma once

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static inline bool tests_must_run(void)
{
        const char *v = getenv("NSBOX_TESTS_MUST_RUN");

        return v && strcmp(v, "1") == 0;
}

/* @fmt says what is missing ("Landlock is unavailable"). */
#define skip_or_fail(fmt, ...)                                                                  \
        do {                                                                                    \
                if (tests_must_run())                                                           \
                        fail_msg("NSBOX_TESTS_MUST_RUN=1 but " fmt, ##__VA_ARGS__);             \
                print_message("skipping: " fmt "\n", ##__VA_ARGS__);                            \
                skip();                                                                         \
        } while (0)
