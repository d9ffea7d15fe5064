/* config/schema.h — the one table of every configuration key.
 *
 * Owns: one row per option and policy key (config/schema.c): its command-line
 * flag, metavar, the commands that take it, its value parser, its help line
 * and help group; for a policy key also its profile section and key, its
 * judge-spec / batch-job "limits" key, its type, the struct nsb_config field
 * it fills, its default, its range, its precedence bit and how it renders.
 * From the rows are derived: the command line (cli_parse.c), --help and the
 * man page/completion tables (cfg_option_row), the profile keys
 * (policy_parse.c), the canonical text and policy_sha256 (policy_render.c),
 * the defaults (cfg_defaults), the overlay of a profile under the flags
 * (cfg_profile_overlay), and the JSON limits of a judge spec or batch job
 * (cfg_limits_parse_json, cfg_limits_apply).
 *
 * Invariants:
 *   - adding a key is one row here plus its enforcement;
 *   - every source of a value (flag, profile line, JSON) goes through the
 *     row's one parser, so they accept exactly the same values and give the
 *     same policy_sha256 (tests/unit/test_schema.c iterates the table);
 *   - a default is written once, in its row.
 * Pure: allocation only.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "config/config.h"
#include "util/error.h"

/* The heading an option is listed under in --help, in this order. */
enum cfg_group { CFG_G_ISOLATION, CFG_G_LIMITS, CFG_G_FILES, CFG_G_ENV, CFG_G_OUTPUT, CFG_G_BATCH, CFG_G_JUDGE,
                 CFG_G_GENERAL, CFG_G__MAX };

/* The type of a policy value. */
enum cfg_kind {
        CFG_KIND_NONE = 0,      /* not a policy value (a flag of the command, a path of one run) */
        CFG_KIND_DURATION,      /* uint64_t milliseconds: "500ms", "2s", "1.5m" */
        CFG_KIND_SIZE,          /* uint64_t bytes: "256M" */
        CFG_KIND_COUNT,         /* uint64_t: "64" */
        CFG_KIND_CHOICE,        /* an enum: one of the row's choices[] */
        CFG_KIND_TEXT,          /* char *, NULL = the row's default text */
        CFG_KIND_LIST,          /* entries appended in order (repeatable) */
};

/* What a profile checks after the value parsed (policy_parse.c). */
enum cfg_check { CFG_CHECK_NONE = 0, CFG_CHECK_BIND, CFG_CHECK_TMPFS, CFG_CHECK_PATH };

/* How the overlay keeps one entry per identity in a list (the later wins). */
enum cfg_dedupe { CFG_DEDUPE_NONE = 0, CFG_DEDUPE_NAME /* NAME of NAME=VALUE */, CFG_DEDUPE_WHOLE };

struct cfg_key;
typedef int (*cfg_parse_fn)(const struct cfg_key *k, struct nsb_config *cfg, const char *value,
                            struct nsb_error *e);
/* Writes the row's profile lines ("key = value\n") for @cfg; nothing when
 * the policy does not hold it. */
typedef void (*cfg_render_fn)(const struct cfg_key *k, const struct nsb_config *cfg, FILE *f);

struct cfg_key {
        /* the command line */
        const char *flag;               /* without "--" */
        const char *metavar;            /* NULL: a flag without value */
        unsigned cmds;                  /* bit (1u << enum nsb_cmd) per command that takes it */
        cfg_parse_fn parse;
        const char *help;
        enum cfg_group group;
        /* the policy (kind CFG_KIND_NONE: none of this) */
        enum cfg_kind kind;
        const char *section, *key;      /* profile [section] key; key NULL: any name ([env]) */
        const char *json;               /* judge spec / batch job "limits" key; NULL: none */
        size_t offset, size;            /* the scalar field, or the list's pointer */
        size_t count_offset, elem_size; /* lists: the count field, one entry's size */
        uint64_t def;                   /* numeric default */
        const char *def_text;           /* TEXT default (NULL stays NULL), CHOICE names[def] */
        const char *const *choices;     /* CHOICE: names by enum value, NULL-terminated */
        uint64_t min, max;              /* DURATION, SIZE, COUNT: the range every source shares */
        const char *min_text, *max_text, *why;
        uint32_t bit;                   /* enum cfg_field: precedence; 0 for lists */
        enum cfg_check check;
        enum cfg_dedupe dedupe;
        cfg_render_fn render;
};

/* Row @i, NULL past the last. */
const struct cfg_key *cfg_key_at(size_t i);
/* The row of --@flag (@len bytes) for @cmd; a row of another command when
 * @cmd has none; NULL when none. */
const struct cfg_key *cfg_key_by_flag(const char *flag, size_t len, enum nsb_cmd cmd);
/* The policy row of profile [@section] @key, or of spec/job limit @json. */
const struct cfg_key *cfg_key_by_profile(const char *section, const char *key);
const struct cfg_key *cfg_key_by_json(const char *json);

/* Does an earlier row fill the same list as @k (bind after ro_bind)? The
 * overlay and the renderer then handle that list once, at the first. */
bool cfg_key_list_shared(const struct cfg_key *k);

/* Profile section @i in the canonical order (limits, sandbox, mounts, env,
 * python); NULL past the last. */
const char *cfg_profile_section(size_t i);

/* Help group headings, by enum cfg_group. */
const char *cfg_group_title(enum cfg_group g);

/* Set a string / append to a string list; -ENOMEM (stage usage). */
int cfg_set_text(char **field, const char *value, struct nsb_error *e);
int cfg_push_text(char ***v, size_t *n, const char *value, struct nsb_error *e);

/* The row's value as text in its canonical form (what render writes after
 * "key = "): the scalar kinds only. */
void cfg_key_value_text(const struct cfg_key *k, const struct nsb_config *cfg, char *buf, size_t size);

/* The JSON "limits" object of a judge spec or batch job: each key a row's
 * json key, a string through the flag's parser, a number where the kind
 * reads one (seconds for a duration, an integer for a count). Fills
 * @overlay's fields and their bits in *ret_set. Errors name "limits.KEY",
 * stage config. */
int cfg_limits_parse_json(const json_t *obj, struct nsb_config *overlay, uint32_t *ret_set, struct nsb_error *e);
/* Copy the fields of the rows whose bit is in @take from @overlay. */
void cfg_limits_apply(const struct nsb_config *overlay, uint32_t take, struct nsb_config *cfg);
/* The bits of the rows that have a json key. */
uint32_t cfg_limit_bits(void);
