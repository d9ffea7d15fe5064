/* util/exitcode.h — nsbox's exit statuses, defined once.
 *
 * Owns: the numbers a caller's script tests. Every command maps its own
 * outcomes onto these (judge and test: verdicts; batch: bad lines; report:
 * no valid line); nothing else spells them as literals.
 * Invariants: NSB_EXIT_FAILURE (125) means nsbox itself failed — usage,
 * configuration, set-up — and is never a program's or a verdict's status;
 * 124 and 130 are timeout(1)'s and the shell's conventions, 126/127
 * timeout(1)'s for a command that could not be run. */
#pragma once

enum nsb_exit {
        NSB_EXIT_OK = 0,
        NSB_EXIT_FAIL = 1,              /* judge, test: a case failed; report: no valid line */
        NSB_EXIT_BAD_LINES = 2,         /* batch: some lines could not become jobs */
        NSB_EXIT_UNDETERMINED = 3,      /* judge, test: no verdict could be reached */
        NSB_EXIT_LIMIT = 124,           /* run, python: a limit stopped the program */
        NSB_EXIT_FAILURE = 125,         /* nsbox itself failed */
        NSB_EXIT_NOT_EXECUTABLE = 126,  /* run: COMMAND exists but cannot be executed */
        NSB_EXIT_NOT_FOUND = 127,       /* run: COMMAND does not exist */
        NSB_EXIT_SIGNAL_BASE = 128,     /* + N: the program was killed by signal N */
        NSB_EXIT_CANCELLED = 130,       /* SIGINT, SIGTERM, SIGHUP: the whole tree was killed */
};
