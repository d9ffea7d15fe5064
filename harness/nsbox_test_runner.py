#!/usr/bin/env python3
"""nsbox test runner: run hidden tests against a learner's workspace.

Runs inside the sandbox as

    python3 -I -B /nsbox/nsbox_test_runner.py --harness /harness \
        --workspace /workspace --budget SECONDS [--test-budget SECONDS] \
        [--channel-fd 3]

with the working directory /workspace.  Standard library only (Python 3.8+,
tested on 3.11).  See harness/README.md for the channel protocol and for what
the code under test can and cannot do to the results.

Design in one paragraph: the main process never executes learner code.  It
finds tests statically (``ast``), compiles each ``test_*.py`` once with its
``assert`` statements rewritten to explain failed comparisons, then runs every
test in a forked child that first closes the results channel, then imports the
test module (and so the learner's code), runs one test and writes one JSON
report to a per-test pipe.  The parent enforces the time budget, kills the
child's process group, turns any exit without a well-formed report into an
``error`` and writes one JSON line per test to the channel.

The code is the package nsbox_runner beside this file, by concern: base
(limits, text helpers), explain and rewrite (asserts), discover, traces, child
(one test), supervise (the parent), summary, main. -I leaves this directory
off sys.path; it is put first so that no harness or workspace module can stand
in for the runner's own, and taken off again before any test code runs.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from nsbox_runner.main import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
