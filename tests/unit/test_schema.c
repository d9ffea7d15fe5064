/* Unit tests for config/schema: the table is the single source of every key.
 *
 * For every policy row of the table (iterated, so a new row is covered
 * without touching this file): a value other than the default, given as the
 * command-line flag, as the profile key and (when the row has one) as the
 * judge/batch "limits" key, parses to the same value, renders to the same
 * canonical text and the same policy_sha256; that text reads back as a
 * profile to itself; a profile's value reaches the run through the overlay
 * and the flag wins over it; and the option is listed in --help and in the
 * tables generated from it. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "config/policy.h"
#include "config/schema.h"
#include "util/cleanup.h"

/* Values tried for a text or list row, in order, until the flag takes one:
 * a path (mounts, packages, the interpreter, cgroup_parent), a name
 * (seccomp_deny), NAME=VALUE (env). A new row whose values none of these
 * fits fails below, naming its flag: add one here. */
static const char *const text_candidates[] = { "/opt/nsb-sample", "uname", "NSB_SAMPLE=1" };

static bool numeric(const struct cfg_key *k)
{
        return k->kind == CFG_KIND_DURATION || k->kind == CFG_KIND_SIZE || k->kind == CFG_KIND_COUNT;
}

static char *render(const struct nsb_config *cfg)
{
        char *text = NULL;
        struct nsb_error e;

        nsb_error_clear(&e);
        assert_int_equal(cfg_policy_render(cfg, &text, &e), 0);
        return text;
}

static void sha(const struct nsb_config *cfg, char out[65])
{
        cfg_policy_sha256(cfg, out);
        assert_int_equal(strlen(out), 64);
}

/* nsbox python --FLAG VALUE -c 1 */
static int parse_flag(const struct cfg_key *k, const char *value, struct nsb_config *cfg)
{
        char flag[64];
        char *argv[] = { "nsbox", "python", flag, (char *) value, "-c", "1", NULL };
        struct nsb_error e;

        snprintf(flag, sizeof flag, "--%s", k->flag);
        nsb_error_clear(&e);
        return cfg_parse_cli(6, argv, cfg, &e);
}

/* The profile text giving @value to @k: "[section]\nkey = value\n"; [env]
 * takes the variable's name as its key. */
static int parse_profile(const struct cfg_key *k, const char *value, struct nsb_config *cfg)
{
        char text[256];
        const char *eq = strchr(value, '=');
        struct nsb_error e;

        if (k->key)
                snprintf(text, sizeof text, "[%s]\n%s = %s\n", k->section, k->key, value);
        else
                snprintf(text, sizeof text, "[%s]\n%.*s = %s\n", k->section, (int) (eq - value), value, eq + 1);
        cfg_defaults(cfg, NSB_CMD_PYTHON);
        nsb_error_clear(&e);
        return cfg_profile_parse(text, strlen(text), &(struct cfg_profile_opts) { .file = "s.ini" }, cfg, &e);
}

/* A value of @k that is not its default, as the flag writes it. */
static bool sample(const struct cfg_key *k, char *buf, size_t size)
{
        struct nsb_config cfg;

        if (numeric(k)) {
                /* three times the least value, or the largest when that is over */
                uint64_t v = k->min * 3 <= k->max ? k->min * 3 : k->max;
                if (k->kind == CFG_KIND_DURATION)
                        snprintf(buf, size, "%llums", (unsigned long long) v);
                else
                        snprintf(buf, size, "%llu", (unsigned long long) v);
                return v != k->def;
        }
        if (k->kind == CFG_KIND_CHOICE) {
                snprintf(buf, size, "%s", k->choices[k->def == 0 ? 1 : 0]);
                return true;
        }
        for (size_t i = 0; i < ARRAY_SIZE(text_candidates); i++) {
                int r = parse_flag(k, text_candidates[i], &cfg);
                cfg_free(&cfg);
                if (r == 0) {
                        snprintf(buf, size, "%s", text_candidates[i]);
                        return true;
                }
        }
        return false;
}

static void assert_same_policy(const struct nsb_config *a, const struct nsb_config *b, const char *what,
                               const char *flag)
{
        char *ta = render(a), *tb = render(b), ha[65], hb[65];

        sha(a, ha);
        sha(b, hb);
        if (strcmp(ta, tb) != 0 || strcmp(ha, hb) != 0)
                fail_msg("--%s: the flag and %s differ:\n%s\n---\n%s", flag, what, ta, tb);
        free(ta);
        free(tb);
}

/* The row's JSON limit as a string, and (duration, count) as a number. */
static void check_json(const struct cfg_key *k, const char *value, const struct nsb_config *by_flag)
{
        json_t *forms[2] = { json_pack("{ss}", k->json, value), NULL };
        uint64_t v;

        memcpy(&v, (const char *) by_flag + k->offset, sizeof v);
        if (k->kind == CFG_KIND_DURATION)
                forms[1] = json_pack("{sf}", k->json, (double) v / 1000.0);
        else if (k->kind == CFG_KIND_COUNT)
                forms[1] = json_pack("{sI}", k->json, (json_int_t) v);
        for (size_t i = 0; i < 2 && forms[i]; i++) {
                struct nsb_config overlay, cfg;
                uint32_t set = 0;
                struct nsb_error e;

                cfg_defaults(&overlay, NSB_CMD_JUDGE);
                cfg_defaults(&cfg, NSB_CMD_PYTHON);
                nsb_error_clear(&e);
                if (cfg_limits_parse_json(forms[i], &overlay, &set, &e) != 0)
                        fail_msg("limits.%s = %s: %s", k->json, value, e.msg);
                assert_int_equal(set, k->bit);
                cfg_limits_apply(&overlay, set, &cfg);
                assert_same_policy(by_flag, &cfg, "the judge/batch limits key", k->flag);
                json_decref(forms[i]);
        }
}

/* The profile's value reaches a run that did not give the flag; the flag
 * wins over a profile that gives another value. */
static void check_overlay(const struct cfg_key *k, const char *value, const struct nsb_config *by_flag)
{
        struct nsb_config cli, prof;
        struct nsb_error e;
        char *argv[] = { "nsbox", "python", "-c", "1", NULL };

        nsb_error_clear(&e);
        assert_int_equal(cfg_parse_cli(4, argv, &cli, &e), 0);
        assert_int_equal(parse_profile(k, value, &prof), 0);
        assert_int_equal(cfg_profile_overlay(&cli, &prof, &e), 0);
        assert_same_policy(by_flag, &cli, "the profile under the command line", k->flag);
        cfg_free(&cli);
        cfg_free(&prof);
        if (k->kind == CFG_KIND_LIST)
                return;         /* lists: the profile's entries, then the flag's */
        assert_int_equal(parse_flag(k, value, &cli), 0);
        cfg_defaults(&prof, NSB_CMD_PYTHON);    /* the default: another value than the flag's */
        assert_int_equal(cfg_profile_overlay(&cli, &prof, &e), 0);
        assert_same_policy(by_flag, &cli, "the flag over a profile", k->flag);
        cfg_free(&cli);
        cfg_free(&prof);
}

/* The canonical text holds the row (or, without a renderer, leaves the
 * policy_sha256 of the defaults alone) and reads back to itself. */
static void check_render(const struct cfg_key *k, const struct nsb_config *by_flag)
{
        struct nsb_config back, def;
        char *text = render(by_flag), *again, line[80], h[65], hd[65];
        struct nsb_error e;

        cfg_defaults(&def, NSB_CMD_PYTHON);
        sha(by_flag, h);
        sha(&def, hd);
        if (k->render) {
                snprintf(line, sizeof line, "\n%s = ", k->key ? k->key : "NSB_SAMPLE");
                if (!strstr(text, line) || strcmp(h, hd) == 0)
                        fail_msg("--%s: the canonical text does not show it:\n%s", k->flag, text);
        } else if (strcmp(h, hd) != 0) {
                fail_msg("--%s: a row without renderer changed policy_sha256", k->flag);
        }
        cfg_defaults(&back, NSB_CMD_PYTHON);
        nsb_error_clear(&e);
        if (cfg_profile_parse(text, strlen(text), &(struct cfg_profile_opts) { .file = "show.ini" }, &back, &e) != 0)
                fail_msg("--%s: profile show's text does not read back: %s\n%s", k->flag, e.msg, text);
        again = render(&back);
        assert_string_equal(text, again);
        free(text);
        free(again);
        cfg_free(&back);
}

static void test_every_row_single_source(void **state)
{
        size_t n_policy = 0;

        (void) state;
        for (size_t i = 0; cfg_key_at(i); i++) {
                const struct cfg_key *k = cfg_key_at(i);
                struct nsb_config by_flag, by_profile, def;
                char value[64], vf[128], vp[128], vd[128];

                if (k->kind == CFG_KIND_NONE)
                        continue;
                n_policy++;
                if (!k->section)
                        fail_msg("--%s: a policy row without a profile section", k->flag);
                if (!(k->cmds & (1u << NSB_CMD_PYTHON)))
                        fail_msg("--%s: a policy key nsbox python does not take", k->flag);
                if (!sample(k, value, sizeof value))
                        fail_msg("--%s: no sample value fits (add one to text_candidates)", k->flag);
                if (parse_flag(k, value, &by_flag) != 0)
                        fail_msg("--%s %s refused", k->flag, value);
                if (parse_profile(k, value, &by_profile) != 0)
                        fail_msg("[%s] %s = %s refused", k->section, k->key ? k->key : "NAME", value);
                /* the same value, not just the same text */
                cfg_defaults(&def, NSB_CMD_PYTHON);
                cfg_key_value_text(k, &by_flag, vf, sizeof vf);
                cfg_key_value_text(k, &by_profile, vp, sizeof vp);
                cfg_key_value_text(k, &def, vd, sizeof vd);
                assert_string_equal(vf, vp);
                if (k->kind != CFG_KIND_LIST && strcmp(vf, vd) == 0)
                        fail_msg("--%s: the sample %s is the default", k->flag, value);
                if (k->kind == CFG_KIND_LIST)
                        assert_int_equal(*(size_t *) ((char *) &by_flag + k->count_offset), 1);
                /* the flag marks its precedence bit */
                assert_int_equal(by_flag.set & k->bit, k->bit);
                assert_same_policy(&by_flag, &by_profile, "the profile key", k->flag);
                if (k->json)
                        check_json(k, value, &by_flag);
                check_overlay(k, value, &by_flag);
                check_render(k, &by_flag);
                cfg_free(&by_flag);
                cfg_free(&by_profile);
        }
        assert_true(n_policy >= 15);
}

/* The defaults are the rows': every numeric row's field after cfg_defaults. */
static void test_defaults_from_rows(void **state)
{
        struct nsb_config cfg;

        (void) state;
        cfg_defaults(&cfg, NSB_CMD_RUN);
        for (size_t i = 0; cfg_key_at(i); i++) {
                const struct cfg_key *k = cfg_key_at(i);
                uint64_t v;

                if (!numeric(k))
                        continue;
                memcpy(&v, (const char *) &cfg + k->offset, sizeof v);
                assert_int_equal(v, k->def);
                if (k->def && (k->def < k->min || k->def > k->max))
                        fail_msg("--%s: default outside its own range", k->flag);
        }
}

/* --help, the option rows (man page, completion) and the profile key rows
 * all come from the table. */
static void test_help_and_tables_from_rows(void **state)
{
        (void) state;
        for (size_t i = 0; cfg_key_at(i); i++) {
                const struct cfg_key *k = cfg_key_at(i);
                const char *name, *metavar, *section, *key;
                unsigned cmds;
                bool in_rows = false, in_keys = false;
                char head[80];

                snprintf(head, sizeof head, "--%s", k->flag);
                for (int c = NSB_CMD_RUN; c <= NSB_CMD_REPORT; c++) {
                        char *usage;
                        if (!(k->cmds & (1u << c)))
                                continue;
                        usage = cfg_usage((enum nsb_cmd) c);
                        assert_non_null(usage);
                        if (!strstr(usage, head))
                                fail_msg("%s missing from the help of command %d", head, c);
                        free(usage);
                }
                for (size_t r = 0; cfg_option_row(r, &name, &metavar, &cmds); r++)
                        in_rows |= strcmp(name, k->flag) == 0 && (cmds & k->cmds) == k->cmds;
                assert_true(in_rows);
                for (size_t r = 0; k->key && cfg_profile_key_row(r, &section, &key); r++)
                        in_keys |= strcmp(section, k->section) == 0 && strcmp(key, k->key) == 0;
                assert_true(in_keys || !k->key);
        }
}

/* [python] preload takes dotted names of ASCII identifiers only: the
 * zygote's program quotes them as they stand (warm/warm_pool.c). */
static void test_preload_names(void **state)
{
        static const char *const good[] = { "numpy", "xml.etree.ElementTree", "_a1", "A.b_2.c" };
        static const char *const bad[] = { "", ".", "a.", ".a", "a..b", "1a", "a.1b", "a-b", "a b", "a\"",
                                           "a\\b", "\xc3\xa9t\xc3\xa9", "a/b", "a;b" };
        const struct cfg_key *k = cfg_key_by_profile("python", "preload");
        char longest[202];

        (void) state;
        assert_non_null(k);
        for (size_t i = 0; i < ARRAY_SIZE(good); i++) {
                struct nsb_config cfg;
                if (parse_flag(k, good[i], &cfg) != 0)
                        fail_msg("--preload %s refused", good[i]);
                assert_int_equal(cfg.n_preload, 1);
                assert_string_equal(cfg.preload[0], good[i]);
                cfg_free(&cfg);
        }
        for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
                struct nsb_config cfg;
                if (parse_flag(k, bad[i], &cfg) == 0)
                        fail_msg("--preload '%s' accepted", bad[i]);
                cfg_free(&cfg);
        }
        for (size_t len = 200; len <= 201; len++) {
                struct nsb_config cfg;
                memset(longest, 'a', len);
                longest[len] = '\0';
                assert_int_equal(parse_flag(k, longest, &cfg) == 0, len == 200);
                cfg_free(&cfg);
        }
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_every_row_single_source),
                cmocka_unit_test(test_defaults_from_rows),
                cmocka_unit_test(test_help_and_tables_from_rows),
                cmocka_unit_test(test_preload_names),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
