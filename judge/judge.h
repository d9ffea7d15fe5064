/* judge/judge.h — `nsbox judge`: run one program against cases, give a verdict.
 *
 * Owns: the judge spec (CONTRACT "Judge spec and verdict"), the matchers, the
 * case and suite verdicts, their rendering, and the driver that runs each case
 * in a fresh sandbox through sbx_run().
 *
 * Invariants:
 *   - stimulus and expectation are different types. Only a struct
 *     judge_stimulus (args, stdin) and the program bytes go into a
 *     struct sbx_request; a struct judge_expect is read by judge_case_verdict()
 *     alone, so expected output can never reach the sandbox;
 *   - a case fails only on evidence (wrong exit code or output, a limit, a
 *     signal); a sandbox error, a cancel, or cut output that cannot settle a
 *     check is `undetermined`, never `fail`;
 *   - every regex is compiled while the spec is parsed, so a bad pattern is a
 *     bad spec (exit 125), never a verdict.
 * Layers: spec_parse.c, judge_plan.c and judge_render.c are pure (allocation
 * only); judge_run.c reads files and calls sbx_run().
 */
#pragma once

#ifndef PCRE2_CODE_UNIT_WIDTH
#define PCRE2_CODE_UNIT_WIDTH 8
#endif
#include <jansson.h>
#include <pcre2.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "config/config.h"
#include "frame/frame.h"
#include "profile/profile.h"
#include "result/result.h"
#include "util/error.h"

#define JUDGE_SCHEMA "nsbox.verdict/1"
#define JUDGE_REASON_MAX 512
#define JUDGE_EXIT_BAD_SPEC NSB_EXIT_FAILURE

enum judge_verdict { JUDGE_PASS = 0, JUDGE_FAIL, JUDGE_UNDETERMINED, JUDGE_NOT_RUN };

enum judge_match_kind { JUDGE_MATCH_NONE = 0, JUDGE_MATCH_EQUALS, JUDGE_MATCH_CONTAINS, JUDGE_MATCH_REGEX };

/* What enters the sandbox for one case, besides the program. */
struct judge_stimulus {
        char **args;                 /* after /program/NAME */
        size_t n_args;
        char *stdin_data;            /* may hold NUL bytes; NULL = empty stdin */
        size_t stdin_len;
};

/* What never enters the sandbox. */
struct judge_matcher {
        enum judge_match_kind kind;  /* NONE: the stream is not checked */
        char *text;                  /* equals/contains bytes, or the regex source */
        size_t len;
        pcre2_code *re;              /* REGEX: compiled with PCRE2_UTF at parse time */
};

struct judge_expect {
        int exit_code;               /* 0 unless the spec says otherwise */
        struct judge_matcher out, err;
};

struct judge_case {
        char *name;
        double weight;               /* its share of the score: > 0, default 1 */
        struct judge_stimulus stimulus;
        struct judge_expect expect;
};

struct judge_program {
        char *path;                  /* host file, resolved against the spec's directory; or NULL */
        char *source;                /* inline text; or NULL */
        size_t source_len;
        char *name;                  /* placed at /program/NAME: basename(path) or "main.py" */
        char *sandbox_path;          /* "/program/NAME", argv[3] of every case */
        const char *origin;          /* where it was named, for errors: "program.path" or "--program" */
        const char *script;          /* set by judge_run, not parsed: a program.path in the
                                        workspace runs as /workspace/REL/NAME (prog_locate,
                                        program/program.h); NULL = sandbox_path */
        const char *workdir;         /* its working directory inside; NULL = /workspace */
};

struct judge_spec {
        struct judge_program program;
        char *profile;               /* NULL = not given */
        char *image;                 /* "image": an image REF (docs/images.md); NULL = not given */
        struct nsb_config limits;    /* overlay: only the limit fields named in limits_set */
        uint32_t limits_set;         /* enum cfg_field bits of the limits it names */
        struct judge_case *cases;
        size_t n_cases;
};

/* One stream as a `nsbox.result/1` object records it: the only bytes a
 * matcher may use (text_base64/tail_base64 when given, else text/tail). */
struct judge_stream_view {
        const char *text;            /* the first `kept` bytes the program wrote, raw */
        size_t kept;
        uint64_t bytes;              /* all that the program wrote */
        bool cut;                    /* bytes > kept */
        const char *tail;            /* the recorded last bytes (cut streams; at most the output limit) */
        size_t tail_len;
};

/* What a case verdict is a function of: read from the recorded result object
 * alone (judge_evidence_parse), for a live run and for a replay alike. */
struct judge_evidence {
        enum run_status status;
        const char *limit;           /* RUN_LIMIT: its name, or NULL */
        const char *limit_value;     /* RUN_LIMIT: its value ("256M"), or NULL (not recorded) */
        int exit_code;               /* RUN_EXITED */
        int signal;                  /* RUN_SIGNALED */
        const char *error_stage;     /* RUN_ERROR */
        const char *error_message;
        struct judge_stream_view out, err;
        char *owned[4];              /* decoded base64, freed by judge_evidence_free */
};

/* One case after it ran (or did not). */
struct judge_case_report {
        const char *name;            /* borrowed from the spec */
        double weight;               /* the spec's */
        enum judge_verdict verdict;
        char reason[JUDGE_REASON_MAX];
        bool ran;                    /* false: not_run, `result_json` is NULL */
        enum run_status status;      /* when ran */
        struct run_result result;    /* a live run's observation (zero in a replay) */
        json_t *result_json;         /* the recorded result object the verdict was read from (owned) */
        char observation_id[65];     /* --observe/--replay: its observation; else "" */
        bool raise_in_spec;          /* a batch or serve job: its spec's limits win over the flags, so a
                                        limit's reason names the spec's key, not the flag */
};

struct judge_report {
        enum judge_verdict verdict;
        char program_sha256[65];
        uint64_t output_limit;       /* passed to the result renderer */
        bool replayed;               /* judged from stored observations: no sandbox ran */
        char start_reason[160];      /* --warm asked, the cases ran cold: why ("" = not asked or warm) */
        struct judge_case_report *cases;
        size_t n_cases;
};

/* Parse and validate a spec (pure). @spec_path locates a relative
 * program.path; it is not opened. Errors: -EINVAL with stage config and a
 * message that starts with the JSON path ("cases[2].expect.stdout: ..."). */
int judge_spec_parse(const char *text, size_t len, const char *spec_path, struct judge_spec *ret,
                     struct nsb_error *e);
void judge_spec_free(struct judge_spec *spec);

/* `judge --program FILE`: grade FILE (from the current directory, when
 * relative) instead of the spec's program, with the same cases. -EINVAL
 * (stage config) for a path that names no file; -ENOMEM. */
int judge_spec_set_program(struct judge_spec *spec, const char *path, struct nsb_error *e);

/* Read the evidence of one case from its `nsbox.result/1` object (pure;
 * pointers into @result, which must outlive it). Strict: a missing or
 * ill-typed key, an unknown status, a base64 field that is not the bytes of
 * its text, or counts that contradict each other is -EINVAL (stage config)
 * with the key's path ("stdout.tail_base64: ..."); -ENOMEM. */
int judge_evidence_parse(const json_t *result, struct judge_evidence *ret, struct nsb_error *e);
void judge_evidence_free(struct judge_evidence *ev);

/* Verdict of one case from its evidence (pure). Fills @ret (verdict and
 * reason); returns 0. */
int judge_case_verdict(const struct judge_expect *x, const struct judge_evidence *r,
                       struct judge_case_report *ret);

/* The reason of judge_case_verdict without the expected values (exit code,
 * equals/contains text, regex): "stdout differs at line 3: got '6'",
 * "stdout does not contain the expected text". For a --junit file without
 * --junit-expected: a CI page may be the learner's. Pure. */
void judge_case_public_reason(const struct judge_expect *x, const struct judge_evidence *r, char *buf, size_t size);

/* Settle case @c from its recorded result object (takes the reference
 * @result; NULL = rendering failed): the verdict is read from that object
 * alone, never from memory the object does not hold. Pure. */
void judge_case_settle(const struct judge_expect *x, json_t *result, struct judge_case_report *c);

/* The totals of a verdict: how many cases have each verdict, and the score:
 * the passed cases' weight over all the cases' weight. scored is false (the
 * score is null) when a case is undetermined or was cancelled before it ran:
 * nsbox could not look at it, so it must not lower the score. A case that
 * --fail-fast skipped counts as not passed. Pure. */
struct judge_tally {
        size_t count[JUDGE_NOT_RUN + 1];
        bool scored;
        double score;                /* 0..1 when scored */
};
void judge_tally(const struct judge_report *rep, struct judge_tally *ret);

/* pass iff every case passed; fail if any failed; else undetermined. */
enum judge_verdict judge_suite_verdict(const struct judge_case_report *cases, size_t n);

/* 0 pass, 1 fail, 3 undetermined. */
int judge_exit_code(enum judge_verdict suite);
const char *judge_verdict_name(enum judge_verdict v);

/* The `nsbox.verdict/1` object (pure). @render_result renders each case's
 * `result` (the driver passes result_to_json). New reference, NULL on ENOMEM. */
/* The verdict's "start": "warm" when every case that ran started warm. */
const char *judge_report_start(const struct judge_report *rep);
json_t *judge_report_to_json(const struct judge_report *rep,
                             json_t *(*render_result)(const struct run_result *r, uint64_t output_limit));

/* Run every case of a parsed @spec (judge_run.c): reads program.path, then
 * one fresh sandbox per case. Limits: @cli, then the spec's limits not named
 * in @cli_explicit (judge_cli_explicit() for `nsbox judge`: flags win; 0 for
 * a batch job: the job's spec wins over the batch flags). @python_host: the
 * python profile already resolved for cli->interpreter (see sbx_request), or
 * NULL. Fills @ret (free it with judge_report_free); returns 0, or -errno
 * with @e filled when the program file cannot be read. */
int judge_run_spec(const struct nsb_config *cli, unsigned cli_explicit, const struct judge_spec *spec,
                   int cancel_fd, const struct host_set *python_host, struct judge_report *ret,
                   struct nsb_error *e);
void judge_report_free(struct judge_report *rep);

/* The whole command (judge_run.c): read cli->input_path, run every case,
 * print the verdict to run->out (JSON when cli->json, else a summary), write it
 * to cli->result_path if set. Resolves the profile into @cli first (the
 * spec's "profile" unless --profile). Returns the process exit status: NSB_EXIT_OK, _FAIL, _UNDETERMINED, or
 * NSB_EXIT_FAILURE with @e filled when the spec (or its program file) is bad or nsbox
 * itself failed; the caller prints @e. */
int judge_main(const struct frame_run *run, struct nsb_error *e);
