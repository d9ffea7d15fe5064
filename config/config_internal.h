/* config/config_internal.h — what the files of config/ share and nothing
 * else includes: the render functions the schema rows name
 * (policy_render.c), the text forms of values. */
#pragma once

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "config/schema.h"

/* Longest word a message quotes whole: a longer one is cut, with "...", so
 * the message keeps its end (what to do) within NSB_ERROR_MSG_MAX. */
#define QUOTE_MAX 48
#define QUOTE_LEN(len) ((int) ((len) > QUOTE_MAX ? QUOTE_MAX : (len)))
#define QUOTE_CUT(len) ((len) > QUOTE_MAX ? "..." : "")
/* The arguments of "'%.*s%s'" for the string @v. */
#define QV(v) QUOTE_LEN(strlen(v)), (v), QUOTE_CUT(strlen(v))

/* The python profile's interpreter arguments when none are given. */
#define CFG_DEFAULT_INTERP_ARGS "-I -B"

/* @v of @kind in its canonical text: a size in its largest exact unit
 * ("256M"), a duration likewise ("10s", "1500ms"), a count in decimal. */
void cfg_format_value(enum cfg_kind kind, uint64_t v, char *buf, size_t size);

/* Row renderers (cfg_render_fn). */
void cfg_render_limit(const struct cfg_key *k, const struct nsb_config *cfg, FILE *f);
void cfg_render_choice(const struct cfg_key *k, const struct nsb_config *cfg, FILE *f);
void cfg_render_text(const struct cfg_key *k, const struct nsb_config *cfg, FILE *f);
void cfg_render_image(const struct cfg_key *k, const struct nsb_config *cfg, FILE *f);
void cfg_render_strings(const struct cfg_key *k, const struct nsb_config *cfg, FILE *f);
void cfg_render_binds(const struct cfg_key *k, const struct nsb_config *cfg, FILE *f);
void cfg_render_tmpfs(const struct cfg_key *k, const struct nsb_config *cfg, FILE *f);
void cfg_render_env(const struct cfg_key *k, const struct nsb_config *cfg, FILE *f);
