/* testcmd/testcmd.h — `nsbox test --harness DIR`: hidden tests against a workspace.
 *
 * Owns: the driver that runs harness/nsbox_test_runner.py in one sandbox
 * (runner dir read-only at /nsbox, harness read-only at /harness, workspace at
 * /workspace), the results channel (a pipe given to the runner as fd 3 and
 * read only by nsbox), the verdict rules of harness/README.md and the
 * `nsbox.tests/1` rendering.
 *
 * Invariants:
 *   - results come only from the channel, never from the program's
 *     stdout/stderr, so text printed by the code under test is never a result;
 *   - the channel is trusted only when complete (start, one test event per
 *     announced test in order, done with a matching count);
 *   - a sandbox failure is `undetermined`, never `fail`; a limit is `fail`.
 * Layers: testcmd_plan.c is pure (channel parsing, verdict, rendering);
 * testcmd_run.c finds the runner, makes the pipe and calls sbx_run().
 */
#pragma once

#include <stdio.h>

#include "config/config.h"
#include "frame/frame.h"
#include "util/error.h"

#define TESTCMD_SCHEMA "nsbox.tests/1"
#define TESTCMD_EXIT_PASS NSB_EXIT_OK
#define TESTCMD_EXIT_FAIL NSB_EXIT_FAIL
#define TESTCMD_EXIT_UNDETERMINED NSB_EXIT_UNDETERMINED
#define TESTCMD_EXIT_SETUP NSB_EXIT_FAILURE

/* The whole command: run the harness's tests against cli->workspace, print
 * the report to run->out (JSON with cli->json, else a pytest-like summary), write
 * it to cli->result_path if set. Returns the exit status: 0 pass, 1 fail,
 * 3 undetermined, or 125 with @e filled (usage or set-up error; the caller
 * prints @e). */
int test_main(const struct frame_run *run, struct nsb_error *e);
